"""Planning over a column-mapped table: statistics and partition values name physical
columns, the planner logical ones; the index refuses columns renamed or dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qbeast_connect.exceptions import IndexedColumnMissingError
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.planning.file_planner import plan_files, stats_by_path
from qbeast_connect.planning.predicate import from_sql

from ._helpers import fixture_log

MODE = {"delta.columnMapping.mode": "name"}


def mapped_schema(*fields: tuple[str, str, str]) -> str:
    """Schema JSON with (logical, physical, type) fields, ids 1, 2, ..."""
    return json.dumps(
        {
            "type": "struct",
            "fields": [
                {
                    "name": name,
                    "type": type_,
                    "nullable": True,
                    "metadata": {
                        "delta.columnMapping.id": i,
                        "delta.columnMapping.physicalName": physical,
                    },
                }
                for i, (name, physical, type_) in enumerate(fields, 1)
            ],
        }
    )


BASE = (("id", "id", "integer"), ("name", "name", "string"), ("address", "address", "string"))


def table() -> tuple[dict[str, str], list[dict[str, Any]]]:
    configuration, adds = fixture_log()
    return {**configuration, **MODE}, adds


def plan(schema: str, sql: str, fraction: float | None = None) -> set[str]:
    configuration, adds = table()
    snapshot = QbeastSnapshot.from_delta(configuration, adds, 1)
    stats = stats_by_path(adds, configuration, schema)
    found = plan_files(snapshot, from_sql(sql), fraction, file_stats=stats, schema=schema)
    return set(found.paths)


def test_dropped_and_re_added_column_is_not_pruned_by_the_old_columns_stats() -> None:
    # email was dropped and added again: the files' stats name the old column (physical
    # name "email"), the new one (physical "col-new-email") is NULL in every old file
    schema = mapped_schema(*BASE, ("email", "col-new-email", "string"), ("age", "age", "integer"))
    _, adds = table()
    assert plan(schema, "email IS NULL") == {a["path"] for a in adds}


def test_renamed_column_is_pruned_by_its_physical_stats() -> None:
    schema = mapped_schema(*BASE, ("mail", "email", "string"), ("years", "age", "integer"))
    assert plan(schema, "years > 100") == set()
    _, adds = table()
    assert plan(schema, "years <= 80") == {a["path"] for a in adds}
    # the old logical name is no column of the table any more: its stats prove nothing
    stats = stats_by_path(adds, table()[0], schema)
    first = stats[adds[0]["path"]]
    assert first["maxValues"] == {
        "id": 3999996,
        "name": "Zoe Woods",
        "address": "Unit 9999 Box 8619\nDPO AE 87903",
        "mail": "zzuniga@example.org",
        "years": 80,
    }


def test_renamed_indexed_column_is_refused_by_reads_that_use_the_index() -> None:
    schema = mapped_schema(
        ("id", "id", "integer"),
        ("full_name", "name", "string"),
        ("address", "address", "string"),
        ("email", "email", "string"),
        ("age", "age", "integer"),
    )
    with pytest.raises(IndexedColumnMissingError, match=r"name indexed by revision 1") as info:
        plan(schema, "id > 5", 0.5)
    assert info.value.code == "QBEAST_INDEXED_COLUMN_MISSING"
    assert "RENAME COLUMN" in info.value.message
