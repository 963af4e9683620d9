"""``QbeastTable.sample(f)`` with Spark's default split size against more, smaller splits.

Usage: python -m bench.sample_split_bench --table /tmp/qbeast-bench/out/q18_qbeast_1000000 \
    --fraction 0.1 --runs 4 --ui-port 4081 --min-partitions 4,8

Spark sizes file splits as min(maxPartitionBytes, bytes / minPartitionNum), and
minPartitionNum defaults to the default parallelism (the cores). A scan of 2 to 3 times
128 MB on 2 cores thus gets 3 tasks, and the third runs alone. Each round times the issue's
aggregate over ``sample(f)`` once per setting of ``spark.sql.files.minPartitionNum`` (unset
first), interleaved, and prints the scan's task count and median/max task time. The
table is only read.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_session, completed_stages, median, stage_tasks
from bench.query_bench import aggregate

CONF = "spark.sql.files.minPartitionNum"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", required=True)
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--ui-port", type=int, default=4081)
    parser.add_argument("--min-partitions", default="4,8")
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = bench_session(args.ui_port)
    try:
        table = qc.QbeastTable.forPath(spark, args.table)
        expected = aggregate(table.sample(args.fraction))  # warm-up
        settings: list[str | None] = [None, *args.min_partitions.split(",")]
        walls: dict[str | None, list[float]] = {s: [] for s in settings}
        for _ in range(args.runs):
            for setting in settings:
                if setting is None:
                    spark.conf.unset(CONF)
                else:
                    spark.conf.set(CONF, setting)
                before = completed_stages(args.ui_port)
                t0 = time.perf_counter()
                answer = aggregate(table.sample(args.fraction))
                walls[setting].append(time.perf_counter() - t0)
                if answer != expected:
                    raise SystemExit(f"answers differ: {answer} != {expected}")
                t = stage_tasks(args.ui_port, before)
                print(
                    f"{CONF}={setting or 'unset'}: {walls[setting][-1]:.2f} s, {t['tasks']} tasks, "
                    f"task median {t['task_median_s']:.2f} s, max {t['task_max_s']:.2f} s",
                    flush=True,
                )
        spark.conf.unset(CONF)
        for setting in settings:
            print(f"{CONF}={setting or 'unset'}: median {median(walls[setting]):.2f} s")
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
