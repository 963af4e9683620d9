"""Time-partitioned qbeast tables: ``qc.write(..., partitionBy="event_time:daily")``.

One small table (400 events over four UTC days, indexed on ``event_time, user_id`` with
cubes of 20 rows) is written once; tests that change a table work on a copy of it.
Every answer is checked against an independent read (delta-rs, or Spark's plain parquet
reader of the same files).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import CommitConflictError, InvalidOptionError
from qbeast_connect.planning.file_planner import sample_weight_sql
from qbeast_connect.rules.time_partitioning import PARTITIONING_KEY
from qbeast_connect.timeline import UpdatePeriod, drop_partition, load_timelines
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    live_adds,
    log_actions,
    row_digest,
    spark_digest,
)

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
PCOL = "event_time_partition"
COLUMNS = ["id", "event_time", "user_id", "value"]
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
STEP_SECONDS = 864  # 100 events a day


def _events(spark: Any, first: int, count: int) -> Any:
    return spark.sql(
        f"select id, timestamp_seconds({int(START.timestamp())} + id * {STEP_SECONDS}) "
        "as event_time, cast((id * 37) % 100 as int) as user_id, "
        f"cast(id as double) * 1.5 as value from range({first}, {first + count})"
    )


def _expected(first: int, count: int) -> pa.Table:
    ids = list(range(first, first + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "event_time": pa.array(
                [START + dt.timedelta(seconds=i * STEP_SECONDS) for i in ids],
                pa.timestamp("us", "UTC"),
            ),
            "user_id": pa.array([(i * 37) % 100 for i in ids], pa.int32()),
            "value": pa.array([i * 1.5 for i in ids], pa.float64()),
        }
    )


def _day(table: pa.Table) -> list[str]:
    return [t.astimezone(dt.UTC).strftime("%Y-%m-%d") for t in table["event_time"].to_pylist()]


@pytest.fixture(scope="module")
def daily(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("time_partitioned") / "daily")
    result = qc.write(
        _events(spark, 0, 400),
        path,
        columnsToIndex="event_time,user_id",
        cubeSize=20,
        partitionBy="event_time:daily",
    )
    assert result.version == 0 and result.num_rows == 400
    return path


def _copy(path: str, tmp_path: Path) -> str:
    target = str(tmp_path / "copy")
    shutil.copytree(path, target)
    return target


def _by_partition(path: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p, add in live_adds(path).items():
        out.setdefault(add["partitionValues"][PCOL], set()).add(p)
    return out


def test_partitioned_write_commits_partitions_tags_and_timeline_at_once(daily: str) -> None:
    actions = log_actions(daily)
    assert {version for version, _ in actions} == {0}  # files and timeline: one commit
    (meta,) = [a["metaData"] for _, a in actions if "metaData" in a]
    assert meta["partitionColumns"] == [PCOL]
    config = meta["configuration"]
    assert json.loads(config[PARTITIONING_KEY]) == {
        "timeColumn": "event_time",
        "period": "daily",
        "partitionColumn": PCOL,
    }
    assert config["qbeast.lastRevisionID"] == "1" and "qbeast.revision.1" in config
    assert config[f"qbeast.timeline.{PCOL}.daily.first"] == DAYS[0]
    assert config[f"qbeast.timeline.{PCOL}.daily.latest"] == DAYS[-1]
    assert config[f"qbeast.timeline.{PCOL}.present"] == "true"
    adds = [a["add"] for _, a in actions if "add" in a]
    for add in adds:
        value = add["partitionValues"][PCOL]
        assert add["path"].startswith(f"{PCOL}={value}/")
        assert add["tags"]["revision"] == "1"
        assert json.loads(add["tags"]["blocks"])  # the blocks of the partition's tree
        names = pq.read_schema(Path(daily) / add["path"]).names
        assert names == COLUMNS  # the partition column lives in the log only
    by_partition = _by_partition(daily)
    assert sorted(by_partition) == DAYS
    assert all(len(files) >= 2 for files in by_partition.values())  # cubes per partition
    # delta-rs reads the same rows, each with the partition of its own time
    read = deltalake_table(daily)
    assert row_digest(read, COLUMNS) == row_digest(_expected(0, 400))
    assert read[PCOL].to_pylist() == _day(read)


def test_time_and_user_filter_prunes_partitions_and_cubes(spark: Any, daily: str) -> None:
    where = (
        "event_time >= timestamp'2024-01-02 00:00:00Z' "
        "and event_time < timestamp'2024-01-03 00:00:00Z' and user_id < 10"
    )
    full = _expected(0, 400)
    day = pc.equal(pa.array(_day(full)), "2024-01-02")
    expected = full.filter(pc.and_(day, pc.less(full["user_id"], 10)))
    assert 0 < expected.num_rows < 100
    table = qc.QbeastTable.forPath(spark, daily)
    assert spark_digest(table.filter(where), COLUMNS) == row_digest(expected)
    fmt = spark.read.format("qbeast").load(daily).where(where)
    assert spark_digest(fmt, COLUMNS) == row_digest(expected)
    plain = spark.read.parquet(daily).where(where)  # Spark's own reader of every file
    assert spark_digest(plain, COLUMNS) == row_digest(expected)
    selected = set(table.explainScan(where).plan.paths)
    that_day = _by_partition(daily)["2024-01-02"]
    assert selected <= that_day  # other partitions pruned
    assert 0 < len(selected) < len(that_day)  # and cubes inside the partition


def test_filter_on_partition_column_reads_only_its_partition(spark: Any, daily: str) -> None:
    table = qc.QbeastTable.forPath(spark, daily)
    where = f"{PCOL} = '2024-01-03'"
    full = _expected(0, 400)
    expected = full.filter(pc.equal(pa.array(_day(full)), "2024-01-03"))
    assert spark_digest(table.filter(where), COLUMNS) == row_digest(expected)
    assert set(table.explainScan(where).plan.paths) == _by_partition(daily)["2024-01-03"]


@pytest.mark.parametrize("fraction", [0.1, 0.5])
def test_sample_of_a_partitioned_table_is_exact(spark: Any, daily: str, fraction: float) -> None:
    table = qc.QbeastTable.forPath(spark, daily)
    by_weight = spark.read.parquet(daily).where(
        sample_weight_sql(["event_time", "user_id"], fraction)
    )
    expected = spark_digest(by_weight, COLUMNS)
    assert 0 < expected[0] < 400
    assert spark_digest(table.sample(fraction), COLUMNS) == expected
    scan = table.explainScan(fraction=fraction)
    assert scan.selected_files < scan.total_files


def test_append_extends_the_timeline_in_the_same_commit(
    spark: Any, daily: str, tmp_path: Path
) -> None:
    path = _copy(daily, tmp_path)
    with pytest.raises(InvalidOptionError, match="partitioned by 'event_time:daily'"):
        qc.write(_events(spark, 400, 10), path, mode="append", partitionBy="event_time:hourly")
    result = qc.write(_events(spark, 400, 100), path, mode="append")
    assert result.version == 1
    commit = [a for version, a in log_actions(path) if version == 1]
    (meta,) = [a["metaData"] for a in commit if "metaData" in a]
    config = meta["configuration"]
    assert config[f"qbeast.timeline.{PCOL}.daily.first"] == DAYS[0]
    assert config[f"qbeast.timeline.{PCOL}.daily.latest"] == "2024-01-05"
    added = [a["add"] for a in commit if "add" in a]
    assert added and {a["partitionValues"][PCOL] for a in added} == {"2024-01-05"}
    assert all(a["path"].startswith(f"{PCOL}=2024-01-05/") and a["tags"] for a in added)
    timelines = load_timelines(spark, path)
    assert [str(p) for p in timelines[(PCOL, UpdatePeriod.DAILY)]] == [*DAYS, "2024-01-05"]
    assert row_digest(deltalake_table(path), COLUMNS) == row_digest(_expected(0, 500))
    # rows of a partition the timeline has: a small append (one job), no metaData
    assert qc.write(_events(spark, 150, 10), path, mode="append").version == 2
    commit = [a for version, a in log_actions(path) if version == 2]
    assert not [a for a in commit if "metaData" in a]
    added = [a["add"] for a in commit if "add" in a]
    assert added and {a["partitionValues"][PCOL] for a in added} == {"2024-01-02"}
    both = pa.concat_tables([_expected(0, 500), _expected(150, 10)])
    assert row_digest(deltalake_table(path), COLUMNS) == row_digest(both)


def test_drop_partition_of_a_qbeast_table(spark: Any, daily: str, tmp_path: Path) -> None:
    path = _copy(daily, tmp_path)
    result = drop_partition(spark, path, "2024-01-02")
    assert result.version == 1
    assert sorted(_by_partition(path)) == ["2024-01-01", "2024-01-03", "2024-01-04"]
    config = latest_configuration(path)
    assert config[f"qbeast.timeline.{PCOL}.daily.holes"] == "2024-01-02"
    assert "qbeast.revision.1" in config and PARTITIONING_KEY in config
    full = _expected(0, 400)
    expected = full.filter(pc.not_equal(pa.array(_day(full)), "2024-01-02"))
    assert row_digest(deltalake_table(path), COLUMNS) == row_digest(expected)
    table = qc.QbeastTable.forPath(spark, path)
    assert spark_digest(table.read(), COLUMNS) == row_digest(expected)


def test_concurrent_appends_of_new_days_both_commit(
    spark: Any, daily: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (#20): two appends planned on one version, each adding a new day, used to
    end in a CommitConflictError for the second; both commit now, the second rebased over
    the first. A drop_partition that wins over an append into the dropped day conflicts."""
    from qbeast_connect.spark import write as write_module

    path = _copy(daily, tmp_path)
    real = write_module.load_table_state
    pinned = [real(spark, path)]  # every write below plans on this state, as racers do

    def stale(session: Any, where: str, **at: Any) -> Any:
        return real(session, where, **at) if any(at.values()) else pinned[0]

    monkeypatch.setattr(write_module, "load_table_state", stale)
    first = qc.write(_events(spark, 400, 100), path, mode="append")  # 2024-01-05
    second = qc.write(_events(spark, 500, 100), path, mode="append")  # 2024-01-06
    assert (first.version, second.version) == (1, 2)
    infos = [a["commitInfo"] for version, a in log_actions(path) if "commitInfo" in a]
    assert [i["readVersion"] for i in infos[1:]] == [0, 0]  # the second lost the race
    days = [*DAYS, "2024-01-05", "2024-01-06"]
    timeline = load_timelines(spark, path)[(PCOL, UpdatePeriod.DAILY)]
    assert [str(p) for p in timeline] == days
    assert sorted(_by_partition(path)) == days
    expected = row_digest(_expected(0, 600))  # every row once
    read = deltalake_table(path)
    assert row_digest(read, COLUMNS) == expected
    assert read[PCOL].to_pylist() == _day(read)
    config = latest_configuration(path)  # qbeast metadata: every file names a revision
    assert all(
        f"qbeast.revision.{a['tags']['revision']}" in config for a in live_adds(path).values()
    )

    pinned[0] = real(spark, path)  # version 2
    assert drop_partition(spark, path, "2024-01-05").version == 3
    with pytest.raises(CommitConflictError, match="version 3"):
        qc.write(_events(spark, 410, 10), path, mode="append")  # into 2024-01-05
    assert max(version for version, _ in log_actions(path)) == 3


