"""Modern Delta log features (issue #32, log layer): V2 checkpoints, domain metadata,
timestamp_ntz, type widening, and the defects found on delta-rs's corpus.

Tables are written with ``deltalake`` (delta-rs) where it can, and the parts it cannot
write (V2 checkpoints with sidecars, type changes) are built by hand from the spec; each
version is read with our reader and compared with ``deltalake``'s own read.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_testlib import append, read_rows, sort_rows, write_data_file
from deltalake import DeltaTable, write_deltalake

from qbeast_connect.exceptions import (
    CorruptLogError,
    InvalidOptionError,
    UnsupportedProtocolError,
)
from server_plugin.delta.actions import (
    DomainMetadata,
    Metadata,
    Protocol,
    action_to_json,
    encode_commit,
)
from server_plugin.delta.checkpoint import (
    CHECKPOINT_SCHEMA,
    checkpoint_table,
    read_checkpoint,
    write_checkpoint,
)
from server_plugin.delta.committer import commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import read_commit, read_snapshot
from server_plugin.delta.storage import LocalStorage

LOG = "_delta_log"
V2 = Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",))


def _put(storage: LocalStorage, version: int, actions: list[Any]) -> None:
    storage.put_atomic(f"{LOG}/{version:020d}.json", encode_commit(actions))


def _deltalake_rows(path: Path, version: int | None = None) -> list[dict[str, Any]]:
    table = DeltaTable(str(path), version=version) if version is not None else DeltaTable(str(path))
    return sort_rows(table.to_pyarrow_table())


def _our_rows(path: Path, version: int | None = None) -> list[dict[str, Any]]:
    return sort_rows(read_rows(LocalStorage(path), version))


def _deltalake_table(path: Path, commits: int = 4) -> None:
    """A deltalake table: ``commits`` appends of 3 rows, then a delete (removes)."""
    for i in range(commits):
        data = pa.table({"id": pa.array([3 * i, 3 * i + 1, 3 * i + 2], pa.int64())})
        write_deltalake(str(path), data, mode="append")
    DeltaTable(str(path)).delete("id = 4")


# ----------------------------------------------------------------------------- V2 checkpoints


def _v2_checkpoint(
    path: Path, version: int, *, fmt: str, sidecars: int, classic_name: bool = False
) -> str:
    """Write a V2-spec checkpoint of ``version`` by hand (spec: PROTOCOL.md "V2 Spec").

    File actions go to ``sidecars`` parquet files in ``_delta_log/_sidecars`` (0: inline).
    Returns the checkpoint's file name.
    """
    storage = LocalStorage(path)
    snapshot = read_snapshot(storage, version)
    rows = [
        {k: v for k, v in row.items() if v is not None}
        for row in checkpoint_table(snapshot, now_ms=0).to_pylist()
    ]
    files = [r for r in rows if "add" in r or "remove" in r]
    others = [r for r in rows if not ("add" in r or "remove" in r or "checkpointMetadata" in r)]
    body: list[dict[str, Any]] = [{"checkpointMetadata": {"version": version, "tags": {}}}]
    body += others
    if sidecars:
        for i in range(sidecars):
            chunk = files[i::sidecars]
            name = f"{uuid.uuid4()}.parquet"
            schema = pa.schema([CHECKPOINT_SCHEMA.field("add"), CHECKPOINT_SCHEMA.field("remove")])
            table = pa.Table.from_pylist(
                [{"add": r.get("add"), "remove": r.get("remove")} for r in chunk], schema=schema
            )
            (path / LOG / "_sidecars").mkdir(exist_ok=True)
            pq.write_table(table, path / LOG / "_sidecars" / name)
            size = (path / LOG / "_sidecars" / name).stat().st_size
            ref = {"path": name, "sizeInBytes": size, "modificationTime": 1, "tags": {}}
            body.append({"sidecar": ref})
    else:
        body += files
    if classic_name:
        name = f"{version:020d}.checkpoint.parquet"
    else:
        name = f"{version:020d}.checkpoint.{uuid.uuid4()}.{fmt}"
    if fmt == "json":
        text = "".join(json.dumps(_json_maps(r)) + "\n" for r in body)
        (path / LOG / name).write_text(text)
    else:
        schema = pa.schema(
            [
                *CHECKPOINT_SCHEMA,
                pa.field(
                    "checkpointMetadata",
                    pa.struct([("version", pa.int64()), ("tags", pa.map_(pa.string(), pa.string()))]),
                ),
                pa.field(
                    "sidecar",
                    pa.struct(
                        [
                            ("path", pa.string()),
                            ("sizeInBytes", pa.int64()),
                            ("modificationTime", pa.int64()),
                            ("tags", pa.map_(pa.string(), pa.string())),
                        ]
                    ),
                ),
            ]
        )
        pq.write_table(
            pa.Table.from_pylist([_arrow_maps(r) for r in body], schema=schema), path / LOG / name
        )
    hint = {"version": version, "size": len(body), "v2Checkpoint": {"path": name}}
    (path / LOG / "_last_checkpoint").write_text(json.dumps(hint))
    return name


_MAP_KEYS = {"options", "configuration", "partitionValues", "tags"}


def _json_maps(value: Any) -> Any:
    """Checkpoint rows from pyarrow hold maps as (key, value) lists; JSON wants objects."""
    if isinstance(value, dict):
        return {
            k: dict(v) if k in _MAP_KEYS and isinstance(v, list) else _json_maps(v)
            for k, v in value.items()
        }
    return value


def _arrow_maps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ([] if k == "tags" and v == {} else _arrow_maps(v)) for k, v in value.items()}
    return value


def _enable_v2(path: Path) -> int:
    """Commit the v2Checkpoint protocol on a deltalake table; return the new version."""
    storage = LocalStorage(path)
    version = read_snapshot(storage).version + 1
    _put(storage, version, [V2])
    return version


def _drop_commits_before(path: Path, version: int) -> None:
    for name in os.listdir(path / LOG):
        if name.endswith(".json") and name[:20].isdigit() and int(name[:20]) < version:
            os.unlink(path / LOG / name)
        if name.endswith(".checkpoint.parquet") and int(name[:20]) < version:
            os.unlink(path / LOG / name)


@pytest.mark.parametrize(
    ("fmt", "sidecars"),
    [("json", 2), ("json", 0), ("parquet", 3), ("parquet", 0)],
    ids=["json-sidecars", "json-inline", "parquet-sidecars", "parquet-inline"],
)
def test_uuid_named_v2_checkpoint_is_read(tmp_path: Path, fmt: str, sidecars: int) -> None:
    path = tmp_path / "t"
    _deltalake_table(path)
    expected = {v: _deltalake_rows(path, v) for v in range(_enable_v2(path))}
    v2 = read_snapshot(LocalStorage(path)).version
    assert all(_our_rows(path, v) == rows for v, rows in expected.items())
    expected[v2] = expected[v2 - 1]
    _v2_checkpoint(path, v2, fmt=fmt, sidecars=sidecars)
    write_deltalake(str(path), pa.table({"id": pa.array([100], pa.int64())}), mode="append")
    expected[v2 + 1] = sort_rows(
        pa.Table.from_pylist([*expected[v2], {"id": 100}], pa.schema([("id", pa.int64())]))
    )
    # only the checkpoint can build v2 now: the commits before it are gone
    _drop_commits_before(path, v2)
    storage = LocalStorage(path)
    snap = read_snapshot(storage)
    assert snap.version == v2 + 1 and snap.checkpoint_version == v2
    assert snap.protocol == V2
    # deltalake 1.6.6 refuses the v2Checkpoint reader feature: our rows are compared
    # with deltalake's read of the same files before the feature was enabled
    for v in (v2, v2 + 1):
        assert _our_rows(path, v) == expected[v]
    assert sorted(r["id"] for r in expected[v2]) == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11]
    with pytest.raises(InvalidOptionError, match="can no longer be rebuilt"):
        read_snapshot(storage, v2 - 1)


def test_classic_named_v2_spec_checkpoint_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltalake_table(path)
    expected = _deltalake_rows(path)
    v2 = _enable_v2(path)
    _v2_checkpoint(path, v2, fmt="parquet", sidecars=1, classic_name=True)
    _drop_commits_before(path, v2)
    assert read_snapshot(LocalStorage(path)).checkpoint_version == v2
    assert _our_rows(path) == expected


def test_v2_checkpoint_of_another_version_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltalake_table(path)
    v2 = _enable_v2(path)
    name = _v2_checkpoint(path, v2, fmt="json", sidecars=0)
    text = (path / LOG / name).read_text()
    (path / LOG / name).write_text(
        text.replace(f'"checkpointMetadata": {{"version": {v2}', '"checkpointMetadata": {"version": 1')
    )
    storage = LocalStorage(path)
    with pytest.raises(CorruptLogError, match="says it is version 1"):
        read_checkpoint(storage, v2, files=[f"{LOG}/{name}"])
    # the commits are still there: the reader falls back to them
    snap = read_snapshot(storage)
    assert snap.version == v2 and snap.checkpoint_version is None


def test_missing_sidecar_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltalake_table(path)
    v2 = _enable_v2(path)
    _v2_checkpoint(path, v2, fmt="json", sidecars=1)
    for side in (path / LOG / "_sidecars").iterdir():
        side.unlink()
    _drop_commits_before(path, v2)
    with pytest.raises(CorruptLogError, match="sidecar"):
        read_snapshot(LocalStorage(path))


def test_our_checkpoint_of_a_v2_table_follows_the_v2_spec(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltalake_table(path)
    expected = _deltalake_rows(path)
    v2 = _enable_v2(path)
    storage = LocalStorage(path)
    write_checkpoint(storage, read_snapshot(storage))
    table = pq.read_table(path / LOG / f"{v2:020d}.checkpoint.parquet")
    meta = [r for r in table.column("checkpointMetadata").to_pylist() if r is not None]
    assert meta == [{"version": v2, "tags": []}]
    _drop_commits_before(path, v2)
    assert read_snapshot(storage).checkpoint_version == v2
    assert _our_rows(path) == expected
    # a table without the feature keeps V1 checkpoints (no checkpointMetadata column)
    plain = tmp_path / "plain"
    _deltalake_table(plain)
    write_checkpoint(LocalStorage(plain), read_snapshot(LocalStorage(plain)))
    names = pq.read_schema(next((plain / LOG).glob("*.checkpoint.parquet"))).names
    assert "checkpointMetadata" not in names


# ----------------------------------------------------------------------------- domainMetadata


def test_domain_metadata_replayed_checkpointed_and_kept_by_our_commits(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltalake_table(path, commits=2)
    storage = LocalStorage(path)
    base = read_snapshot(storage).version
    _put(storage, base + 1, [Protocol(1, 7, None, ("domainMetadata",))])
    _put(
        storage,
        base + 2,
        [
            DomainMetadata("user.a", '{"x":1}'),
            DomainMetadata("user.b", "b1"),
            DomainMetadata("delta.gone", "g"),
        ],
    )
    _put(
        storage,
        base + 3,
        [DomainMetadata("user.a", '{"x":2}'), DomainMetadata("delta.gone", "g", removed=True)],
    )
    expected = {
        "user.a": DomainMetadata("user.a", '{"x":2}'),
        "user.b": DomainMetadata("user.b", "b1"),
    }
    assert dict(read_snapshot(storage).domain_metadata) == expected
    assert dict(read_snapshot(storage, base + 2).domain_metadata) == {
        "user.a": DomainMetadata("user.a", '{"x":1}'),
        "user.b": DomainMetadata("user.b", "b1"),
        "delta.gone": DomainMetadata("delta.gone", "g"),
    }
    # our append on a table with the domainMetadata writer feature keeps them
    version = append(storage, pa.table({"id": pa.array([50], pa.int64())}))
    write_checkpoint(storage, read_snapshot(storage))
    _drop_commits_before(path, version)
    snap = read_snapshot(storage)
    assert snap.checkpoint_version == version
    assert dict(snap.domain_metadata) == expected
    assert _our_rows(path) == _deltalake_rows(path)
    assert 50 in [r["id"] for r in _our_rows(path)]


# ----------------------------------------------------------------------------- timestamp_ntz

NTZ = [dt.datetime(2021, 1, 1), dt.datetime(2021, 1, 2, 3, 4, 5, 6000), None]


def test_timestamp_ntz_table_written_by_deltalake(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "ts": pa.array(NTZ, pa.timestamp("us")),
            "day": pa.array(NTZ, pa.timestamp("us")),
        }
    )
    write_deltalake(str(path), data, partition_by=["day"])
    storage = LocalStorage(path)
    snap = read_snapshot(storage)
    assert "timestampNtz" in (snap.protocol.reader_features or ())
    assert snap.arrow_schema().field("ts").type == pa.timestamp("us")
    values = sorted(str(a.partition_values["day"]) for a in snap.files.values() if a.partition_values["day"])
    assert values == ["2021-01-01 00:00:00.000000", "2021-01-02 03:04:05.006000"]
    stats = [json.loads(a.stats) for a in snap.files.values() if a.stats]
    bounds = sorted(s["minValues"]["ts"] for s in stats if "ts" in s["minValues"])
    assert bounds == ["2021-01-01 00:00:00", "2021-01-02 03:04:05.006"]
    # our append (stats without Z) and a checkpoint; deltalake reads the same rows
    more = pa.table({"id": pa.array([4], pa.int64()), "ts": pa.array([dt.datetime(1999, 12, 31, 23, 59, 59)], pa.timestamp("us"))})
    add = write_data_file(storage, more)
    assert json.loads(add.stats or "")["minValues"]["ts"] == "1999-12-31T23:59:59.000"
    add = type(add)(**{**{f: getattr(add, f) for f in add.__dataclass_fields__}, "partition_values": {"day": None}})
    commit(
        storage,
        [add],
        TransactionReadSet(read_version=snap.version),
        operation="WRITE",
        operation_parameters={"mode": "Append"},
    )
    write_checkpoint(storage, read_snapshot(storage))
    rows = sort_rows(DeltaTable(str(path)).to_pyarrow_table(), ["id"])
    assert [r["ts"] for r in rows] == [*NTZ, dt.datetime(1999, 12, 31, 23, 59, 59)]
    assert sort_rows(read_snapshot(storage).arrow_schema().empty_table()) == []


def test_timestamp_ntz_needs_the_feature_to_write(tmp_path: Path) -> None:
    from server_plugin.delta.protocol import check_writable

    schema = '{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}'
    meta = Metadata(id="t", schema_string=schema)
    with pytest.raises(UnsupportedProtocolError, match="timestampNtz"):
        check_writable(Protocol(1, 2), meta)
    check_writable(Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)), meta)


# ----------------------------------------------------------------------------- type widening


def _field(name: str, type_: str, changes: list[dict[str, str]] | None = None) -> dict[str, Any]:
    meta = {"delta.typeChanges": changes} if changes else {}
    return {"name": name, "type": type_, "nullable": True, "metadata": meta}


def test_type_widening_reads_older_files_as_the_table_type(tmp_path: Path) -> None:
    path = tmp_path / "t"
    old = pa.table(
        {
            "i": pa.array([1, -2], pa.int8()),
            "f": pa.array([1.5, 2.25], pa.float32()),
            "d": pa.array([dt.date(2020, 1, 2), None], pa.date32()),
            "m": pa.array([pa.scalar(1, pa.int32()).as_py(), 7], pa.int32()),
        }
    )
    write_deltalake(str(path), old)
    storage = LocalStorage(path)
    snap = read_snapshot(storage)
    widened = {
        "type": "struct",
        "fields": [
            _field("i", "long", [{"fromType": "byte", "toType": "short"}, {"fromType": "short", "toType": "long"}]),
            _field("f", "double", [{"fromType": "float", "toType": "double"}]),
            _field("d", "timestamp_ntz", [{"fromType": "date", "toType": "timestamp_ntz"}]),
            _field("m", "decimal(12,1)", [{"fromType": "integer", "toType": "decimal(12,1)"}]),
        ],
    }
    features = ("typeWidening", "timestampNtz")
    meta = Metadata(
        id=snap.metadata.id,
        schema_string=json.dumps(widened),
        configuration={"delta.enableTypeWidening": "true"},
    )
    _put(storage, snap.version + 1, [Protocol(3, 7, features, features), meta])
    new = pa.table(
        {
            "i": pa.array([2**40], pa.int64()),
            "f": pa.array([0.1], pa.float64()),
            "d": pa.array([dt.datetime(2021, 5, 6, 7, 8)], pa.timestamp("us")),
            "m": pa.array([pa.scalar(__import__("decimal").Decimal("3.5"), pa.decimal128(12, 1)).as_py()], pa.decimal128(12, 1)),
        }
    )
    append(storage, new)
    snap = read_snapshot(storage)
    assert snap.arrow_schema().field("i").type == pa.int64()
    rows = sort_rows(read_rows(storage), ["i"])
    decimal = __import__("decimal").Decimal
    assert rows == [
        {"i": -2, "f": 2.25, "d": None, "m": decimal("7.0")},
        {"i": 1, "f": 1.5, "d": dt.datetime(2020, 1, 2), "m": decimal("1.0")},
        {"i": 2**40, "f": 0.1, "d": dt.datetime(2021, 5, 6, 7, 8), "m": decimal("3.5")},
    ]
    # the older file still holds the narrow types
    older = min(snap.files.values(), key=lambda a: a.modification_time)
    assert pq.read_schema(storage.resolve(older.path)).field("i").type == pa.int8()


@pytest.mark.parametrize(
    ("from_type", "to_type", "ok"),
    [
        ("byte", "integer", True),
        ("integer", "double", True),
        ("long", "double", False),
        ("long", "decimal(20,0)", True),
        ("long", "decimal(19,0)", False),
        ("decimal(5,2)", "decimal(8,4)", True),
        ("decimal(5,2)", "decimal(6,4)", False),
        ("double", "float", False),
        ("string", "long", False),
        ("date", "timestamp_ntz", True),
        ("date", "timestamp", False),
    ],
)
def test_type_changes_are_validated(from_type: str, to_type: str, ok: bool) -> None:
    from server_plugin.delta.protocol import check_type_changes

    schema = {"type": "struct", "fields": [_field("c", to_type, [{"fromType": from_type, "toType": to_type}])]}
    meta = Metadata(id="t", schema_string=json.dumps(schema))
    if ok:
        check_type_changes(meta)
    else:
        with pytest.raises(UnsupportedProtocolError, match=re.escape(f"from {from_type} to")):
            check_type_changes(meta)


# ----------------------------------------------------------------------------- corpus defects


def test_dlt_early_metadata_without_schema_replaced_later(tmp_path: Path) -> None:
    """A DLT table's first metaData lacks schemaString; a later one replaces it."""
    storage = LocalStorage(tmp_path)
    broken = {
        "metaData": {
            "id": "dlt",
            "format": {"provider": "parquet", "options": {}},
            "partitionColumns": [],
            "configuration": {},
            "createdTime": 1,
        }
    }
    proto = json.dumps(action_to_json(Protocol(1, 2)))
    storage.put_atomic(f"{LOG}/{0:020d}.json", (proto + "\n" + json.dumps(broken) + "\n").encode())
    with pytest.raises(CorruptLogError, match="schemaString"):
        read_snapshot(storage)
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    _put(storage, 1, [Metadata(id="dlt", schema_string=schema)])
    append(storage, pa.table({"id": pa.array([7], pa.int64())}))
    snap = read_snapshot(storage)
    assert snap.metadata.schema_string == schema
    assert sort_rows(read_rows(storage)) == [{"id": 7}]
    with pytest.raises(CorruptLogError, match="schemaString"):
        read_snapshot(storage, 0)


