"""A year of daily partitions: a time-partitioned qbeast table against the same events in
one unpartitioned qbeast table and in plain parquet partitioned by day, in ONE run.

Events: ``--rows`` rows spread evenly over 2024 (UTC), ``user_id`` uniform in [0, 10000),
a double and a 40-character payload. Both qbeast tables are indexed on
``event_time, user_id`` with the same ``cubeSize``; the parquet table is written by Spark
with ``partitionBy("day")``.

For each query the script reports, side by side: files and bytes opened (qbeast:
``explainScan``; parquet: the files of the partitions Spark's partition pruning keeps, all
of them when the filter does not name the partition column) and the median wall time of
``count()`` over ``--repeat`` runs. Writes are timed once each. Wall times on a shared
machine are noise: compare ratios within the run, and bytes.

Usage:
    QBEAST_BENCH_DIR=/tmp/qbeast-bench-parts .venv/bin/python bench/time_partitions_bench.py \\
        --rows 1000000 --cube-size 50000 --out bench/time_partitions_1m.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import dir_bytes, fresh_dir, machine, md_table, median

START = 1_704_067_200  # 2024-01-01T00:00:00Z
YEAR_SECONDS = 366 * 86_400  # 2024 is a leap year

QUERIES = {
    "user 1% over the year": ("user_id between 100 and 199", None),
    "user 1% in one month": (
        "event_time >= timestamp'2024-06-01 00:00:00Z' "
        "and event_time < timestamp'2024-07-01 00:00:00Z' and user_id between 100 and 199",
        "day >= '2024-06-01' and day < '2024-07-01' and user_id between 100 and 199",
    ),
    "one day, all users": (
        "event_time >= timestamp'2024-03-10 00:00:00Z' "
        "and event_time < timestamp'2024-03-11 00:00:00Z'",
        "day = '2024-03-10'",
    ),
}


def _events(spark: Any, rows: int) -> Any:
    step = YEAR_SECONDS / rows
    return spark.sql(
        f"select id, timestamp_seconds({START} + cast(id * {step} as bigint)) as event_time, "
        "cast(pmod(hash(id, 7), 10000) as int) as user_id, "
        "cast(pmod(hash(id, 11), 100000) as double) / 7 as amount, "
        "repeat(substr(md5(cast(id as string)), 1, 20), 2) as payload "
        f"from range({rows})"
    )


def _parquet_files(path: str, where_parquet: str | None) -> tuple[int, int]:
    """Files and bytes of the day partitions a filter keeps (all without one)."""
    import datetime as dt

    files = bytes_ = 0
    for entry in sorted(os.listdir(path)):
        if not entry.startswith("day="):
            continue
        day = entry[4:]
        if where_parquet is not None and "day" in where_parquet:
            keep = _day_kept(where_parquet, dt.date.fromisoformat(day))
            if not keep:
                continue
        for name in os.listdir(os.path.join(path, entry)):
            if name.endswith(".parquet"):
                files += 1
                bytes_ += os.path.getsize(os.path.join(path, entry, name))
    return files, bytes_


def _day_kept(where: str, day: Any) -> bool:
    if "day = '2024-03-10'" in where:
        return day.isoformat() == "2024-03-10"
    return "2024-06-01" <= day.isoformat() < "2024-07-01"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cube-size", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session(**{"spark.sql.shuffle.partitions": "4"})
    events = _events(spark, args.rows)
    paths = {
        "qbeast daily": fresh_dir("tp_qbeast_daily"),
        "qbeast one table": fresh_dir("tp_qbeast_flat"),
        "parquet by day": fresh_dir("tp_parquet_daily"),
    }
    writes: dict[str, float] = {}
    t = time.perf_counter()
    qc.write(events, paths["qbeast daily"], columnsToIndex="event_time,user_id",
             cubeSize=args.cube_size, partitionBy="event_time:daily")
    writes["qbeast daily"] = time.perf_counter() - t
    t = time.perf_counter()
    qc.write(events, paths["qbeast one table"], columnsToIndex="event_time,user_id",
             cubeSize=args.cube_size)
    writes["qbeast one table"] = time.perf_counter() - t
    t = time.perf_counter()
    events.selectExpr("*", "date_format(event_time, 'yyyy-MM-dd') as day").write.partitionBy(
        "day"
    ).mode("overwrite").parquet(paths["parquet by day"])
    writes["parquet by day"] = time.perf_counter() - t

    tables = {name: qc.QbeastTable.forPath(spark, p) for name, p in paths.items() if "qbeast" in name}
    results: list[dict[str, Any]] = []
    for query, (where, where_parquet) in QUERIES.items():
        counts = set()
        for name, path in paths.items():
            if name in tables:
                scan = tables[name].explainScan(where)
                files, opened = scan.selected_files, scan.selected_bytes
                total_files, total = scan.total_files, scan.total_bytes
                run = lambda n=name, w=where: tables[n].filter(w).count()  # noqa: E731
            else:
                files, opened = _parquet_files(path, where_parquet)
                total_files, total = _parquet_files(path, None)
                df = spark.read.parquet(path)
                run = lambda d=df, w=(where_parquet or where): d.where(w).count()  # noqa: E731
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                counts.add(run())
                times.append(time.perf_counter() - t)
            results.append({
                "query": query, "table": name, "files": files, "total_files": total_files,
                "bytes": opened, "total_bytes": total, "seconds": median(times),
            })
        assert len(counts) == 1, f"{query}: answers differ {counts}"
    report = {
        "machine": machine(),
        "rows": args.rows,
        "cube_size": args.cube_size,
        "write_seconds": writes,
        "table_bytes": {name: dir_bytes(p) for name, p in paths.items()},
        "queries": results,
    }
    rows = [
        [r["query"], r["table"], f"{r['files']} / {r['total_files']}",
         f"{r['bytes']:,} / {r['total_bytes']:,} ({r['bytes'] / max(1, r['total_bytes']):.1%})",
         f"{r['seconds']:.2f}"]
        for r in results
    ]
    print(md_table(["query", "table", "files", "bytes opened", "count() s"], rows))
    print(json.dumps({"write_seconds": writes, "table_bytes": report["table_bytes"]}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    qc.stop()


if __name__ == "__main__":
    main()
