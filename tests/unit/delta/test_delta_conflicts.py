"""The conflict table of §11, as pure-function cases."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from qbeast_connect.exceptions import CommitConflictError
from server_plugin.delta.actions import (
    Action,
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from server_plugin.delta.conflicts import TransactionReadSet, check_conflict

SCHEMA = '{"type":"struct","fields":[]}'


def _add(path: str, data_change: bool = True) -> AddFile:
    return AddFile(path, {}, 1, 1, data_change)


BLIND_WINNER: list[Action] = [CommitInfo({"operation": "WRITE", "isBlindAppend": True}), _add("w1")]
NON_BLIND_WINNER: list[Action] = [
    CommitInfo({"operation": "MERGE", "isBlindAppend": False}),
    _add("w2"),
]
COMPACTION_WINNER: list[Action] = [
    CommitInfo({"operation": "OPTIMIZE"}),
    RemoveFile("a", 1, False),
    _add("c", data_change=False),
]

BLIND = TransactionReadSet.blind_append(4)
WHOLE = TransactionReadSet(read_version=4, read_whole_table=True)
READS_A = TransactionReadSet(read_version=4, read_files=frozenset({"a"}))
REMOVES_A = TransactionReadSet(read_version=4, removed_files=frozenset({"a"}))
META_CHANGE = TransactionReadSet(read_version=4, changes_metadata=True)
COMPACTION = TransactionReadSet(
    read_version=4,
    read_files=frozenset({"x"}),
    removed_files=frozenset({"x"}),
    data_change_only_false=True,
)
APP = TransactionReadSet.blind_append(4, app_ids=["stream-1"])


@dataclass(frozen=True)
class Case:
    id: str
    tx: TransactionReadSet
    winner: list[Action]
    conflict: str | None  # expected reason fragment, None = no conflict


CASES = [
    Case("blind-vs-blind", BLIND, BLIND_WINNER, None),
    Case("blind-vs-nonblind-append", BLIND, NON_BLIND_WINNER, None),
    Case("blind-vs-compaction", BLIND, COMPACTION_WINNER, None),
    Case("any-vs-protocol", BLIND, [Protocol(1, 2)], "ProtocolChanged"),
    Case("any-vs-metadata", BLIND, [Metadata("t", SCHEMA)], "MetadataChanged"),
    Case("same-app-id", APP, [Txn("stream-1", 9)], "ConcurrentTransaction"),
    Case("other-app-id", APP, [Txn("stream-2", 9)], None),
    Case("whole-table-vs-blind-append", WHOLE, BLIND_WINNER, None),
    Case("whole-table-vs-nonblind-append", WHOLE, NON_BLIND_WINNER, "ConcurrentAppend"),
    Case("whole-table-vs-any-remove", WHOLE, [RemoveFile("z", 1, True)], "ConcurrentDeleteRead"),
    Case("metadata-change-vs-blind-append", META_CHANGE, BLIND_WINNER, "ConcurrentAppend"),
    Case("read-file-removed", READS_A, [RemoveFile("a", 1, True)], "ConcurrentDeleteRead"),
    Case("read-file-compacted", READS_A, COMPACTION_WINNER, "ConcurrentDeleteRead"),
    Case("read-other-file-removed", READS_A, [RemoveFile("b", 1, True)], None),
    Case("delete-delete", REMOVES_A, [RemoveFile("a", 1, True)], "ConcurrentDeleteDelete"),
    Case("compaction-vs-append", COMPACTION, NON_BLIND_WINNER, None),
    Case(
        "compaction-vs-compaction-same-file",
        COMPACTION,
        [RemoveFile("x", 1, False)],
        "ConcurrentDeleteDelete",
    ),
    Case(
        "encoded-path-matches",
        TransactionReadSet(4, read_files=frozenset({"p=a b/f"})),
        [RemoveFile("p=a%20b/f", 1, True)],
        "ConcurrentDeleteRead",
    ),
    Case("winner-adds-without-change", WHOLE, [_add("r", data_change=False)], None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_conflict_table(case: Case) -> None:
    if case.conflict is None:
        check_conflict(case.tx, 5, case.winner)
    else:
        with pytest.raises(CommitConflictError, match=case.conflict) as info:
            check_conflict(case.tx, 5, case.winner)
        assert "version 5" in str(info.value)
        assert "retry" in str(info.value)


def test_message_names_the_winning_operation() -> None:
    with pytest.raises(CommitConflictError, match=r"version 7 \(OPTIMIZE\)"):
        check_conflict(READS_A, 7, COMPACTION_WINNER)


def test_absolute_winner_paths_are_normalized_with_the_root() -> None:
    with pytest.raises(CommitConflictError):
        check_conflict(READS_A, 5, [RemoveFile("file:///t/a", 1, True)], root_uri="file:///t")


REVISION_CHANGE = TransactionReadSet(read_version=4, changes_metadata=True, metadata_commutes=True)


def test_revision_only_metadata_change_commutes_with_appends() -> None:
    check_conflict(REVISION_CHANGE, 5, NON_BLIND_WINNER)
    check_conflict(REVISION_CHANGE, 5, BLIND_WINNER)
    with pytest.raises(CommitConflictError, match="ConcurrentAppend"):
        check_conflict(META_CHANGE, 5, NON_BLIND_WINNER)


def test_resolved_metadata_is_not_a_conflict_but_the_rest_is_checked() -> None:
    winner: list[Action] = [Metadata("t", SCHEMA), _add("w3"), RemoveFile("a", 1, True)]
    check_conflict(REVISION_CHANGE, 5, winner[:2], metadata_resolved=True)
    with pytest.raises(CommitConflictError, match="MetadataChanged"):
        check_conflict(REVISION_CHANGE, 5, winner[:2])
    with pytest.raises(CommitConflictError, match="ConcurrentDeleteDelete"):
        check_conflict(REMOVES_A, 5, winner, metadata_resolved=True)
    with pytest.raises(CommitConflictError, match="ProtocolChanged"):
        check_conflict(REVISION_CHANGE, 5, [Protocol(1, 2), *winner[:1]], metadata_resolved=True)
