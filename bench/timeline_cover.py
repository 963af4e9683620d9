"""Cover planning for a one-year range over five update periods: timelines vs naive checks.

The Lens seed counts the existence checks of its cover algorithm for a whole year over
YEARLY, MONTHLY, DAILY, HOURLY and MINUTELY with no partitions present: 1 + 12 + 365 +
8,760 + 525,600 = 534,738, one metastore call each. This script builds real Delta tables
(one per update period, written by the plugin's timeline writer, no Spark needed) for a
few scenarios and plans the cover of [year-01-01, year+1-01-01) twice in the same run:

* naive: every existence check is one storage call (a listing of the partition
  directory ``dt=<value>/`` of the table holding the period, as an object-store LIST:
  the cheapest per-partition probe; a Delta table has no per-partition metadata, so a
  faithful probe would read the log, see the last table);
* timelines: one metadata load (Delta snapshot) per table, then every check is answered
  from the in-memory timelines (``qbeast_connect.timeline.cover.TimelineOracle``).

Both plans are checked to be identical. Storage calls are counted by a counting storage
wrapper. Optionally, a sample of checks is also timed with a Delta snapshot read per
check ("naive over the Delta log") and extrapolated to the full count (labelled so).

Usage:
    .venv/bin/python bench/timeline_cover.py [--year 2015] [--repeat 3] [--snapshot-sample 200]

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa

from qbeast_connect.timeline import TimePartition, TimeRange, UpdatePeriod
from qbeast_connect.timeline.cover import CoverPlan, TimelineOracle, plan_cover
from qbeast_connect.timeline.plan import TimelineWritePlan
from qbeast_connect.timeline.timeline import PartitionTimeline, column_timelines
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.storage import FileInfo, LocalStorage, storage_for
from server_plugin.timeline_writer import (
    commit_timeline_write,
    partition_dir,
    write_partition_file,
)

COLUMN = "dt"
PERIODS = [
    UpdatePeriod.YEARLY,
    UpdatePeriod.MONTHLY,
    UpdatePeriod.DAILY,
    UpdatePeriod.HOURLY,
    UpdatePeriod.MINUTELY,
]
SCHEMA = arrow_schema_to_delta(pa.schema([("v", pa.int64()), (COLUMN, pa.string())]))


class CountingStorage(LocalStorage):
    """A LocalStorage that counts every call that reaches the file system."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.calls = 0

    def read_bytes(self, rel_path: str) -> bytes:
        self.calls += 1
        return super().read_bytes(rel_path)

    def exists(self, rel_path: str) -> bool:
        self.calls += 1
        return super().exists(rel_path)

    def file_info(self, rel_path: str) -> FileInfo:
        self.calls += 1
        return super().file_info(rel_path)

    def list_prefix(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        self.calls += 1
        return super().list_prefix(rel_dir, start_after=start_after)

    def list_files_recursive(self, rel_dir: str = "") -> list[FileInfo]:
        self.calls += 1
        return super().list_files_recursive(rel_dir)


@dataclass
class Scenario:
    name: str
    partitions: Mapping[UpdatePeriod, list[str]]


def scenarios(year: int) -> list[Scenario]:
    y = TimeRange.of(f"{year}-01-01", f"{year + 1}-01-01")
    months = [str(p) for p in y.partitions(UpdatePeriod.MONTHLY)]
    december = TimeRange.of(f"{year}-12-01", f"{year + 1}-01-01")
    christmas = TimeRange.of(f"{year}-12-25", f"{year}-12-26")
    return [
        Scenario("no partitions (the seed's count)", {}),
        Scenario("yearly rollup present", {UpdatePeriod.YEARLY: [str(year)]}),
        Scenario(
            "Jan-Nov monthly, Dec daily but the 25th, which is hourly",
            {
                UpdatePeriod.MONTHLY: months[:11],
                UpdatePeriod.DAILY: [
                    str(p)
                    for p in december.partitions(UpdatePeriod.DAILY)
                    if str(p) != f"{year}-12-25"
                ],
                UpdatePeriod.HOURLY: [str(p) for p in christmas.partitions(UpdatePeriod.HOURLY)],
            },
        ),
    ]


def build_tables(root: Path, scenario: Scenario) -> dict[str, UpdatePeriod]:
    """One Delta table per update period, holding one row per partition of the scenario."""
    tables: dict[str, UpdatePeriod] = {}
    for period in PERIODS:
        path = str(root / period.value)
        storage = storage_for(path)
        values = scenario.partitions.get(period, [])
        files = [
            write_partition_file(storage, COLUMN, value, pa.table({"v": pa.array([i], pa.int64())}))
            for i, value in enumerate(values)
        ]
        plan = TimelineWritePlan(
            table_path=path,
            operation="write",
            column=COLUMN,
            read_version=-1,
            period=period.value,
            schema_string=SCHEMA,
            txn_id=str(uuid.uuid4()),
        )
        commit_timeline_write(plan, files)
        tables[path] = period
    return tables


def naive_oracle(storages: Mapping[str, CountingStorage]) -> Callable[..., bool]:
    def exists(table: str, period: UpdatePeriod, partition: TimePartition) -> bool:
        # one LIST of the partition's directory: it exists when it holds a file
        return bool(storages[table].list_prefix(partition_dir(COLUMN, str(partition))))

    return exists


def load_timelines(
    storages: Mapping[str, CountingStorage],
) -> dict[str, dict[UpdatePeriod, PartitionTimeline]]:
    out: dict[str, dict[UpdatePeriod, PartitionTimeline]] = {}
    for table, storage in storages.items():
        snap = read_snapshot(storage)  # the one metadata load of this table
        values = [add.partition_values.get(COLUMN) for add in snap.files.values()]
        out[table] = column_timelines(snap.configuration, COLUMN, values) or {}
    return out


def best_of(
    repeat: int, fn: Callable[[], tuple[CoverPlan, int, int]]
) -> tuple[CoverPlan, int, int, float]:
    best = float("inf")
    result: tuple[CoverPlan, int, int] | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return (*result, best)


def measure(
    tables: Mapping[str, UpdatePeriod], year_range: TimeRange, repeat: int, snapshot_sample: int
) -> dict[str, object]:
    layout: dict[str, Iterable[UpdatePeriod]] = {t: [p] for t, p in tables.items()}

    def naive() -> tuple[CoverPlan, int, int]:
        storages = {t: CountingStorage(t) for t in tables}
        plan = plan_cover(year_range, layout, naive_oracle(storages))
        return plan, sum(s.calls for s in storages.values()), 0

    def with_timelines() -> tuple[CoverPlan, int, int]:
        storages = {t: CountingStorage(t) for t in tables}
        timelines = load_timelines(storages)
        plan = plan_cover(year_range, layout, TimelineOracle(timelines))
        return plan, sum(s.calls for s in storages.values()), len(timelines)

    naive_plan, naive_calls, _, naive_s = best_of(repeat, naive)
    tl_plan, tl_calls, tl_loads, tl_s = best_of(repeat, with_timelines)
    assert naive_plan.parts == tl_plan.parts and naive_plan.uncovered == tl_plan.uncovered

    # the timelines stay in memory (a Fact keeps them): later plans need no load at all
    oracle = TimelineOracle(load_timelines({t: CountingStorage(t) for t in tables}))
    replan_s = best_of(repeat, lambda: (plan_cover(year_range, layout, oracle), 0, 0))[3]
    row: dict[str, object] = {
        "checks": tl_plan.existence_checks,
        "naive_calls": naive_calls,
        "naive_s": naive_s,
        "loads": tl_loads,
        "tl_calls": tl_calls,
        "tl_s": tl_s,
        "replan_s": replan_s,
        "parts": len(tl_plan.parts),
        "complete": tl_plan.complete,
    }
    if snapshot_sample > 0:
        storages = {t: storage_for(t) for t in tables}
        names = list(tables)
        start = time.perf_counter()
        for i in range(snapshot_sample):
            read_snapshot(storages[names[i % len(names)]])
        per_check = (time.perf_counter() - start) / snapshot_sample
        row["snapshot_per_check_ms"] = per_check * 1000
        row["snapshot_extrapolated_s"] = per_check * tl_plan.existence_checks
    return row


def _seconds(value: object) -> str:
    s = float(value)  # type: ignore[arg-type]
    if s < 1:
        return f"{s * 1000:.2f} ms"
    return f"{s:,.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--year", type=int, default=2015)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument(
        "--snapshot-sample",
        type=int,
        default=200,
        help="checks timed with a Delta snapshot read each, extrapolated (0: skip)",
    )
    parser.add_argument("--root", default=None, help="where to build the tables (default: tmp)")
    parser.add_argument("--out", default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    if args.out:
        import contextlib
        import io
        import json

        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main([a for a in (argv or sys.argv[1:]) if a not in ("--out", args.out)])
        text = buffer.getvalue()
        print(text)
        Path(args.out).write_text(json.dumps({"markdown": text}))
        return code

    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="timeline_cover_"))
    year_range = TimeRange.of(f"{args.year}-01-01", f"{args.year + 1}-01-01")
    rows = []
    try:
        for i, scenario in enumerate(scenarios(args.year)):
            tables = build_tables(root / f"s{i}", scenario)
            rows.append((scenario, measure(tables, year_range, args.repeat, args.snapshot_sample)))
    finally:
        if not args.root:
            shutil.rmtree(root, ignore_errors=True)

    print(
        f"Cover of {year_range} over {', '.join(p.value for p in PERIODS)} "
        f"(one Delta table per period, partition column `{COLUMN}`)."
    )
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"best of {args.repeat} runs.\n"
    )
    print(
        "| scenario | existence checks | naive: storage calls | naive: planning time "
        "| timelines: metadata loads | timelines: storage calls "
        "| timelines: load + plan time | speed-up | timelines: re-plan time (loaded) "
        "| partitions in plan |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scenario, r in rows:
        naive_s, tl_s = float(r["naive_s"]), float(r["tl_s"])  # type: ignore[arg-type]
        plan = f"{r['parts']}" + ("" if r["complete"] else " (uncoverable)")
        print(
            f"| {scenario.name} | {r['checks']:,} | {r['naive_calls']:,} | {_seconds(naive_s)} "
            f"| {r['loads']} | {r['tl_calls']:,} | {_seconds(tl_s)} | {naive_s / tl_s:.1f}x "
            f"| {_seconds(r['replan_s'])} | {plan} |"
        )
    if args.snapshot_sample > 0:
        print(
            "\nNaive over the Delta log (one snapshot read per existence check), "
            f"extrapolated from {args.snapshot_sample} timed snapshot reads of these tables:\n"
        )
        print("| scenario | existence checks | snapshot read | extrapolated planning time |")
        print("|---|---:|---:|---:|")
        for scenario, r in rows:
            print(
                f"| {scenario.name} | {r['checks']:,} "
                f"| {float(r['snapshot_per_check_ms']):.2f} ms "  # type: ignore[arg-type]
                f"| {_seconds(r['snapshot_extrapolated_s'])} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
