"""Where the time of an indexed write goes: Spark stage metrics and the write task's phases.

Runs, per scale factor and in one server: ``df.write.parquet`` (the reference), the indexed
write (``qc.write``), and two reference jobs that isolate one hop each: the receive-only
Python writer (rows to a Python worker as Arrow, nothing written) and
``df.repartition(n).write.parquet`` (the same rows through one JVM shuffle). For every job it
reads the stages from the server's UI REST API (run time, CPU, GC, shuffle bytes and time,
spill) and, for the indexed write, the per-task phases the plugin's write task records when
``QBEAST_WRITE_PROFILE`` names a file (see ``server_plugin/write_profile.py``).

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-me python bench/write_profile.py --sf 1,2 \
           [--cube-size 1000000] [--rounds 1] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, median, timed, warm_up
from bench.write_bench import COLUMNS, register_floor_source

STAGE_FIELDS = (
    "numTasks",
    "executorRunTime",
    "executorCpuTime",
    "jvmGcTime",
    "inputBytes",
    "outputBytes",
    "shuffleReadBytes",
    "shuffleFetchWaitTime",
    "shuffleWriteBytes",
    "shuffleWriteTime",
    "memoryBytesSpilled",
    "diskBytesSpilled",
    "peakExecutionMemory",
)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


class StageLog:
    """The stages of the server's application, read through its UI REST API."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1/applications"
        self.app = _get(self.base)[0]["id"]
        self.seen = self._ids()

    def _ids(self) -> set[int]:
        return {int(s["stageId"]) for s in _get(f"{self.base}/{self.app}/stages")}

    def new(self) -> list[dict[str, Any]]:
        """The stages completed since the last call, with the fields that matter here."""
        time.sleep(1.0)  # the listener bus posts stage ends asynchronously
        out = []
        for stage in _get(f"{self.base}/{self.app}/stages"):
            if int(stage["stageId"]) in self.seen or stage.get("status") != "COMPLETE":
                continue
            row = {"stage": int(stage["stageId"]), "name": stage.get("name", "")[:60]}
            for field in STAGE_FIELDS:
                row[field] = stage.get(field, 0)
            row["wall_s"] = _wall(stage)
            out.append(row)
        self.seen = self._ids()
        return sorted(out, key=lambda r: r["stage"])


def _wall(stage: dict[str, Any]) -> float:
    from datetime import datetime

    def parse(text: str) -> float:
        return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()

    try:
        return round(parse(stage["completionTime"]) - parse(stage["submissionTime"]), 2)
    except (KeyError, ValueError):
        return 0.0


def _summary(stages: list[dict[str, Any]]) -> dict[str, Any]:
    """Run-time shares of a job's stages in seconds (run and CPU summed over tasks)."""
    return {
        "stages": len(stages),
        "wall_s": round(sum(s["wall_s"] for s in stages), 2),
        "run_s": round(sum(s["executorRunTime"] for s in stages) / 1000, 2),
        "cpu_s": round(sum(s["executorCpuTime"] for s in stages) / 1e9, 2),
        "gc_s": round(sum(s["jvmGcTime"] for s in stages) / 1000, 2),
        "shuffle_write_mb": round(sum(s["shuffleWriteBytes"] for s in stages) / 2**20, 1),
        "shuffle_write_s": round(sum(s["shuffleWriteTime"] for s in stages) / 1e9, 2),
        "shuffle_read_mb": round(sum(s["shuffleReadBytes"] for s in stages) / 2**20, 1),
        "shuffle_fetch_wait_s": round(sum(s["shuffleFetchWaitTime"] for s in stages) / 1000, 2),
        "spill_memory_mb": round(sum(s["memoryBytesSpilled"] for s in stages) / 2**20, 1),
        "spill_disk_mb": round(sum(s["diskBytesSpilled"] for s in stages) / 2**20, 1),
    }


