"""Reads that aggregate what they read, on three layouts of the same TPC-H lineitem, in one run.

Usage: python bench/layout_bench.py --sf 1 --cube-size 100000 --runs 5

* plain: the source parquet, ``spark.read.parquet(source)``;
* qbeast: the table written by ``qc.write`` (indexed on l_shipdate, l_extendedprice,
  l_partkey): files in cube order, one row group per block, rows of a block in Z-order;
* qbeast, previous layout: the same files and Delta log, every file rewritten in place of its
  copy with its rows in arrival order (the source order, l_orderkey, l_linenumber) and
  row groups of 1M rows and no page index, as the writer wrote them before the block layout;
* with ``--page-index``, a copy of the qbeast table with the same row groups and page
  indexes (the writer now writes them itself; the copy compares the two in one run);
* with ``--decimal-bytes``, a copy of the qbeast table with the same row groups whose
  decimals are fixed-length byte arrays, as the writer stored them before it stored them
  as INT32/INT64 like Spark (``server_plugin/parquet_statistics.py``).

Each query aggregates the columns it reads (``sum(l_quantity)``,
``sum(l_extendedprice * (1 - l_discount))``, ``count(*)``, ``sum(hash(l_comment))``); the
three answers must be equal. Reported per query: median wall time of ``--runs`` runs
(interleaved), and the bytes Spark has to read: the compressed bytes of the row groups, in
the files the query opens, whose min/max statistics overlap the filter (for a sample: the
files it opens), as a share of the layout's bytes.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
import os
import shutil
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import lineitem, machine, median

OUT = Path(os.environ.get("QBEAST_LAYOUT_BENCH_DIR", "/tmp/qbeast-layout-bench"))
COLUMNS = "l_shipdate,l_extendedprice,l_partkey"
D = datetime.date
DEC = decimal.Decimal

#: name -> {column: (low, high)} (inclusive), or a sample fraction
QUERIES: dict[str, Any] = {
    "1 column 1%": {"l_extendedprice": (DEC("50000"), DEC("50900"))},
    "2 columns 1%": {
        "l_shipdate": (D(1995, 1, 1), D(1995, 3, 31)),
        "l_partkey": (1, 14_000),
    },
    "3 columns 0.1%": {
        "l_shipdate": (D(1994, 1, 1), D(1994, 6, 30)),
        "l_partkey": (1, 40_000),
        "l_extendedprice": (DEC("20000"), DEC("45000")),
    },
    "sample(0.01)": 0.01,
    "sample(0.1)": 0.1,
}


def _literal(value: Any) -> str:
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


def where_of(box: dict[str, tuple[Any, Any]]) -> str:
    return " AND ".join(
        f"{c} BETWEEN {_literal(lo)} AND {_literal(hi)}" for c, (lo, hi) in box.items()
    )


def aggregate(df: Any) -> tuple[Any, ...]:
    from pyspark.sql import functions as F

    row = df.agg(
        F.sum("l_quantity"),
        F.sum(F.col("l_extendedprice") * (1 - F.col("l_discount"))),
        F.count(F.lit(1)),
        F.sum(F.hash("l_comment").cast("long")),
    ).collect()[0]
    return tuple(row)


def overlapping_bytes(files: list[str], box: dict[str, tuple[Any, Any]] | None) -> int:
    """Compressed bytes of the row groups of ``files`` whose statistics overlap ``box``."""
    import pyarrow.parquet as pq

    total = 0
    for f in files:
        local = urllib.parse.unquote(urllib.parse.urlparse(f).path) if ":" in f[:8] else f
        meta = pq.ParquetFile(local).metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            keep = True
            for column, (lo, hi) in (box or {}).items():
                stats = rg.column(names.index(column)).statistics
                if stats is not None and stats.has_min_max and (stats.max < lo or stats.min > hi):
                    keep = False
                    break
            if keep:
                total += sum(rg.column(i).total_compressed_size for i in range(meta.num_columns))
    return total


def layout_bytes(path: str) -> int:
    return overlapping_bytes([str(p) for p in Path(path).glob("*.parquet")], None)


def previous_layout_copy(path: str, target: str) -> None:
    """The table at ``path`` with each file in arrival order and 1M-row row groups."""
    import pyarrow.parquet as pq

    from server_plugin.parquet_statistics import parquet_write_options

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(Path(path) / "_delta_log", Path(target) / "_delta_log")
    for f in Path(path).glob("*.parquet"):
        table = pq.read_table(f)
        table = table.sort_by([("l_orderkey", "ascending"), ("l_linenumber", "ascending")])
        pq.write_table(
            table,
            Path(target) / f.name,
            compression="snappy",
            row_group_size=1_000_000,
            **{**parquet_write_options(table), "write_page_index": False},
        )


def _rewrite_files(path: str, target: str, **overrides: Any) -> None:
    """The table at ``path`` copied to ``target`` with the same row groups, its files
    rewritten with the project's parquet options changed by ``overrides``."""
    import pyarrow.parquet as pq

    from server_plugin.parquet_statistics import parquet_write_options

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(Path(path) / "_delta_log", Path(target) / "_delta_log")
    for f in Path(path).glob("*.parquet"):
        source = pq.ParquetFile(f)
        table = source.read()
        options = {**parquet_write_options(table), **overrides}
        with pq.ParquetWriter(
            Path(target) / f.name, table.schema, compression="snappy", **options
        ) as out:
            for g in range(source.metadata.num_row_groups):
                group = source.read_row_group(g)
                out.write_table(group, row_group_size=group.num_rows)


