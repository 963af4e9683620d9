"""Reads that aggregate what they read, on three layouts of the same TPC-H lineitem, in one run.

Usage: python bench/layout_bench.py --sf 1 --cube-size 100000 --runs 5 \
    [--page-index] [--skip-previous] [--ui-port 4071] [--variants rg=8,rg=32,page=50]

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

* with ``--variants``, more copies, each named by its variant (see ``parse_variant``): the
  same files with row groups of at most ``cube/N`` rows (``rg=N``), data pages of at most
  ``cube/N`` rows (``page=N``), or a new write whose weight bands stop at ``2**-J``
  (``bands=J``: the rows of a cube above that weight stay in one block), or combinations
  (``bands=3+rg=32``).

With ``--ui-port PORT`` the embedded server runs Spark's UI on that port, and each query's
warm-up run also records what Spark actually read (``ReadMeter``): the bytes its JVM read
(``rchar``) and the rows its scans returned after row-group and page skipping.

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


def live_blocks(path: str) -> dict[str, list[int]]:
    """Element counts of the blocks of every live file of the table at ``path``, in order."""
    from qbeast_connect.model.block import decode_blocks

    live: dict[str, list[int]] = {}
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                add = action["add"]
                blocks = decode_blocks(add["tags"]["blocks"])
                live[add["path"]] = [b.element_count for b in blocks]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return live


def regrouped_copy(
    path: str, target: str, cube_size: int, row_groups: int | None, pages: int | None
) -> None:
    """The table at ``path`` with the same files and row order, its row groups cut at most
    ``cube_size / row_groups`` rows (``None``: as written) and its data pages at most
    ``cube_size / pages`` rows (``None``: pyarrow's default, 20,000 rows or 1 MB)."""
    import pyarrow.parquet as pq

    from qbeast_connect.index.block_order import row_group_bounds
    from server_plugin.parquet_statistics import parquet_write_options

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(Path(path) / "_delta_log", Path(target) / "_delta_log")
    blocks = live_blocks(path)
    for name, counts in blocks.items():
        source = pq.ParquetFile(Path(path) / name)
        table = source.read()
        if row_groups is None:
            sizes = [source.metadata.row_group(g).num_rows
                     for g in range(source.metadata.num_row_groups)]
        else:
            most = max(1, cube_size // row_groups)
            sizes = row_group_bounds(counts, most, min(most, max(1, cube_size // 4)))
        options = parquet_write_options(table)
        if pages is not None:
            options["max_rows_per_page"] = max(1, cube_size // pages)
        with pq.ParquetWriter(
            Path(target) / name, table.schema, compression="snappy", **options
        ) as out:
            offset = 0
            for size in sizes:
                out.write_table(table.slice(offset, size), row_group_size=size)
                offset += size


def parse_variant(text: str) -> dict[str, int]:
    """``rg=32+page=64+bands=3`` -> ``{"rg": 32, "page": 64, "bands": 3}``.

    ``rg=N``: row groups of at most cube/N rows; ``page=N``: data pages of at most cube/N
    rows; ``bands=J``: a new write whose weight bands stop at fraction ``2**-J`` (the rows
    of a cube with weights above it stay in one block).
    """
    out: dict[str, int] = {}
    for part in text.split("+"):
        key, _, value = part.partition("=")
        if key not in ("rg", "page", "bands"):
            raise SystemExit(f"unknown variant part {part!r}")
        out[key] = int(value)
    return out


def write_with_bands(plain: Any, target: str, cube_size: int, top: int) -> float:
    """``qc.write`` with band edges only at fractions ``2**-k`` for ``k >= top``."""
    import qbeast_connect as qc
    from qbeast_connect.index import layout
    from qbeast_connect.model.weight import weight_from_fraction

    original = layout.band_edges

    def edges(rows: float, limit: int) -> tuple[int, ...]:
        keep = weight_from_fraction(2.0**-top)
        return tuple(e for e in original(rows, limit) if e <= keep)

    shutil.rmtree(target, ignore_errors=True)
    layout.band_edges = edges
    try:
        t0 = time.perf_counter()
        qc.write(plain, target, columnsToIndex=COLUMNS, cubeSize=cube_size)
        return time.perf_counter() - t0
    finally:
        layout.band_edges = original


def _jvm_pids(root: int) -> list[int]:
    """The Java processes among ``root`` and its descendants."""
    found: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            if b"java" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
            for task in Path(f"/proc/{pid}/task").iterdir():
                children = (task / "children").read_text().split()
                todo.extend(int(c) for c in children)
        except OSError:
            continue
    return found


class ReadMeter:
    """What Spark's scans actually read during a query.

    * ``bytes``: bytes the embedded server's JVM passed through ``read``/``pread`` calls
      (``rchar`` of ``/proc/<pid>/io``, all threads), so parquet-mr's vectored reads on its
      own threads count too; Spark's ``inputBytes`` misses those.
    * ``records``/``tasks``: ``inputRecords`` (rows the scans returned, after row-group and
      page skipping) and tasks, summed over all stages from the server's UI REST API.
    """

    def __init__(self, port: int, server_pid: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1/applications"
        self.app = self._get(self.base)[0]["id"]
        self.pids = _jvm_pids(server_pid)
        if not self.pids:
            raise SystemExit(f"no JVM found under process {server_pid}")

    def _get(self, url: str) -> Any:
        import urllib.request

        with urllib.request.urlopen(url, timeout=30) as answer:
            return json.loads(answer.read())

    def _rchar(self) -> int:
        total = 0
        for pid in self.pids:
            for line in Path(f"/proc/{pid}/io").read_text().splitlines():
                if line.startswith("rchar:"):
                    total += int(line.split()[1])
        return total

    def totals(self) -> tuple[int, int, int]:
        stages = self._get(f"{self.base}/{self.app}/stages")
        return (
            self._rchar(),
            sum(s.get("inputRecords", 0) for s in stages),
            sum(s.get("numCompleteTasks", 0) for s in stages),
        )

    def measure(self, query: Any) -> tuple[Any, dict[str, int]]:
        before = self.totals()
        result = query()
        read = self._rchar() - before[0]
        after = self.totals()
        for _ in range(20):  # the listener that feeds the API runs asynchronously
            time.sleep(0.25)
            again = self.totals()
            if again[1:] == after[1:]:
                break
            after = again
        return result, {
            "bytes": read,
            "records": after[1] - before[1],
            "tasks": after[2] - before[2],
        }


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
    parser.add_argument(
        "--variants",
        default="",
        help="comma-separated layout variants, e.g. rg=32,page=64,bands=3+rg=32 "
        "(see parse_variant)",
    )
    parser.add_argument("--skip-previous", action="store_true", help="no previous-layout copy")
    parser.add_argument(
        "--ui-port", type=int, default=0, help="measure bytes read through Spark's UI on this port"
    )
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    if args.ui_port:
        ui = {"spark.ui.enabled": "true", "spark.ui.port": str(args.ui_port)}
        spark = qc.session(None, connect_timeout=None, retry_timeout=None, **ui)
    else:
        spark = qc.session()
    try:
        report = run(spark, source, args)
    finally:
        qc.stop()
    text = json.dumps(report, indent=2, default=str)
    print_summary(report)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


def print_summary(report: dict[str, Any]) -> None:
    """One markdown row per query: time ratio to plain parquet, share of bytes read."""
    layouts = [k for k in next(iter(report["queries"].values())) if k != "answers_equal"]
    print("| query | " + " | ".join(layouts) + " |")
    print("|---" * (len(layouts) + 1) + "|")
    for name, entry in report["queries"].items():
        cells = []
        base = entry["plain"]["median_s"]
        for k in layouts:
            e = entry[k]
            read = f", read {e['read_share']:.0%}" if "read_share" in e else ""
            cells.append(f"{e['median_s']:.2f} s {e['median_s'] / base:.2f}x{read}")
        print(f"| {name} | " + " | ".join(cells) + " |")


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
    paths = {"qbeast": path}
    if not args.skip_previous:
        previous_layout_copy(path, previous)
        paths["qbeast previous layout"] = previous
    writes = {"qbeast": write_s}
    for text in filter(None, args.variants.split(",")):
        variant = parse_variant(text)
        target = str(OUT / ("v_" + text.replace("=", "").replace("+", "_")))
        base = path
        if "bands" in variant:
            base = target + "_write"
            writes[text] = write_with_bands(plain, base, args.cube_size, variant["bands"])
        if "rg" in variant or "page" in variant:
            regrouped_copy(base, target, args.cube_size, variant.get("rg"), variant.get("page"))
            base = target
        paths[text] = base
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
        "qbeast_write_s": writes,
        "files": {
            k: len(list(Path(p).glob("*.parquet")))
            for k, p in (("plain", source), *paths.items())
        },
        "bytes": sizes,
        "queries": {},
    }
    meter = None
    if args.ui_port:
        from qbeast_connect.spark.session import embedded_server

        server = embedded_server()
        if server is None or server.pid is None:
            raise SystemExit("--ui-port measures an embedded server only")
        meter = ReadMeter(args.ui_port, server.pid)
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
        answers: dict[str, Any] = {}
        read: dict[str, dict[str, int]] = {}
        for k, df in frames.items():  # warm-up run, with the bytes Spark reads
            if meter is None:
                answers[k] = aggregate(df)
            else:
                answers[k], read[k] = meter.measure(lambda df=df: aggregate(df))
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
            if k in read:
                entry[k]["read"] = read[k]
                entry[k]["read_share"] = read[k]["bytes"] / sizes[k]
        if not isinstance(query, float):
            entry["answers_equal"] = len({tuple(a) for a in answers.values()}) == 1
        report["queries"][name] = entry
        print(name, json.dumps(entry, default=str), flush=True)
    return report


if __name__ == "__main__":
    main()
