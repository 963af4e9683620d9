"""Write and read Delta checkpoints and the ``_last_checkpoint`` hint.

We write classic single-file checkpoints (``N.checkpoint.parquet``), V1 spec, or V2 spec
(one more ``checkpointMetadata`` column) on tables with ``v2Checkpoint``: one row per
action, each row holding exactly one non-null top-level struct column. The schema is
the one every reader expects (kernel treats some nested fields as required):

    protocol: struct<minReaderVersion:int32, minWriterVersion:int32,
                     readerFeatures:list<string>, writerFeatures:list<string>>
    metaData: struct<id, name, description, format:struct<provider, options:map>,
                     schemaString, partitionColumns:list<string>,
                     configuration:map<string,string>, createdTime:int64>
    txn:      struct<appId, version:int64, lastUpdated:int64>
    add:      struct<path, partitionValues:map, size:int64, modificationTime:int64,
                     dataChange:bool, stats:string, tags:map>
    remove:   struct<path, deletionTimestamp:int64, dataChange:bool,
                     extendedFileMetadata:bool, partitionValues:map, size:int64>
    domainMetadata: struct<domain, configuration, removed:bool>

The file is published with an atomic replace (racing writers produce equivalent
content), then ``_last_checkpoint`` is written unless it already names a newer version.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast_connect.exceptions import CorruptLogError, InvalidOptionError

from .actions import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    action_from_json,
    action_key,
)
from .deletion_vectors import DeletionVectorDescriptor
from .file_stats import stats_json_from_values, stats_types
from .log_files import (
    LAST_CHECKPOINT_PATH,
    LOG_DIR,
    SIDECAR_DIR,
    LastCheckpoint,
    checkpoint_path,
    multipart_checkpoint_path,
    read_last_checkpoint,
    write_last_checkpoint,
)
from .properties import (
    CHECKPOINT_INTERVAL,
    CHECKPOINT_INTERVAL_DEFAULT,
    DELETED_FILE_RETENTION,
    DELETED_FILE_RETENTION_DEFAULT,
    get_int,
    get_interval_ms,
)
from .protocol import has_feature
from .snapshot import DeltaSnapshot
from .storage import Storage

__all__ = [
    "CHECKPOINT_METADATA_FIELD",
    "CHECKPOINT_SCHEMA",
    "checkpoint_files",
    "checkpoint_interval",
    "read_checkpoint",
    "write_checkpoint",
]

logger = logging.getLogger(__name__)

_STR = pa.string()
_I64 = pa.int64()
_BOOL = pa.bool_()
_STR_LIST = pa.list_(_STR)
_STR_MAP = pa.map_(_STR, _STR)


def _struct(**fields: pa.DataType) -> pa.DataType:
    return pa.struct([pa.field(name, kind) for name, kind in fields.items()])


#: The ``deletionVector`` struct of ``add`` and ``remove`` rows.
_DV = _struct(storageType=_STR, pathOrInlineDv=_STR, offset=pa.int32(), sizeInBytes=pa.int32(),
              cardinality=_I64, maxRowIndex=_I64)

CHECKPOINT_SCHEMA = pa.schema(
    [
        ("protocol", _struct(minReaderVersion=pa.int32(), minWriterVersion=pa.int32(),
                             readerFeatures=_STR_LIST, writerFeatures=_STR_LIST)),
        ("metaData", _struct(id=_STR, name=_STR, description=_STR,
                             format=_struct(provider=_STR, options=_STR_MAP),
                             schemaString=_STR, partitionColumns=_STR_LIST,
                             configuration=_STR_MAP, createdTime=_I64)),
        ("txn", _struct(appId=_STR, version=_I64, lastUpdated=_I64)),
        ("add", _struct(path=_STR, partitionValues=_STR_MAP, size=_I64, modificationTime=_I64,
                        dataChange=_BOOL, stats=_STR, tags=_STR_MAP,
                        deletionVector=_DV)),
        ("remove", _struct(path=_STR, deletionTimestamp=_I64, dataChange=_BOOL,
                           extendedFileMetadata=_BOOL, partitionValues=_STR_MAP, size=_I64,
                           deletionVector=_DV)),
        ("domainMetadata", _struct(domain=_STR, configuration=_STR, removed=_BOOL)),
    ]
)
"""The pyarrow schema of the checkpoints we write."""

CHECKPOINT_METADATA_FIELD = pa.field(
    "checkpointMetadata", _struct(version=_I64, tags=_STR_MAP)
)
"""The column a V2-spec checkpoint adds (first row: its version)."""

_ACTION_COLUMNS = ("protocol", "metaData", "txn", "add", "remove", "domainMetadata")
_V2_COLUMNS = ("checkpointMetadata", "sidecar")


def checkpoint_interval(metadata: Metadata) -> int:
    """Return ``delta.checkpointInterval`` (default 10): checkpoint every N versions.

    Raises:
        InvalidOptionError: The property is not a positive integer.
    """
    interval = get_int(metadata.configuration, CHECKPOINT_INTERVAL, CHECKPOINT_INTERVAL_DEFAULT)
    if interval <= 0:
        raise InvalidOptionError(
            f"table property {CHECKPOINT_INTERVAL}={interval} must be a positive integer"
        )
    return interval


def _pairs(mapping: Mapping[str, Any] | None) -> list[tuple[str, Any]] | None:
    return None if mapping is None else list(mapping.items())


def _protocol_row(p: Protocol) -> dict[str, Any]:
    return {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": None if p.reader_features is None else list(p.reader_features),
        "writerFeatures": None if p.writer_features is None else list(p.writer_features),
    }


def _metadata_row(m: Metadata) -> dict[str, Any]:
    return {
        "id": m.id,
        "name": m.name,
        "description": m.description,
        "format": {"provider": m.format_provider, "options": _pairs(m.format_options) or []},
        "schemaString": m.schema_string,
        "partitionColumns": list(m.partition_columns),
        "configuration": _pairs(m.configuration) or [],
        "createdTime": m.created_time,
    }


def _add_row(a: AddFile) -> dict[str, Any]:
    return {
        "path": a.path,
        "partitionValues": _pairs(a.partition_values) or [],
        "size": a.size,
        "modificationTime": a.modification_time,
        "dataChange": False,
        "stats": a.stats,
        "tags": _pairs(a.tags),
        "deletionVector": _dv_row(a.deletion_vector),
    }


def _remove_row(r: RemoveFile) -> dict[str, Any]:
    return {
        "path": r.path,
        "deletionTimestamp": r.deletion_timestamp,
        "dataChange": False,
        "extendedFileMetadata": r.extended_file_metadata,
        "partitionValues": _pairs(r.partition_values),
        "size": r.size,
        "deletionVector": _dv_row(r.deletion_vector),
    }


def _dv_row(dv: DeletionVectorDescriptor | None) -> dict[str, Any] | None:
    if dv is None:
        return None
    return {
        "storageType": dv.storage_type,
        "pathOrInlineDv": dv.path_or_inline_dv,
        "offset": dv.offset,
        "sizeInBytes": dv.size_in_bytes,
        "cardinality": dv.cardinality,
        "maxRowIndex": dv.max_row_index,
    }


def _txn_row(t: Txn) -> dict[str, Any]:
    return {"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated}


def _domain_row(d: DomainMetadata) -> dict[str, Any]:
    return {"domain": d.domain, "configuration": d.configuration, "removed": False}


#: The checkpoint row of each kind of action, by column (the action's key in the log).
_ROW_OF: dict[str, Callable[[Any], dict[str, Any]]] = {
    "protocol": _protocol_row,
    "metaData": _metadata_row,
    "txn": _txn_row,
    "add": _add_row,
    "remove": _remove_row,
    "domainMetadata": _domain_row,
}


def checkpoint_table(snapshot: DeltaSnapshot, *, now_ms: int | None = None) -> pa.Table:
    """Build the checkpoint rows of a snapshot as a pyarrow table.

    Args:
        snapshot: The state to checkpoint.
        now_ms: Current time (epoch ms) for tombstone expiry; defaults to the clock.

    Returns:
        A table with :data:`CHECKPOINT_SCHEMA`: protocol, metaData, txns, live adds
        (``dataChange=false``), unexpired tombstones, live domain metadata. When the
        table supports ``v2Checkpoint`` it follows the V2 spec (still under the classic
        name, which the protocol allows): a ``checkpointMetadata`` column whose first
        row holds the version (Delta's protocol forbids V1-only multi-part checkpoints
        there and lets readers expect ``checkpointMetadata`` in V2 checkpoints).
    """
    now = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    retention = get_interval_ms(
        snapshot.metadata.configuration, DELETED_FILE_RETENTION, DELETED_FILE_RETENTION_DEFAULT
    )
    assert retention is not None
    cutoff = now - retention
    rows: dict[str, list[dict[str, Any] | None]] = {name: [] for name in _ACTION_COLUMNS}

    def emit(action: Action) -> None:
        column = action_key(action)
        row = _ROW_OF[column](action)
        for name, values in rows.items():
            values.append(row if name == column else None)

    for action in snapshot.state_actions():
        emit(action)
    for remove in snapshot.tombstones.values():
        if remove.deletion_timestamp is not None and remove.deletion_timestamp > cutoff:
            emit(remove)
    for domain in snapshot.domain_metadata.values():
        emit(domain)
    arrays = [pa.array(rows[f.name], type=f.type) for f in CHECKPOINT_SCHEMA]
    table = pa.Table.from_arrays(arrays, schema=CHECKPOINT_SCHEMA)
    if has_feature(snapshot.protocol, "v2Checkpoint"):
        v2_schema = pa.schema([*CHECKPOINT_SCHEMA, CHECKPOINT_METADATA_FIELD])
        first = {"version": snapshot.version, "tags": []}
        head = pa.Table.from_arrays(
            [pa.nulls(1, f.type) for f in CHECKPOINT_SCHEMA]
            + [pa.array([first], CHECKPOINT_METADATA_FIELD.type)],
            schema=v2_schema,
        )
        body = table.append_column(
            CHECKPOINT_METADATA_FIELD, pa.nulls(table.num_rows, CHECKPOINT_METADATA_FIELD.type)
        )
        table = pa.concat_tables([head, body])
    return table


def write_checkpoint(storage: Storage, snapshot: DeltaSnapshot) -> None:
    """Write the classic checkpoint of ``snapshot`` and update ``_last_checkpoint``.

    The parquet file is published atomically (temp + replace). The hint is written
    afterwards, and only when no existing hint names a newer version, so the hint never
    regresses and never names a checkpoint that is not complete.

    Args:
        storage: The table storage.
        snapshot: The state at ``snapshot.version`` (commit ``N.json`` must be durable).

    Raises:
        StorageError: Writing failed (callers running it post-commit should log, not fail).
    """
    table = checkpoint_table(snapshot)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    data = sink.getvalue().to_pybytes()
    storage.put_atomic(checkpoint_path(snapshot.version), data)
    existing = read_last_checkpoint(storage)
    if existing is not None and existing.version > snapshot.version:
        logger.info(
            "not updating %s: it names version %s, newer than %s",
            LAST_CHECKPOINT_PATH,
            existing.version,
            snapshot.version,
        )
        return
    hint = LastCheckpoint(
        version=snapshot.version,
        size=table.num_rows,
        size_in_bytes=len(data),
        num_of_add_files=len(snapshot.files),
    )
    write_last_checkpoint(storage, hint)


def _read_bytes(storage: Storage, path: str, what: str) -> bytes:
    try:
        return storage.read_bytes(path)
    except FileNotFoundError as exc:
        raise CorruptLogError(
            f"{what} {path} disappeared or was never written; retry the read, or restore "
            "the file"
        ) from exc


class _Part:
    """What one checkpoint file (or sidecar) holds: actions, rows waiting for stats,
    ``checkpointMetadata`` rows and ``sidecar`` references."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.pending_stats: list[tuple[int, dict[str, Any]]] = []
        self.checkpoint_metadata: list[dict[str, Any]] = []
        self.sidecars: list[dict[str, Any]] = []

    def add_row(self, path: str, name: str, row: dict[str, Any]) -> None:
        if name == "checkpointMetadata":
            self.checkpoint_metadata.append(row)
            return
        if name == "sidecar":
            self.sidecars.append(row)
            return
        parsed = row.get("stats_parsed") if name == "add" else None
        try:
            action = action_from_json({name: row})
        except CorruptLogError as exc:
            raise CorruptLogError(f"checkpoint {path}: {exc.message}") from exc
        if action is None:
            return
        if isinstance(action, AddFile) and action.stats is None and parsed is not None:
            self.pending_stats.append((len(self.actions), parsed))
        self.actions.append(action)


