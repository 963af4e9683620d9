"""The plugin's snapshot cache: incremental replay equals a full replay, always current."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qbeast_connect.spark.snapshot import TableState, _Cached, _decode
from server_plugin import snapshot_cache
from server_plugin.delta import log_reader
from server_plugin.delta.actions import (
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    encode_commit,
)
from server_plugin.delta.checkpoint import write_checkpoint
from server_plugin.delta.log_files import commit_path
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.snapshot import DeltaSnapshot
from server_plugin.delta.storage import LocalStorage
from server_plugin.snapshot_rows import snapshot_rows

SCHEMA = '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
PROTO = Protocol(1, 2)


def meta(**conf: str) -> Metadata:
    return Metadata(id="tid", schema_string=SCHEMA, configuration=conf)


def add(path: str, size: int = 10, blocks: str = "[]") -> AddFile:
    return AddFile(
        path=path,
        partition_values={},
        size=size,
        modification_time=1,
        data_change=True,
        tags={"revision": "1", "blocks": blocks},
    )


def remove(path: str) -> RemoveFile:
    return RemoveFile(path=path, deletion_timestamp=5, data_change=True)


def info(version: int) -> CommitInfo:
    return CommitInfo({"timestamp": 1000 + version, "operation": "WRITE"})


class Log:
    """Writes commits with consecutive versions."""

    def __init__(self, storage: LocalStorage) -> None:
        self.storage = storage
        self.version = -1

    def put(self, *actions: object) -> int:
        self.version += 1
        data = encode_commit([info(self.version), *actions])  # type: ignore[list-item]
        assert self.storage.put_if_absent(commit_path(self.version), data)
        return self.version


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Log]:
    snapshot_cache.clear()
    yield Log(LocalStorage(str(tmp_path / "t")))
    snapshot_cache.clear()


@pytest.fixture
def full_reads(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Counts the full log replays the cache asks for."""
    calls: list[int | None] = []
    real = log_reader.read_state

    def counting(storage: Any, version: int | None = None) -> Any:
        calls.append(version)
        return real(storage, version)

    monkeypatch.setattr(snapshot_cache, "read_state", counting)
    return calls


def state_files(snap: DeltaSnapshot) -> dict[str, AddFile]:
    # ``dataChange`` says what a commit did, not what the table holds: a checkpoint writes
    # every add with false (Delta PROTOCOL), so a replay from a checkpoint differs there
    return {k: dataclasses.replace(a, data_change=True) for k, a in snap.files.items()}


def same_state(a: DeltaSnapshot, b: DeltaSnapshot) -> None:
    assert a.version == b.version
    assert state_files(a) == state_files(b)
    assert a.metadata == b.metadata
    assert a.protocol == b.protocol
    assert dict(a.txns) == dict(b.txns)
    assert dict(a.domain_metadata) == dict(b.domain_metadata)
    assert a.timestamp == b.timestamp


def cached(log: Log) -> DeltaSnapshot:
    return snapshot_cache.latest_state(log.storage).state.snapshot


def test_incremental_state_equals_full_replay_after_appends_overwrite_optimize_checkpoint(
    log: Log, full_reads: list[int | None]
) -> None:
    log.put(PROTO, meta(k="1"), add("a"), add("b"))
    same_state(cached(log), read_snapshot(log.storage))
    # appends, a txn
    log.put(add("c"), Txn("app", 1, 10**15))
    log.put(add("d"), add("e"))
    same_state(cached(log), read_snapshot(log.storage))
    # an overwrite: every file removed, new ones added, new metadata
    log.put(*(remove(p) for p in "abcde"), add("f"), meta(k="2"), Txn("app", 2, 10**15))
    same_state(cached(log), read_snapshot(log.storage))
    # optimize: removes with no data change plus a compacted file; a re-add of a removed path
    log.put(add("g"), add("h"))
    log.put(remove("g"), remove("h"), add("gh", size=20), add("a", size=99))
    same_state(cached(log), read_snapshot(log.storage))
    # a checkpoint, then more commits after it
    write_checkpoint(log.storage, read_snapshot(log.storage))
    log.put(add("i"))
    snap = cached(log)
    same_state(snap, read_snapshot(log.storage))
    assert sorted(snap.files) == ["a", "f", "gh", "i"]
    assert snap.files["a"].size == 99
    assert snap.txn_version("app") == 2
    assert snap.configuration == {"k": "2"}
    # one full replay (the first query); every later query read only the new commits
    assert full_reads == [None]


