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
import os
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import lineitem, machine, median
from bench.query_bench import aggregate

COLUMNS = "l_shipdate,l_extendedprice,l_partkey"


def _stages(port: int) -> list[dict[str, Any]]:
    base = f"http://localhost:{port}/api/v1/applications"
    with urllib.request.urlopen(base) as r:
        app = json.load(r)[0]["id"]
    with urllib.request.urlopen(f"{base}/{app}/stages?status=complete") as r:
        return list(json.load(r))


def _tasks(port: int, before: set[tuple[int, int]]) -> dict[str, Any]:
    """Tasks of the stages completed since ``before``: the largest stage's task figures."""
    base = f"http://localhost:{port}/api/v1/applications"
    with urllib.request.urlopen(base) as r:
        app = json.load(r)[0]["id"]
    new = [s for s in _stages(port) if (s["stageId"], s["attemptId"]) not in before]
    if not new:
        return {}
    scan = max(new, key=lambda s: s["numTasks"])
    url = f"{base}/{app}/stages/{scan['stageId']}/{scan['attemptId']}/taskList?length=10000"
    with urllib.request.urlopen(url) as r:
        tasks = json.load(r)
    times = sorted(t["duration"] / 1000 for t in tasks if "duration" in t)
    return {
        "stages": len(new),
        "tasks": scan["numTasks"],
        "task_median_s": median(times) if times else None,
        "task_max_s": times[-1] if times else None,
        "input_mb": round(scan["inputBytes"] / 1e6, 1),
        "input_rows": scan["inputRecords"],
    }


def _cpu_ms(port: int, before: set[tuple[int, int]]) -> float:
    """Executor CPU time (ms) of the stages completed since ``before``."""
    new = [s for s in _stages(port) if (s["stageId"], s["attemptId"]) not in before]
    return sum(s["executorCpuTime"] for s in new) / 1e6


def _done(port: int) -> set[tuple[int, int]]:
    return {(s["stageId"], s["attemptId"]) for s in _stages(port)} if port else set()


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

    out = Path(os.environ.get("QBEAST_BENCH_DIR", "/tmp/qbeast-bench-sample"))
    path = out / f"sample_sf{args.sf:g}_{args.cube_size}"
    source = lineitem(args.sf)
    conf = {}
    if args.ui_port:
        conf = {"spark.ui.enabled": "true", "spark.ui.port": str(args.ui_port)}
    spark = qc.session(None, connect_timeout=None, retry_timeout=None, **conf)
    try:
        plain = spark.read.parquet(source)
        if not (path / "_delta_log").exists():
            t0 = time.perf_counter()
            qc.write(plain, str(path), columnsToIndex=COLUMNS, cubeSize=args.cube_size)
            print(f"write {time.perf_counter() - t0:.1f} s", flush=True)
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
            before = _done(args.ui_port)
            answers[name] = aggregate(make())
            if args.ui_port:
                detail[name] = _tasks(args.ui_port, before)
        for _ in range(args.runs):
            for name, make in reads.items():
                before = _done(args.ui_port)
                t0 = time.perf_counter()
                aggregate(make())
                times[name].append(time.perf_counter() - t0)
                if args.ui_port:
                    cpus[name].append(_cpu_ms(args.ui_port, before))
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
