"""Steady time-ordered appends (issue 20): revisions, files and bytes read.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-me python -m bench.timeseries_append_bench \
           --appends 100 --rows 400 --cube-size 2000 --out bench/timeseries_append.json

Writes ``--appends`` hourly batches of ``--rows`` events (``event_time`` inside the hour,
``user_id`` a pseudo-random int in [0, 100000), a 64-character ``payload``) to one qbeast
table indexed on ``(event_time, user_id)``, one append per hour in time order, and the same
rows to a second table in one write. For each table it reports the revisions, the files,
and for three reads the bytes of the files the read plan selects
(``QbeastTable.explainScan``), as a share of the table's bytes and as a ratio to the
one-write table's bytes: ``sample(0.01)``, a 1% ``user_id`` filter and a 1-hour
``event_time`` filter in the middle of the range. Row counts of the filters are compared
between the two tables. With ``--optimize-each`` the appended table's revisions are then
each optimized (``optimize(revisionID)``: files rewritten by weight band, revisions kept)
and measured again; with ``--merge`` it is then optimized with ``mergeRevisions=True`` (all
revisions re-indexed into one) and measured again.

With ``--auto-compact`` a third table gets the same appends with ``autoCompact=true`` (at
the default thresholds), interleaved hour by hour with the plain table's appends so that
both see the same load; the report adds that table's figures, the compactions that ran and
the total seconds of each table's appends (compactions included), side by side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import (
    UTC_SESSION,
    all_frame,
    compare,
    fresh_dir,
    machine,
    measure,
    timed_append,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=100)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--cube-size", type=int, default=2000)
    parser.add_argument("--merge", action="store_true")
    parser.add_argument("--optimize-each", action="store_true")
    parser.add_argument("--auto-compact", action="store_true")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session(
        None,
        connect_timeout=None,
        retry_timeout=None,
        **UTC_SESSION,
    )
    try:
        columns = "event_time,user_id"
        appended_path = fresh_dir("timeseries_appended")
        once_path = fresh_dir("timeseries_once")
        compact_path = fresh_dir("timeseries_autocompact") if args.auto_compact else ""
        append_seconds = compact_seconds = 0.0
        compactions: list[dict[str, Any]] = []
        options: dict[str, Any] = {"columnsToIndex": columns, "cubeSize": args.cube_size}
        for hour in range(args.appends):
            append_seconds += timed_append(spark, appended_path, hour, args.rows, [], **options)
            if args.auto_compact:
                compact_seconds += timed_append(
                    spark, compact_path, hour, args.rows, compactions, autoCompact="true",
                    **options,
                )
        qc.write(
            all_frame(spark, args.appends, args.rows),
            once_path,
            columnsToIndex=columns,
            cubeSize=args.cube_size,
        )
        once = measure(spark, once_path, args.appends)
        appended = measure(spark, appended_path, args.appends)
        report: dict[str, Any] = {
            "label": args.label,
            "machine": machine(),
            "command": "python -m bench.timeseries_append_bench "
            f"--appends {args.appends} --rows {args.rows} --cube-size {args.cube_size}"
            + (" --optimize-each" if args.optimize_each else "")
            + (" --merge" if args.merge else "")
            + (" --auto-compact" if args.auto_compact else ""),
            "append_seconds_total": round(append_seconds, 1),
            "once": once,
            "appended": appended,
            "appended_vs_once": compare(appended, once),
        }
        if args.auto_compact:
            compacted = measure(spark, compact_path, args.appends)
            compacted["compactions"] = compactions
            report["auto_compact"] = compacted
            report["auto_compact_vs_once"] = compare(compacted, once)
            report["auto_compact_append_seconds_total"] = round(compact_seconds, 1)
            report["auto_compact_cost_ratio"] = round(compact_seconds / append_seconds, 2)
            report["auto_compact_rows_rewritten"] = sum(c["rows"] for c in compactions)
        if args.optimize_each:
            table = qc.QbeastTable.forPath(spark, appended_path)
            rewritten = [
                table.optimize(r) for r in sorted({f.revision_id for f in table.snapshot.files})
            ]
            optimized = measure(spark, appended_path, args.appends)
            optimized["optimize"] = {
                "removed_files": sum(r.removed_files for r in rewritten),
                "added_files": sum(r.added_files for r in rewritten),
            }
            report["optimized_each_revision"] = optimized
            report["optimized_each_revision_vs_once"] = compare(optimized, once)
        if args.merge:
            table = qc.QbeastTable.forPath(spark, appended_path)
            result = table.optimize(mergeRevisions=True)
            merged = measure(spark, appended_path, args.appends)
            merged["optimize"] = {
                "removed_files": result.removed_files,
                "added_files": result.added_files,
                "rows": result.rows,
            }
            report["merged"] = merged
            report["merged_vs_once"] = compare(merged, once)
        text = json.dumps(report, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
