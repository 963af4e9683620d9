"""Where the time of ``QbeastTable.sample(f)`` goes, against ``df.sample(f)`` on plain parquet.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-sample python -m bench.sample_bench --sf 1 \
    --cube-size 100000 --runs 5 [--ui-port 4072]

Writes (once; reused when present) the TPC-H lineitem table indexed on l_shipdate,
l_extendedprice, l_partkey, then times, interleaved in one session, the aggregate of
``bench.query_bench`` over: plain parquet ``df.sample(f)``, and ``QbeastTable.sample(f)``.
With ``--ui-port`` it also reports, per query, the tasks of its scan stage (count, median
and max task time) from Spark's UI REST API.
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
    completed_stages,
    executor_cpu_ms,
    indexed_copy,
    lineitem,
    machine,
    median,
    out_dir,
    stage_tasks,
)
from bench.query_bench import aggregate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fractions", default="0.1,0.01")
    parser.add_argument("--ui-port", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    path = out_dir("/tmp/qbeast-bench-sample") / f"sample_sf{args.sf:g}_{args.cube_size}"
    source = lineitem(args.sf)
    spark = bench_session(args.ui_port)
    try:
        plain = spark.read.parquet(source)
        indexed_copy(spark, source, path, args.cube_size)
        table = qc.QbeastTable.forPath(spark, str(path))
        fractions = [float(f) for f in args.fractions.split(",")]
        reads = {}
        for f in fractions:
            reads[f"plain df.sample({f})"] = lambda f=f: plain.sample(f)
            reads[f"qbeast sample({f})"] = lambda f=f: table.sample(f)
        times: dict[str, list[float]] = {k: [] for k in reads}
        cpus: dict[str, list[float]] = {k: [] for k in reads}
        detail: dict[str, Any] = {}
        answers: dict[str, Any] = {}
        for name, make in reads.items():  # warm-up, with task figures
            before = completed_stages(args.ui_port)
            answers[name] = aggregate(make())
            if args.ui_port:
                detail[name] = stage_tasks(args.ui_port, before)
        for _ in range(args.runs):
            for name, make in reads.items():
                before = completed_stages(args.ui_port)
                t0 = time.perf_counter()
                aggregate(make())
                times[name].append(time.perf_counter() - t0)
                if args.ui_port:
                    cpus[name].append(executor_cpu_ms(args.ui_port, before))
        report = {
            "machine": machine(),
            "command": "python -m bench.sample_bench " + " ".join(sys.argv[1:]),
            "queries": {},
        }
        for f in fractions:
            base = median(times[f"plain df.sample({f})"])
            base_cpu = median(cpus[f"plain df.sample({f})"]) if args.ui_port else 0.0
            for name in (f"plain df.sample({f})", f"qbeast sample({f})"):
                m = median(times[name])
                cpu = {}
                if args.ui_port:
                    c = median(cpus[name])
                    cpu = {"task_cpu_ms": round(c), "cpu_ratio": round(c / base_cpu, 3)}
                report["queries"][name] = {
                    "median_s": round(m, 3),
                    "ratio": round(m / base, 3),
                    **cpu,
                    "rows": answers[name][2],
                    **detail.get(name, {}),
                }
                print(name, report["queries"][name], flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
