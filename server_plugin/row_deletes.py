"""Deletes written as deletion vectors: the ``delete_vectors`` table command.

The client finds, with one Spark job, the row positions (``_metadata.row_index``) its
condition is TRUE for in each file; this command marks them deleted without rewriting a
data file, in one Delta ``DELETE`` commit:

* each file keeps its ``add`` (path, size, statistics, qbeast tags) and gets a new
  deletion vector: the union of its old vector's rows and the new ones, all vectors of
  the commit in one new ``deletion_vector_<uuid>.bin`` file;
* the old logical file is removed (``remove`` with its old vector, ``dataChange=true``), and
  its statistics are marked ``tightBounds: false``, as Delta marks them: they still bound
  the live rows, but no longer exactly;
* a file whose every row is now deleted is removed, with no new ``add``.

Rows a file's old vector already deleted are not counted again. The commit reads only the
files it changes: a concurrent append does not conflict with it, while a concurrent
change of one of its files does. The vector file is written whole before the commit and
deleted again if the commit fails.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from qbeast_connect.exceptions import (
    CommitConflictError,
    UnsupportedProtocolError,
)
from qbeast_connect.plan_codec import decode_row_positions
from qbeast_connect.rules.table_properties import deletion_vectors_on
from server_plugin.delta.actions import AddFile, Txn
from server_plugin.delta.committer import CommitOutcomeUnknownError, commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.deletion_vectors import (
    read_deletion_vector,
    storage_key,
    write_deletion_vectors,
)
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.properties import ENABLE_DELETION_VECTORS
from server_plugin.delta.snapshot import DeltaSnapshot
from server_plugin.delta.storage import Storage, storage_for

__all__ = [
    "VectorChange",
    "delete_with_vectors",
    "vector_change",
    "vector_file_kept_if_committed",
    "writes_vectors",
]


def writes_vectors(snapshot: DeltaSnapshot) -> bool:
    """Whether row changes on this table write vectors (Delta's rule,
    :func:`~qbeast_connect.rules.table_properties.deletion_vectors_on`)."""
    protocol = snapshot.protocol
    return deletion_vectors_on(
        snapshot.metadata.configuration, protocol.reader_features, protocol.writer_features
    )


def _num_records(add: AddFile) -> int | None:
    try:
        value = json.loads(add.stats)["numRecords"] if add.stats is not None else None
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _loose_stats(stats: str | None) -> str | None:
    """``stats`` with ``tightBounds: false`` (unreadable statistics are kept as they are)."""
    if stats is None:
        return None
    try:
        parsed = json.loads(stats)
    except ValueError:
        return stats
    if not isinstance(parsed, dict):
        return stats
    parsed["tightBounds"] = False
    return json.dumps(parsed, separators=(",", ":"))


@dataclass(frozen=True)
class VectorChange:
    """The actions that take rows out of files through deletion vectors.

    Attributes:
        actions: ``remove(p, old vector)`` per changed file, then ``add(p, new vector)``
            for those that keep a live row.
        vector_file: the new vector file (relative to the table root), or None when no
            file keeps a vector; the caller deletes it if its commit fails.
        deleted_rows: rows newly deleted (rows an old vector deleted are not counted).
        removed_files: files whose every row is now deleted (removed, no new ``add``).
        vector_files: files that now carry a new vector.
        paths: the log paths of every changed file.
    """

    actions: tuple[Any, ...]
    vector_file: str | None
    deleted_rows: int
    removed_files: int
    vector_files: int
    paths: frozenset[str]


def vector_change(
    storage: Storage, snapshot: DeltaSnapshot, files: Mapping[str, str], now: int
) -> VectorChange:
    """Mark the rows ``files`` lists (log path -> row positions, as
    :func:`~qbeast_connect.plan_codec.encode_row_positions` writes them) deleted, joined
    with each file's old vector, and write the new vectors to one file.

    Raises:
        UnsupportedProtocolError: the table does not enable deletion vectors.
        CommitConflictError: a listed file is not in ``snapshot``.
    """
    if not writes_vectors(snapshot):
        raise UnsupportedProtocolError(
            f"the table at {storage.root_uri} does not enable deletion vectors "
            f"({ENABLE_DELETION_VECTORS} and the deletionVectors feature); change rows by "
            "rewriting its files instead"
        )
    by_path = {a.path: a for a in snapshot.files.values()}
    changed: list[tuple[AddFile, npt.NDArray[np.int64]]] = []
    removes: list[Any] = []
    deleted = removed = 0
    for log_path, text in files.items():
        add = by_path.get(log_path)
        if add is None:
            raise CommitConflictError(
                f"file {log_path} is no longer in the table at version {snapshot.version}; "
                "reload the table and retry"
            )
        rows = np.asarray(decode_row_positions(str(text)), dtype=np.int64)
        old = (
            np.zeros(0, dtype=np.int64)
            if add.deletion_vector is None
            else read_deletion_vector(storage, add.deletion_vector).astype(np.int64)
        )
        union = np.union1d(old, rows)
        if len(union) == len(old):
            continue  # every listed row was deleted already
        deleted += len(union) - len(old)
        removes.append(add.to_remove(now, data_change=True))
        total = _num_records(add)
        if total is not None and len(union) >= total:
            removed += 1  # no row left: the file goes
        else:
            changed.append((add, union))
    adds: list[Any] = []
    vector_file = None
    if changed:
        descriptors = write_deletion_vectors(storage, [rows for _, rows in changed])
        vector_file = storage_key(descriptors[0], storage.root_uri)
        for (add, _), vector in zip(changed, descriptors, strict=True):
            adds.append(
                AddFile(
                    path=add.path,
                    partition_values=add.partition_values,
                    size=add.size,
                    modification_time=add.modification_time,
                    data_change=True,
                    stats=_loose_stats(add.stats),
                    tags=add.tags,
                    deletion_vector=vector,
                )
            )
    return VectorChange(
        actions=(*removes, *adds),
        vector_file=vector_file,
        deleted_rows=deleted,
        removed_files=removed,
        vector_files=len(changed),
        paths=frozenset(r.path for r in removes),
    )


def delete_with_vectors(command: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Run one ``delete_vectors`` command: ``path``, ``readVersion``, ``predicate``,
    ``files`` (log path -> its row positions, as
    :func:`~qbeast_connect.plan_codec.encode_row_positions` writes them), ``txnId``, and
    optionally ``txnAppId``/``txnVersion`` and ``userMetadata``. Yields one ``result`` row:
    ``version`` (None when no row was newly deleted), ``deletedRows``, ``removedFiles``,
    ``vectorFiles`` (files that now carry a vector)."""
    storage = storage_for(str(command["path"]), command.get("storageOptions"))
    read_version = int(command["readVersion"])
    snapshot = read_snapshot(storage, read_version)
    now = int(time.time() * 1000)
    change = vector_change(storage, snapshot, dict(command["files"]), now)
    if not change.actions:
        yield ("result", json.dumps({"version": None, "deletedRows": 0}))
        return
    actions: list[Any] = list(change.actions)
    app_id, app_version = command.get("txnAppId"), command.get("txnVersion")
    if app_id is not None and app_version is not None:
        actions.append(Txn(app_id=str(app_id), version=int(app_version), last_updated=now))
    extra: dict[str, Any] = {}
    if command.get("userMetadata") is not None:
        extra["userMetadata"] = str(command["userMetadata"])
    with vector_file_kept_if_committed(storage, change):
        version = commit(
            storage,
            actions,
            TransactionReadSet(
                read_version=read_version,
                read_files=change.paths,
                removed_files=change.paths,
                app_ids=frozenset({str(app_id)} if app_id is not None else set()),
            ),
            operation="DELETE",
            operation_parameters={"predicate": json.dumps([str(command.get("predicate", ""))])},
            snapshot=snapshot,
            extra_commit_info=extra,
            txn_id=str(command.get("txnId") or "") or None,
            num_output_rows=0,
        )
    yield (
        "result",
        json.dumps(
            {
                "version": version,
                "deletedRows": change.deleted_rows,
                "removedFiles": change.removed_files,
                "vectorFiles": change.vector_files,
            }
        ),
    )


@contextlib.contextmanager
def vector_file_kept_if_committed(storage: Storage, change: VectorChange | None) -> Iterator[None]:
    """Delete ``change``'s vector file when the block fails, unless the failure may hide a
    landed commit (``CommitOutcomeUnknownError``)."""
    try:
        yield
    except CommitOutcomeUnknownError:
        raise
    except BaseException:
        if change is not None and change.vector_file is not None:
            with contextlib.suppress(OSError):
                storage.delete(change.vector_file)
        raise
