"""Checkpoints: cadence, exact schema, hint handling, and interop with deltalake."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_testlib import append, create_table, qbeast_tags, read_rows, sort_rows

from qbeast_connect.exceptions import CorruptLogError
from server_plugin.delta.actions import Metadata, Protocol, RemoveFile
from server_plugin.delta.checkpoint import (
    CHECKPOINT_SCHEMA,
    checkpoint_interval,
    checkpoint_table,
    read_checkpoint,
    write_checkpoint,
)
from server_plugin.delta.log_files import (
    LAST_CHECKPOINT_PATH,
    multipart_checkpoint_path,
    read_last_checkpoint,
)
from server_plugin.delta.log_reader import read_snapshot, replay
from server_plugin.delta.storage import LocalStorage

COMMITS = 25


def _batch(i: int) -> pa.Table:
    return pa.table(
        {"id": pa.array([i * 10 + k for k in range(3)], pa.int64()), "v": [f"r{i}"] * 3}
    )


@pytest.fixture(scope="module")
def table_25(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table with versions 0..24 written by our committer (one file per commit)."""
    path = tmp_path_factory.mktemp("cp") / "t"
    storage = LocalStorage(path)
    create_table(storage, _batch(0), tags=qbeast_tags())
    for i in range(1, COMMITS):
        assert append(storage, _batch(i), tags=qbeast_tags(i)) == i
    return path


