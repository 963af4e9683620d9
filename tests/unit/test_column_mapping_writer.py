"""Writes to a column-mapped table (no Spark): the write task stores physical names (and
field ids in ``id`` mode), the stats and partition values name physical columns, the
server resolves the table's mapping before the tasks run and refuses to change columns."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast_connect.exceptions import (
    CommitConflictError,
    IndexedColumnMissingError,
    SchemaMismatchError,
)
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import empty_table_revision
from qbeast_connect.write_plan import WritePlan
from server_plugin import writer
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage


def _field(name: str, physical: str, cid: int, type_: object) -> dict[str, object]:
    return {
        "name": name,
        "type": type_,
        "nullable": True,
        "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical},
    }


SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            _field("id", "col-1", 1, "long"),
            _field(
                "point",
                "col-2",
                2,
                {"type": "struct", "fields": [_field("renamed_x", "col-3", 3, "double")]},
            ),
            _field("label", "old_label", 4, "string"),
        ],
    }
)


def _table(path: Path, mode: str) -> None:
    log = path / "_delta_log"
    log.mkdir(parents=True)
    lines = [
        {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA,
                "partitionColumns": [],
                "configuration": {
                    "delta.columnMapping.mode": mode,
                    "delta.columnMapping.maxColumnId": "4",
                },
                "createdTime": 1,
            }
        },
    ]
    (log / f"{0:020d}.json").write_text("".join(json.dumps(x) + "\n" for x in lines))


def _rows() -> pa.Table:
    point = pa.struct([("renamed_x", pa.float64())])
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "point": pa.array([{"renamed_x": 0.5}, None, {"renamed_x": 2.5}], point),
            "label": ["a", None, "c"],
        }
    )


def _plan(path: Path, **kwargs: object) -> WritePlan:
    settings: dict[str, object] = {"revision_json": None, **kwargs}
    return WritePlan(
        table_path=str(path),
        mode="append",
        read_version=0,
        txn_id=str(uuid.uuid4()),
        **settings,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("mode", ["name", "id"])
def test_appends_write_physical_names_ids_and_stats(tmp_path: Path, mode: str) -> None:
    _table(tmp_path, mode)
    plan = writer.resolve_column_mapping(_plan(tmp_path))
    assert plan.column_mapping == {"mode": mode, "schema": SCHEMA}
    message = writer.write_task(plan, iter(_rows().to_batches()))
    version = writer.commit_write(plan, [message])
    snapshot = read_snapshot(LocalStorage(tmp_path))
    assert version == 1 and snapshot.metadata.schema_string == SCHEMA
    (add,) = snapshot.files.values()
    stats = json.loads(add.stats or "{}")
    assert stats["minValues"] == {"col-1": 1, "col-2": {"col-3": 0.5}, "old_label": "a"}
    assert stats["maxValues"] == {"col-1": 3, "col-2": {"col-3": 2.5}, "old_label": "c"}
    assert stats["nullCount"] == {"col-1": 0, "col-2": {"col-3": 1}, "old_label": 1}
    schema = pq.read_schema(tmp_path / add.path)
    assert schema.names == ["col-1", "col-2", "old_label"]
    assert [f.name for f in schema.field("col-2").type] == ["col-3"]
    ids = [f.metadata.get(b"PARQUET:field_id") if f.metadata else None for f in schema]
    nested = schema.field("col-2").type.field(0).metadata
    if mode == "id":
        assert ids == [b"1", b"2", b"4"] and nested == {b"PARQUET:field_id": b"3"}
    else:
        assert ids == [None, None, None] and not nested
    assert pq.read_table(tmp_path / add.path).to_pydict() == {
        "col-1": [1, 2, 3],
        "col-2": [{"col-3": 0.5}, None, {"col-3": 2.5}],
        "old_label": ["a", None, "c"],
    }


def test_a_write_may_not_change_a_mapped_tables_columns(tmp_path: Path) -> None:
    _table(tmp_path, "name")
    merged = json.loads(SCHEMA)
    merged["fields"].append({"name": "extra", "type": "long", "nullable": True, "metadata": {}})
    with pytest.raises(SchemaMismatchError, match="ADD COLUMNS"):
        writer.resolve_column_mapping(_plan(tmp_path, schema_string=json.dumps(merged)))
    # an overwrite with the same columns keeps the table's schema (and its mapping)
    same = json.loads(SCHEMA)
    for f in same["fields"]:
        f["metadata"] = {}
    kept = writer.resolve_column_mapping(_plan(tmp_path, schema_string=json.dumps(same)))
    assert kept.schema_string == SCHEMA


def test_an_append_indexing_a_renamed_column_is_refused(tmp_path: Path) -> None:
    _table(tmp_path, "name")
    revision = empty_table_revision(
        (ColumnSpec("id"), ColumnSpec("old_label")), {"id": "long", "old_label": "string"},
        100, str(tmp_path), 1,
    )  # fmt: skip
    with pytest.raises(IndexedColumnMissingError, match="old_label indexed by revision"):
        writer.resolve_column_mapping(_plan(tmp_path, revision_json=revision.to_json()))


def test_files_written_without_the_tables_mapping_are_not_committed(tmp_path: Path) -> None:
    _table(tmp_path, "name")
    plan = _plan(tmp_path)  # not resolved: its files would hold logical names
    message = writer.write_task(plan, iter(_rows().to_batches()))
    with pytest.raises(CommitConflictError, match="column mapping"):
        writer.commit_write(plan, [message])