def test_cleaned_up_commit_has_one_error(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _deltalake_table(path)
    storage = LocalStorage(path)
    write_checkpoint(storage, read_snapshot(storage, 3))
    _drop_commits_before(path, 3)
    errors = []
    for call in (lambda: read_snapshot(storage, 1), lambda: read_commit(storage, 1)):
        with pytest.raises(InvalidOptionError) as info:
            call()
        errors.append(info.value)
    assert {e.code for e in errors} == {"QBEAST_INVALID_OPTION"}
    assert all("version 1 of" in e.message and "can no longer be rebuilt" in e.message for e in errors)


def test_stats_parsed_timestamps_keep_their_zone(tmp_path: Path) -> None:
    """Spark writes checkpoint timestamps as INT96: pyarrow reads them back without a zone."""
    storage = LocalStorage(tmp_path)
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [_field("ts", "timestamp"), _field("ntz", "timestamp_ntz"), _field("n", "long")],
        }
    )
    features = ("timestampNtz",)
    meta = Metadata(id="t", schema_string=schema)
    _put(storage, 0, [Protocol(3, 7, features, features), meta])
    moment = dt.datetime(2021, 1, 1, 12, 30, 0, 123456)
    stat_type = pa.struct([("ts", pa.timestamp("ns")), ("ntz", pa.timestamp("ns")), ("n", pa.int64())])
    add_type = pa.struct(
        [
            ("path", pa.string()),
            ("partitionValues", pa.map_(pa.string(), pa.string())),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("dataChange", pa.bool_()),
            ("stats_parsed", pa.struct([("numRecords", pa.int64()), ("minValues", stat_type)])),
        ]
    )
    rows = [
        {"protocol": action_to_json(Protocol(3, 7, features, features))["protocol"], "metaData": None, "add": None},
        {"protocol": None, "metaData": _meta_row(meta), "add": None},
        {
            "protocol": None,
            "metaData": None,
            "add": {
                "path": "f.parquet",
                "partitionValues": [],
                "size": 1,
                "modificationTime": 1,
                "dataChange": False,
                "stats_parsed": {"numRecords": 1, "minValues": {"ts": moment, "ntz": moment, "n": 5}},
            },
        },
    ]
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [CHECKPOINT_SCHEMA.field("protocol"), CHECKPOINT_SCHEMA.field("metaData"), ("add", add_type)]
        ),
    )
    pq.write_table(table, tmp_path / LOG / f"{0:020d}.checkpoint.parquet", use_deprecated_int96_timestamps=True)
    snap = read_snapshot(storage)
    stats = json.loads(snap.files["f.parquet"].stats or "")
    assert stats == {
        "numRecords": 1,
        "minValues": {"ts": "2021-01-01T12:30:00.123Z", "ntz": "2021-01-01T12:30:00.123", "n": 5},
    }


def _meta_row(meta: Metadata) -> dict[str, Any]:
    return {
        "id": meta.id,
        "format": {"provider": "parquet", "options": []},
        "schemaString": meta.schema_string,
        "partitionColumns": [],
        "configuration": [],
    }
