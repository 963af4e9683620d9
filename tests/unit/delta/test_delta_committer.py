"""The committer: commitInfo, writer duties, conflicts through real storage, outcomes."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from delta_testlib import append, create_table, log_lines, qbeast_tags, write_data_file

from qbeast_connect.exceptions import (
    CommitConflictError,
    CommitRetriesExhaustedError,
    InvalidOptionError,
    StorageError,
)
from server_plugin.delta import committer as committer_module
from server_plugin.delta.actions import AddFile, CommitInfo, Metadata, RemoveFile, Txn
from server_plugin.delta.committer import commit, create_table_actions
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import latest_version, read_commit, read_snapshot
from server_plugin.delta.protocol import DEFAULT_PROTOCOL
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.storage import LocalStorage

DATA = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]})


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    s = LocalStorage(tmp_path / "t")
    create_table(s, DATA, tags=qbeast_tags())
    return s


def _commit_info(storage: LocalStorage, version: int) -> dict[str, object]:
    first = json.loads(log_lines(storage, version)[0])
    assert list(first) == ["commitInfo"]
    return first["commitInfo"]


def test_commit_info_and_json_hygiene(storage: LocalStorage) -> None:
    """§14.22 and the commitInfo contract."""
    version = append(storage, DATA)
    info = _commit_info(storage, version)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Append"}
    assert info["readVersion"] == 0
    assert info["isolationLevel"] == "WriteSerializable"
    assert info["isBlindAppend"] is True
    assert info["engineInfo"] == "qbeast-connect/0.1.0"
    uuid.UUID(str(info["txnId"]))
    add = read_commit(storage, version)[1]
    assert isinstance(add, AddFile)
    assert info["operationMetrics"] == {
        "numFiles": "1",
        "numOutputRows": "3",
        "numOutputBytes": str(add.size),
    }
    created = _commit_info(storage, 0)
    assert created["operationParameters"] == {"mode": "ErrorIfExists", "partitionBy": "[]"}
    assert "readVersion" not in created and created["isBlindAppend"] is False
    for v in (0, version):
        lines = log_lines(storage, v)
        assert lines[-1] == ""
        for line in lines[:-1]:
            assert len(json.loads(line)) == 1
            assert not re.search(r"\bNaN\b|\bInfinity\b", line)
    for key, add_action in read_snapshot(storage).files.items():
        assert storage.file_info(key).size == add_action.size


def test_new_table_requires_protocol_and_metadata(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    add = write_data_file(storage, DATA)
    with pytest.raises(InvalidOptionError, match="create_table_actions"):
        commit(storage, [add], TransactionReadSet(-1), operation="WRITE", operation_parameters={})
    assert latest_version(storage) is None


def test_creating_an_existing_table_conflicts(storage: LocalStorage) -> None:
    with pytest.raises(CommitConflictError, match="created concurrently"):
        create_table(storage, DATA)
    assert latest_version(storage) == 0


def test_lost_race_rebases_a_blind_append(storage: LocalStorage) -> None:
    append(storage, DATA, read_version=0)  # the winner, version 1
    version = append(storage, DATA, read_version=0)  # rebased to version 2
    assert version == 2
    assert _commit_info(storage, 2)["readVersion"] == 0
    assert len(read_snapshot(storage).files) == 3


def test_blind_vs_blind_both_land_with_txns(storage: LocalStorage) -> None:
    v1 = append(storage, DATA, read_version=0, extra=[Txn("app-a", 1, 1)])
    v2 = append(storage, DATA, read_version=0, extra=[Txn("app-b", 1, 1)])
    assert (v1, v2) == (1, 2)
    snap = read_snapshot(storage)
    assert snap.txn_version("app-a") == 1 and snap.txn_version("app-b") == 1


def test_concurrent_metadata_change_conflicts(storage: LocalStorage) -> None:
    snap = read_snapshot(storage)
    new_meta = dataclasses.replace(snap.metadata, configuration={"qbeast.x": "1"})
    commit(
        storage,
        [new_meta],
        TransactionReadSet(0),
        operation="SET TBLPROPERTIES",
        operation_parameters={},
    )
    with pytest.raises(CommitConflictError, match=r"version 1 \(SET TBLPROPERTIES\).*Metadata"):
        append(storage, DATA, read_version=0)
    assert latest_version(storage) == 1


def test_removal_of_a_file_we_read_conflicts(storage: LocalStorage) -> None:
    snap = read_snapshot(storage)
    ((key, live),) = snap.files.items()
    # a concurrent delete of the file
    commit(
        storage,
        [live.to_remove(1)],
        TransactionReadSet(0, read_files=frozenset({key})),
        operation="DELETE",
        operation_parameters={},
    )
    # our transaction read that file and rewrites it elsewhere
    new = write_data_file(storage, DATA)
    with pytest.raises(CommitConflictError, match="ConcurrentDeleteDelete"):
        commit(
            storage,
            [new, live.to_remove(2)],
            TransactionReadSet(0, read_files=frozenset({key})),
            operation="UPDATE",
            operation_parameters={},
        )
    with pytest.raises(CommitConflictError, match="ConcurrentDeleteRead"):
        commit(
            storage,
            [new],
            TransactionReadSet(0, read_files=frozenset({key})),
            operation="MERGE",
            operation_parameters={},
        )
    assert latest_version(storage) == 1


def test_same_txn_app_id_conflicts(storage: LocalStorage) -> None:
    append(storage, DATA, read_version=0, extra=[Txn("stream", 1, 1)])
    with pytest.raises(CommitConflictError, match="ConcurrentTransaction"):
        append(storage, DATA, read_version=0, extra=[Txn("stream", 1, 1)])


def test_overwrite_conflicts_with_concurrent_append_it_did_not_read(storage: LocalStorage) -> None:
    """A whole-table read (overwrite) vs a concurrent non-blind append."""
    snap = read_snapshot(storage)
    other = write_data_file(storage, DATA)
    commit(
        storage,
        [other],
        TransactionReadSet(0, read_files=frozenset(snap.files)),
        operation="MERGE",
        operation_parameters={},
    )
    new = write_data_file(storage, DATA)
    removes = [a.to_remove(5) for a in snap.files.values()]
    with pytest.raises(CommitConflictError, match="ConcurrentAppend"):
        commit(
            storage,
            [new, *removes],
            TransactionReadSet(0, read_whole_table=True),
            operation="WRITE",
            operation_parameters={"mode": "Overwrite"},
        )


def test_append_only_table(tmp_path: Path) -> None:
    """§14.17."""
    storage = LocalStorage(tmp_path)
    create_table(storage, DATA, configuration={"delta.appendOnly": "true"})
    ((key, live),) = read_snapshot(storage).files.items()
    with pytest.raises(InvalidOptionError, match="append-only"):
        commit(
            storage,
            [live.to_remove(1)],
            TransactionReadSet(0, read_files=frozenset({key})),
            operation="DELETE",
            operation_parameters={},
        )
    compacted = write_data_file(storage, DATA, data_change=False)
    version = commit(
        storage,
        [compacted, live.to_remove(1, data_change=False)],
        TransactionReadSet(0, read_files=frozenset({key})),
        operation="OPTIMIZE",
        operation_parameters={},
    )
    assert version == 1
    assert _commit_info(storage, 1)["isBlindAppend"] is False


def test_not_null_violation_aborts_the_commit(tmp_path: Path) -> None:
    """§14.18 (NOT NULL part; SQL invariants are refused by the protocol gate)."""
    storage = LocalStorage(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    good = pa.table({"id": [1], "name": ["x"]}, schema=schema)
    create_table(storage, good)
    bad = pa.table({"id": pa.array([1, None], pa.int64()), "name": ["x", "y"]})
    with pytest.raises(InvalidOptionError, match="NOT NULL"):
        append(storage, bad)
    assert latest_version(storage) == 0


def test_add_must_name_an_existing_file_with_its_exact_size(storage: LocalStorage) -> None:
    add = write_data_file(storage, DATA)
    with pytest.raises(InvalidOptionError, match="exact size"):
        commit(
            storage,
            [dataclasses.replace(add, size=add.size + 1)],
            TransactionReadSet(0),
            operation="WRITE",
            operation_parameters={},
        )
    with pytest.raises(InvalidOptionError, match="does not exist"):
        commit(
            storage,
            [dataclasses.replace(add, path="nope.parquet")],
            TransactionReadSet(0),
            operation="WRITE",
            operation_parameters={},
        )
    assert latest_version(storage) == 0


def test_invalid_commits_are_refused(storage: LocalStorage) -> None:
    add = write_data_file(storage, DATA)

    def run(actions: list[object], **kw: object) -> None:
        commit(
            storage,
            actions,
            TransactionReadSet(0),
            operation="WRITE",  # type: ignore[arg-type]
            operation_parameters={},
            **kw,
        )  # type: ignore[arg-type]

    with pytest.raises(InvalidOptionError, match="twice"):
        run([add, add])
    with pytest.raises(InvalidOptionError, match="both added and removed"):
        run([add, add.to_remove(1)])
    with pytest.raises(InvalidOptionError, match="commitInfo"):
        run([CommitInfo({"operation": "X"}), add])
    with pytest.raises(InvalidOptionError, match="txn per appId"):
        run([Txn("a", 1), Txn("a", 2)])
    with pytest.raises(InvalidOptionError, match="trust the flag"):
        run([add, RemoveFile("x", 1)], is_blind_append=True)
    with pytest.raises(InvalidOptionError, match="partition"):
        run([dataclasses.replace(add, partition_values={"p": "1"})])
    snap = read_snapshot(storage)
    with pytest.raises(InvalidOptionError, match="table id"):
        run([dataclasses.replace(snap.metadata, id="other")])
    with pytest.raises(InvalidOptionError, match="NaN"):
        run([add], extra_commit_info={"score": float("nan")})
    assert latest_version(storage) == 0


class _FlakyStorage(LocalStorage):
    """Writes the commit but reports a failure (lost acknowledgement)."""

    def __init__(self, root: str, *, write: bool) -> None:
        super().__init__(root)
        self.write = write
        self.calls = 0

    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        self.calls += 1
        if self.calls == 1:
            if self.write:
                super().put_if_absent(rel_path, data)
            raise StorageError("connection reset while writing")
        return super().put_if_absent(rel_path, data)


def test_unknown_outcome_that_landed_is_a_success(storage: LocalStorage) -> None:
    flaky = _FlakyStorage(storage.root, write=True)
    version = append(flaky, DATA)
    assert version == 1 and flaky.calls == 1
    assert latest_version(storage) == 1
    assert len(read_snapshot(storage).files) == 2


def test_failed_put_that_wrote_nothing_raises_and_leaves_the_table(storage: LocalStorage) -> None:
    flaky = _FlakyStorage(storage.root, write=False)
    with pytest.raises(StorageError, match="connection reset"):
        append(flaky, DATA)
    assert latest_version(storage) == 0


def test_unknown_outcome_found_among_winners(storage: LocalStorage) -> None:
    """Our first attempt landed but reported failure and someone else took the next
    version meanwhile: the txnId is found while checking winners, nothing is doubled."""

    class Racy(LocalStorage):
        calls = 0

        def put_if_absent(self, rel_path: str, data: bytes) -> bool:
            Racy.calls += 1
            if Racy.calls == 1:
                super().put_if_absent(rel_path, data)  # lands as version 1 ...
                append(storage, DATA, read_version=1)  # ... and a rival takes version 2
                return False  # ... but we are told "already exists"
            return super().put_if_absent(rel_path, data)

    version = append(Racy(storage.root), DATA)
    assert version == 1
    assert latest_version(storage) == 2
    assert len(read_snapshot(storage).files) == 3


def test_retries_are_bounded(storage: LocalStorage) -> None:
    class AlwaysLoses(LocalStorage):
        def put_if_absent(self, rel_path: str, data: bytes) -> bool:
            append(storage, DATA)  # a rival commits the version first, every time
            return super().put_if_absent(rel_path, data)

    with pytest.raises(CommitRetriesExhaustedError, match="4 times"):
        add = write_data_file(storage, DATA)
        commit(
            AlwaysLoses(storage.root),
            [add],
            TransactionReadSet(0),
            operation="WRITE",
            operation_parameters={},
            max_retries=3,
        )
    snap = read_snapshot(storage)
    assert snap.version == 4 and len(snap.files) == 5  # only the rivals' commits


def test_failed_checkpoint_does_not_fail_the_commit(
    storage: LocalStorage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(committer_module, "write_checkpoint", broken)
    with caplog.at_level(logging.WARNING):
        for _ in range(10):
            version = append(storage, DATA)
    assert version == 10
    assert "checkpoint failed" in caplog.text
    assert not storage.exists("_delta_log/00000000000000000010.checkpoint.parquet")
    assert read_snapshot(storage).version == 10


def test_checkpoint_interval_property_is_honoured(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    create_table(storage, DATA, configuration={"delta.checkpointInterval": "3"})
    for _ in range(6):
        append(storage, DATA)
    names = sorted(f.name for f in storage.list_prefix("_delta_log") if "checkpoint." in f.name)
    assert names == [
        "00000000000000000003.checkpoint.parquet",
        "00000000000000000006.checkpoint.parquet",
    ]


def test_create_table_actions(tmp_path: Path) -> None:
    protocol, metadata = create_table_actions(
        arrow_schema_to_delta(DATA.schema), {"qbeast.lastRevisionID": "0"}, name="t"
    )
    assert protocol == DEFAULT_PROTOCOL
    assert isinstance(metadata, Metadata)
    uuid.UUID(metadata.id)
    assert metadata.partition_columns == () and metadata.format_provider == "parquet"
    assert metadata.created_time is not None and metadata.created_time > 0
    with pytest.raises(InvalidOptionError, match="strings"):
        create_table_actions(arrow_schema_to_delta(DATA.schema), {"x": 1})  # type: ignore[dict-item]


def test_same_txn_id_retry_is_idempotent(tmp_path: Path) -> None:
    """A caller that retries a whole write after an unclear failure, with the same txnId
    and read version, gets the version of the attempt that landed, not a second commit."""
    storage = LocalStorage(tmp_path)
    tx = str(uuid.uuid4())
    actions = [
        *create_table_actions(arrow_schema_to_delta(DATA.schema)),
        write_data_file(storage, DATA),
    ]

    def attempt() -> int:
        return commit(
            storage,
            actions,
            TransactionReadSet(-1),
            operation="CREATE TABLE",
            operation_parameters={},
            txn_id=tx,
        )

    assert attempt() == 0
    assert attempt() == 0
    add = write_data_file(storage, DATA)
    append(storage, DATA, read_version=0)  # someone else commits version 1

    def again() -> int:
        return commit(
            storage,
            [add],
            TransactionReadSet(0),
            operation="WRITE",
            operation_parameters={},
            extra_commit_info={"txnId": "w-1"},
        )

    assert again() == 2
    assert again() == 2
    assert latest_version(storage) == 2
    assert _commit_info(storage, 2)["txnId"] == "w-1"


def test_unreadable_outcome_is_reported_as_unknown(storage: LocalStorage) -> None:
    class Blind(LocalStorage):
        def put_if_absent(self, rel_path: str, data: bytes) -> bool:
            super().put_if_absent(rel_path, data)
            raise StorageError("timeout")

        def read_bytes(self, rel_path: str) -> bytes:
            if rel_path.endswith("00000000000000000001.json"):
                raise StorageError("still unreachable")
            return super().read_bytes(rel_path)

    with pytest.raises(committer_module.CommitOutcomeUnknownError, match="outcome is unknown"):
        append(Blind(storage.root), DATA)
