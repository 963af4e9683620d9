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
import datetime
import json
import time
from pathlib import Path
from typing import Any

from bench.common import fresh_dir, machine

START = 1_704_067_200  # 2024-01-01 00:00:00 UTC
USERS = 100_000


def hour_frame(spark: Any, hour: int, rows: int) -> Any:
    """The events of one hour: deterministic, so the plan needs no freezing."""
    base = START + hour * 3600
    return spark.range(rows).selectExpr(
        f"timestamp_seconds({base} + pmod(hash(id, {hour}, 1), 3600)) AS event_time",
        f"pmod(hash(id, {hour}, 2), {USERS}) AS user_id",
        f"sha2(cast(id * 1000 + {hour} AS string), 256) AS payload",
    )


def all_frame(spark: Any, hours: int, rows: int) -> Any:
    """Every hour's events in one DataFrame (the same rows as the appends)."""
    frame = spark.range(hours * rows).selectExpr(
        f"id % {rows} AS id", f"cast(id DIV {rows} AS int) AS hour"
    )
    return frame.selectExpr(
        f"timestamp_seconds({START} + hour * 3600 + pmod(hash(id, hour, 1), 3600)) AS event_time",
        f"pmod(hash(id, hour, 2), {USERS}) AS user_id",
        "sha2(cast(id * 1000 + hour AS string), 256) AS payload",
    )


def reads(hours: int) -> dict[str, dict[str, Any]]:
    """The three reads: where/fraction arguments of ``explainScan``."""
    mid = datetime.datetime.fromtimestamp(START + (hours // 2) * 3600, datetime.UTC)
    end = mid + datetime.timedelta(hours=1)
    hour_filter = (
        f"event_time >= TIMESTAMP '{mid:%Y-%m-%d %H:%M:%S}' "
        f"AND event_time < TIMESTAMP '{end:%Y-%m-%d %H:%M:%S}'"
    )
    return {
        "sample(0.01)": {"fraction": 0.01},
        "user_id 1%": {"where": f"user_id < {USERS // 100}"},
        "1 hour": {"where": hour_filter},
    }


def measure(spark: Any, path: str, hours: int) -> dict[str, Any]:
    """Revisions, files and the bytes each read selects."""
    import qbeast_connect as qc

    table = qc.QbeastTable.forPath(spark, path)
    files = table.snapshot.files
    out: dict[str, Any] = {
        "revisions": len([r for r in table.revisionIDs() if r > 0]),
        "revisions_with_files": len({f.revision_id for f in files}),
        "files": len(files),
        "bytes": sum(f.size for f in files),
        "rows": table.toDF().count(),
        "reads": {},
    }
    for name, args in reads(hours).items():
        scan = table.explainScan(**args)
        row: dict[str, Any] = {
            "files": scan.selected_files,
            "bytes": scan.selected_bytes,
            "share": round(scan.selected_bytes / scan.total_bytes, 4),
        }
        if "where" in args:
            row["rows"] = table.filter(args["where"]).count()
        out["reads"][name] = row
    return out


def compare(appended: dict[str, Any], once: dict[str, Any]) -> dict[str, Any]:
    """Ratios of the appended table's bytes to the one-write table's, per read."""
    return {
        name: {
            "bytes_ratio": round(row["bytes"] / max(1, once["reads"][name]["bytes"]), 3),
            "same_rows": row.get("rows") == once["reads"][name].get("rows"),
        }
        for name, row in appended["reads"].items()
    }


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
        **{"spark.sql.session.timeZone": "UTC"},
    )
    try:
        columns = "event_time,user_id"
        appended_path = fresh_dir("timeseries_appended")
        once_path = fresh_dir("timeseries_once")
        compact_path = fresh_dir("timeseries_autocompact") if args.auto_compact else ""
        append_seconds = compact_seconds = 0.0
        compactions: list[dict[str, Any]] = []
        for hour in range(args.appends):
            started = time.perf_counter()
            qc.write(
                hour_frame(spark, hour, args.rows),
                appended_path,
                mode="append",
                columnsToIndex=columns,
                cubeSize=args.cube_size,
            )
            append_seconds += time.perf_counter() - started
            if not args.auto_compact:
                continue
            started = time.perf_counter()
            result = qc.write(
                hour_frame(spark, hour, args.rows),
                compact_path,
                mode="append",
                columnsToIndex=columns,
                cubeSize=args.cube_size,
                autoCompact="true",
            )
            compact_seconds += time.perf_counter() - started
            if result.compaction is not None:
                done = result.compaction
                compactions.append(
                    {
                        "after_append": hour + 1,
                        "removed_files": done.removed_files,
                        "added_files": done.added_files,
                        "rows": done.rows,
                        "skipped": done.skipped,
                    }
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
