"""Bytes per precision: what ``approx(relativeError=e)`` reads for each ``e`` (issue #37).

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-approx python -m bench.approx_precision_bench \
    --sf 0.1 --cube-size 20000 --out bench/approx_precision_sf0.1.json

Writes (once; reused when present, the same table as ``bench.approx_bench`` with the same
options) TPC-H lineitem indexed on l_shipdate, l_extendedprice, l_partkey, computes the exact
answers once, then for each relative error runs ``approx`` of the ungrouped
``sum(l_extendedprice)`` (and, with ``--grouped``, the same grouped by l_returnflag and
l_linestatus plus a filtered ``count(*)``) and reports the bytes and rows it read, its
steps, the fraction reached, the error it made and whether its interval holds the exact
answer. No timing: bytes and rows only, so a loaded machine does not change the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.approx_bench import table_path
from bench.common import bench_session, indexed_copy, lineitem, load_average, machine

ERRORS = (0.1, 0.05, 0.02, 0.01, 0.005)

QUERIES: dict[str, dict[str, Any]] = {
    "sum": {"aggregates": ["sum(l_extendedprice) AS v"], "groupBy": None, "where": None},
    "sum, filtered": {
        "aggregates": ["sum(l_extendedprice) AS v"],
        "groupBy": None,
        "where": "l_quantity >= 10",
    },
    "grouped": {
        "aggregates": ["sum(l_extendedprice) AS v"],
        "groupBy": ["l_returnflag", "l_linestatus"],
        "where": None,
    },
}


def _exact(frame: Any, query: dict[str, Any]) -> dict[tuple[Any, ...], float]:
    from pyspark.sql import functions as F

    if query["where"]:
        frame = frame.where(query["where"])
    group = query["groupBy"] or []
    agg = F.sum("l_extendedprice").alias("v")
    rows = frame.groupBy(*group).agg(agg).collect() if group else frame.agg(agg).collect()
    return {tuple(r[c] for c in group): float(r["v"]) for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--cube-size", type=int, default=20_000)
    parser.add_argument("--errors", default=",".join(str(e) for e in ERRORS))
    parser.add_argument("--grouped", action="store_true", help="also the filtered and grouped")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    path = table_path(args.sf, args.cube_size)
    source = lineitem(args.sf)
    spark = bench_session()
    try:
        indexed_copy(spark, source, path, args.cube_size)
        table = qc.QbeastTable.forPath(spark, str(path))
        report: dict[str, Any] = {
            "machine": machine(),
            "load_average_at_start": load_average(),
            "command": "python -m bench.approx_precision_bench " + " ".join(sys.argv[1:]),
            "rows": table.toDF().count(),
            "queries": {},
        }
        names = list(QUERIES) if args.grouped else ["sum"]
        for name in names:
            query = QUERIES[name]
            exact = _exact(table.toDF(), query)
            group = query["groupBy"] or []
            curve = []
            for e in (float(x) for x in args.errors.split(",")):
                r = table.approx(
                    query["aggregates"],
                    where=query["where"],
                    groupBy=query["groupBy"],
                    relativeError=e,
                )
                worst, holds = 0.0, len(r.rows()) == len(exact)
                widest = 0.0  # the widest half-width, as a share of its estimate
                for row in r.rows():
                    if row["v_low"] is not None and float(row["v"]):
                        half = (float(row["v_high"]) - float(row["v_low"])) / 2
                        widest = max(widest, half / abs(float(row["v"])))
                    want = exact[tuple(row[c] for c in group)]
                    worst = max(worst, abs(float(row["v"]) - want) / abs(want))
                    low, high = row["v_low"], row["v_high"]
                    # an exact answer is a Decimal: compare in doubles, to their rounding
                    slack = 1e-12 * abs(want)
                    inside = low is not None and float(low) - slack <= want <= float(high) + slack
                    holds = holds and bool(row["v_reliable"]) and inside
                point = {
                    "relative_error": e,
                    "bytes_share": round(r.bytesRead / r.totalBytes, 4),
                    "bytes_read": r.bytesRead,
                    "rows_read": r.rowsRead,
                    "fraction": r.fraction,
                    "queries": len(r.steps),
                    "steps": [[s.from_fraction, s.to_fraction, s.rows_read] for s in r.steps],
                    "worst_error": round(worst, 5),
                    "widest_half_width": round(widest, 5),
                    "interval_holds_exact": holds,
                }
                curve.append(point)
                print(name, json.dumps(point), flush=True)
            report["queries"][name] = curve
        report["load_average_at_end"] = load_average()
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2, default=str) + "\n")
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
