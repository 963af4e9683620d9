"""What ``optimize()`` does to the bytes a sample and a filter select, on a table written once.

TPC-H ``lineitem`` indexed on ``l_shipdate, l_extendedprice, l_partkey``: the bytes that
``sample(0.01)`` and a 1% ``l_partkey`` filter select through the index (``explainScan``),
and the file count, right after the write and after a full ``optimize()``. An optimize
rewrites the same rows into the same tree; it should select no more bytes afterwards.

    QBEAST_BENCH_DIR=/tmp/qb-opt python -m bench.optimize_reads_bench --sf 0.1,1 --out bench/optimize_reads.json
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.common import fresh_dir, lineitem, load_average, machine, optimized, save_report

INDEXED = "l_shipdate,l_extendedprice,l_partkey"


def _reads(table: Any, sf: float) -> dict[str, int]:
    limit = max(1, int(200_000 * sf / 100))
    return {
        "sample(0.01)": table.explainScan(fraction=0.01).selected_bytes,
        "filter 1%": table.explainScan(where=f"l_partkey <= {limit}").selected_bytes,
        "files": len(table._state.adds),
    }


def run(spark: Any, sf: float, cube_size: int) -> dict[str, Any]:
    import qbeast_connect as qc

    path = fresh_dir(f"optimize_reads_sf{sf}")
    qc.write(spark.read.parquet(lineitem(sf)), path, columnsToIndex=INDEXED, cubeSize=cube_size)
    table = qc.QbeastTable.forPath(spark, path)
    before = _reads(table, sf)
    table, seconds = optimized(table)
    after = _reads(table, sf)
    return {
        "sf": sf,
        "cube_size": cube_size,
        "before": before,
        "after": after,
        "optimize_s": round(seconds, 2),
        "ratio": {k: round(after[k] / max(1, before[k]), 3) for k in ("sample(0.01)", "filter 1%")},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="0.1,1")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    import qbeast_connect as qc

    spark = qc.session()
    report: dict[str, Any] = {"machine": machine(), "load_before": load_average(), "runs": []}
    for sf in (float(v) for v in args.sf.split(",")):
        # the cube size of the other benchmarks: 100,000 rows per 6M (sf 1)
        report["runs"].append(run(spark, sf, max(1000, int(100_000 * sf))))
        print(report["runs"][-1], flush=True)
    report["load_after"] = load_average()
    save_report(report, args.out or None)
    qc.stop()


if __name__ == "__main__":
    main()
