"""The snapshot answer carried by a schema: complete below the limit, absent above it."""

from __future__ import annotations

import json

from qbeast_connect.spark import snapshot as client_snapshot
from server_plugin import snapshot_rows


def test_state_schema_carries_all_rows_or_none() -> None:
    rows = [("version", "3"), ("add", '{"add":{"path":"a \\"b\\" é.parquet"}}'), ("txn", "{}")]
    schema = snapshot_rows.state_schema(rows)
    assert schema.fieldNames() == ["kind", "payload"]
    text = schema.fields[-1].metadata[snapshot_rows.STATE_KEY]
    assert [tuple(r) for r in json.loads(text)] == rows
    # the metadata survives the JSON round trip Spark makes between Python and the JVM
    again = type(schema).fromJson(json.loads(schema.json()))
    assert again.fields[-1].metadata[snapshot_rows.STATE_KEY] == text
    small = snapshot_rows.state_schema(rows, limit=20)
    assert small.fieldNames() == ["kind", "payload"]
    assert small.fields[-1].metadata == {}


def test_client_and_plugin_agree_on_the_metadata_key() -> None:
    assert client_snapshot.STATE_KEY == snapshot_rows.STATE_KEY
