"""Partition timelines and fact cover planning on real tables written through the plugin.

Four small rollup tables (one row per partition) reproduce every row of the Lens seed's
coverage table for [2015-01-29T06, 2015-03-01T06).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from qbeast_connect.exceptions import (
    InvalidOptionError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UncoverableRangeError,
)
from qbeast_connect.timeline import (
    EndsAndHolesTimeline,
    Fact,
    RangesTimeline,
    TimePartition,
    TimeRange,
    UpdatePeriod,
    drop_partition,
    load_timelines,
    rebuild_timelines,
    set_timeline_impl,
    write_partitioned,
)
from qbeast_connect.timeline.cover import partitions_by_period
from qbeast_connect.timeline.writer import canonical_partition_sql
from tests.spark.helpers import deltalake_table, latest_configuration, live_adds, row_digest

START, END = "2015-01-29T06:00:00Z", "2015-03-01T06:00:00Z"
M, D, H = UpdatePeriod.MONTHLY, UpdatePeriod.DAILY, UpdatePeriod.HOURLY
HOUR0 = 1_422_511_200  # 2015-01-29T06:00:00Z in epoch seconds


@pytest.fixture(scope="module")
def rollups(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """monthly 2015-01..03, daily 01-28..03-02, hourly [01-29-06, 03-01-06), and a daily
    table with 2015-02-10 dropped. Columns: v (long), source (string), dt (partition)."""
    root = tmp_path_factory.mktemp("timeline")
    paths = {name: str(root / name) for name in ("monthly", "daily", "hourly", "daily_hole")}
    monthly = spark.sql(
        "select cast(m as bigint) as v, 'monthly' as source, "
        "concat('2015-0', cast(m as string)) as dt from values (1), (2), (3) as t(m)"
    )
    result = write_partitioned(monthly, paths["monthly"], partitionColumn="dt", updatePeriod=M)
    assert result.version == 0 and result.num_files == 3 and result.num_rows == 3
    days = spark.sql(
        "select cast(row_number() over (order by d) as bigint) as v, 'daily' as source, "
        "d as dt from (select explode(sequence(date'2015-01-28', date'2015-03-02')) as d)"
    )
    for name in ("daily", "daily_hole"):
        write_partitioned(
            days, paths[name], partitionColumn="dt", updatePeriod="daily", mode="errorifexists"
        )
    hours = spark.range(0, 744, numPartitions=2).selectExpr(
        "id as v", "'hourly' as source", f"timestamp_seconds({HOUR0} + id * 3600 + 1799) as dt"
    )
    write_partitioned(
        hours, paths["hourly"], partitionColumn="dt", updatePeriod=H, timelineImpl="Ranges"
    )
    dropped = drop_partition(spark, paths["daily_hole"], "2015-02-10")
    assert dropped.version == 1 and not dropped.skipped
    return paths


def _shape(parts: list[tuple[str, TimePartition]]) -> dict[str, list[str]]:
    return {p.value: [str(r) for r in rs] for p, rs in partitions_by_period(parts).items()}


def _r(a: str, b: str) -> str:
    return str(TimeRange(TimePartition.parse(a).start, TimePartition.parse(b).start))


SEED_ROWS = [
    pytest.param(
        {"monthly": [M], "daily": [D], "hourly": [H]},
        {
            "monthly": [_r("2015-02", "2015-03")],
            "daily": [_r("2015-01-30", "2015-02-01")],
            "hourly": [_r("2015-01-29-06", "2015-01-30-00"), _r("2015-03-01-00", "2015-03-01-06")],
        },
        id="all-rollups-present",
    ),
    pytest.param(
        {"hourly": [H]}, {"hourly": [_r("2015-01-29-06", "2015-03-01-06")]}, id="hourly-only"
    ),
    pytest.param(
        {"monthly": [M], "hourly": [H]},
        {
            "monthly": [_r("2015-02", "2015-03")],
            "hourly": [_r("2015-01-29-06", "2015-02-01-00"), _r("2015-03-01-00", "2015-03-01-06")],
        },
        id="monthly-and-hourly",
    ),
    pytest.param(
        {"daily": [D], "hourly": [H]},
        {
            "daily": [_r("2015-01-30", "2015-03-01")],
            "hourly": [_r("2015-01-29-06", "2015-01-30-00"), _r("2015-03-01-00", "2015-03-01-06")],
        },
        id="daily-and-hourly",
    ),
    pytest.param(
        {"daily_hole": [D], "hourly": [H]},
        {
            "daily": [_r("2015-01-30", "2015-02-10"), _r("2015-02-11", "2015-03-01")],
            "hourly": [
                _r("2015-01-29-06", "2015-01-30-00"),
                _r("2015-02-10-00", "2015-02-11-00"),
                _r("2015-03-01-00", "2015-03-01-06"),
            ],
        },
        id="one-day-missing-falls-back-to-hourly",
    ),
]


@pytest.mark.parametrize(("tables", "expected"), SEED_ROWS)
def test_seed_coverage_table_on_real_tables(
    spark: Any,
    rollups: dict[str, str],
    tables: dict[str, list[UpdatePeriod]],
    expected: dict[str, list[str]],
) -> None:
    fact = Fact(
        spark, "sales", tables={rollups[n]: ps for n, ps in tables.items()}, partitionColumn="dt"
    )
    parts = fact.cover(START, END)
    assert _shape(parts) == expected
    assert fact.metadata_loads == len(tables)  # one metadata load per table ...
    fact.cover(START, END)
    assert fact.metadata_loads == len(tables)  # ... and none for the next plan
    for path, partition in parts:
        assert Path(path).name.startswith(partition.period.value)


def test_read_returns_exactly_the_rows_of_the_covered_partitions(
    spark: Any, rollups: dict[str, str]
) -> None:
    fact = Fact(
        spark,
        "sales",
        partitionColumn="dt",
        tables={rollups["monthly"]: [M], rollups["daily"]: [D], rollups["hourly"]: [H]},
    )
    parts = fact.cover(START, END)
    df = fact.read(START, END)
    assert df.columns == ["v", "source", "dt"]
    rows = sorted((r["source"], r["dt"]) for r in df.collect())
    assert rows == sorted((p.period.value, str(p)) for _, p in parts)
    assert len(rows) == 1 + 2 + 24
    assert len(df.inputFiles()) == len(parts)
    # the hourly rows were written from timestamps half an hour into each hour
    hourly = {r["dt"]: r["v"] for r in df.filter("source = 'hourly'").collect()}
    assert hourly["2015-01-29-06"] == 0 and hourly["2015-03-01-05"] == 743


def test_uncoverable_range_names_the_missing_sub_ranges(
    spark: Any, rollups: dict[str, str]
) -> None:
    fact = Fact(
        spark, "daily-only", tables={rollups["daily_hole"]: ["daily"]}, partitionColumn="dt"
    )
    with pytest.raises(UncoverableRangeError) as info:
        fact.read(START, END)
    text = str(info.value)
    for missing in (
        "[2015-01-29T06:00:00Z, 2015-01-30T00:00:00Z)",
        "[2015-02-10T00:00:00Z, 2015-02-11T00:00:00Z)",
        "[2015-03-01T00:00:00Z, 2015-03-01T06:00:00Z)",
    ):
        assert missing in text
    assert fact.cover("2015-02-11", "2015-02-13") == [
        (rollups["daily_hole"], TimePartition.parse("2015-02-11")),
        (rollups["daily_hole"], TimePartition.parse("2015-02-12")),
    ]


def test_drop_updates_files_and_timeline_in_one_commit(spark: Any, rollups: dict[str, str]) -> None:
    path = rollups["daily_hole"]
    timeline = load_timelines(spark, path)[("dt", D)]
    assert isinstance(timeline, EndsAndHolesTimeline)
    assert [str(h) for h in timeline.holes] == ["2015-02-10"]
    assert str(timeline.first()) == "2015-01-28" and str(timeline.latest()) == "2015-03-02"
    config = latest_configuration(path)
    assert config["qbeast.timeline.dt.daily.holes"] == "2015-02-10"
    assert config["qbeast.timeline.dt.present"] == "true"
    assert all(a["partitionValues"]["dt"] != "2015-02-10" for a in live_adds(path).values())
    assert drop_partition(spark, path, TimePartition.parse("2015-02-10")).skipped


def test_deltalake_reads_the_partitioned_tables_identically(
    spark: Any, rollups: dict[str, str]
) -> None:
    import pyarrow.compute as pc

    columns = ["v", "source", "dt"]
    for name, period, start, end in (
        ("hourly", H, "2015-02-01", "2015-02-02"),  # 24 of the 744 hourly partitions
        ("daily_hole", D, "2015-01-28", "2015-02-10"),
        ("monthly", M, "2015-01-01", "2015-04-01"),
    ):
        path = rollups[name]
        fact = Fact(spark, name, tables={path: [period]}, partitionColumn="dt")
        wanted = [str(p) for _, p in fact.cover(start, end)]
        ours = deltalake_table(path)
        assert sorted(set(ours.column("dt").to_pylist())) == [
            str(p) for p in fact.timelines(path)[period].partitions()
        ]
        expected = ours.filter(pc.is_in(ours.column("dt"), pa_array(wanted)))
        assert expected.num_rows == len(wanted)
        assert row_digest(expected, columns) == row_digest(fact.read(start, end).toArrow(), columns)
    assert isinstance(load_timelines(spark, rollups["hourly"])[("dt", H)], RangesTimeline)


def pa_array(values: list[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.string())


def test_rebuild_when_the_present_flag_is_missing(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "foreign")
    write_deltalake(
        path,
        pa.table(
            {
                "v": [1, 2, 3],
                "source": ["x"] * 3,
                "dt": ["2015-01-01", "2015-01-03", "2015-01-04-05"],
            }
        ),
        partition_by=["dt"],
    )
    timelines = load_timelines(spark, path)  # no timeline keys: rebuilt from partitionValues
    assert [str(p) for p in timelines[("dt", D)]] == ["2015-01-01", "2015-01-03"]
    assert [str(p) for p in timelines[("dt", H)]] == ["2015-01-04-05"]
    fact = Fact(spark, "foreign", tables={path: [D, H]}, partitionColumn="dt")
    plan = fact.plan("2015-01-03", "2015-01-04T06:00:00Z")
    assert [str(p) for _, p in plan.parts] == ["2015-01-03", "2015-01-04-05"]
    assert [str(r) for r in plan.uncovered] == ["[2015-01-04T00:00:00Z, 2015-01-04T05:00:00Z)"]

    more = spark.sql("select cast(4 as bigint) as v, 'x' as source, date'2015-01-02' as dt")
    write_partitioned(more, path, partitionColumn="dt", updatePeriod="daily")
    config = latest_configuration(path)
    assert config["qbeast.timeline.dt.present"] == "true"  # stored by the first write
    assert config["qbeast.timeline.dt.daily.first"] == "2015-01-01"
    assert config["qbeast.timeline.dt.daily.holes"] == ""
    assert config["qbeast.timeline.dt.hourly.first"] == "2015-01-04-05"
    assert [str(p) for _, p in fact.refresh().cover("2015-01-01", "2015-01-04")] == [
        "2015-01-01",
        "2015-01-02",
        "2015-01-03",
    ]

    # a present flag set to false makes readers rebuild from the files too
    from server_plugin.delta.actions import FrozenMap
    from server_plugin.delta.committer import commit
    from server_plugin.delta.conflicts import TransactionReadSet
    from server_plugin.delta.log_reader import read_snapshot
    from server_plugin.delta.storage import storage_for

    storage = storage_for(path)
    snap = read_snapshot(storage)
    stale = dict(
        snap.configuration,
        **{"qbeast.timeline.dt.present": "false", "qbeast.timeline.dt.daily.first": "2014-12-01"},
    )
    commit(
        storage,
        [dataclasses.replace(snap.metadata, configuration=FrozenMap(stale))],
        TransactionReadSet(read_version=snap.version, read_whole_table=True),
        operation="SET TBLPROPERTIES",
        operation_parameters={},
    )
    assert str(load_timelines(spark, path)[("dt", D)].first()) == "2015-01-01"
    rebuilt = rebuild_timelines(spark, path)
    assert rebuilt.version == snap.version + 2
    assert latest_configuration(path)["qbeast.timeline.dt.present"] == "true"
    assert latest_configuration(path)["qbeast.timeline.dt.daily.first"] == "2015-01-01"


def test_migrate_timeline_implementation(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.sql(
        "select 1L as v, d as dt from values "
        "(date'2015-01-01'), (date'2015-01-02'), (date'2015-01-05') as t(d)"
    )
    write_partitioned(df, path, partitionColumn="dt", updatePeriod="daily")
    before = [str(p) for p in load_timelines(spark, path)[("dt", D)]]
    result = set_timeline_impl(spark, path, updatePeriod="daily", impl="Ranges")
    assert result.version == 1
    after = load_timelines(spark, path)[("dt", D)]
    assert isinstance(after, RangesTimeline) and [str(p) for p in after] == before
    config = latest_configuration(path)
    assert (
        config["qbeast.timeline.dt.daily.ranges"] == "2015-01-01,2015-01-03,2015-01-05,2015-01-06"
    )
    assert "qbeast.timeline.dt.daily.holes" not in config


def test_time_columns_convert_to_utc_partitions_in_any_session_time_zone(spark: Any) -> None:
    from pyspark.sql import functions as F

    instants = [
        datetime(2015, 11, 1, 5, 30, tzinfo=UTC),  # both sides of the New York DST change
        datetime(2015, 11, 1, 6, 30, tzinfo=UTC),
        datetime(2014, 12, 29, 0, 0, tzinfo=UTC),  # ISO week 1 of 2015
        datetime(2016, 1, 3, 23, 59, 59, tzinfo=UTC),  # ISO week 53 of 2015
        datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
    ]
    seconds = ", ".join(f"({int(t.timestamp())})" for t in instants)
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.sql(f"select timestamp_seconds(s) as ts, s from values {seconds} as t(s)")
        ts_type = df.schema["ts"].dataType
        exprs = [
            F.expr(canonical_partition_sql("ts", ts_type, p)).alias(p.value) for p in UpdatePeriod
        ]
        rows = sorted(df.select("s", *exprs).collect(), key=lambda r: r["s"])
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    for row, when in zip(rows, sorted(instants), strict=True):
        for period in UpdatePeriod:
            assert row[period.value] == period.format(when), (period, when)
    date_type = spark.sql("select date'2015-01-01' as d").schema["d"].dataType
    day = (
        spark.sql("select date'2016-01-03' as d")
        .select(F.expr(canonical_partition_sql("d", date_type, UpdatePeriod.WEEKLY)).alias("w"))
        .collect()[0]["w"]
    )
    assert day == "2015-W53"


def test_write_errors(spark: Any, tmp_path: Path, rollups: dict[str, str]) -> None:
    path = str(tmp_path / "t")
    bad = spark.sql("select 1L as v, '2015-01-29-06' as dt")
    with pytest.raises(InvalidOptionError, match="not a daily partition"):
        write_partitioned(bad, path, partitionColumn="dt", updatePeriod="daily")
    assert not Path(path, "_delta_log").exists()
    with pytest.raises(InvalidOptionError, match="timestamp, date or string"):
        write_partitioned(
            spark.sql("select 1 as dt"), path, partitionColumn="dt", updatePeriod="daily"
        )
    with pytest.raises(InvalidOptionError, match="not in the data"):
        write_partitioned(bad, path, partitionColumn="ts", updatePeriod="daily")
    with pytest.raises(TableAlreadyExistsError):
        write_partitioned(
            bad,
            rollups["hourly"],
            partitionColumn="dt",
            updatePeriod="hourly",
            mode="errorifexists",
        )
    with pytest.raises(SchemaMismatchError, match="source"):
        write_partitioned(bad, rollups["hourly"], partitionColumn="dt", updatePeriod="hourly")
    with pytest.raises(InvalidOptionError, match="partitioned by"):
        Fact(spark, "f", tables={rollups["hourly"]: ["hourly"]}, partitionColumn="v").cover(
            START, END
        )
