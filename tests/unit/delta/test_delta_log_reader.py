"""Log listing, name codec and replay rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qbeast_connect.exceptions import (
    CorruptLogError,
    InvalidOptionError,
    TableNotFoundError,
)
from server_plugin.delta.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    encode_commit,
)
from server_plugin.delta.log_files import (
    checkpoint_path,
    commit_path,
    multipart_checkpoint_path,
    parse_log_file_name,
)
from server_plugin.delta.log_reader import (
    history,
    latest_version,
    read_commit,
    read_snapshot,
    replay,
    version_at_timestamp,
)
from server_plugin.delta.storage import LocalStorage

SCHEMA = '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
META = Metadata(id="tid", schema_string=SCHEMA, configuration={"k": "1"})
PROTO = Protocol(1, 2)


def add(path: str, **kw: object) -> AddFile:
    return AddFile(path=path, partition_values={}, size=10, modification_time=1, **kw)  # type: ignore[arg-type]


def put(storage: LocalStorage, version: int, data: bytes | list[object]) -> None:
    payload = data if isinstance(data, bytes) else encode_commit(data)  # type: ignore[arg-type]
    assert storage.put_if_absent(commit_path(version), payload)


# ----------------------------------------------------------------------------- names


def test_name_codec_round_trip() -> None:
    for version in (0, 7, 10**19):
        assert parse_log_file_name(commit_path(version).split("/")[1]) == (
            "commit",
            version,
            None,
            None,
        )
        assert parse_log_file_name(checkpoint_path(version).split("/")[1]) == (
            "checkpoint",
            version,
            None,
            None,
        )
        assert parse_log_file_name(multipart_checkpoint_path(version, 2, 3).split("/")[1]) == (
            "multipart",
            version,
            2,
            3,
        )
    assert commit_path(7) == "_delta_log/00000000000000000007.json"
    with pytest.raises(InvalidOptionError):
        commit_path(-1)


@pytest.mark.parametrize(
    "name",
    [
        "00000000000000000001.crc",
        "00000000000000000001.00000000000000000003.compacted.json",
        ".tmp-3b1c6a1e-0f59-4a7a-9d1f-0d3c1b2a3e4f",
        ".00000000000000000001.json.crc",
        "00000000000000000001.json.tmp",
        "_last_checkpoint",
        "0000000000000000001.json",  # 19 digits
        "00000000000000000001.checkpoint.0000000003.0000000002.parquet",  # part > parts
        "_commits",
    ],
)
def test_unknown_names_are_ignored(name: str) -> None:
    assert parse_log_file_name(name) is None


def test_uuid_checkpoint_name() -> None:
    name = "00000000000000000004.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"
    assert parse_log_file_name(name) == ("uuid", 4, None, None)


def test_listing_ignores_crc_tmp_compacted_sidecars_and_staged(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    put(storage, 0, [CommitInfo({"operation": "CREATE"}), PROTO, META, add("a")])
    put(storage, 1, [add("b")])
    junk = {
        "00000000000000000001.crc": b"not json",
        "00000000000000000000.00000000000000000001.compacted.json": b"{broken",
        ".tmp-3b1c6a1e-0f59-4a7a-9d1f-0d3c1b2a3e4f": b"{broken",
        "00000000000000000002.json.tmp": b"{broken",
        "_sidecars/00000000000000000002.parquet": b"junk",
        "_staged_commits/00000000000000000002.aaaa.json": b"{broken",
        "README": b"hello",
    }
    for name, data in junk.items():
        storage.put_atomic(f"_delta_log/{name}", data)
    snapshot = read_snapshot(storage)
    assert snapshot.version == 1
    assert sorted(snapshot.files) == ["a", "b"]
    assert latest_version(storage) == 1


# ----------------------------------------------------------------------------- replay


def test_replay_edge_cases(tmp_path: Path) -> None:
    """§14.5: add/remove/re-add, remove unknown, last metaData wins, txn going down,
    unknown actions and fields ignored, blank lines tolerated."""
    storage = LocalStorage(tmp_path)
    put(storage, 0, [CommitInfo({"operation": "CREATE"}), PROTO, META, add("a"), add("b")])
    put(
        storage,
        1,
        [
            RemoveFile("a", 100, True),
            RemoveFile("never-added", 100, True),
            Txn("app", 5, 1),
        ],
    )
    meta2 = Metadata(id="tid", schema_string=SCHEMA, configuration={"k": "2"})
    v2 = (
        encode_commit([CommitInfo({"operation": "WRITE"})])
        + b"\n\n"
        + encode_commit([add("a", tags={"n": "2"}), meta2, Txn("app", 3, 2)])
        + b'{"futureAction":{"x":1}}\n'
        + b'{"add":{"path":"c","partitionValues":{},"size":1,"modificationTime":1,'
        + b'"dataChange":true,"someNewField":[1,2]}}\n   \n'
        + b'{"txn":{"appId":"other","version":1}}'  # no final newline
    )
    put(storage, 2, v2)
    snap = read_snapshot(storage)
    assert snap.version == 2
    assert sorted(snap.files) == ["a", "b", "c"]
    assert snap.files["a"].tags == {"n": "2"}
    assert sorted(snap.tombstones) == ["never-added"]
    assert snap.metadata.configuration == {"k": "2"}
    assert snap.txn_version("app") == 3
    assert snap.txn_version("other") == 1
    assert snap.txn_version("nobody") is None

    old = read_snapshot(storage, 1)
    assert sorted(old.files) == ["b"]
    assert sorted(old.tombstones) == ["a", "never-added"]
    assert old.txn_version("app") == 5
    assert old.metadata.configuration == {"k": "1"}
    assert read_snapshot(storage, 0).txns == {}


def test_paths_are_keyed_decoded_and_relative(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "my table")
    root_uri = storage.root_uri
    put(
        storage,
        0,
        [
            PROTO,
            META,
            add("p=a%20b/x.parquet"),
            add(f"{root_uri}/y%3A.parquet"),
            add("./z.parquet"),
        ],
    )
    put(storage, 1, [RemoveFile(f"{root_uri}/p=a%20b/x.parquet", 1), RemoveFile("y%3A.parquet", 1)])
    assert sorted(read_snapshot(storage, 0).files) == ["p=a b/x.parquet", "y:.parquet", "z.parquet"]
    snap = read_snapshot(storage)
    assert sorted(snap.files) == ["z.parquet"]
    assert sorted(snap.tombstones) == ["p=a b/x.parquet", "y:.parquet"]


def test_txn_retention_expires_old_entries() -> None:
    meta = Metadata(
        id="t",
        schema_string=SCHEMA,
        configuration={"delta.setTransactionRetentionDuration": "interval 1 days"},
    )
    day = 86_400_000
    snap = replay(
        3,
        [[PROTO, meta, Txn("old", 1, 10 * day), Txn("fresh", 2, 20 * day), Txn("none", 3)]],
        now_ms=20 * day + 5,
    )
    assert dict(snap.txns) == {"fresh": Txn("fresh", 2, 20 * day)}


def test_missing_protocol_or_metadata_is_corruption() -> None:
    with pytest.raises(CorruptLogError, match="protocol"):
        replay(0, [[META]])
    with pytest.raises(CorruptLogError, match="metaData"):
        replay(0, [[PROTO]])


# ----------------------------------------------------------------------------- errors


def test_no_table(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "nothing")
    with pytest.raises(TableNotFoundError):
        read_snapshot(storage)
    assert latest_version(storage) is None
    (tmp_path / "nothing" / "_delta_log").mkdir(parents=True)
    (tmp_path / "nothing" / "_delta_log" / "00000000000000000000.crc").write_text("x")
    with pytest.raises(TableNotFoundError):
        read_snapshot(storage)
    with pytest.raises(TableNotFoundError):
        history(storage)


def test_gap_is_corruption(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    put(storage, 0, [PROTO, META, add("a")])
    put(storage, 1, [add("b")])
    put(storage, 2, [add("c")])
    os.unlink(tmp_path / "_delta_log" / "00000000000000000001.json")
    with pytest.raises(CorruptLogError, match=r"commits \[1\] are missing"):
        read_snapshot(storage)
    assert sorted(read_snapshot(storage, 0).files) == ["a"]


def test_versions_out_of_range(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    put(storage, 0, [PROTO, META])
    with pytest.raises(InvalidOptionError, match="latest version"):
        read_snapshot(storage, 5)
    with pytest.raises(InvalidOptionError):
        read_snapshot(storage, -1)
    with pytest.raises(InvalidOptionError, match="does not exist"):
        read_commit(storage, 3)


def test_cleaned_up_versions_cannot_be_time_travelled(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    put(storage, 0, [PROTO, META])
    put(storage, 1, [add("a")])
    put(storage, 2, [add("b")])
    os.unlink(tmp_path / "_delta_log" / "00000000000000000000.json")
    with pytest.raises(InvalidOptionError, match="version 0 .* can no longer be rebuilt"):
        read_snapshot(storage, 0)
    # reading the commit itself says the same, with the same code
    with pytest.raises(InvalidOptionError, match="version 0 .* can no longer be rebuilt"):
        read_commit(storage, 0)
    with pytest.raises(InvalidOptionError, match="does not exist"):
        read_commit(storage, 3)


def test_corrupt_commit_names_the_file(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    put(storage, 0, [PROTO, META])
    put(storage, 1, b'{"add": {"path": "a", "size"\n')
    with pytest.raises(CorruptLogError, match=r"00000000000000000001\.json line 1"):
        read_snapshot(storage)


# ----------------------------------------------------------------------------- history


def test_history_and_time_travel_by_timestamp(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    put(storage, 0, [CommitInfo({"operation": "CREATE TABLE", "timestamp": 1}), PROTO, META])
    put(storage, 1, [CommitInfo({"operation": "WRITE", "timestamp": 2}), add("a")])
    put(storage, 2, [add("b")])  # no commitInfo
    log = tmp_path / "_delta_log"
    mtimes = {0: 1_000_000, 1: 2_000_000, 2: 1_500_000}  # version 2 "older" than 1
    for v, ms in mtimes.items():
        os.utime(log / f"{v:020d}.json", ns=(ms * 1_000_000, ms * 1_000_000))
    entries = history(storage)
    assert [e["version"] for e in entries] == [2, 1, 0]
    assert entries[1]["operation"] == "WRITE"
    assert entries[0]["timestamp"] == 1_500_000  # filled from the file time
    assert [e["version"] for e in history(storage, limit=2)] == [2, 1]

    assert version_at_timestamp(storage, 1_000_000) == 0
    assert version_at_timestamp(storage, 1_999_999) == 0
    assert version_at_timestamp(storage, 2_000_000) == 1
    # version 2's time is made monotonic: previous + 1 ms
    assert version_at_timestamp(storage, 2_000_001) == 2
    with pytest.raises(InvalidOptionError, match="before the earliest"):
        version_at_timestamp(storage, 999_999)
    assert read_snapshot(storage, 1).timestamp == 2_000_000
