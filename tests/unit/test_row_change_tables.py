"""Which tables a row-level change takes (issue #33): a time-partitioned table's partition
column is computed by the writer, so its rows can be written again; other Delta partition
columns are refused with the alternative named."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedOperationError
from qbeast_connect.row_changes import check_row_change_table, computed_column, refuse_computed
from qbeast_connect.rules.time_partitioning import (
    PARTITIONING_KEY,
    TimePartitioning,
    partitioning_of,
)


def _table(partition_columns: list[str], partitioning: TimePartitioning | None) -> Any:
    configuration: dict[str, str] = {}
    if partitioning is not None:
        configuration[PARTITIONING_KEY] = json.dumps(partitioning.to_json_value())
    state = SimpleNamespace(
        configuration=configuration, metadata={"partitionColumns": partition_columns}
    )
    return SimpleNamespace(_state=state, _require_qbeast=lambda: None)


def test_time_partitioned_tables_are_taken_and_their_partition_column_is_computed() -> None:
    daily = TimePartitioning.of("ts", "daily")
    table = _table([daily.column], daily)
    assert partitioning_of(table._state.configuration) == daily
    check_row_change_table(table, "DELETE")
    assert computed_column(table, daily.column.upper()) == daily.column
    assert computed_column(table, "ts") is None
    with pytest.raises(InvalidOptionError, match=f"sets column '{daily.column}', which partit"):
        refuse_computed(table, daily.column, "update")
    refuse_computed(table, "ts", "update")


@pytest.mark.parametrize(
    ("columns", "partitioning"),
    [(["region"], None), (["region", "ts_partition"], TimePartitioning.of("ts", "daily"))],
)
def test_other_partition_columns_are_refused(
    columns: list[str], partitioning: TimePartitioning | None
) -> None:
    with pytest.raises(UnsupportedOperationError, match=r"partitioned by \['region'"):
        check_row_change_table(_table(columns, partitioning), "UPDATE")
