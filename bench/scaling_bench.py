"""How cost grows with the data: the write, a 1% 2-column filter read, and planning.

Usage: python bench/scaling_bench.py --sizes 1,10,30 [--cube-size 1000000] [--out result.json]

For each TPC-H scale factor (lineitem generated offline by ``bench.common.lineitem``), in
one run:

* the write: ``df.write.parquet`` against ``qc.write`` on l_shipdate, l_extendedprice,
  l_partkey (one timed write each; a fresh directory every time);
* the read of the 2-column 1% filter of ``bench/query_bench.py`` (90 days of l_shipdate and
  a l_partkey window fitted to 1% of the rows), aggregating the columns it reads, on the
  plain parquet copy and on the qbeast table: median of ``--repeats``, taking turns;
* planning: ``QbeastTable.forPath`` + ``explainScan`` of that filter (no job), median of 10.

The growth column of the report divides each figure by the one at the previous size.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, md_table, median, warm_up
from bench.query_bench import COLUMNS, aggregate, shapes


def _timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def measure(spark, sf: float, args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """One scale factor's write, read and planning figures."""
    import qbeast_connect as qc

    source = lineitem(sf)
    df = spark.read.parquet(source)
    rows = df.count()
    parquet_path = fresh_dir(f"scale_pq_{sf}")
    parquet_s, _ = _timed(lambda p=parquet_path: df.write.parquet(p))
    path = fresh_dir(f"scale_qb_{sf}")
    qbeast_s, _ = _timed(
        lambda p=path: qc.write(df, p, columnsToIndex=",".join(COLUMNS), cubeSize=args.cube_size)
    )
    where = shapes(source)[1]["where"]  # 2 columns 1%
    plain = spark.read.parquet(parquet_path)
    table = qc.QbeastTable.forPath(spark, path)
    walls: dict[str, list[float]] = {"parquet": [], "qbeast": []}
    answers = {}
    for r in range(args.repeats):
        order = ["parquet", "qbeast"] if r % 2 == 0 else ["qbeast", "parquet"]
        for engine in order:
            seconds, answers[engine] = _timed(
                (lambda: aggregate(plain.filter(where)))
                if engine == "parquet"
                else (lambda: aggregate(table.read(where=where)))
            )
            walls[engine].append(seconds)
    if answers["parquet"] != answers["qbeast"]:
        raise SystemExit(f"answers differ at sf {sf}: {answers}")
    planning = [
        _timed(lambda p=path: qc.QbeastTable.forPath(spark, p).explainScan(where=where))[0]
        for _ in range(10)
    ]
    scan = table.explainScan(where=where)
    return {
        "sf": sf,
        "rows": rows,
        "write_parquet_s": parquet_s,
        "write_qbeast_s": qbeast_s,
        "read_parquet_s": median(walls["parquet"]),
        "read_qbeast_s": median(walls["qbeast"]),
        "planning_ms": median(planning) * 1000,
        "files": table.getIndexMetrics().file_count,
        "selected_files": scan.selected_files,
        "bytes_share": scan.selected_bytes / max(1, table.getIndexMetrics().bytes),
        "where": where,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,10,30")
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session()
    points = []
    sizes = [float(x) for x in args.sizes.split(",")]
    warm_up(spark.read.parquet(lineitem(sizes[0])), ",".join(COLUMNS))
    for sf in sizes:
        points.append(measure(spark, sf, args))
        print(points[-1], flush=True)
    report = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python bench/scaling_bench.py " + " ".join(sys.argv[1:]),
        "cube_size": args.cube_size,
        "points": points,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    print(markdown(report))
    qc.stop()


def markdown(report: dict) -> str:  # type: ignore[type-arg]
    """The scaling table, with each figure's growth from the previous size."""
    rows = []
    previous = None
    for p in report["points"]:

        def grow(key: str, p=p, previous=previous) -> str:  # type: ignore[no-untyped-def]
            return "" if previous is None else f" (x{p[key] / previous[key]:.1f})"

        rows.append(
            [
                f"sf {p['sf']:g} ({p['rows']:,} rows)",
                f"{p['write_parquet_s']:.1f} s{grow('write_parquet_s')}",
                f"{p['write_qbeast_s']:.1f} s{grow('write_qbeast_s')}, "
                f"{p['write_qbeast_s'] / p['write_parquet_s']:.2f}x",
                f"{p['read_parquet_s']:.2f} s{grow('read_parquet_s')}",
                f"{p['read_qbeast_s']:.2f} s{grow('read_qbeast_s')}, "
                f"{p['read_qbeast_s'] / p['read_parquet_s']:.2f}x",
                f"{p['planning_ms']:.0f} ms{grow('planning_ms')}",
                f"{p['selected_files']}/{p['files']}, {p['bytes_share']:.0%}",
            ]
        )
        previous = p
    return md_table(
        [
            "data",
            "parquet write",
            "qbeast write",
            "parquet 2-col 1% read",
            "qbeast 2-col 1% read",
            "forPath + planning",
            "files / bytes read",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
