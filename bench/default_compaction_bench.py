"""Hourly appends with default settings (issue 35): size-tiered automatic compaction.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-me python -m bench.default_compaction_bench \
           --appends 1000 --rows 400 --cube-size 2000 --every 100 \
           --out bench/default_compaction.json

The successor of ``bench.timeseries_append_bench`` for issue 35. Two tables get the same
``--appends`` hourly batches of ``--rows`` events (:func:`bench.common.hour_frame`, as
``bench.timeseries_append_bench``; indexed on ``(event_time, user_id)``): one created with
no compaction option (a new
table: automatic compaction on, at the default thresholds), one created with
``autoCompact="false"``. Their appends are interleaved hour by hour, alternating which goes
first, so both pay the same load. Every ``--every`` appends, the rows so far are also
written at once to a third table, and the report gives, for both appended tables, the
revisions, files and bytes each read's plan selects (``sample(0.01)``, a 1% ``user_id``
filter, a 1-hour filter) as a share of the table and as a ratio to the one-write table, the
seconds of all appends so far (compactions included; three appends to a scratch table warm
the server up first) and the rows the compactions rewrote per row appended. The JSON is
rewritten at every checkpoint. ``--fanout k`` creates the compacted table with
``autoCompactMinNumFiles=k`` instead of the default.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import UTC_SESSION, against_one_write, fresh_dir, machine, timed_append


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--cube-size", type=int, default=2000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--fanout", type=int, default=0, help="autoCompactMinNumFiles (0: default)")
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session(
        None, connect_timeout=None, retry_timeout=None, **UTC_SESSION
    )
    columns = "event_time,user_id"
    default_path = fresh_dir("compaction_default")
    plain_path = fresh_dir("compaction_off")
    seconds = {"default": 0.0, "off": 0.0}
    compactions: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    report: dict[str, Any] = {
        "machine": machine(),
        "command": "python -m bench.default_compaction_bench "
        f"--appends {args.appends} --rows {args.rows} --cube-size {args.cube_size} "
        f"--every {args.every}" + (f" --fanout {args.fanout}" if args.fanout else ""),
        "checkpoints": checkpoints,
    }
    try:
        # warm up the server (JVM, Python workers) before any timed append
        warm = fresh_dir("compaction_warm")
        for hour in range(3):
            timed_append(spark, warm, hour, args.rows, [], columnsToIndex=columns,
                         cubeSize=args.cube_size)
        for hour in range(args.appends):
            order = ("default", "off") if hour % 2 == 0 else ("off", "default")
            for which in order:
                options: dict[str, Any] = {"columnsToIndex": columns, "cubeSize": args.cube_size}
                if which == "off" and hour == 0:
                    options["autoCompact"] = "false"
                if which == "default" and hour == 0 and args.fanout:
                    options["autoCompactMinNumFiles"] = args.fanout
                path = default_path if which == "default" else plain_path
                seconds[which] += timed_append(
                    spark, path, hour, args.rows, compactions if which == "default" else [],
                    mode="append" if hour else "errorifexists", **options,
                )
            hours = hour + 1
            if hours % args.every and hours != args.appends:
                continue
            reads = against_one_write(
                spark, hours, args.rows, args.cube_size,
                {"default": default_path, "off": plain_path}, "compaction_once",
            )
            once, default, plain = reads["once"], reads["default"], reads["off"]
            rewritten = sum(c["rows"] for c in compactions)
            checkpoints.append(
                {
                    "appends": hours,
                    "seconds_default": round(seconds["default"], 1),
                    "seconds_off": round(seconds["off"], 1),
                    "time_ratio": round(seconds["default"] / seconds["off"], 3),
                    "compactions": len(compactions),
                    "skipped_compactions": sum(1 for c in compactions if c["skipped"]),
                    "rows_rewritten_per_row_appended": round(rewritten / (hours * args.rows), 3),
                    **reads,
                }
            )
            report["compactions"] = compactions
            text = json.dumps(report, indent=2)
            if args.out:
                Path(args.out).write_text(text + "\n")
            last = checkpoints[-1]
            print(
                f"{hours} appends: time x{last['time_ratio']}, sample(0.01) "
                f"{default['reads']['sample(0.01)']['share']:.2%} (off "
                f"{plain['reads']['sample(0.01)']['share']:.2%}, once "
                f"{once['reads']['sample(0.01)']['share']:.2%}), user_id 1% "
                f"x{last['default_vs_once']['user_id 1%']['bytes_ratio']}, rewritten "
                f"{last['rows_rewritten_per_row_appended']} per row, files "
                f"{default['files']}",
                flush=True,
            )
        print(json.dumps(report, indent=2))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
