"""Delta column mapping names (qbeast_connect.rules.column_mapping): logical <-> physical."""

from __future__ import annotations

import json

import pytest

from qbeast_connect.exceptions import CorruptLogError, UnsupportedProtocolError
from qbeast_connect.rules.column_mapping import (
    column_mapping,
    mapping_mode,
    missing_indexed_columns,
)


def field(name: str, physical: str, cid: int, type_: object = "long") -> dict[str, object]:
    return {
        "name": name,
        "type": type_,
        "nullable": True,
        "metadata": {
            "delta.columnMapping.id": cid,
            "delta.columnMapping.physicalName": physical,
        },
    }


SCHEMA = {
    "type": "struct",
    "fields": [
        field("id", "col-a", 1),
        field(
            "s",
            "col-s",
            2,
            {"type": "struct", "fields": [field("x", "col-x", 3), field("y", "col-y", 4)]},
        ),
        field(
            "arr",
            "col-arr",
            5,
            {
                "type": "array",
                "elementType": {"type": "struct", "fields": [field("p", "col-p", 6)]},
                "containsNull": True,
            },
        ),
        field("renamed", "old_name", 7, "string"),
    ],
}
CONFIG = {"delta.columnMapping.mode": "name"}


def test_mode() -> None:
    assert mapping_mode({}) == "none"
    assert mapping_mode({"delta.columnMapping.mode": "ID"}) == "id"
    assert column_mapping({"delta.columnMapping.mode": "none"}, SCHEMA) is None
    with pytest.raises(UnsupportedProtocolError, match="none, name, id"):
        mapping_mode({"delta.columnMapping.mode": "names"})


def test_physical_schema_renames_nested_fields() -> None:
    cm = column_mapping(CONFIG, json.dumps(SCHEMA))
    assert cm is not None
    physical = json.loads(cm.physical_schema_json())
    assert [f["name"] for f in physical["fields"]] == ["col-a", "col-s", "col-arr", "old_name"]
    assert [f["name"] for f in physical["fields"][1]["type"]["fields"]] == ["col-x", "col-y"]
    assert physical["fields"][2]["type"]["elementType"]["fields"][0]["name"] == "col-p"
    assert cm.physical_names == {
        "id": "col-a",
        "s": "col-s",
        "arr": "col-arr",
        "renamed": "old_name",
    }
    assert cm.max_column_id == 7
    assert cm.physical_name("renamed") == "old_name"
    assert cm.physical_name("old_name") is None


def test_stats_and_partition_values_become_logical() -> None:
    cm = column_mapping(CONFIG, SCHEMA)
    assert cm is not None
    stats = {
        "numRecords": 3,
        "minValues": {"col-a": 1, "col-s": {"col-x": 5, "gone": 1}, "dropped-col": 9},
        "maxValues": {"col-a": 4, "old_name": "z"},
        "nullCount": {"col-a": 0, "col-s": {"col-x": 0, "col-y": 3}},
        "tightBounds": True,
    }
    out = cm.logical_stats(json.dumps(stats))
    assert out == {
        "numRecords": 3,
        # a key the schema does not name is left out: no pruning on an uncertain column
        "minValues": {"id": 1, "s": {"x": 5}},
        "maxValues": {"id": 4, "renamed": "z"},
        "nullCount": {"id": 0, "s": {"x": 0, "y": 3}},
        "tightBounds": True,
    }
    assert cm.logical_stats(None) is None
    assert cm.logical_stats("not json") == "not json"
    assert cm.logical_partition_values({"old_name": "v", "col-zz": "w"}) == {"renamed": "v"}
    assert cm.physical_partition_values({"renamed": None}) == {"old_name": None}


def test_a_field_without_its_physical_name_is_refused() -> None:
    schema = {"type": "struct", "fields": [{"name": "a", "type": "long", "metadata": {}}]}
    with pytest.raises(CorruptLogError, match="column a has no delta.columnMapping.physicalName"):
        column_mapping(CONFIG, schema)
    nested = json.loads(json.dumps(SCHEMA))
    del nested["fields"][1]["type"]["fields"][0]["metadata"]["delta.columnMapping.id"]
    with pytest.raises(CorruptLogError, match=r"column s\.x has no integer"):
        column_mapping(CONFIG, nested)


def test_missing_indexed_columns() -> None:
    assert missing_indexed_columns(["ID", "renamed"], SCHEMA) == []
    assert missing_indexed_columns(["id", "old_name"], SCHEMA) == ["old_name"]


def test_a_renamed_time_partition_column_is_refused() -> None:
    from qbeast_connect.rules.column_mapping import check_partition_column_mapped

    partitioned = {
        **CONFIG,
        "qbeast.timePartitioning": json.dumps(
            {"timeColumn": "ts", "period": "daily", "partitionColumn": "renamed"}
        ),
    }
    with pytest.raises(UnsupportedProtocolError, match="'renamed'.*'old_name'"):
        check_partition_column_mapped(partitioned, SCHEMA)
    kept = {**partitioned, "qbeast.timePartitioning": partitioned[
        "qbeast.timePartitioning"].replace("renamed", "id")}  # fmt: skip
    schema = json.loads(json.dumps(SCHEMA))
    schema["fields"][0]["metadata"]["delta.columnMapping.physicalName"] = "id"
    check_partition_column_mapped(kept, schema)  # the physical name is the logical one
    check_partition_column_mapped({"qbeast.timePartitioning": kept[
        "qbeast.timePartitioning"]}, SCHEMA)  # fmt: skip
