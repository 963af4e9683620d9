"""Time partitions of qbeast tables without Spark: the option, and what a partition proves
to the file statistics pruning."""

from __future__ import annotations

import json

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.options import parse_write_options
from qbeast_connect.planning.coercion import bind_for_pruning, column_types
from qbeast_connect.planning.file_planner import file_may_match, stats_by_path
from qbeast_connect.planning.predicate import from_sql, to_dnf
from qbeast_connect.rules.time_partitioning import (
    PARTITIONING_KEY,
    TimePartitioning,
    partitioning_of,
)

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "event_time", "type": "timestamp", "nullable": True, "metadata": {}},
            {"name": "user_id", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "event_time_partition", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
CONFIG = {
    PARTITIONING_KEY: json.dumps(TimePartitioning.of("event_time", "daily").to_json_value())
}


def test_partition_by_option_is_parsed_and_checked() -> None:
    assert parse_write_options({"partitionby": " event_time:DAILY "}).partition_by == (
        "event_time:daily"
    )
    for bad in ("event_time", ":daily", "event_time:fortnightly", 3):
        with pytest.raises(InvalidOptionError):
            parse_write_options({"partitionBy": bad})
    partitioning = partitioning_of(CONFIG)
    assert partitioning == TimePartitioning.of("event_time", "daily")
    assert partitioning is not None and partitioning.column == "event_time_partition"


def _may_match(where: str, stats: object) -> bool:
    bound = bind_for_pruning(from_sql(where), column_types(SCHEMA), utc=True)
    return file_may_match(to_dnf(bound), stats)


@pytest.mark.parametrize(
    ("where", "kept"),
    [
        ("event_time >= timestamp'2024-01-03 00:00:00Z'", False),
        ("event_time >= timestamp'2024-01-02 23:59:59.999999Z'", True),
        ("event_time < timestamp'2024-01-02 00:00:00Z'", False),
        ("event_time <= timestamp'2024-01-02 00:00:00Z'", True),
        ("event_time_partition = '2024-01-03'", False),
        ("event_time_partition = '2024-01-02'", True),
        ("event_time_partition is null", False),
        ("user_id = 3", True),
    ],
)
def test_partition_bounds_prune_files_without_stats(where: str, kept: bool) -> None:
    adds = [{"path": "p.parquet", "partitionValues": {"event_time_partition": "2024-01-02"}}]
    stats = stats_by_path(adds, CONFIG, SCHEMA)
    assert _may_match(where, stats["p.parquet"]) is kept
    # without the table's partitioning nothing is known about the file
    assert _may_match(where, stats_by_path(adds)["p.parquet"]) is True


def test_partition_bounds_never_replace_a_file_s_own_stats() -> None:
    own = {
        "numRecords": 2,
        "minValues": {"event_time": "2024-01-02T10:00:00.000Z"},
        "maxValues": {"event_time": "2024-01-02T11:00:00.000Z"},
        "nullCount": {"event_time": 0},
    }
    adds = [
        {
            "path": "p.parquet",
            "partitionValues": {"event_time_partition": "2024-01-02"},
            "stats": json.dumps(own),
        },
        # not a daily partition string: proves nothing
        {"path": "q.parquet", "partitionValues": {"event_time_partition": "2024-01"}},
    ]
    stats = stats_by_path(adds, CONFIG, SCHEMA)
    assert not _may_match("event_time >= timestamp'2024-01-02 12:00:00Z'", stats["p.parquet"])
    assert stats["q.parquet"] is None


def test_write_task_refuses_null_times_and_foreign_partition_strings() -> None:
    import pyarrow as pa

    from server_plugin.time_partitions import PartitionCodes

    codes = PartitionCodes(TimePartitioning.of("event_time", "daily"))
    batch = pa.record_batch({"event_time_partition": ["2024-01-02", "2024-01-01", "2024-01-02"]})
    assert codes.codes(batch).tolist() == [0, 1, 0]
    assert codes.labels == ["2024-01-02", "2024-01-01"]
    with pytest.raises(InvalidOptionError, match="null"):
        codes.codes(pa.record_batch({"event_time_partition": pa.array([None], pa.string())}))
    with pytest.raises(InvalidOptionError, match="daily"):
        codes.codes(pa.record_batch({"event_time_partition": ["2024-01"]}))
    with pytest.raises(InvalidOptionError, match="no partition column"):
        codes.codes(pa.record_batch({"other": [1]}))


def test_plan_carries_the_partitioning_and_the_commit_stores_the_timeline() -> None:
    from qbeast_connect.timeline.timeline import read_timelines
    from qbeast_connect.timeline.update_period import UpdatePeriod
    from qbeast_connect.write_plan import WritePlan
    from server_plugin.time_partitions import committed_configuration

    partitioning = TimePartitioning.of("event_time", "hourly")
    plan = WritePlan("/t", "append", -1, None, partitioning=partitioning)
    assert WritePlan.from_json(plan.to_json()).partitioning == partitioning
    assert WritePlan.from_json(WritePlan("/t", "append", -1, None).to_json()).partitioning is None
    values = ["2024-01-01-05", "2024-01-01-07", "2024-01-01-05"]
    config = committed_configuration(partitioning, {"cubeSize": "10"}, None, True, values)
    assert config is not None and config["cubeSize"] == "10"
    assert partitioning_of(config) == partitioning
    timeline = read_timelines(config, "event_time_partition")[UpdatePeriod.HOURLY]
    assert [str(p) for p in timeline] == ["2024-01-01-05", "2024-01-01-07"]
    # an unpartitioned write keeps the plan's configuration as it is
    assert committed_configuration(None, None, None, False, []) is None