def test_optimize_one_partition_rewrites_only_its_files(
    spark: Any, daily: str, tmp_path: Path
) -> None:
    path = _copy(daily, tmp_path)
    before = _by_partition(path)
    result = qc.QbeastTable.forPath(spark, path).optimize(partition="2024-01-03")
    assert result.version == 1 and result.removed_files == len(before["2024-01-03"])
    after = _by_partition(path)
    for day in ("2024-01-01", "2024-01-02", "2024-01-04"):
        assert after[day] == before[day]
    assert after["2024-01-03"] and not after["2024-01-03"] & before["2024-01-03"]
    commit = [a for version, a in log_actions(path) if version == 1]
    assert all(a["add"]["dataChange"] is False for a in commit if "add" in a)
    assert all(a["add"]["tags"]["revision"] == "1" for a in commit if "add" in a)
    read = deltalake_table(path)
    assert row_digest(read, COLUMNS) == row_digest(_expected(0, 400))
    assert read[PCOL].to_pylist() == _day(read)


def test_fact_of_partitioned_qbeast_tables_prunes_cubes_in_covering_partitions(
    spark: Any, daily: str, tmp_path: Path
) -> None:
    from qbeast_connect.timeline import Fact

    monthly = str(tmp_path / "monthly")
    qc.write(
        _events(spark, 0, 400),
        monthly,
        columnsToIndex="event_time,user_id",
        cubeSize=20,
        partitionBy="event_time:monthly",
    )
    fact = Fact(
        spark, "events", tables={monthly: ["monthly"], daily: ["daily"]}, partitionColumn=PCOL
    )
    full = _expected(0, 400)
    days = pa.array(_day(full))
    user = pc.less(full["user_id"], 10)
    # two days: the daily table serves them
    assert [(p, str(t)) for p, t in fact.cover("2024-01-02", "2024-01-04")] == [
        (daily, "2024-01-02"),
        (daily, "2024-01-03"),
    ]
    in_days = pc.or_(pc.equal(days, "2024-01-02"), pc.equal(days, "2024-01-03"))
    expected = full.filter(pc.and_(in_days, user))
    got = fact.read("2024-01-02", "2024-01-04", where="user_id < 10")
    assert spark_digest(got, COLUMNS) == row_digest(expected)
    files = fact.files("2024-01-02", "2024-01-04", where="user_id < 10")
    covering = _by_partition(daily)["2024-01-02"] | _by_partition(daily)["2024-01-03"]
    assert set(files) == {daily} and 0 < len(files[daily]) < len(covering)
    assert set(files[daily]) <= covering
    # the whole month: the monthly table's one partition, pruned by its tree
    got = fact.read("2024-01-01", "2024-02-01", where="user_id < 10")
    assert spark_digest(got, COLUMNS) == row_digest(full.filter(user))
    files = fact.files("2024-01-01", "2024-02-01", where="user_id < 10")
    assert set(files) == {monthly}
    assert 0 < len(files[monthly]) < len(live_adds(monthly))


def test_format_qbeast_refuses_to_write_time_partitions(spark: Any, daily: str) -> None:
    rows = _events(spark, 0, 5)
    with pytest.raises(Exception, match="does not write time-partitioned tables"):
        rows.write.format("qbeast").mode("append").save(daily)
    assert {version for version, _ in log_actions(daily)} == {0}  # nothing committed
