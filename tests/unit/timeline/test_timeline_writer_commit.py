"""The plugin's timeline writer without Spark: tasks, one-commit timelines, deltalake reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from qbeast_connect.exceptions import InvalidOptionError, TableNotFoundError
from qbeast_connect.timeline import UpdatePeriod
from qbeast_connect.timeline.plan import TimelineWritePlan
from qbeast_connect.timeline.timeline import read_timelines, timelines_present
from server_plugin.delta.committer import commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.storage import storage_for
from server_plugin.timeline_writer import (
    PartitionFile,
    TimelineTaskMessage,
    commit_timeline_write,
    hive_escape,
    partition_dir,
    write_timeline_task,
)

SCHEMA = pa.schema([("v", pa.int64()), ("dt", pa.string())])
SCHEMA_STRING = arrow_schema_to_delta(SCHEMA)


def _plan(path: str, version: int, **fields: Any) -> TimelineWritePlan:
    base: dict[str, Any] = {
        "table_path": path,
        "operation": "write",
        "column": "dt",
        "read_version": version,
        "period": "daily",
        "schema_string": SCHEMA_STRING if version < 0 else None,
    }
    base.update(fields)
    return TimelineWritePlan(**base)


def _write(path: str, version: int, rows: list[tuple[int, str]], **fields: Any) -> int:
    plan = _plan(path, version, **fields)
    batch = pa.record_batch(
        [pa.array([r[0] for r in rows], pa.int64()), pa.array([r[1] for r in rows])],
        schema=SCHEMA,
    )
    message = write_timeline_task(plan, iter([batch]))
    return commit_timeline_write(plan, message.files)


def _config(path: str) -> dict[str, str]:
    return dict(read_snapshot(storage_for(path)).configuration)


def _daily(path: str) -> list[str]:
    return [str(p) for p in read_timelines(_config(path), "dt")[UpdatePeriod.DAILY]]


def test_hive_escaping() -> None:
    assert hive_escape("2015-01-29-06") == "2015-01-29-06"
    assert hive_escape("a b:c/d%e=f") == "a b%3Ac%2Fd%25e%3Df"
    assert partition_dir("dt", None) == "dt=__HIVE_DEFAULT_PARTITION__"
    assert partition_dir("d=t", "x\x01") == "d%3Dt=x%01"


def test_task_writes_one_file_per_partition_value_without_the_column(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    plan = _plan(path, -1)
    batch = pa.record_batch(
        [
            pa.array([1, 2, 3, 4]),
            pa.array(["2015-01-02", "2015-01-01", "2015-01-02", "2015-01-01"]),
        ],
        schema=SCHEMA,
    )
    message = write_timeline_task(plan, iter([batch, batch.slice(0, 1)]))
    assert isinstance(message, TimelineTaskMessage)
    by_value = {f.value: f for f in message.files}
    assert set(by_value) == {"2015-01-01", "2015-01-02"}
    first = by_value["2015-01-02"]
    assert first.path.startswith("dt=2015-01-02/") and first.num_records == 3
    import pyarrow.parquet as pq

    table = pq.read_table(str(tmp_path / "t" / first.path))
    assert table.column_names == ["v"] and sorted(table.column("v").to_pylist()) == [1, 1, 3]
    assert json.loads(first.stats or "{}")["numRecords"] == 3


@pytest.mark.parametrize(
    ("values", "match"),
    [(["2015-01-01-05"], "not a daily partition"), ([None], "null")],
)
def test_task_rejects_bad_partition_values(tmp_path: Path, values: list[Any], match: str) -> None:
    path = str(tmp_path / "t")
    batch = pa.record_batch([pa.array([1]), pa.array(values, pa.string())], schema=SCHEMA)
    with pytest.raises(InvalidOptionError, match=match):
        write_timeline_task(_plan(path, -1), iter([batch]))
    assert not any(p.is_file() for p in (tmp_path / "t").rglob("*.parquet"))


def test_writes_drop_and_overwrite_keep_the_timeline_in_step(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "t")
    v0 = _write(path, -1, [(1, "2015-01-01"), (2, "2015-01-03")])
    snap = read_snapshot(storage_for(path))
    assert v0 == 0 and snap.partition_columns == ("dt",)
    assert _daily(path) == ["2015-01-01", "2015-01-03"]
    assert timelines_present(_config(path), "dt")
    assert _config(path)["qbeast.timeline.dt.daily.holes"] == "2015-01-02"

    # appending to existing partitions changes no timeline: a blind append
    v1 = _write(path, 0, [(3, "2015-01-03")])
    commit_info = _commit_info(path, v1)
    assert commit_info["isBlindAppend"] is True
    assert commit_info["operationParameters"]["partitionBy"] == '["dt"]'

    v2 = _write(path, 1, [(4, "2015-01-02")])
    assert _daily(path) == ["2015-01-01", "2015-01-02", "2015-01-03"]
    assert "qbeast.timeline.dt.daily.holes" in _config(path)
    assert _commit_info(path, v2)["isBlindAppend"] is False

    rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["v"], r["dt"]) for r in rows) == [
        (1, "2015-01-01"),
        (2, "2015-01-03"),
        (3, "2015-01-03"),
        (4, "2015-01-02"),
    ]

    v3 = commit_timeline_write(
        _plan(path, v2, operation="drop", period=None, drop_partitions=("2015-01-03",)), []
    )
    assert _daily(path) == ["2015-01-01", "2015-01-02"]
    log = _actions(path, v3)
    assert sum("remove" in a for a in log) == 2 and sum("metaData" in a for a in log) == 1
    assert sorted(r["v"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()) == [1, 4]

    v4 = _write(path, v3, [(9, "2015-02-01")], mode="overwrite", schema_string=SCHEMA_STRING)
    assert _daily(path) == ["2015-02-01"]
    assert DeltaTable(path).to_pyarrow_table().to_pylist() == [{"v": 9, "dt": "2015-02-01"}]
    assert v4 == 4


def test_several_periods_share_the_column_and_impls_migrate(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, -1, [(1, "2015-01-01")])
    _write(path, 0, [(2, "2015-01-02-05")], period="hourly", impls={"hourly": "Ranges"})
    config = _config(path)
    assert config["qbeast.timeline.dt.hourly.impl"] == "Ranges"
    assert config["qbeast.timeline.dt.hourly.ranges"] == "2015-01-02-05,2015-01-02-06"
    commit_timeline_write(
        _plan(path, 1, operation="sync", period=None, impls={"daily": "StoreAll"}), []
    )
    config = _config(path)
    assert config["qbeast.timeline.dt.daily.impl"] == "StoreAll"
    assert config["qbeast.timeline.dt.daily.partitions"] == "2015-01-01"
    assert "qbeast.timeline.dt.daily.first" not in config


def test_missing_flag_rebuilds_from_the_files_in_the_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, -1, [(1, "2015-01-01"), (2, "2015-01-05")])
    storage = storage_for(path)
    snap = read_snapshot(storage)
    import dataclasses

    from server_plugin.delta.actions import FrozenMap

    wiped = {k: v for k, v in snap.configuration.items() if not k.startswith("qbeast.timeline.")}
    commit(
        storage,
        [dataclasses.replace(snap.metadata, configuration=FrozenMap(wiped))],
        TransactionReadSet(read_version=0, read_whole_table=True, changes_metadata=True),
        operation="SET TBLPROPERTIES",
        operation_parameters={},
    )
    assert not timelines_present(_config(path), "dt")
    _write(path, 1, [(3, "2015-01-03")])
    assert _daily(path) == ["2015-01-01", "2015-01-03", "2015-01-05"]
    assert timelines_present(_config(path), "dt")


def test_errors(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(TableNotFoundError):
        commit_timeline_write(
            _plan(path, -1, operation="drop", period=None, drop_partitions=("2015-01-01",)), []
        )
    bad = arrow_schema_to_delta(pa.schema([("v", pa.int64()), ("dt", pa.int64())]))
    with pytest.raises(InvalidOptionError, match="must be a string column"):
        commit_timeline_write(_plan(path, -1, schema_string=bad), [])
    unpartitioned = str(tmp_path / "u")
    from deltalake import write_deltalake

    write_deltalake(unpartitioned, pa.table({"v": [1], "dt": ["2015-01-01"]}))
    with pytest.raises(InvalidOptionError, match="partitioned by"):
        commit_timeline_write(_plan(unpartitioned, 0), [])
    fake = PartitionFile("dt=2015-01-01/x.parquet", "2015-01-01", 1, 0, None, 1)
    with pytest.raises(InvalidOptionError, match="does not exist"):
        commit_timeline_write(_plan(path, -1), [fake])


def _actions(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _commit_info(path: str, version: int) -> dict[str, Any]:
    return next(a["commitInfo"] for a in _actions(path, version) if "commitInfo" in a)


def test_concurrent_appends_adding_partitions_rebase_but_drops_conflict(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from qbeast_connect.exceptions import CommitConflictError

    path = str(tmp_path / "t")
    _write(path, -1, [(1, "2015-01-01")])
    # two appends to an existing partition, planned at the same version: both land
    assert _write(path, 0, [(2, "2015-01-01")]) == 1
    assert _write(path, 0, [(3, "2015-01-01")]) == 2
    # two writes that each add a new partition (a timeline change) at the same version:
    # the second adds its partition to the first one's timeline and lands on top
    assert _write(path, 2, [(4, "2015-01-02")]) == 3
    assert _write(path, 2, [(5, "2015-01-05")]) == 4
    assert _write(path, 2, [(6, "2015-01-01")]) == 5  # blind, over both timeline changes
    assert _daily(path) == ["2015-01-01", "2015-01-02", "2015-01-05"]
    assert _config(path)["qbeast.timeline.dt.daily.holes"] == "2015-01-03,2015-01-04"
    rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted((r["v"], r["dt"]) for r in rows) == [
        (1, "2015-01-01"),
        (2, "2015-01-01"),
        (3, "2015-01-01"),
        (4, "2015-01-02"),
        (5, "2015-01-05"),
        (6, "2015-01-01"),
    ]
    # a drop of 2015-01-02 wins: appends planned before it, into that partition or adding
    # another one, conflict (the timeline lost a partition), and their files are deleted
    drop = _plan(path, 5, operation="drop", period=None, drop_partitions=("2015-01-02",))
    assert commit_timeline_write(drop, []) == 6
    for rows_in in ([(7, "2015-01-02")], [(8, "2015-01-07")]):
        with pytest.raises(CommitConflictError, match="version 6 .DELETE."):
            _write(path, 5, rows_in)
    assert _daily(path) == ["2015-01-01", "2015-01-05"]
    files = {a.partition_values["dt"] for a in read_snapshot(storage_for(path)).files.values()}
    assert files == {"2015-01-01", "2015-01-05"}
    assert not list((tmp_path / "t").glob("dt=2015-01-07/*.parquet"))  # loser's file deleted