@pytest.fixture
def table_copy(table_25: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "copy"
    shutil.copytree(table_25, dest)
    return dest


def _rows_upto(version: int) -> list[dict[str, object]]:
    return sort_rows(pa.concat_tables([_batch(i) for i in range(version + 1)]))


def test_checkpoints_every_10_versions_and_hint(table_25: Path) -> None:
    log = table_25 / "_delta_log"
    checkpoints = sorted(n for n in os.listdir(log) if "checkpoint.parquet" in n)
    assert checkpoints == [
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000020.checkpoint.parquet",
    ]
    hint = json.loads((log / "_last_checkpoint").read_text())
    size = (log / "00000000000000000020.checkpoint.parquet").stat().st_size
    assert hint == {"version": 20, "size": 23, "sizeInBytes": size, "numOfAddFiles": 21}
    assert not [n for n in os.listdir(log) if n.startswith(".tmp")]


def test_checkpoint_has_the_exact_schema(table_25: Path) -> None:
    table = pq.read_table(table_25 / "_delta_log" / "00000000000000000020.checkpoint.parquet")
    assert table.schema.equals(CHECKPOINT_SCHEMA)
    rows = table.to_pylist()
    protocols = [r["protocol"] for r in rows if r["protocol"]]
    assert protocols == [
        {
            "minReaderVersion": 1,
            "minWriterVersion": 2,
            "readerFeatures": None,
            "writerFeatures": None,
        }
    ]
    adds = [r["add"] for r in rows if r["add"]]
    assert len(adds) == 21 and all(a["dataChange"] is False for a in adds)
    assert all(json.loads(a["stats"])["numRecords"] == 3 for a in adds)
    assert all(dict(a["tags"])["revision"].isdigit() for a in adds)
    assert all(sum(r[c] is not None for c in table.column_names) == 1 for r in rows)
    assert not any(r["remove"] for r in rows)


def test_deltalake_reads_our_checkpointed_table_and_time_travels(table_25: Path) -> None:
    dt = deltalake.DeltaTable(str(table_25))
    assert dt.version() == COMMITS - 1
    assert sort_rows(dt.to_pyarrow_table()) == _rows_upto(COMMITS - 1)
    for version in (0, 9, 10, 15, 20, 23):
        dt.load_as_version(version)
        assert sort_rows(dt.to_pyarrow_table()) == _rows_upto(version), version
        assert sort_rows(read_rows(LocalStorage(table_25), version)) == _rows_upto(version)


def test_both_readers_load_from_our_checkpoint_without_older_commits(table_copy: Path) -> None:
    """§14.6: pre-checkpoint JSON deleted in a copy."""
    log = table_copy / "_delta_log"
    for version in range(20):
        (log / f"{version:020d}.json").unlink()
    (log / "00000000000000000010.checkpoint.parquet").unlink()
    storage = LocalStorage(table_copy)
    snap = read_snapshot(storage)
    assert snap.version == 24 and snap.checkpoint_version == 20
    assert sort_rows(read_rows(storage)) == _rows_upto(24)
    assert read_snapshot(storage, 20).checkpoint_version == 20
    assert {a.tags["revision"] for a in snap.files.values() if a.tags} == {
        str(i) for i in range(1, 25)
    }
    dt = deltalake.DeltaTable(str(table_copy))
    assert dt.version() == 24
    assert sort_rows(dt.to_pyarrow_table()) == _rows_upto(24)
    dt.load_as_version(22)
    assert sort_rows(dt.to_pyarrow_table()) == _rows_upto(22)


@pytest.mark.parametrize(
    "hint",
    [
        b'{"version":10,"size":13}',  # stale
        None,  # missing
        b"{not json",  # unparsable
        b'{"version":"x"}',  # wrong type
        b'{"version":40,"size":1}',  # ahead of the log
    ],
    ids=["stale", "missing", "unparsable", "bad-type", "ahead"],
)
def test_last_checkpoint_hint_problems_still_find_the_latest_state(
    table_copy: Path, hint: bytes | None
) -> None:
    """§14.8."""
    storage = LocalStorage(table_copy)
    if hint is None:
        storage.delete(LAST_CHECKPOINT_PATH)
    else:
        storage.put_atomic(LAST_CHECKPOINT_PATH, hint)
    snap = read_snapshot(storage)
    assert snap.version == 24
    assert snap.checkpoint_version == 20
    assert len(snap.files) == 25


def test_hint_naming_a_missing_checkpoint_falls_back(table_copy: Path) -> None:
    (table_copy / "_delta_log" / "00000000000000000020.checkpoint.parquet").unlink()
    snap = read_snapshot(LocalStorage(table_copy))
    assert snap.version == 24 and snap.checkpoint_version == 10 and len(snap.files) == 25


def test_unreadable_checkpoint_falls_back_to_an_older_start(
    table_copy: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (table_copy / "_delta_log" / "00000000000000000020.checkpoint.parquet").write_bytes(b"junk")
    with caplog.at_level(logging.WARNING):
        snap = read_snapshot(LocalStorage(table_copy))
    assert snap.version == 24 and snap.checkpoint_version == 10 and len(snap.files) == 25
    assert "unusable" in caplog.text
    with pytest.raises(CorruptLogError, match="parquet"):
        read_checkpoint(LocalStorage(table_copy), 20)


def test_our_writer_never_regresses_the_hint(table_copy: Path) -> None:
    storage = LocalStorage(table_copy)
    write_checkpoint(storage, read_snapshot(storage, 15))
    assert (table_copy / "_delta_log" / "00000000000000000015.checkpoint.parquet").exists()
    hint = read_last_checkpoint(storage)
    assert hint is not None and hint.version == 20
    write_checkpoint(storage, read_snapshot(storage, 24))
    hint = read_last_checkpoint(storage)
    assert hint is not None and hint.version == 24 and hint.num_of_add_files == 25


def test_multi_part_checkpoint_is_read_only_when_complete(table_copy: Path) -> None:
    """§14.7: a multi-part fixture built from our checkpoint rows."""
    storage = LocalStorage(table_copy)
    rows = checkpoint_table(read_snapshot(storage, 22))
    parts = [rows.slice(0, 10), rows.slice(10)]
    for i, part in enumerate(parts, start=1):
        sink = pa.BufferOutputStream()
        pq.write_table(part, sink)
        storage.put_atomic(multipart_checkpoint_path(22, i, 2), sink.getvalue().to_pybytes())
    for version in range(23):
        storage.delete(f"_delta_log/{version:020d}.json")
    storage.delete("_delta_log/00000000000000000010.checkpoint.parquet")
    storage.delete("_delta_log/00000000000000000020.checkpoint.parquet")
    storage.delete(LAST_CHECKPOINT_PATH)
    snap = read_snapshot(storage)
    assert snap.version == 24 and snap.checkpoint_version == 22 and len(snap.files) == 25
    # an incomplete multi-part checkpoint is not a checkpoint: the log now has a gap
    storage.delete(multipart_checkpoint_path(22, 2, 2))
    with pytest.raises(CorruptLogError, match="missing"):
        read_snapshot(storage)


def test_deltalake_checkpoint_is_read_with_our_tags(table_copy: Path) -> None:
    """§14.7: a checkpoint written by deltalake (kernel) keeps our tags and stats."""
    dt = deltalake.DeltaTable(str(table_copy))
    dt.create_checkpoint()
    log = table_copy / "_delta_log"
    assert (log / "00000000000000000024.checkpoint.parquet").exists()
    expected = read_snapshot(LocalStorage(table_copy))
    for version in range(24):
        (log / f"{version:020d}.json").unlink()
    snap = read_snapshot(LocalStorage(table_copy))
    assert snap.checkpoint_version == 24
    assert {
        k: (a.size, a.tags, json.loads(a.stats or "{}")["numRecords"])
        for k, a in snap.files.items()
    } == {k: (a.size, a.tags, 3) for k, a in expected.files.items()}
    assert snap.metadata == expected.metadata and snap.protocol == expected.protocol


def test_tombstones_expire_in_checkpoints() -> None:
    schema = '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
    meta = Metadata(id="t", schema_string=schema)
    day = 86_400_000
    now = 100 * day
    snap = replay(
        1,
        [
            [
                Protocol(1, 2),
                meta,
                RemoveFile("old", now - 8 * day),
                RemoveFile("new", now - day),
                RemoveFile("no-ts"),
            ]
        ],
    )
    rows = checkpoint_table(snap, now_ms=now).to_pylist()
    assert [r["remove"]["path"] for r in rows if r["remove"]] == ["new"]
    assert [r["remove"]["dataChange"] for r in rows if r["remove"]] == [False]


def test_checkpoint_interval_property() -> None:
    schema = '{"type":"struct","fields":[]}'
    assert checkpoint_interval(Metadata(id="t", schema_string=schema)) == 10
    assert (
        checkpoint_interval(
            Metadata(id="t", schema_string=schema, configuration={"delta.checkpointInterval": "3"})
        )
        == 3
    )


def test_stats_parsed_is_used_when_stats_is_null(tmp_path: Path) -> None:
    """§8: a checkpoint written with writeStatsAsStruct only."""
    storage = LocalStorage(tmp_path)
    schema = '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
    snap = replay(0, [[Protocol(1, 2), Metadata(id="t", schema_string=schema)]])
    base = checkpoint_table(snap)
    parsed_type = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", pa.struct([("a", pa.int64())])),
            ("maxValues", pa.struct([("a", pa.int64())])),
            ("nullCount", pa.struct([("a", pa.int64())])),
        ]
    )
    add_type = pa.struct(
        [*CHECKPOINT_SCHEMA.field("add").type, pa.field("stats_parsed", parsed_type)]
    )
    add_row = {
        "path": "f.parquet",
        "partitionValues": [],
        "size": 5,
        "modificationTime": 1,
        "dataChange": False,
        "stats": None,
        "tags": None,
        "stats_parsed": {
            "numRecords": 4,
            "minValues": {"a": 1},
            "maxValues": {"a": 9},
            "nullCount": {"a": 0},
        },
    }
    adds = pa.array([None, None, add_row], add_type)
    table = pa.table(
        {
            name: pa.concat_arrays(
                [base.column(name).combine_chunks(), pa.nulls(1, base.schema.field(name).type)]
            )
            for name in base.column_names
            if name != "add"
        }
        | {"add": adds}
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    storage.put_atomic(
        "_delta_log/00000000000000000000.checkpoint.parquet", sink.getvalue().to_pybytes()
    )
    result = read_snapshot(storage)
    assert json.loads(result.files["f.parquet"].stats or "") == {
        "numRecords": 4,
        "minValues": {"a": 1},
        "maxValues": {"a": 9},
        "nullCount": {"a": 0},
    }