def _read_parquet_part(
    storage: Storage, path: str, columns: Sequence[str], what: str = "checkpoint"
) -> _Part:
    data = _read_bytes(storage, path, what)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        names = set(parquet.schema_arrow.names)
        present = [c for c in columns if c in names]
        table = parquet.read(columns=present)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptLogError(f"{what} {path} is not a readable parquet file ({exc})") from exc
    part = _Part()
    for name in present:
        column = table.column(name)
        if column.null_count == len(column):
            continue
        for row in column.to_pylist():
            if row is not None:
                part.add_row(path, name, row)
    return part


def _read_json_part(storage: Storage, path: str) -> _Part:
    data = _read_bytes(storage, path, "checkpoint")
    part = _Part()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptLogError(f"checkpoint {path} is not valid UTF-8 ({exc})") from exc
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(f"checkpoint {path} line {lineno} is not JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise CorruptLogError(f"checkpoint {path} line {lineno} is not a JSON object")
        for name, body in obj.items():
            if name in _ACTION_COLUMNS or name in _V2_COLUMNS:
                if body is not None and not isinstance(body, dict):
                    raise CorruptLogError(
                        f"checkpoint {path} line {lineno}: {name} is not an object"
                    )
                if body is not None:
                    part.add_row(path, name, body)
    return part


def _sidecar_path(path: str, checkpoint: str) -> str:
    """The storage path of a ``sidecar`` action's file: always in ``_delta_log/_sidecars``."""
    name = unquote(path)
    marker = f"{LOG_DIR}/{SIDECAR_DIR}/"
    if marker in name:
        name = name.rsplit(marker, 1)[1]
    if not name or "/" in name or name in (".", ".."):
        raise CorruptLogError(
            f"checkpoint {checkpoint} names sidecar {path!r}, which is not a file of "
            f"{LOG_DIR}/{SIDECAR_DIR}/"
        )
    return f"{LOG_DIR}/{SIDECAR_DIR}/{name}"


def checkpoint_files(version: int, parts: int | None) -> list[str]:
    """The paths of a classic (``parts=None``) or multi-part checkpoint of ``version``."""
    if parts is None:
        return [checkpoint_path(version)]
    return [multipart_checkpoint_path(version, i, parts) for i in range(1, parts + 1)]


def read_checkpoint(
    storage: Storage,
    version: int,
    parts: int | None = None,
    *,
    files: Sequence[str] | None = None,
) -> list[Action]:
    """Read the actions of a checkpoint: classic, multi-part, or V2 (``v2Checkpoint``).

    A V2-spec checkpoint (UUID-named ``N.checkpoint.<uuid>.json|parquet``, or a classic
    name holding a ``checkpointMetadata`` row) has exactly one ``checkpointMetadata``
    (whose ``version`` must be ``version``) and may list ``sidecar`` files in
    ``_delta_log/_sidecars/`` holding its ``add``/``remove`` rows; they are read too.
    An ``add`` without ``stats`` gets them rebuilt from ``stats_parsed``, typed by the
    checkpoint's ``metaData`` schema (a ``timestamp`` keeps its ``Z``).

    Args:
        storage: The table storage.
        version: The checkpoint's version.
        parts: Number of parts of a multi-part checkpoint; None for a single file.
        files: The checkpoint's files (``_delta_log/...`` paths), when not the classic
            names (a UUID-named checkpoint).

    Returns:
        Its actions (removes first, then the others), ready for replay.

    Raises:
        CorruptLogError: A file is missing or unreadable, a V2 checkpoint has no (or more
            than one) ``checkpointMetadata``, or one for another version, or a multi-part
            checkpoint holds V2 rows.
    """
    paths = list(files) if files is not None else checkpoint_files(version, parts)
    pieces: list[_Part] = []
    for path in paths:
        if path.endswith(".json"):
            pieces.append(_read_json_part(storage, path))
        else:
            pieces.append(_read_parquet_part(storage, path, _ACTION_COLUMNS + _V2_COLUMNS))
    meta_rows = [row for piece in pieces for row in piece.checkpoint_metadata]
    sidecars = [row for piece in pieces for row in piece.sidecars]
    uuid_named = files is not None and len(paths) == 1 and parts is None
    if len(paths) > 1 and (meta_rows or sidecars):
        raise CorruptLogError(
            f"multi-part checkpoint {version} holds checkpointMetadata or sidecar rows, "
            "which only V2 checkpoints may hold; the checkpoint is invalid"
        )
    if meta_rows or sidecars or uuid_named:
        if len(meta_rows) != 1:
            raise CorruptLogError(
                f"V2 checkpoint {paths[0]} has {len(meta_rows)} checkpointMetadata rows "
                "(exactly one is required); the checkpoint is invalid"
            )
        if meta_rows[0].get("version") != version:
            raise CorruptLogError(
                f"V2 checkpoint {paths[0]} says it is version "
                f"{meta_rows[0].get('version')!r}, but its name says {version}"
            )
        for sidecar in sidecars:
            ref = sidecar.get("path")
            if not isinstance(ref, str):
                raise CorruptLogError(f"checkpoint {paths[0]}: sidecar lacks a path: {sidecar}")
            pieces.append(
                _read_parquet_part(
                    storage, _sidecar_path(ref, paths[0]), ("add", "remove"), "sidecar"
                )
            )
    metadata = next(
        (a for piece in pieces for a in piece.actions if isinstance(a, Metadata)), None
    )
    types = stats_types(metadata.schema_string) if metadata is not None else {}
    actions: list[Action] = []
    for piece in pieces:
        for index, parsed in piece.pending_stats:
            add = piece.actions[index]
            assert isinstance(add, AddFile)
            piece.actions[index] = replace(add, stats=stats_json_from_values(parsed, types))
        actions.extend(piece.actions)
    # A checkpoint is reconciled state: order does not matter, except that a file both
    # added and removed (never written by a correct writer) must stay live.
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    others = [a for a in actions if not isinstance(a, RemoveFile)]
    return removes + others