def _task_phases(path: str) -> dict[str, Any]:
    """Sums over the write tasks of the phases they recorded, and the slowest task."""
    lines = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    Path(path).write_text("")
    total: dict[str, float] = {}
    for line in lines:
        for key, value in line.items():
            if key != "pid":
                total[key] = round(total.get(key, 0.0) + float(value), 2)
    return {"tasks": len(lines), "sum": total,
            "slowest_task_s": round(max((x.get("task", 0.0) for x in lines), default=0.0), 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="1", help="comma-separated scale factors")
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--modes", default="default", help="default,shuffle,local")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    fd, profile = tempfile.mkstemp(prefix="qbeast-write-profile-", suffix=".jsonl")
    os.close(fd)
    os.environ["QBEAST_WRITE_PROFILE"] = profile  # inherited by the server's Python workers

    import qbeast_connect as qc
    from qbeast_connect.spark import write as write_module
    from qbeast_connect.spark import write_tasks
    from qbeast_connect.spark.server import free_port

    default_threshold = write_module.CONSOLIDATE_ABOVE_PARTITIONS
    default_max = write_tasks.DIRECT_WRITE_MAX_TASKS

    port = free_port()
    spark = qc.session(**{"spark.ui.enabled": "true", "spark.ui.port": str(port)})
    log = StageLog(port)
    floor_format = register_floor_source(spark)
    from pyspark.sql import functions as F

    report: dict[str, Any] = {"machine": machine(), "date": time.strftime("%Y-%m-%d"),
                              "command": "python bench/write_profile.py " + " ".join(sys.argv[1:]),
                              "sizes": {}}
    for sf in [float(x) for x in args.sf.split(",")]:
        df = spark.read.parquet(lineitem(sf))
        rows = df.count()
        warm_up(df, COLUMNS)
        log.new()
        Path(profile).write_text("")
        times: dict[str, list[float]] = {}
        jobs: dict[str, list[dict[str, Any]]] = {}
        phases: dict[str, list[float]] = {}
        tasks: dict[str, list[dict[str, Any]]] = {}
        files: dict[str, int] = {}
        with_weight = df.select("*", F.hash(*COLUMNS.split(",")).alias("_w"))
        for _ in range(args.rounds):
            with timed(times, "parquet"):
                df.write.parquet(fresh_dir("profile_parquet"))
            jobs.setdefault("parquet", []).append(_summary(log.new()))
            for mode in args.modes.split(","):
                key = "qbeast" if mode == "default" else f"qbeast_{mode}"
                # "shuffle": every input is shuffled by file group (as above 4 partitions
                # before the narrowed write); "local": no input is narrowed or shuffled
                write_module.CONSOLIDATE_ABOVE_PARTITIONS = {
                    "default": default_threshold, "shuffle": 0, "local": 1 << 30
                }[mode]
                write_tasks.DIRECT_WRITE_MAX_TASKS = 0 if mode == "shuffle" else default_max
                with timed(times, key):
                    result = qc.write(
                        df, fresh_dir("profile_qbeast"), columnsToIndex=COLUMNS,
                        cubeSize=args.cube_size,
                    )
                write_module.CONSOLIDATE_ABOVE_PARTITIONS = default_threshold
                write_tasks.DIRECT_WRITE_MAX_TASKS = default_max
                stages = log.new()
                jobs.setdefault(key, []).append(_summary(stages))
                jobs.setdefault(f"{key}_stages", []).append(stages)  # type: ignore[arg-type]
                tasks.setdefault(key, []).append(_task_phases(profile))
                files[key] = result.num_files
                for phase, seconds in result.timings.items():
                    phases.setdefault(f"{key}.{phase}", []).append(round(seconds, 2))
            with timed(times, "python_receive_only"):
                with_weight.write.format(floor_format).mode("append").save()
            jobs.setdefault("python_receive_only", []).append(_summary(log.new()))
            partitions = max(2, result.num_files)
            with timed(times, "parquet_after_shuffle"):
                df.repartition(partitions).write.parquet(fresh_dir("profile_shuffled"))
            jobs.setdefault("parquet_after_shuffle", []).append(_summary(log.new()))
        base = median(times["parquet"])
        report["sizes"][f"sf{sf:g}"] = {
            "rows": rows,
            "files": files,
            "times": {k: [round(v, 2) for v in vs] for k, vs in times.items()},
            "ratios": {k: round(median(vs) / base, 2) for k, vs in times.items()},
            "qbeast_timings": phases,
            "jobs": jobs,
            "write_tasks": tasks,
        }
        print(json.dumps({k: v for k, v in report["sizes"][f"sf{sf:g}"].items()
                          if k != "jobs"}, indent=1), flush=True)
        for name, summaries in jobs.items():
            if not name.endswith("_stages"):
                print(name, json.dumps(summaries[-1]), flush=True)
        for name, runs in jobs.items():
            if name.endswith("_stages"):
                for stage in runs[-1]:  # type: ignore[union-attr]
                    print(" ", name, json.dumps(stage), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    qc.stop()


if __name__ == "__main__":
    main()
