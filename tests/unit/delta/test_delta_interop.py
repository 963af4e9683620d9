"""Interop with deltalake (delta-rs): each side reads what the other wrote."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_testlib import append, create_table, qbeast_tags, read_rows, sort_rows

from server_plugin.delta.actions import Txn
from server_plugin.delta.log_reader import (
    history,
    read_snapshot,
    version_at_timestamp,
)
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.storage import LocalStorage

UTC = dt.UTC


def _batch(i: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([i * 10, i * 10 + 1], pa.int64()),
            "name": [f"n{i}", None],
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, 0, 0, i, 5, tzinfo=UTC), None],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


def _deltalake_paths(table: deltalake.DeltaTable) -> set[str]:
    root = table.table_uri.rstrip("/")
    out = set()
    for uri in table.file_uris():
        parsed = urlparse(uri)
        path = unquote(parsed.path) if parsed.scheme == "file" else uri
        assert path.startswith(root.replace("file://", "") + "/") or path.startswith(root + "/")
        out.add(os.path.relpath(path, urlparse(root).path if "://" in root else root))
    return out


def test_our_table_reads_identically_in_deltalake(tmp_path: Path) -> None:
    """§14.2 (deltalake part)."""
    storage = LocalStorage(tmp_path / "t")
    create_table(storage, _batch(0), tags=qbeast_tags(0))
    for i in range(1, 4):
        append(storage, _batch(i), tags=qbeast_tags(i))
    ours = read_snapshot(storage)
    table = deltalake.DeltaTable(str(tmp_path / "t"))
    assert table.version() == ours.version == 3
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert protocol.reader_features is None and protocol.writer_features is None
    assert table.metadata().id == ours.metadata.id
    assert table.metadata().partition_columns == []
    assert pa.schema(table.schema().to_arrow()) == ours.arrow_schema()
    expected = pa.concat_tables([_batch(i) for i in range(4)])
    assert sort_rows(table.to_pyarrow_table()) == sort_rows(expected)
    assert sort_rows(read_rows(storage)) == sort_rows(expected)

    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    assert {a["path"] for a in actions} == set(ours.files)
    for action in actions:
        add = ours.files[action["path"]]
        stats = json.loads(add.stats or "")
        assert action["size_bytes"] == add.size
        assert action["num_records"] == stats["numRecords"] == 2
        assert action["null_count.name"] == stats["nullCount"]["name"] == 1
        assert action["min.id"] == stats["minValues"]["id"]
        assert action["max.id"] == stats["maxValues"]["id"]
        assert (
            action["min.ts"].isoformat(timespec="milliseconds").replace("+00:00", "Z")
            == (stats["minValues"]["ts"])
        )
        assert add.tags is not None and json.loads(add.tags["blocks"])[0]["cubeId"] == ""
    assert _deltalake_paths(table) == set(ours.files)


def test_we_read_tables_written_by_deltalake(tmp_path: Path) -> None:
    """§14.3: append, overwrite, partitioned, after create_checkpoint()."""
    path = str(tmp_path / "dl")
    deltalake.write_deltalake(path, _batch(0))
    deltalake.write_deltalake(path, _batch(1), mode="append")
    deltalake.write_deltalake(path, _batch(2), mode="overwrite")
    deltalake.write_deltalake(path, _batch(3), mode="append")
    table = deltalake.DeltaTable(path)
    table.create_checkpoint()
    deltalake.write_deltalake(path, _batch(4), mode="append")
    table = deltalake.DeltaTable(path)
    storage = LocalStorage(path)
    for version in range(table.version() + 1):
        table.load_as_version(version)
        snap = read_snapshot(storage, version)
        assert set(snap.files) == _deltalake_paths(table), version
        adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        assert {a["path"]: a["size_bytes"] for a in adds} == {
            k: a.size for k, a in snap.files.items()
        }
        assert sort_rows(read_rows(storage, version)) == sort_rows(table.to_pyarrow_table())
    snap = read_snapshot(storage)
    assert snap.version == 4 and snap.checkpoint_version == 3
    assert len(snap.tombstones) == 2  # the two files the overwrite removed


def test_partitioned_deltalake_table_with_awkward_values(tmp_path: Path) -> None:
    """§14.11 (reading side): every decoded add.path names an existing file."""
    path = str(tmp_path / "dl")
    values = ["a b", "x/y", "c:d", "50%", "h#1", "k=v", "q?", "é中", None]
    data = pa.table({"p": values, "v": list(range(len(values)))})
    deltalake.write_deltalake(path, data, partition_by=["p"])
    storage = LocalStorage(path)
    snap = read_snapshot(storage)
    assert snap.partition_columns == ("p",)
    assert len(snap.files) == len(values)
    assert {a.partition_values["p"] for a in snap.files.values()} == set(values)
    for key in snap.files:
        assert storage.exists(key), key
    assert set(snap.files) == _deltalake_paths(deltalake.DeltaTable(path))


def test_interleaved_commits_stay_contiguous_and_agree(tmp_path: Path) -> None:
    """§14.4: ours -> deltalake -> ours."""
    path = tmp_path / "t"
    storage = LocalStorage(path)
    create_table(storage, _batch(0), tags=qbeast_tags())
    deltalake.write_deltalake(str(path), _batch(1), mode="append")
    assert append(storage, _batch(2), tags=qbeast_tags()) == 2
    deltalake.write_deltalake(str(path), _batch(3), mode="append")
    assert append(storage, _batch(4)) == 4
    names = sorted(n for n in os.listdir(path / "_delta_log") if n.endswith(".json"))
    assert names == [f"{v:020d}.json" for v in range(5)]
    table = deltalake.DeltaTable(str(path))
    assert table.version() == 4
    expected = sort_rows(pa.concat_tables([_batch(i) for i in range(5)]))
    assert sort_rows(table.to_pyarrow_table()) == expected
    assert sort_rows(read_rows(storage)) == expected
    assert set(read_snapshot(storage).files) == _deltalake_paths(table)
    ours = [(e["version"], e["operation"]) for e in history(storage)]
    theirs = [(e["version"], e["operation"]) for e in table.history()]
    assert ours == theirs


def test_txn_versions_agree_both_ways(tmp_path: Path) -> None:
    """§14.16."""
    path = tmp_path / "t"
    storage = LocalStorage(path)
    create_table(storage, _batch(0))
    append(storage, _batch(1), extra=[Txn("stream-a", 7, 1_700_000_000_000)])
    table = deltalake.DeltaTable(str(path))
    assert table.transaction_version("stream-a") == 7
    assert table.transaction_version("missing") is None
    deltalake.write_deltalake(
        str(path),
        _batch(2),
        mode="append",
        commit_properties=deltalake.CommitProperties(
            app_transactions=[deltalake.Transaction(app_id="stream-b", version=3)]
        ),
    )
    snap = read_snapshot(storage)
    assert snap.txn_version("stream-b") == 3 and snap.txn_version("stream-a") == 7
    # a later commit lowering the version wins (rollback)
    append(storage, _batch(3), extra=[Txn("stream-a", 5, 1_700_000_000_001)])
    assert deltalake.DeltaTable(str(path)).transaction_version("stream-a") == 5
    assert read_snapshot(storage).txn_version("stream-a") == 5


def test_time_travel_by_timestamp_matches_deltalake(tmp_path: Path) -> None:
    """§14.23."""
    path = tmp_path / "t"
    storage = LocalStorage(path)
    create_table(storage, _batch(0))
    for i in range(1, 4):
        append(storage, _batch(i))
    base = 1_700_000_000_000
    for v in range(4):
        ms = base + v * 60_000
        os.utime(path / "_delta_log" / f"{v:020d}.json", ns=(ms * 10**6, ms * 10**6))
    table = deltalake.DeltaTable(str(path))
    for offset in (0, 30_000, 60_000, 119_999, 180_000, 500_000):
        ts = base + offset
        version = version_at_timestamp(storage, ts)
        table.load_as_version(dt.datetime.fromtimestamp(ts / 1000, tz=UTC))
        assert table.version() == version, offset


def test_schema_and_data_files_from_our_helpers_are_plain_parquet(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "t")
    create_table(storage, _batch(0))
    (key,) = read_snapshot(storage).files
    file_schema = pq.read_schema(storage.resolve(key))
    assert arrow_schema_to_delta(file_schema) == read_snapshot(storage).metadata.schema_string


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_deltalake_can_write_after_us(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "t"
    storage = LocalStorage(path)
    create_table(storage, _batch(0), tags=qbeast_tags())
    deltalake.write_deltalake(str(path), _batch(1), mode=mode)  # type: ignore[arg-type]
    snap = read_snapshot(storage)
    assert snap.version == 1
    assert len(snap.files) == (2 if mode == "append" else 1)
