"""Optimistic-concurrency conflict checks (pure functions, no storage access).

When a commit loses the race for version ``v``, every commit that landed since the
transaction's read version (the *winners*) is checked against what the transaction
read and wrote. Rules, at isolation level WriteSerializable (Delta Spark
``ConflictChecker``):

=============================  ==================================================
Winner contains                Conflict when
=============================  ==================================================
``protocol``                   always (ProtocolChanged)
``metaData``                   always (MetadataChanged), unless the committer
                               rebased the transaction over it (``metadata_resolved``)
``txn``                        its ``appId`` is one the transaction read or writes
``add`` (dataChange)           the transaction read the whole table, or changes
                               metadata (unless that change commutes with
                               appends); a winner flagged ``isBlindAppend`` is
                               ignored unless the transaction changes metadata.
                               Not checked for compactions (all dataChange=false).
``remove``                     it removes a file the transaction read or removes,
                               or any file when the transaction read the whole table
=============================  ==================================================

A blind append (adds only, nothing read) therefore conflicts only on
protocol/metaData/txn and always rebases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from qbeast_connect.exceptions import CommitConflictError

from .actions import (
    Action,
    AddFile,
    CommitInfo,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from .uris import normalize_path

__all__ = ["TransactionReadSet", "check_conflict"]


@dataclass(frozen=True, slots=True)
class TransactionReadSet:
    """What a transaction read and what kind of change it makes.

    Attributes:
        read_version: Table version the transaction read (-1 when creating the table).
        read_whole_table: True when the result depends on every file (e.g. an overwrite
            or an OTree optimization that scanned the table).
        read_files: Normalized paths (see ``uris.normalize_path``) of files read.
        removed_files: Normalized paths of files this transaction removes.
        app_ids: ``txn`` appIds the transaction consulted or writes.
        changes_metadata: The transaction writes a ``metaData`` action.
        changes_protocol: The transaction writes a ``protocol`` action.
        is_blind_append: The transaction only adds files and read nothing.
        data_change_only_false: All file actions have ``dataChange=false`` (compaction);
            such transactions skip the concurrent-append check.
        metadata_commutes: The transaction's ``metaData`` change (if any) only adds
            entries that files added concurrently cannot contradict (qbeast revisions),
            so a metadata change alone does not make concurrent appends conflicts.
    """

    read_version: int
    read_whole_table: bool = False
    read_files: frozenset[str] = field(default_factory=frozenset)
    removed_files: frozenset[str] = field(default_factory=frozenset)
    app_ids: frozenset[str] = field(default_factory=frozenset)
    changes_metadata: bool = False
    changes_protocol: bool = False
    is_blind_append: bool = False
    data_change_only_false: bool = False
    metadata_commutes: bool = False

    def __post_init__(self) -> None:
        for name in ("read_files", "removed_files", "app_ids"):
            value = getattr(self, name)
            if not isinstance(value, frozenset):
                object.__setattr__(self, name, frozenset(value))

    @classmethod
    def blind_append(cls, read_version: int, app_ids: Iterable[str] = ()) -> TransactionReadSet:
        """Return the read set of a blind append at ``read_version``."""
        return cls(read_version=read_version, app_ids=frozenset(app_ids), is_blind_append=True)


def _describe(winning_version: int, winning_actions: Sequence[Action]) -> str:
    for action in winning_actions:
        if isinstance(action, CommitInfo):
            op = action.operation
            if op:
                return f"version {winning_version} ({op})"
    return f"version {winning_version}"


def check_conflict(
    tx: TransactionReadSet,
    winning_version: int,
    winning_actions: Sequence[Action],
    *,
    root_uri: str | None = None,
    metadata_resolved: bool = False,
) -> None:
    """Raise if a concurrent commit makes the transaction unsafe to retry on top of it.

    Args:
        tx: The transaction's read set.
        winning_version: Version of the concurrent commit.
        winning_actions: Its actions.
        root_uri: Table root URI, to normalize absolute paths in the winner.
        metadata_resolved: The winner's ``metaData`` was already reconciled with the
            transaction (the committer rebased the transaction over it), so it is not a
            conflict by itself.

    Raises:
        CommitConflictError: Naming the winning version, its operation and the reason,
            and telling the caller to re-read the table and retry.
    """
    who = _describe(winning_version, winning_actions)

    def conflict(reason: str) -> CommitConflictError:
        return CommitConflictError(
            f"concurrent commit {who} conflicts with this transaction (read version "
            f"{tx.read_version}): {reason}; re-read the table and retry the operation"
        )

    winner_blind = any(isinstance(a, CommitInfo) and a.is_blind_append for a in winning_actions)
    touched = tx.read_files | tx.removed_files
    for action in winning_actions:
        if isinstance(action, Protocol):
            raise conflict("it changed the table protocol (ProtocolChanged)")
        if isinstance(action, Metadata) and not metadata_resolved:
            raise conflict("it changed the table metadata (MetadataChanged)")
        if isinstance(action, Txn) and action.app_id in tx.app_ids:
            raise conflict(
                f"it committed txn appId {action.app_id!r} version {action.version}, which "
                "this transaction also uses (ConcurrentTransaction)"
            )
    metadata_matters = tx.changes_metadata and not tx.metadata_commutes
    if not tx.data_change_only_false and (tx.read_whole_table or metadata_matters):
        relevant = [
            a
            for a in winning_actions
            if isinstance(a, AddFile)
            and a.data_change
            and (metadata_matters or not winner_blind)
        ]
        if relevant:
            raise conflict(
                f"it added {len(relevant)} file(s) (e.g. {relevant[0].path!r}) that this "
                "transaction should have read (ConcurrentAppend)"
            )
    for action in winning_actions:
        if isinstance(action, RemoveFile):
            key = normalize_path(action.path, root_uri)
            if key in tx.removed_files:
                raise conflict(
                    f"it removed {action.path!r}, which this transaction also removes "
                    "(ConcurrentDeleteDelete)"
                )
            if key in touched:
                raise conflict(
                    f"it removed {action.path!r}, which this transaction read "
                    "(ConcurrentDeleteRead)"
                )
            if tx.read_whole_table:
                raise conflict(
                    f"it removed {action.path!r} while this transaction read the whole "
                    "table (ConcurrentDeleteRead)"
                )
