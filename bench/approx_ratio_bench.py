"""The #21 target alone, measured long: ``approx(relativeError=0.01)`` of
``sum(l_extendedprice)`` against the exact sum on plain parquet, interleaved one after the
other, in several rounds.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-approx python -m bench.approx_ratio_bench --sf 10 \
    --cube-size 1000000 --rounds 4 --runs 15 --out bench/approx_ratio_sf10.json

``bench.approx_bench`` times more shapes with few runs; on a shared machine its one median
moves by +-20% between runs. This reports each round's medians and ratio, and the median
ratio over every pair of runs. Needs the table ``bench.approx_bench`` writes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.approx_bench import table_path
from bench.common import bench_session, lineitem, machine, median, save_report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=10.0)
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--relative-error", type=float, default=0.01)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from pyspark.sql import functions as F

    import qbeast_connect as qc

    path = table_path(args.sf, args.cube_size, written=True)
    spark = bench_session()
    try:
        table = qc.QbeastTable.forPath(spark, str(path))
        plain = spark.read.parquet(lineitem(args.sf))

        def approx() -> Any:
            return table.approx("sum(l_extendedprice) AS r", relativeError=args.relative_error)

        def exact() -> Any:
            return plain.agg(F.sum("l_extendedprice")).collect()

        for _ in range(3):
            approx()
            exact()
        report: dict[str, Any] = {
            "machine": machine(),
            "command": "python -m bench.approx_ratio_bench " + " ".join(sys.argv[1:]),
            "rounds": [],
        }
        ratios: list[float] = []
        holds = True
        truth = exact()[0][0]
        for _ in range(args.rounds):
            load = round(os.getloadavg()[0], 2)
            a_times, e_times = [], []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                result = approx()
                a_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                exact()
                e_times.append(time.perf_counter() - t0)
                ratios.append(e_times[-1] / a_times[-1])
                row = result.rows()[0]
                holds = holds and row["r_low"] <= truth <= row["r_high"]
            report["rounds"].append(
                {
                    "load_average_at_start": load,
                    "approx_median_s": round(median(a_times), 4),
                    "exact_parquet_median_s": round(median(e_times), 4),
                    "ratio_of_medians": round(median(e_times) / median(a_times), 2),
                }
            )
            print(report["rounds"][-1], flush=True)
        report["median_ratio_over_all_pairs"] = round(median(ratios), 2)
        report["pairs_at_10x_or_more"] = f"{sum(r >= 10 for r in ratios)}/{len(ratios)}"
        report["interval_held_the_exact_sum_every_time"] = holds
        save_report(report, args.out)
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
