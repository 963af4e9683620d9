"""Hourly appends through ``df.write.format("qbeast")`` with default settings (issue 35):
the compaction the plugin's commit runs.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-me python -m bench.format_compaction_bench \
           --appends 100 --rows 400 --cube-size 2000 --every 50 \
           --out bench/format_compaction.json

The events of :func:`bench.common.hour_frame`, indexed on ``(event_time, user_id)``, are
written by a client that never calls qbeast-connect's write code: every write is
``df.write.format("qbeast")``, the first with ``columnStats`` covering every hour of the
run (a one-pass writer cannot widen the space later). Two tables get the same appends,
interleaved hour by hour with the order alternating: one created with no compaction
option (on by default), one with ``autoCompact=false``. Every ``--every`` appends the rows
so far are written at once with ``qc.write`` as the reference, and the report gives the
bytes each read's plan selects on the three tables (``bench.common.measure``), the
seconds of all appends (the compactions of the plugin's commit included) and the rows the
compactions rewrote (from the log: commits tagged ``qbeast.autoCompaction``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench.common import (
    START,
    USERS,
    UTC_SESSION,
    against_one_write,
    fresh_dir,
    hour_frame,
    machine,
)


def _space(appends: int) -> str:
    def stamp(seconds: int) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S.000000Z", time.gmtime(seconds))

    return json.dumps(
        {
            "event_time_min": stamp(START),
            "event_time_max": stamp(START + appends * 3600),
            "user_id_min": 0,
            "user_id_max": USERS - 1,
        }
    )


def _rewritten(path: str) -> tuple[int, int]:
    """Compaction commits and the rows they wrote, from the table's log."""
    commits = rows = 0
    for entry in sorted(Path(path, "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in entry.read_text().splitlines() if line]
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if (info.get("tags") or {}).get("qbeast.autoCompaction") == "true":
            commits += 1
            rows += sum(json.loads(a["add"]["stats"])["numRecords"] for a in actions if "add" in a)
    return commits, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=100)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--cube-size", type=int, default=2000)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session(None, connect_timeout=None, retry_timeout=None, **UTC_SESSION)
    paths = {"default": fresh_dir("format_default"), "off": fresh_dir("format_off")}
    seconds = {"default": 0.0, "off": 0.0}
    checkpoints: list[dict[str, Any]] = []
    report: dict[str, Any] = {
        "machine": machine(),
        "command": "python -m bench.format_compaction_bench "
        f"--appends {args.appends} --rows {args.rows} --cube-size {args.cube_size} "
        f"--every {args.every}",
        "checkpoints": checkpoints,
    }

    def write(which: str, hour: int) -> float:
        writer = hour_frame(spark, hour, args.rows).write.format("qbeast")
        if hour == 0:
            writer = (
                writer.option("columnsToIndex", "event_time,user_id")
                .option("cubeSize", str(args.cube_size))
                .option("columnStats", _space(args.appends))
            )
            if which == "off":
                writer = writer.option("autoCompact", "false")
        started = time.perf_counter()
        writer.mode("append").save(paths[which])
        return time.perf_counter() - started

    try:
        warm = fresh_dir("format_warm")
        for hour in range(3):  # the server's JVM and Python workers, before any timed write
            hour_frame(spark, hour, args.rows).write.format("qbeast").option(
                "columnsToIndex", "event_time,user_id"
            ).option("columnStats", _space(args.appends)).mode("append").save(warm)
        for hour in range(args.appends):
            for which in ("default", "off") if hour % 2 == 0 else ("off", "default"):
                seconds[which] += write(which, hour)
            hours = hour + 1
            if hours % args.every and hours != args.appends:
                continue
            reads = against_one_write(spark, hours, args.rows, args.cube_size, paths, "format_once")
            once, default, plain = reads["once"], reads["default"], reads["off"]
            commits, rows = _rewritten(paths["default"])
            checkpoints.append(
                {
                    "appends": hours,
                    "seconds_default": round(seconds["default"], 1),
                    "seconds_off": round(seconds["off"], 1),
                    "time_ratio": round(seconds["default"] / seconds["off"], 3),
                    "compactions": commits,
                    "rows_rewritten_per_row_appended": round(rows / (hours * args.rows), 3),
                    **reads,
                }
            )
            if args.out:
                Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
            last = checkpoints[-1]
            print(
                f"{hours} appends: time x{last['time_ratio']}, sample(0.01) "
                f"{default['reads']['sample(0.01)']['share']:.2%} (off "
                f"{plain['reads']['sample(0.01)']['share']:.2%}, once "
                f"{once['reads']['sample(0.01)']['share']:.2%}), user_id 1% "
                f"x{last['default_vs_once']['user_id 1%']['bytes_ratio']} (off "
                f"x{last['off_vs_once']['user_id 1%']['bytes_ratio']}), {commits} compactions, "
                f"rewritten {last['rows_rewritten_per_row_appended']} per row, files "
                f"{default['files']} (off {plain['files']})",
                flush=True,
            )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
