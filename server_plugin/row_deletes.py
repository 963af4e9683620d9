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

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from qbeast_connect.exceptions import (
    CommitConflictError,
    UnsupportedProtocolError,
)
from qbeast_connect.plan_codec import decode_row_positions
from server_plugin.delta.actions import AddFile, RemoveFile, Txn
from server_plugin.delta.committer import CommitOutcomeUnknownError, commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.deletion_vectors import (
    read_deletion_vector,
    storage_key,
    write_deletion_vectors,
)
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.properties import ENABLE_DELETION_VECTORS, get_bool
from server_plugin.delta.snapshot import DeltaSnapshot
from server_plugin.delta.storage import storage_for

__all__ = ["delete_with_vectors", "writes_vectors"]


def writes_vectors(snapshot: DeltaSnapshot) -> bool:
    """Whether deletes on this table write vectors: Delta's rule, the table property
    ``delta.enableDeletionVectors=true`` and the ``deletionVectors`` feature listed for
    readers and writers."""
    protocol = snapshot.protocol
    return (
        get_bool(snapshot.metadata.configuration, ENABLE_DELETION_VECTORS)
        and "deletionVectors" in (protocol.reader_features or ())
        and "deletionVectors" in (protocol.writer_features or ())
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


def delete_with_vectors(command: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Run one ``delete_vectors`` command: ``path``, ``readVersion``, ``predicate``,
    ``files`` (log path -> its row positions, as
    :func:`~qbeast_connect.plan_codec.encode_row_positions` writes them), ``txnId``, and
    optionally ``txnAppId``/``txnVersion`` and ``userMetadata``. Yields one ``result`` row:
    ``version`` (None when no row was newly deleted), ``deletedRows``, ``removedFiles``,
    ``vectorFiles`` (files that now carry a vector)."""
    path = str(command["path"])
    storage = storage_for(path, command.get("storageOptions"))
    read_version = int(command["readVersion"])
    snapshot = read_snapshot(storage, read_version)
    if not writes_vectors(snapshot):
        raise UnsupportedProtocolError(
            f"the table at {path} does not enable deletion vectors ({ENABLE_DELETION_VECTORS}"
            " and the deletionVectors feature); delete by rewriting its files instead"
        )
    by_path = {a.path: a for a in snapshot.files.values()}
    now = int(time.time() * 1000)
    changed: list[tuple[AddFile, npt.NDArray[np.int64]]] = []
    actions: list[Any] = []
    deleted = 0
    removed = 0
    for log_path, text in dict(command["files"]).items():
        add = by_path.get(log_path)
        if add is None:
            raise CommitConflictError(
                f"file {log_path} is no longer in the table at version {read_version}; "
                "reload the table and retry the delete"
            )
        rows = np.asarray(decode_row_positions(str(text)), dtype=np.int64)
        old = (
            np.zeros(0, dtype=np.int64)
            if add.deletion_vector is None
            else read_deletion_vector(storage, add.deletion_vector).astype(np.int64)
        )
        union = np.union1d(old, rows)
        if len(union) == len(old):
            continue  # every matching row was deleted already
        deleted += len(union) - len(old)
        actions.append(add.to_remove(now, data_change=True))
        total = _num_records(add)
        if total is not None and len(union) >= total:
            removed += 1  # no row left: the file goes
        else:
            changed.append((add, union))
    if not actions:
        yield ("result", json.dumps({"version": None, "deletedRows": 0}))
        return
    vector_file = None
    if changed:
        descriptors = write_deletion_vectors(storage, [rows for _, rows in changed])
        vector_file = storage_key(descriptors[0], storage.root_uri)
        for (add, _), vector in zip(changed, descriptors, strict=True):
            actions.append(
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
    app_id, app_version = command.get("txnAppId"), command.get("txnVersion")
    if app_id is not None and app_version is not None:
        actions.append(Txn(app_id=str(app_id), version=int(app_version), last_updated=now))
    paths = frozenset(a.path for a in actions if isinstance(a, RemoveFile))
    extra: dict[str, Any] = {}
    if command.get("userMetadata") is not None:
        extra["userMetadata"] = str(command["userMetadata"])
    try:
        version = commit(
            storage,
            actions,
            TransactionReadSet(
                read_version=read_version,
                read_files=paths,
                removed_files=paths,
                app_ids=frozenset({str(app_id)} if app_id is not None else set()),
            ),
            operation="DELETE",
            operation_parameters={"predicate": json.dumps([str(command.get("predicate", ""))])},
            snapshot=snapshot,
            extra_commit_info=extra,
            txn_id=str(command.get("txnId") or "") or None,
            num_output_rows=0,
        )
    except CommitOutcomeUnknownError:
        raise
    except BaseException:
        if vector_file is not None:
            storage.delete(vector_file)
        raise
    yield (
        "result",
        json.dumps(
            {
                "version": version,
                "deletedRows": deleted,
                "removedFiles": removed,
                "vectorFiles": len(changed),
            }
        ),
    )