def test_unchanged_table_is_served_from_cache_without_replay(
    log: Log, full_reads: list[int | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    log.put(PROTO, meta(), add("a"))
    first = snapshot_cache.latest_state(log.storage)
    read: list[str] = []
    real = LocalStorage.read_bytes

    def spy(self: LocalStorage, rel: str) -> bytes:
        read.append(rel)
        return real(self, rel)

    monkeypatch.setattr(LocalStorage, "read_bytes", spy)
    again = snapshot_cache.latest_state(log.storage)
    assert again is first
    assert read == []  # a listing only: no commit or checkpoint was read
    log.put(add("b"))
    third = snapshot_cache.latest_state(log.storage)
    assert read == [commit_path(1)]
    assert sorted(third.state.snapshot.files) == ["a", "b"]
    assert full_reads == [None]


def test_recreated_table_is_not_served_from_cache(log: Log) -> None:
    log.put(PROTO, meta(), add("a"))
    log.put(add("b"))
    assert sorted(cached(log).files) == ["a", "b"]
    shutil.rmtree(log.storage.root)
    log.version = -1
    log.put(PROTO, meta(), add("x"))
    log.put(add("y", size=12345))
    # time travel to the cached version number reads the new log
    assert sorted(snapshot_cache.state_at(log.storage, 1).snapshot.files) == ["x", "y"]
    snap = cached(log)
    # same version number as the cached state, but another log: a full read
    assert snap.version == 1
    assert sorted(snap.files) == ["x", "y"]
    same_state(snap, read_snapshot(log.storage))


def test_time_travel_uses_cache_only_for_the_exact_version(
    log: Log, full_reads: list[int | None]
) -> None:
    log.put(PROTO, meta(), add("a"))
    log.put(add("b"))
    cached(log)
    assert sorted(snapshot_cache.state_at(log.storage, 1).snapshot.files) == ["a", "b"]
    assert full_reads == [None]
    old = snapshot_cache.state_at(log.storage, 0).snapshot
    assert sorted(old.files) == ["a"]
    assert full_reads == [None, 0]


def test_commit_by_deltalake_is_seen_incrementally(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    snapshot_cache.clear()
    path = str(tmp_path / "dl")
    write_deltalake(path, pa.table({"a": [1, 2]}))
    storage = LocalStorage(path)
    first = snapshot_cache.latest_state(storage).state.snapshot
    write_deltalake(path, pa.table({"a": [3]}), mode="append")
    second = snapshot_cache.latest_state(storage).state.snapshot
    assert (first.version, second.version) == (0, 1)
    assert len(second.files) == 2
    same_state(second, read_snapshot(storage))
    write_deltalake(path, pa.table({"a": [4]}), mode="overwrite")
    third = snapshot_cache.latest_state(storage).state.snapshot
    assert len(third.files) == 1
    same_state(third, read_snapshot(storage))


# ------------------------------------------------------------------ rows and the client


def client_view(state: TableState) -> tuple[Any, ...]:
    adds = {a["path"]: json.dumps(a, sort_keys=True) for a in state.adds}
    return state.version, adds, dict(state.metadata), dict(state.protocol), dict(state.txns)


def test_difference_rows_rebuild_the_full_state_on_the_client(log: Log) -> None:
    path = log.storage.root
    log.put(PROTO, meta(k="1"), add("a"), add("b"), add("c"), Txn("w", 1, 10**15))
    rows = list(snapshot_rows(path))
    state, token = _decode(path, rows, None)
    assert token is not None and len(state.adds) == 3
    before = state.qbeast()
    log.put(remove("a"), add("d"))
    log.put(remove("b"), add("b", size=77), meta(k="2"), Txn("w", 2, 10**15))
    rows = list(snapshot_rows(path, since=token))
    kinds = [k for k, _ in rows]
    assert ("delta", token) in rows
    # only what changed travels: 2 removes (a, old b) and 2 adds (d, new b)
    assert kinds.count("remove") == 2 and kinds.count("add") == 2
    new_state, new_token = _decode(path, rows, _Cached(token, state))
    full, _ = _decode(path, list(snapshot_rows(path, use_cache=False)), None)
    assert client_view(new_state) == client_view(full)
    assert new_state.configuration == {"k": "2"} and new_state.txns == {"w": 2}
    # the qbeast view reuses the decoded files that were kept and equals a fresh decode
    view = new_state.qbeast()
    assert view.files == full.qbeast().files
    assert view.configuration == {"k": "2"}
    assert {f.path: f for f in view.files}["c"] is {f.path: f for f in before.files}["c"]
    # nothing changed: only version, token, delta marker and the txns
    again = list(snapshot_rows(path, since=new_token))
    assert [k for k, _ in again] == ["version", "token", "delta", "txn"]
    same, _ = _decode(path, again, _Cached(str(new_token), new_state))
    assert same is new_state  # unchanged: the same state, its qbeast view not rebuilt


def test_unknown_token_gets_the_full_state(log: Log) -> None:
    path = log.storage.root
    log.put(PROTO, meta(), add("a"), add("b"))
    rows = list(snapshot_rows(path, since="not-a-token"))
    assert "delta" not in [k for k, _ in rows]
    state, _ = _decode(path, rows, None)
    assert sorted(a["path"] for a in state.adds) == ["a", "b"]
