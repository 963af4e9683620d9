"""``QbeastTable.approx(relativeError=...)`` against the exact aggregate, side by side.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-approx python -m bench.approx_bench --sf 1 \
    --runs 5 --out bench/approx_sf1.json

Writes (once; reused when present) TPC-H lineitem indexed on l_shipdate, l_extendedprice,
l_partkey, then times, interleaved in one session: the exact ``sum(l_extendedprice)`` (and a
grouped variant) on plain parquet and on the qbeast table, and ``approx`` of the same with
``relativeError``. Reports medians, ratios to plain parquet, the bytes approx read, its
number of Spark queries (one per band) and whether its interval holds the exact answer; and,
for the ungrouped sum, the floor measured in the same loop: the cheapest Connect query
(``spark.range(1)``) and a one-column sum of the top-band file (every sample opens it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    bench_session,
    indexed_copy,
    lineitem,
    load_average,
    machine,
    median,
    out_dir,
)

QUERIES: dict[str, dict[str, Any]] = {
    "sum": {"aggregates": ["sum(l_extendedprice) AS revenue"], "groupBy": None},
    "grouped": {
        "aggregates": ["sum(l_extendedprice) AS revenue", "count(*) AS n"],
        "groupBy": ["l_returnflag", "l_linestatus"],
    },
}


def table_path(sf: float, cube_size: int, *, written: bool = False) -> Path:
    """Where this bench keeps its table of ``sf`` and ``cube_size``; with ``written``, exit
    with a message unless it is there (the benches that reuse it never write it)."""
    path = out_dir("/tmp/qbeast-bench-approx") / f"approx_sf{sf:g}_{cube_size}"
    if written and not (path / "_delta_log").exists():
        raise SystemExit(f"no table at {path}: run bench.approx_bench with the same options first")
    return path


def _exact(frame: Any, query: dict[str, Any]) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    exprs = [F.sum("l_extendedprice").alias("revenue"), F.count(F.lit(1)).alias("n")]
    exprs = exprs[: len(query["aggregates"])]
    group = query["groupBy"] or []
    out = frame.groupBy(*group).agg(*exprs) if group else frame.agg(*exprs)
    return [r.asDict() for r in out.collect()]


def _covered(
    approx_rows: list[dict[str, Any]], exact: list[dict[str, Any]], group: list[str]
) -> bool:
    by_key = {tuple(r[c] for c in group): r for r in exact}
    for row in approx_rows:
        want = float(by_key[tuple(row[c] for c in group)]["revenue"])
        low, high = row["revenue_low"], row["revenue_high"]
        if not row["revenue_reliable"] or not float(low) <= want <= float(high):
            return False
    return len(approx_rows) == len(exact)


def _top_file(table: Any) -> str:
    """The file holding the table's lowest weights: every sample opens it, whatever its size."""
    files = [f for f in table.snapshot.files if f.blocks]
    top = min(files, key=lambda f: min(b.min_weight for b in f.blocks))
    return str(table._absolute(top.path))


def _with_small_first_band(run: Any) -> Any:
    """``run()`` with round 4's first band: the power of two holding ~4,096 rows, widened to
    what its files hold, instead of one sized for the rows ``relativeError`` needs (for a
    same-run comparison of the two rules)."""
    from qbeast_connect.approx.planner import BandPlanner
    from qbeast_connect.approx.result import first_fraction

    sized = BandPlanner.first_band

    def small(self: BandPlanner, rows: int) -> Any:
        return self.band(0.0, first_fraction(self.candidate_rows()))

    BandPlanner.first_band = small  # type: ignore[method-assign]
    try:
        return run()
    finally:
        BandPlanner.first_band = sized  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--relative-error", type=float, default=0.01)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    path = table_path(args.sf, args.cube_size)
    source = lineitem(args.sf)
    spark = bench_session()
    try:
        plain = spark.read.parquet(source)
        indexed_copy(spark, source, path, args.cube_size)
        table = qc.QbeastTable.forPath(spark, str(path))
        report: dict[str, Any] = {
            "machine": machine(),
            "load_average_at_start": load_average(),
            "command": "python -m bench.approx_bench " + " ".join(sys.argv[1:]),
            "queries": {},
        }
        for name, query in QUERIES.items():
            group = query["groupBy"] or []
            runs: dict[str, Any] = {
                "exact on plain parquet": lambda q=query: _exact(plain, q),
                "exact on the qbeast table": lambda q=query: _exact(table.toDF(), q),
                f"approx(relativeError={args.relative_error})": lambda q=query: table.approx(
                    q["aggregates"], groupBy=q["groupBy"], relativeError=args.relative_error
                ),
            }
            if name == "sum":  # the floor: what any Spark Connect answer costs at this layout
                top = _top_file(table)
                runs["approx, first band of ~4,096 rows (round 4 rule)"] = lambda q=query: (
                    _with_small_first_band(
                        lambda: table.approx(q["aggregates"], relativeError=args.relative_error)
                    )
                )
                runs["floor: spark.range(1).collect()"] = lambda: spark.range(1).collect()
                runs["floor: one-column sum of the top-band file"] = lambda f=top: (
                    spark.read.parquet(f).agg({"l_extendedprice": "sum"}).collect()
                )
            answers = {k: make() for k, make in runs.items()}  # warm-up, and the answers
            times: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(args.runs):
                for key, make in runs.items():
                    t0 = time.perf_counter()
                    make()
                    times[key].append(time.perf_counter() - t0)
            base = median(times["exact on plain parquet"])
            approx = answers[f"approx(relativeError={args.relative_error})"]
            entry: dict[str, Any] = {
                k: {"median_s": round(median(v), 3), "ratio": round(median(v) / base, 3)}
                for k, v in times.items()
            }
            entry["approx"] = {
                "fraction": approx.fraction,
                "steps": [[s.from_fraction, s.to_fraction, s.bytes_read] for s in approx.steps],
                "queries": len(approx.steps),
                "bytes_read": approx.bytesRead,
                "table_bytes": approx.totalBytes,
                "bytes_share": round(approx.bytesRead / approx.totalBytes, 4),
                "rows_read": approx.rowsRead,
                "interval_holds_exact": _covered(
                    approx.rows(), answers["exact on plain parquet"], group
                ),
                "speedup_vs_parquet": round(
                    base / median(times[f"approx(relativeError={args.relative_error})"]), 2
                ),
            }
            report["queries"][name] = entry
            print(name, json.dumps(entry), flush=True)
        report["load_average_at_end"] = load_average()
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2, default=str) + "\n")
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
