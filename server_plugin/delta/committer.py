"""Commit actions to a Delta table with optimistic concurrency.

A commit is data: the caller hands over frozen actions and a read set; :func:`commit`
adds a ``commitInfo`` and writes ``N.json`` with put-if-absent. When another writer
won ``N``, every winning commit is checked for conflicts (:mod:`conflicts`); if none
conflicts, the same payload is retried at the next free version, with bounded,
jittered backoff.

Outcome handling follows one rule: a commit's ``txnId`` is stable across attempts. If
a write fails in a way that may or may not have created the file, the version is read
back and its ``txnId`` compared, so a commit is never applied twice nor reported as
failed when it landed. Data files referenced by ``add`` actions belong to the caller:
on a surely-failed commit (CommitConflictError, CommitRetriesExhaustedError, an
InvalidOptionError/UnsupportedProtocolError raised before writing) the caller may
delete them; on a StorageError whose message says the outcome is unknown it must not.

Example:
    ```python
    actions = [*create_table_actions(arrow_schema_to_delta(schema)), add]
    version = commit(storage, actions, TransactionReadSet(read_version=-1),
                     operation="CREATE TABLE", operation_parameters={"mode": "ErrorIfExists"})
    ```
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from qbeast_connect.exceptions import (
    CommitConflictError,
    CommitRetriesExhaustedError,
    InvalidOptionError,
    StorageError,
    UnsupportedProtocolError,
)

from .actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    FrozenMap,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    encode_commit,
)
from .checkpoint import checkpoint_interval, write_checkpoint
from .conflicts import TransactionReadSet, check_conflict
from .log_files import commit_path
from .log_reader import latest_version, read_commit, read_snapshot, tombstone_key
from .properties import APPEND_ONLY, ENABLE_DELETION_VECTORS, get_bool
from .protocol import DEFAULT_PROTOCOL, VECTORS_PROTOCOL, check_writable
from .schema import delta_to_arrow_schema
from .snapshot import DeltaSnapshot
from .storage import Storage
from .uris import encode_path, normalize_path

__all__ = [
    "DEFAULT_ENGINE_INFO",
    "ISOLATION_LEVEL",
    "CommitOutcomeUnknownError",
    "MetadataRebase",
    "add_file_for",
    "commit",
    "create_table_actions",
]

logger = logging.getLogger(__name__)

DEFAULT_ENGINE_INFO = "qbeast-connect/0.1.0"
ISOLATION_LEVEL = "WriteSerializable"
_RESERVED_COMMIT_INFO_KEYS = frozenset(
    {
        "timestamp",
        "operation",
        "operationParameters",
        "readVersion",
        "isolationLevel",
        "isBlindAppend",
        "operationMetrics",
        "engineInfo",
        "txnId",
    }
)


#: ``rebase(actions, before, winner, who)``: the transaction's actions rewritten to commit on
#: top of a concurrent commit that replaced the metadata ``before`` (what the actions were
#: made for) with ``winner``; raises CommitConflictError when that is not possible. ``who``
#: names the winning commit for messages.
MetadataRebase = Callable[[Sequence[Action], Metadata, Metadata, str], list[Action]]


class CommitOutcomeUnknownError(StorageError):
    """A commit write failed and reading the version back failed too.

    The commit may or may not be in the table: look for its ``txnId`` (in the message)
    before retrying, and do not delete the data files it references.
    """


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def create_table_actions(
    schema_string: str,
    configuration: Mapping[str, str] | None = None,
    *,
    partition_columns: Sequence[str] = (),
    name: str | None = None,
    description: str | None = None,
    protocol: Protocol = DEFAULT_PROTOCOL,
    table_id: str | None = None,
    created_time: int | None = None,
) -> list[Action]:
    """Return the ``protocol`` and ``metaData`` actions that create a table (version 0).

    Args:
        schema_string: Delta schema JSON (see ``schema.arrow_schema_to_delta``).
        configuration: Table properties; all values must be strings.
        partition_columns: Partition columns (must exist in the schema).
        name: Optional table name.
        description: Optional table description.
        protocol: Protocol to create the table with (default (1,2); with
            ``delta.enableDeletionVectors=true``, :data:`VECTORS_PROTOCOL`).
        table_id: Table id; a new uuid4 by default.
        created_time: Creation time in epoch ms; now by default.

    Returns:
        ``[Protocol, Metadata]``.

    Raises:
        InvalidOptionError: A configuration value is not a string.
        UnsupportedProtocolError: The protocol or schema cannot be written by us.
    """
    config = dict(configuration or {})
    bad = {k: v for k, v in config.items() if not isinstance(k, str) or not isinstance(v, str)}
    if bad:
        raise InvalidOptionError(
            f"table properties must map strings to strings; got {bad!r} (write 'true', '10')"
        )
    if protocol == DEFAULT_PROTOCOL and get_bool(config, ENABLE_DELETION_VECTORS):
        protocol = VECTORS_PROTOCOL
    metadata = Metadata(
        id=table_id or str(uuid.uuid4()),
        schema_string=schema_string,
        partition_columns=tuple(partition_columns),
        configuration=FrozenMap(config),
        created_time=created_time if created_time is not None else _now_ms(),
        name=name,
        description=description,
    )
    check_writable(protocol, metadata)
    return [protocol, metadata]


def add_file_for(
    storage: Storage,
    rel_path: str,
    *,
    stats: str | None = None,
    tags: Mapping[str, str] | None = None,
    partition_values: Mapping[str, str | None] | None = None,
    data_change: bool = True,
) -> AddFile:
    """Build the ``add`` action of a data file already written under the table root.

    Size and modification time are read from storage; the path is percent-encoded for
    the log (see ``uris.encode_path``).

    Args:
        storage: The table storage.
        rel_path: Physical path of the file relative to the table root.
        stats: Stats JSON (see ``file_stats.compute_stats``).
        tags: Per-file tags (e.g. the qbeast ``revision`` and ``blocks``).
        partition_values: Partition values; ``{}`` for an unpartitioned table.
        data_change: False for files that only rearrange existing rows.

    Returns:
        The AddFile.
    """
    info = storage.file_info(rel_path)
    return AddFile(
        path=encode_path(rel_path),
        partition_values=FrozenMap(partition_values or {}),
        size=info.size,
        modification_time=info.mtime_ms,
        data_change=data_change,
        stats=stats,
        tags=None if tags is None else FrozenMap(tags),
    )


def _validate_actions(actions: Sequence[Action], root_uri: str) -> None:
    protocols = metadatas = 0
    txn_ids: set[str] = set()
    added_paths: set[str] = set()
    # logical files, (path, deletion vector): a delete replaces add(p, dv1) by
    # remove(p, dv1) + add(p, dv2)
    added: set[str] = set()
    removed: set[str] = set()
    for action in actions:
        if isinstance(action, CommitInfo):
            raise InvalidOptionError(
                "commit() writes the commitInfo itself; pass operation, "
                "operation_parameters and extra_commit_info instead of a CommitInfo action"
            )
        if isinstance(action, Protocol):
            protocols += 1
        elif isinstance(action, Metadata):
            metadatas += 1
        elif isinstance(action, Txn):
            if action.app_id in txn_ids:
                raise InvalidOptionError(
                    f"a commit holds at most one txn per appId; {action.app_id!r} appears twice"
                )
            txn_ids.add(action.app_id)
        elif isinstance(action, AddFile):
            key = normalize_path(action.path, root_uri)
            if key in added_paths:
                raise InvalidOptionError(f"file {action.path!r} is added twice in one commit")
            added_paths.add(key)
            if action.size < 0:
                raise InvalidOptionError(f"add {action.path!r} has negative size {action.size}")
            added.add(tombstone_key(key, action.deletion_vector))
        elif isinstance(action, RemoveFile):
            key = tombstone_key(normalize_path(action.path, root_uri), action.deletion_vector)
            if key in removed:
                raise InvalidOptionError(f"file {action.path!r} is removed twice in one commit")
            removed.add(key)
        elif isinstance(action, DomainMetadata):
            raise UnsupportedProtocolError(
                "domainMetadata actions need the domainMetadata writer feature, which "
                "qbeast-connect does not write"
            )
        else:
            raise InvalidOptionError(
                f"{type(action).__name__} is not a Delta action; pass Protocol, Metadata, "
                "AddFile, RemoveFile or Txn"
            )
    if protocols > 1 or metadatas > 1:
        raise InvalidOptionError(
            "a commit holds at most one protocol and one metaData action; merge them"
        )
    both = added & removed
    if both:
        raise InvalidOptionError(
            f"files {sorted(k.split(chr(10))[0] for k in both)[:5]} are both added and removed "
            "in one commit, which the Delta protocol forbids; drop one of the two actions"
        )


def _check_against_table(
    storage: Storage,
    actions: Sequence[Action],
    old_protocol: Protocol | None,
    old_metadata: Metadata | None,
    *,
    verify_files: bool,
) -> tuple[Protocol, Metadata]:
    new_protocol = next((a for a in actions if isinstance(a, Protocol)), None)
    new_metadata = next((a for a in actions if isinstance(a, Metadata)), None)
    if old_protocol is None or old_metadata is None:
        if new_protocol is None or new_metadata is None:
            raise InvalidOptionError(
                "creating a table (read_version -1) needs a protocol and a metaData action "
                "in version 0; start the actions with create_table_actions(...)"
            )
        if any(isinstance(a, RemoveFile) for a in actions):
            raise InvalidOptionError("a new table has no files to remove")
    else:
        check_writable(old_protocol, old_metadata)
        if new_protocol is not None and (
            new_protocol.min_reader_version < old_protocol.min_reader_version
            or new_protocol.min_writer_version < old_protocol.min_writer_version
        ):
            raise UnsupportedProtocolError(
                f"protocol downgrade from ({old_protocol.min_reader_version},"
                f"{old_protocol.min_writer_version}) to ({new_protocol.min_reader_version},"
                f"{new_protocol.min_writer_version}) is not allowed; keep the versions"
            )
        if new_metadata is not None and new_metadata.id != old_metadata.id:
            raise InvalidOptionError(
                f"metaData id {new_metadata.id!r} differs from the table's {old_metadata.id!r}; "
                "a metaData change must keep the table id (copy it with dataclasses.replace)"
            )
    protocol = new_protocol or old_protocol
    metadata = new_metadata or old_metadata
    assert protocol is not None and metadata is not None
    check_writable(protocol, metadata)

    adds = [a for a in actions if isinstance(a, AddFile)]
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    append_only = get_bool(metadata.configuration, APPEND_ONLY) or (
        old_metadata is not None and get_bool(old_metadata.configuration, APPEND_ONLY)
    )
    if append_only:
        changing = [r.path for r in removes if r.data_change]
        if changing:
            raise InvalidOptionError(
                f"table is append-only ({APPEND_ONLY}=true) but this commit removes "
                f"{len(changing)} file(s) with dataChange=true (e.g. {changing[0]!r}); only "
                "appends and compactions (dataChange=false) are allowed; unset the "
                "property first to delete or overwrite"
            )

    lists_vectors = "deletionVectors" in (protocol.reader_features or ()) and (
        "deletionVectors" in (protocol.writer_features or ())
    )
    vectors = [a.path for a in adds if a.deletion_vector is not None]
    if vectors and not lists_vectors:
        raise UnsupportedProtocolError(
            f"add {vectors[0]!r} carries a deletion vector but the table's protocol does not "
            "list the deletionVectors feature; rewrite the file without the deleted rows"
        )
    turned_on = get_bool(metadata.configuration, ENABLE_DELETION_VECTORS) and not (
        old_metadata is not None
        and get_bool(old_metadata.configuration, ENABLE_DELETION_VECTORS)
    )
    if turned_on and not lists_vectors:
        raise UnsupportedProtocolError(
            f"{ENABLE_DELETION_VECTORS}=true on an existing table needs its protocol upgraded "
            "to the deletionVectors feature, which qbeast-connect does only when it creates "
            "a table; set it with Delta Lake (ALTER TABLE delta.`<path>` SET TBLPROPERTIES "
            f"('{ENABLE_DELETION_VECTORS}' = 'true')), or leave it unset"
        )
    partition_columns = set(metadata.partition_columns)
    not_null = [f.name for f in delta_to_arrow_schema(metadata.schema_string) if not f.nullable]
    for add in adds:
        if set(add.partition_values) != partition_columns:
            raise InvalidOptionError(
                f"add {add.path!r} has partition values for {sorted(add.partition_values)} "
                f"but the table is partitioned by {sorted(partition_columns)}; give exactly "
                "one value (maybe null) per partition column"
            )
        if not_null and add.stats is not None:
            try:
                null_count = json.loads(add.stats).get("nullCount") or {}
            except (ValueError, AttributeError):
                null_count = {}
            for column in not_null:
                count = null_count.get(column)
                if isinstance(count, int) and count > 0:
                    raise InvalidOptionError(
                        f"column {column!r} is NOT NULL but file {add.path!r} holds {count} "
                        "null value(s); filter or fill the nulls before writing"
                    )
        if verify_files:
            key = normalize_path(add.path, storage.root_uri)
            if "://" in key or key.startswith("/") or key.startswith("file:"):
                continue  # outside the table root: not ours to check
            try:
                info = storage.file_info(key)
            except FileNotFoundError as exc:
                raise InvalidOptionError(
                    f"data file {key!r} referenced by an add action does not exist under "
                    f"{storage.root}; write data files completely before committing"
                ) from exc
            if info.size != add.size:
                raise InvalidOptionError(
                    f"add {add.path!r} says size {add.size} but the file has {info.size} "
                    "bytes; readers locate the parquet footer with it, so pass the exact size"
                )
    return protocol, metadata


def _operation_parameters(params: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        if isinstance(value, str):
            out[str(key)] = value
        else:
            try:
                out[str(key)] = json.dumps(value, separators=(",", ":"), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidOptionError(
                    f"operation parameter {key!r}={value!r} cannot be JSON-encoded ({exc})"
                ) from exc
    return out


def _operation_metrics(
    actions: Sequence[Action], num_output_rows: int | None = None
) -> dict[str, str]:
    adds = [a for a in actions if isinstance(a, AddFile)]
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    metrics = {
        "numFiles": str(len(adds)),
        "numOutputBytes": str(sum(a.size for a in adds)),
    }
    rows = 0
    known = True
    for add in adds:
        try:
            num = json.loads(add.stats)["numRecords"] if add.stats is not None else None
        except (ValueError, KeyError, TypeError):
            num = None
        if not isinstance(num, int):
            known = False
            break
        rows += num
    if num_output_rows is not None:
        metrics["numOutputRows"] = str(num_output_rows)
    elif known:
        metrics["numOutputRows"] = str(rows)
    if removes:
        metrics["numRemovedFiles"] = str(len(removes))
    return metrics


def _read_back(storage: Storage, version: int, txn_id: str) -> bool | None:
    """After a failed put: True if ``version`` holds our commit, False if someone else's,
    None if it does not exist."""
    try:
        actions = read_commit(storage, version)
    except InvalidOptionError:
        return None
    except Exception as exc:
        raise CommitOutcomeUnknownError(
            f"writing commit {version} of {storage.root} failed and reading it back failed "
            f"too ({exc}); the outcome is unknown: look for txnId {txn_id} in version "
            f"{version} before retrying, and do not delete the data files"
        ) from exc
    return _holds_txn_id(actions, txn_id)


def _holds_txn_id(actions: Sequence[Action], txn_id: str) -> bool:
    return any(isinstance(a, CommitInfo) and a.txn_id == txn_id for a in actions)


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0.0, 0.004 * (2 ** min(attempt, 6))))


def commit(
    storage: Storage,
    actions: Sequence[Action],
    read_set: TransactionReadSet,
    *,
    operation: str,
    operation_parameters: Mapping[str, Any],
    engine_info: str = DEFAULT_ENGINE_INFO,
    max_retries: int = 15,
    is_blind_append: bool | None = None,
    snapshot: DeltaSnapshot | None = None,
    extra_commit_info: Mapping[str, Any] | None = None,
    verify_files: bool = True,
    txn_id: str | None = None,
    rebase: MetadataRebase | None = None,
    num_output_rows: int | None = None,
) -> int:
    """Commit ``actions`` as the next table version and return that version.

    Before writing, checks the writer protocol (``check_writable``) against the table
    at ``read_set.read_version`` and the commit's own protocol/metaData, enforces
    ``delta.appendOnly``, NOT NULL columns (from file stats), one partition value per
    partition column and (``verify_files``) that each added file exists with exactly
    ``add.size`` bytes. After a lost race, every winning commit is checked with
    ``conflicts.check_conflict`` and the commit is retried at the next version.
    After success, a checkpoint is written when ``version % delta.checkpointInterval ==
    0``; a checkpoint failure is logged, never raised.

    Args:
        storage: The table storage.
        actions: Protocol/Metadata/AddFile/RemoveFile/Txn actions (no CommitInfo).
        read_set: What the transaction read; ``read_version=-1`` creates the table, and
            then ``actions`` must hold a protocol and a metaData (see
            :func:`create_table_actions`). Removed files, txn appIds and metadata or
            protocol changes are added to it from ``actions``.
        operation: commitInfo ``operation`` (``WRITE``, ``CREATE TABLE``, ``OPTIMIZE``...).
        operation_parameters: commitInfo ``operationParameters``; strings are written
            as-is, other values JSON-encoded (as Delta does: ``"partitionBy":"[]"``).
        engine_info: commitInfo ``engineInfo``.
        max_retries: Lost races to tolerate before giving up.
        is_blind_append: None to derive it; True is checked to be honest (only data
            adds and txns, nothing read), because other writers trust the flag.
        snapshot: The snapshot at ``read_set.read_version`` if the caller has it (saves
            re-reading the log).
        extra_commit_info: More commitInfo keys (must not clash with the ones we set,
            except ``txnId``, which is taken as ``txn_id``).
        verify_files: Check that every relative added file exists with ``add.size`` bytes.
        txn_id: The commitInfo ``txnId`` (default: a new uuid4). It identifies this
            transaction across attempts: a retry of the same logical write with the
            same id and read version returns the version of an earlier attempt that
            landed instead of committing twice. Never reuse it for different data.
        rebase: How to carry the transaction over a winner that changed the metaData
            (see :data:`MetadataRebase`); without it such a winner is a conflict. The
            rebased actions are not re-validated against the table: the callback keeps
            them valid.
        num_output_rows: The rows the added files hold, when the caller counted them
            (``operationMetrics.numOutputRows``); by default they are summed from the
            files' stats, and left out when a file has none.

    Returns:
        The committed version.

    Raises:
        InvalidOptionError: The actions are not a valid commit (duplicates, add and
            remove of one file, a wrong size, NOT NULL or append-only violations...).
        UnsupportedProtocolError: The table or the commit needs features we cannot write.
        TableNotFoundError: ``read_version >= 0`` but there is no table.
        CommitConflictError: A concurrent commit conflicts (message names the winning
            version and the reason); the table does not hold this commit.
        CommitRetriesExhaustedError: ``max_retries`` lost races in a row.
        CommitOutcomeUnknownError: A write failed and the version could not be read
            back: the commit may have landed; keep the data files.
        StorageError: A write failed and the commit is surely not in the table.
    """
    read_version = read_set.read_version
    if read_version < -1:
        raise InvalidOptionError(f"read_version must be >= -1, got {read_version}")
    if max_retries < 0:
        raise InvalidOptionError(f"max_retries must be >= 0, got {max_retries}")
    if not operation:
        raise InvalidOptionError("operation must be a non-empty string such as 'WRITE'")
    actions = list(actions)
    root_uri = storage.root_uri
    _validate_actions(actions, root_uri)

    if read_version == -1:
        old_protocol = old_metadata = None
    else:
        if snapshot is None:
            snapshot = read_snapshot(storage, read_version)
        elif snapshot.version != read_version:
            raise InvalidOptionError(
                f"snapshot is at version {snapshot.version} but read_set.read_version is "
                f"{read_version}; pass the snapshot the transaction read"
            )
        old_protocol, old_metadata = snapshot.protocol, snapshot.metadata
    _protocol, metadata = _check_against_table(
        storage, actions, old_protocol, old_metadata, verify_files=verify_files
    )

    adds = [a for a in actions if isinstance(a, AddFile)]
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    file_actions: list[AddFile | RemoveFile] = [*adds, *removes]
    changes_metadata = any(isinstance(a, Metadata) for a in actions)
    changes_protocol = any(isinstance(a, Protocol) for a in actions)
    honest_blind = (
        not changes_metadata
        and not changes_protocol
        and not removes
        and all(a.data_change for a in adds)
        and not read_set.read_whole_table
        and not read_set.read_files
        and not read_set.removed_files
    )
    if (is_blind_append or read_set.is_blind_append) and not honest_blind:
        raise InvalidOptionError(
            "isBlindAppend=true is only allowed for commits that add data files (and txns) "
            "without reading, removing or changing metadata; other writers trust the flag"
        )
    blind = honest_blind if is_blind_append is None else is_blind_append
    effective = dataclasses.replace(
        read_set,
        removed_files=read_set.removed_files | {normalize_path(r.path, root_uri) for r in removes},
        app_ids=read_set.app_ids | {a.app_id for a in actions if isinstance(a, Txn)},
        changes_metadata=read_set.changes_metadata or changes_metadata,
        changes_protocol=read_set.changes_protocol or changes_protocol,
        is_blind_append=blind,
        data_change_only_false=bool(file_actions)
        and not any(a.data_change for a in file_actions)
        and not changes_metadata
        and not changes_protocol,
    )
    extra = dict(extra_commit_info or {})
    extra_txn_id = extra.pop("txnId", None)
    if extra_txn_id is not None:
        if txn_id is not None and txn_id != extra_txn_id:
            raise InvalidOptionError(
                f"txn_id {txn_id!r} and extra_commit_info txnId {extra_txn_id!r} differ; "
                "pass one of them"
            )
        txn_id = str(extra_txn_id)
    clash = sorted(set(extra) & _RESERVED_COMMIT_INFO_KEYS)
    if clash:
        raise InvalidOptionError(f"extra_commit_info must not set {clash}; use the arguments")
    params = _operation_parameters(operation_parameters)
    metrics = _operation_metrics(actions, num_output_rows)
    if txn_id is not None and not txn_id:
        raise InvalidOptionError("txn_id must be a non-empty string (a uuid4 is best)")
    tx_id: str = txn_id or str(uuid.uuid4())

    def commit_info() -> CommitInfo:
        values: dict[str, Any] = {
            "timestamp": _now_ms(),
            "operation": operation,
            "operationParameters": params,
        }
        if read_version >= 0:
            values["readVersion"] = read_version
        values.update(
            {
                "isolationLevel": ISOLATION_LEVEL,
                "isBlindAppend": blind,
                "operationMetrics": metrics,
                "engineInfo": engine_info,
                "txnId": tx_id,
            }
        )
        values.update(extra)
        return CommitInfo(FrozenMap(values))

    version = read_version + 1
    checked = read_version
    lost = 0
    table_metadata = old_metadata
    while True:
        payload = encode_commit([commit_info(), *actions])
        try:
            created = storage.put_if_absent(commit_path(version), payload)
        except OSError:
            outcome = _read_back(storage, version, tx_id)
            if outcome is None:
                raise  # nothing was written: the table does not hold this commit
            created = outcome
        if created:
            break
        lost += 1
        newest = max(latest_version(storage) or version, version)
        for winner in range(checked + 1, newest + 1):
            winning = read_commit(storage, winner)
            if _holds_txn_id(winning, tx_id):
                version = winner  # an earlier attempt with an unknown outcome landed
                created = True
                break
            if read_version == -1:
                raise CommitConflictError(
                    f"a table was created concurrently at {storage.root} (version 0 "
                    "exists); read the new table and retry the write against it"
                )
            resolved = False
            winner_metadata = next((a for a in winning if isinstance(a, Metadata)), None)
            if (
                winner_metadata is not None
                and rebase is not None
                and table_metadata is not None
                and not any(isinstance(a, Protocol) for a in winning)
            ):
                who = _describe_winner(winner, winning)
                actions = rebase(actions, table_metadata, winner_metadata, who)
                resolved = True
            check_conflict(
                effective, winner, winning, root_uri=root_uri, metadata_resolved=resolved
            )
            if winner_metadata is not None:
                table_metadata = winner_metadata
        if created:
            break
        if lost > max_retries:
            raise CommitRetriesExhaustedError(
                f"gave up committing to {storage.root} after losing the race for a version "
                f"{lost} times (last tried version {version}); the table does not hold this "
                "commit. Retry later or raise max_retries"
            )
        checked = newest
        version = newest + 1
        _backoff(lost)

    ours = next((a for a in actions if isinstance(a, Metadata)), None)
    _post_commit(storage, version, ours or table_metadata or metadata)
    return version


def _describe_winner(version: int, actions: Sequence[Action]) -> str:
    operation = next((a.operation for a in actions if isinstance(a, CommitInfo)), None)
    return f"version {version} ({operation})" if operation else f"version {version}"


def _post_commit(storage: Storage, version: int, metadata: Metadata) -> None:
    try:
        interval = checkpoint_interval(metadata)
        if version > 0 and version % interval == 0:
            write_checkpoint(storage, read_snapshot(storage, version))
    except Exception as exc:
        logger.warning(
            "commit %s of %s succeeded but writing its checkpoint failed: %s",
            version,
            storage.root,
            exc,
        )