def page_index_copy(path: str, target: str) -> None:
    """The table at ``path`` with the same row groups, plus parquet page indexes."""
    _rewrite_files(path, target, write_page_index=True)


def decimal_bytes_copy(path: str, target: str) -> None:
    """The table at ``path`` with the same row groups, decimals as fixed-length bytes."""
    _rewrite_files(path, target, store_decimal_as_integer=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None, help="write the JSON report here")
    parser.add_argument(
        "--page-index", action="store_true", help="also a copy of the table with page indexes"
    )
    parser.add_argument(
        "--decimal-bytes",
        action="store_true",
        help="also a copy of the table with decimals as fixed-length byte arrays",
    )
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    try:
        report = run(spark, source, args)
    finally:
        qc.stop()
    text = json.dumps(report, indent=2, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


def run(spark: Any, source: str, args: argparse.Namespace) -> dict[str, Any]:
    import qbeast_connect as qc

    OUT.mkdir(parents=True, exist_ok=True)
    path = str(OUT / "qbeast")
    previous = str(OUT / "qbeast_previous")
    shutil.rmtree(path, ignore_errors=True)
    plain = spark.read.parquet(source)
    t0 = time.perf_counter()
    qc.write(plain, path, columnsToIndex=COLUMNS, cubeSize=args.cube_size)
    write_s = time.perf_counter() - t0
    previous_layout_copy(path, previous)
    paths = {"qbeast": path, "qbeast previous layout": previous}
    if args.page_index:
        paths["qbeast + page index"] = str(OUT / "qbeast_page_index")
        page_index_copy(path, paths["qbeast + page index"])
    if args.decimal_bytes:
        paths["qbeast, decimals as bytes"] = str(OUT / "qbeast_decimal_bytes")
        decimal_bytes_copy(path, paths["qbeast, decimals as bytes"])
    tables = {k: qc.QbeastTable.forPath(spark, p) for k, p in paths.items()}
    sizes = {"plain": layout_bytes(source), **{k: layout_bytes(p) for k, p in paths.items()}}
    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python bench/layout_bench.py " + " ".join(sys.argv[1:]),
        "sf": args.sf,
        "cube_size": args.cube_size,
        "qbeast_write_s": write_s,
        "files": {
            k: len(list(Path(p).glob("*.parquet")))
            for k, p in (("qbeast", path), ("plain", source))
        },
        "bytes": sizes,
        "queries": {},
    }
    for name, query in QUERIES.items():
        frames: dict[str, Any] = {}
        boxes: dict[str, Any] = {}
        if isinstance(query, float):
            frames["plain"] = plain.sample(fraction=query, seed=7)
            for k, t in tables.items():
                frames[k] = t.sample(query)
            boxes = {k: None for k in frames}
        else:
            where = where_of(query)
            frames["plain"] = plain.filter(where)
            for k, t in tables.items():
                frames[k] = t.filter(where)
            boxes = {k: query for k in frames}
        answers = {k: aggregate(df) for k, df in frames.items()}  # warm-up run
        times: dict[str, list[float]] = {k: [] for k in frames}
        for _ in range(args.runs):
            for k, df in frames.items():
                t0 = time.perf_counter()
                aggregate(df)
                times[k].append(time.perf_counter() - t0)
        entry: dict[str, Any] = {}
        for k, df in frames.items():
            files = df.inputFiles()
            entry[k] = {
                "median_s": median(times[k]),
                "runs_s": times[k],
                "files": len(files),
                "bytes_share": overlapping_bytes(files, boxes[k]) / sizes[k],
                "answer": answers[k],
            }
        if not isinstance(query, float):
            entry["answers_equal"] = len({tuple(a) for a in answers.values()}) == 1
        report["queries"][name] = entry
        print(name, json.dumps(entry, default=str), flush=True)
    return report


if __name__ == "__main__":
    main()
