"""Delta log actions as frozen dataclasses, and their JSON (commit file) codec.

This module is the only place that knows the on-disk JSON spellings of the Delta actions
(``minReaderVersion``, ``partitionValues``, ...). Everything else uses the snake_case
attributes of the dataclasses below.

A commit file is UTF-8, newline-delimited JSON with one action per line, each line an
object with exactly one key (``add``, ``remove``, ``metaData``, ``protocol``, ``txn``,
``commitInfo``, ...). Unknown actions and unknown fields are ignored when reading, for
forward compatibility.

Example:
    ```python
    data = encode_commit([CommitInfo({"operation": "WRITE"}), add])
    actions = decode_commit(data, source="_delta_log/00000000000000000001.json")
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from qbeast_connect.exceptions import CorruptLogError, InvalidOptionError

from .deletion_vectors import DeletionVectorDescriptor

__all__ = [
    "Action",
    "AddFile",
    "CommitInfo",
    "DomainMetadata",
    "Format",
    "FrozenMap",
    "Metadata",
    "Protocol",
    "RemoveFile",
    "Txn",
    "action_from_json",
    "action_key",
    "action_to_json",
    "action_to_json_line",
    "decode_commit",
    "encode_commit",
]

V = TypeVar("V")


class FrozenMap(Mapping[str, V]):
    """A read-only, hashable, picklable mapping with string keys.

    Used for every map field of an action (``partitionValues``, ``tags``,
    ``configuration``, ...), so that actions can be frozen dataclasses that are safe to
    share, hash and send between processes.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        self._data: dict[str, V] = dict(data)
        self._hash: int | None = None

    def __getitem__(self, key: str) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[type[FrozenMap[V]], tuple[dict[str, V]]]:
        return (type(self), (self._data,))

    def to_dict(self) -> dict[str, V]:
        """Return a mutable shallow copy as a plain ``dict``."""
        return dict(self._data)


def _freeze(value: Any) -> Any:
    """Deep-convert JSON-like data into hashable form (dict -> FrozenMap, list -> tuple)."""
    if isinstance(value, Mapping):
        return FrozenMap({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    """Inverse of :func:`_freeze`: back to plain dicts and lists for ``json.dumps``."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


def _coerce(obj: object, kind: type, *names: str, optional: bool = False) -> None:
    """Convert the named fields of a frozen dataclass to ``kind`` where they are not already.

    With ``optional``, a None field stays None.
    """
    for name in names:
        value = getattr(obj, name)
        if (optional and value is None) or isinstance(value, kind):
            continue
        object.__setattr__(obj, name, kind(value))


@dataclass(frozen=True, slots=True)
class Protocol:
    """The ``protocol`` action: versions and (at reader 3 / writer 7) table features.

    Attributes:
        min_reader_version: ``minReaderVersion``.
        min_writer_version: ``minWriterVersion``.
        reader_features: ``readerFeatures``; present only when the reader version is 3.
        writer_features: ``writerFeatures``; present only when the writer version is 7.
    """

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _coerce(self, tuple, "reader_features", "writer_features", optional=True)


@dataclass(frozen=True, slots=True)
class Format:
    """The ``format`` of a ``metaData`` action (always parquet in practice)."""

    provider: str = "parquet"
    options: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _coerce(self, FrozenMap, "options")


@dataclass(frozen=True, slots=True)
class Metadata:
    """The ``metaData`` action. Each one replaces the previous one entirely.

    Attributes:
        id: Table id (a UUID string), fixed for the table's life.
        schema_string: ``schemaString``, the Delta schema JSON serialized into a string.
        partition_columns: ``partitionColumns``; empty for an unpartitioned table.
        configuration: Table properties; every value is a string.
        created_time: ``createdTime`` in epoch milliseconds, if known.
        name: Optional table name.
        description: Optional table description.
        format_provider: ``format.provider`` (``"parquet"``).
        format_options: ``format.options``.
        invalid: Why the action read from the log is malformed (a required field missing
            or mistyped), else None. Only the metaData in effect must be valid: replay
            fails on it when no later metaData replaced it.
    """

    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=FrozenMap)
    created_time: int | None = None
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=FrozenMap)
    invalid: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _coerce(self, tuple, "partition_columns")
        _coerce(self, FrozenMap, "configuration", "format_options")

    @property
    def format(self) -> Format:
        """The ``format`` struct of this action."""
        return Format(self.format_provider, self.format_options)


@dataclass(frozen=True, slots=True)
class AddFile:
    """The ``add`` action: a data file that is part of the table.

    Attributes:
        path: URI reference as written in the log: percent-encoded, relative to the
            table root, or absolute. See :mod:`~server_plugin.delta.uris`.
        partition_values: One entry per partition column (``None`` = null).
        size: Exact size of the file in bytes.
        modification_time: File creation time, epoch milliseconds.
        data_change: False when only rearranging data (compaction) or re-stating stats.
        stats: Statistics JSON text (see ``file_stats``), or None.
        tags: Free per-file metadata (the qbeast ``revision`` and ``blocks`` live here).
        deletion_vector: The rows of the file that are deleted (feature
            ``deletionVectors``), or None when every row is live.
    """

    path: str
    partition_values: Mapping[str, str | None] = field(default_factory=FrozenMap)
    size: int = 0
    modification_time: int = 0
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None

    def __post_init__(self) -> None:
        _coerce(self, FrozenMap, "partition_values")
        _coerce(self, FrozenMap, "tags", optional=True)

    def to_remove(self, deletion_timestamp: int, *, data_change: bool = True) -> RemoveFile:
        """Return the ``remove`` action that logically deletes this file.

        Args:
            deletion_timestamp: Epoch milliseconds of the deletion (usually now).
            data_change: False when the rows live on in other files (compaction).

        Returns:
            A RemoveFile copying this file's path, partition values, size, stats and tags,
            with ``extendedFileMetadata`` set.
        """
        return RemoveFile(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=self.partition_values,
            size=self.size,
            tags=self.tags,
            stats=self.stats,
            deletion_vector=self.deletion_vector,
        )


@dataclass(frozen=True, slots=True)
class RemoveFile:
    """The ``remove`` action: a file that is no longer part of the table (a tombstone).

    Attributes:
        path: The same URI reference the file was added with.
        deletion_timestamp: Epoch milliseconds; None (absent) counts as 0, i.e. expired.
        data_change: False when the rows live on in other files (compaction).
        extended_file_metadata: True when partition values and size are given.
        partition_values: Partition values of the removed file, if known.
        size: Size of the removed file in bytes, if known.
        tags: Tags of the removed file, if known.
        stats: Statistics of the removed file, if known.
        deletion_vector: The deletion vector of the ``add`` this removes (the logical
            file is the pair of path and vector), or None.
    """

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    tags: Mapping[str, str | None] | None = None
    stats: str | None = None
    deletion_vector: DeletionVectorDescriptor | None = None

    def __post_init__(self) -> None:
        _coerce(self, FrozenMap, "partition_values", "tags", optional=True)


@dataclass(frozen=True, slots=True)
class Txn:
    """The ``txn`` action: an application's progress, for exactly-once writes.

    Attributes:
        app_id: ``appId``.
        version: The application's own version (may go down on rollback).
        last_updated: ``lastUpdated`` epoch milliseconds, if known.
    """

    app_id: str
    version: int
    last_updated: int | None = None


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    """The ``domainMetadata`` action (writer feature ``domainMetadata``).

    Attributes:
        domain: Domain name.
        configuration: Free-form string owned by the domain.
        removed: True when the domain is deleted.
    """

    domain: str
    configuration: str
    removed: bool = False


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """The ``commitInfo`` action: free-form provenance of a commit (never in checkpoints).

    Attributes:
        values: The JSON object; stored deep-frozen (nested objects become FrozenMaps,
            arrays tuples).
    """

    values: Mapping[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        frozen = _freeze(self.values)
        object.__setattr__(self, "values", frozen)

    @property
    def timestamp(self) -> int | None:
        """``timestamp`` in epoch milliseconds, if present and an integer."""
        value = self.values.get("timestamp")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def operation(self) -> str | None:
        """``operation`` (e.g. ``WRITE``), if present."""
        value = self.values.get("operation")
        return value if isinstance(value, str) else None

    @property
    def txn_id(self) -> str | None:
        """``txnId``, the unique id of the transaction, if present."""
        value = self.values.get("txnId")
        return value if isinstance(value, str) else None

    @property
    def is_blind_append(self) -> bool:
        """``isBlindAppend``; False when absent."""
        return self.values.get("isBlindAppend") is True

    def to_dict(self) -> dict[str, Any]:
        """Return the values as plain, mutable JSON data."""
        result: dict[str, Any] = _thaw(self.values)
        return result


Action: TypeAlias = Protocol | Metadata | AddFile | RemoveFile | Txn | DomainMetadata | CommitInfo

_KEYS: dict[type, str] = {
    AddFile: "add",
    RemoveFile: "remove",
    Metadata: "metaData",
    Protocol: "protocol",
    Txn: "txn",
    DomainMetadata: "domainMetadata",
    CommitInfo: "commitInfo",
}


def action_key(action: Action) -> str:
    """Return the key that names ``action``'s kind in the log (``add``, ``metaData``, ...).

    Raises:
        InvalidOptionError: ``action`` is not an action of this module.
    """
    key = _KEYS.get(type(action))
    if key is None:
        raise InvalidOptionError(
            f"{type(action).__name__} is not a Delta action; pass Protocol, Metadata, "
            "AddFile, RemoveFile, Txn, DomainMetadata or CommitInfo"
        )
    return key

# ----------------------------------------------------------------------------- JSON codec


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _strict_loads(text: str | bytes) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def _opt_map(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else dict(value)


def _opt_list(value: Sequence[str] | None) -> list[str] | None:
    return None if value is None else list(value)


def _drop_none(obj: dict[str, Any], *optional: str) -> dict[str, Any]:
    """Leave out the ``optional`` keys whose value is None (the log omits absent fields)."""
    return {k: v for k, v in obj.items() if v is not None or k not in optional}


def action_to_json(action: Action) -> dict[str, Any]:
    """Return the single-key JSON object for an action (plain dicts and lists).

    Args:
        action: Any action of this module.

    Returns:
        For example ``{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}``.

    Raises:
        InvalidOptionError: ``action`` is not an action of this module.
    """
    if isinstance(action, AddFile):
        add = {
            "path": action.path,
            "partitionValues": dict(action.partition_values),
            "size": action.size,
            "modificationTime": action.modification_time,
            "dataChange": action.data_change,
            "stats": action.stats,
            "tags": _opt_map(action.tags),
            "deletionVector": DeletionVectorDescriptor.json_of(action.deletion_vector),
        }
        return {"add": _drop_none(add, "stats", "tags", "deletionVector")}
    if isinstance(action, RemoveFile):
        rem = {
            "path": action.path,
            "deletionTimestamp": action.deletion_timestamp,
            "dataChange": action.data_change,
            "extendedFileMetadata": action.extended_file_metadata,
            "partitionValues": _opt_map(action.partition_values),
            "size": action.size,
            "stats": action.stats,
            "tags": _opt_map(action.tags),
            "deletionVector": DeletionVectorDescriptor.json_of(action.deletion_vector),
        }
        optional = ("deletionTimestamp", "extendedFileMetadata", "partitionValues", "size")
        return {"remove": _drop_none(rem, *optional, "stats", "tags", "deletionVector")}
    if isinstance(action, Metadata):
        meta = {
            "id": action.id,
            "name": action.name,
            "description": action.description,
            "format": {"provider": action.format_provider, "options": dict(action.format_options)},
            "schemaString": action.schema_string,
            "partitionColumns": list(action.partition_columns),
            "configuration": dict(action.configuration),
            "createdTime": action.created_time,
        }
        return {"metaData": _drop_none(meta, "name", "description", "createdTime")}
    if isinstance(action, Protocol):
        proto = {
            "minReaderVersion": action.min_reader_version,
            "minWriterVersion": action.min_writer_version,
            "readerFeatures": _opt_list(action.reader_features),
            "writerFeatures": _opt_list(action.writer_features),
        }
        return {"protocol": _drop_none(proto, "readerFeatures", "writerFeatures")}
    if isinstance(action, Txn):
        txn = {
            "appId": action.app_id,
            "version": action.version,
            "lastUpdated": action.last_updated,
        }
        return {"txn": _drop_none(txn, "lastUpdated")}
    if isinstance(action, CommitInfo):
        return {"commitInfo": action.to_dict()}
    if isinstance(action, DomainMetadata):
        return {
            "domainMetadata": {
                "domain": action.domain,
                "configuration": action.configuration,
                "removed": action.removed,
            }
        }
    raise InvalidOptionError(
        f"cannot serialize {type(action).__name__} as a Delta action; "
        "pass Protocol, Metadata, AddFile, RemoveFile, Txn, DomainMetadata or CommitInfo"
    )


def _check_stats_json(stats: str, path: str) -> None:
    try:
        parsed = _strict_loads(stats)
    except ValueError as exc:
        raise InvalidOptionError(
            f"add.stats of {path!r} is not strict JSON ({exc}); compute stats with "
            "file_stats.compute_stats, which drops NaN/Infinity bounds"
        ) from exc
    if not isinstance(parsed, dict):
        raise InvalidOptionError(f"add.stats of {path!r} must be a JSON object, got {stats!r}")


def action_to_json_line(action: Action) -> str:
    """Serialize one action as a compact JSON line (without the trailing newline).

    Uses ``separators=(",", ":")``, ``allow_nan=False`` and ``ensure_ascii=False``; the
    result is checked to be encodable as UTF-8 (no lone surrogates) and, for ``add``,
    the ``stats`` text is checked to be strict JSON.

    Args:
        action: The action to serialize.

    Returns:
        A single line of JSON, e.g. ``{"txn":{"appId":"a","version":3}}``.

    Raises:
        InvalidOptionError: The action holds NaN/Infinity, a string that is not valid
            Unicode, non-JSON values, or (for ``add``) stats that are not strict JSON.
    """
    if isinstance(action, AddFile | RemoveFile) and action.stats is not None:
        _check_stats_json(action.stats, action.path)
    obj = action_to_json(action)
    try:
        line = _dumps(obj)
    except (ValueError, TypeError) as exc:
        raise InvalidOptionError(
            f"{next(iter(obj))} action cannot be written as strict JSON ({exc}); "
            "replace NaN/Infinity and non-JSON values before committing"
        ) from exc
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidOptionError(
            f"{next(iter(obj))} action holds a string that is not valid Unicode ({exc}); "
            "decode bytes properly before committing"
        ) from exc
    return line


def encode_commit(actions: Sequence[Action]) -> bytes:
    """Encode the actions of one commit as the bytes of an ``N.json`` file.

    ``commitInfo`` (at most one) is moved to the first line; the other actions keep
    their order. Every line ends with ``\\n``.

    Args:
        actions: The commit's actions.

    Returns:
        UTF-8 newline-delimited JSON.

    Raises:
        InvalidOptionError: More than one commitInfo, or an action that cannot be
            written as strict JSON.
    """
    infos = [a for a in actions if isinstance(a, CommitInfo)]
    if len(infos) > 1:
        raise InvalidOptionError(
            f"a commit holds at most one commitInfo, got {len(infos)}; merge them into one"
        )
    ordered = infos + [a for a in actions if not isinstance(a, CommitInfo)]
    return "".join(action_to_json_line(a) + "\n" for a in ordered).encode("utf-8")


def _req(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], action: str) -> Any:
    if key not in obj or obj[key] is None:
        raise CorruptLogError(f"{action} action lacks required field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise CorruptLogError(
            f"{action}.{key} has type {type(value).__name__}, expected {_kind_name(kind)}"
        )
    return value


def _opt(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], action: str) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise CorruptLogError(
            f"{action}.{key} has type {type(value).__name__}, expected {_kind_name(kind)}"
        )
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__


def _map_field(
    obj: Mapping[str, Any], key: str, action: str, *, required: bool
) -> FrozenMap[Any] | None:
    value = obj.get(key)
    if value is None:
        if required:
            # Tolerated: some writers omit an empty map; treat as {}.
            return FrozenMap()
        return None
    if isinstance(value, list):
        # Checkpoint readers hand maps over as lists of (key, value) pairs.
        try:
            value = dict(value)
        except (TypeError, ValueError) as exc:
            raise CorruptLogError(f"{action}.{key} is not a map: {value!r}") from exc
    if not isinstance(value, dict):
        raise CorruptLogError(f"{action}.{key} is not a map: {value!r}")
    return FrozenMap(value)


def _features(obj: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise CorruptLogError(f"protocol.{key} must be a list of strings, got {value!r}")
    return tuple(value)


def action_from_json(obj: Mapping[str, Any]) -> Action | None:
    """Decode one single-key JSON object (a commit line or checkpoint row) into an action.

    Args:
        obj: For example ``{"txn": {"appId": "a", "version": 3}}``.

    Returns:
        The action, or None for actions this implementation does not model (``cdc``,
        unknown future actions). Unknown fields are ignored.

    Raises:
        CorruptLogError: A known action lacks a required field or has a mistyped one.
    """
    if not isinstance(obj, Mapping):
        raise CorruptLogError(f"a log action must be a JSON object, got {obj!r}")
    for key, body in obj.items():
        decoder = _DECODERS.get(key)
        if decoder is None:
            continue
        if body is None:
            continue
        if not isinstance(body, Mapping):
            raise CorruptLogError(f"{key} action must be a JSON object, got {body!r}")
        action: Action = decoder(body)
        return action
    return None


def _decode_add(o: Mapping[str, Any]) -> AddFile:
    return AddFile(
        path=_req(o, "path", str, "add"),
        partition_values=_map_field(o, "partitionValues", "add", required=True) or FrozenMap(),
        size=_req(o, "size", int, "add"),
        modification_time=_opt(o, "modificationTime", int, "add") or 0,
        data_change=bool(_opt(o, "dataChange", bool, "add")),
        stats=_opt(o, "stats", str, "add"),
        tags=_map_field(o, "tags", "add", required=False),
        deletion_vector=DeletionVectorDescriptor.of_action(o, "add"),
    )


def _decode_remove(o: Mapping[str, Any]) -> RemoveFile:
    return RemoveFile(
        path=_req(o, "path", str, "remove"),
        deletion_timestamp=_opt(o, "deletionTimestamp", int, "remove"),
        data_change=bool(_opt(o, "dataChange", bool, "remove")),
        extended_file_metadata=_opt(o, "extendedFileMetadata", bool, "remove"),
        partition_values=_map_field(o, "partitionValues", "remove", required=False),
        size=_opt(o, "size", int, "remove"),
        tags=_map_field(o, "tags", "remove", required=False),
        stats=_opt(o, "stats", str, "remove"),
        deletion_vector=DeletionVectorDescriptor.of_action(o, "remove"),
    )


def _decode_metadata(o: Mapping[str, Any]) -> Metadata:
    try:
        return _decode_valid_metadata(o)
    except CorruptLogError as exc:
        table_id = o.get("id")
        return Metadata(
            id=table_id if isinstance(table_id, str) else "",
            schema_string='{"type":"struct","fields":[]}',
            invalid=exc.message,
        )


def _decode_valid_metadata(o: Mapping[str, Any]) -> Metadata:
    fmt = o.get("format") or {}
    if not isinstance(fmt, Mapping):
        raise CorruptLogError(f"metaData.format is not an object: {fmt!r}")
    partition_columns = o.get("partitionColumns") or []
    if not isinstance(partition_columns, list | tuple) or not all(
        isinstance(c, str) for c in partition_columns
    ):
        raise CorruptLogError(
            f"metaData.partitionColumns must be a list of strings, got {partition_columns!r}"
        )
    return Metadata(
        id=_req(o, "id", str, "metaData"),
        schema_string=_req(o, "schemaString", str, "metaData"),
        partition_columns=tuple(partition_columns),
        configuration=_map_field(o, "configuration", "metaData", required=True) or FrozenMap(),
        created_time=_opt(o, "createdTime", int, "metaData"),
        name=_opt(o, "name", str, "metaData"),
        description=_opt(o, "description", str, "metaData"),
        format_provider=fmt.get("provider") or "parquet",
        format_options=_map_field(fmt, "options", "metaData.format", required=True) or FrozenMap(),
    )


def _decode_protocol(o: Mapping[str, Any]) -> Protocol:
    return Protocol(
        min_reader_version=_req(o, "minReaderVersion", int, "protocol"),
        min_writer_version=_req(o, "minWriterVersion", int, "protocol"),
        reader_features=_features(o, "readerFeatures"),
        writer_features=_features(o, "writerFeatures"),
    )


def _decode_txn(o: Mapping[str, Any]) -> Txn:
    return Txn(
        app_id=_req(o, "appId", str, "txn"),
        version=_req(o, "version", int, "txn"),
        last_updated=_opt(o, "lastUpdated", int, "txn"),
    )


def _decode_domain(o: Mapping[str, Any]) -> DomainMetadata:
    return DomainMetadata(
        domain=_req(o, "domain", str, "domainMetadata"),
        configuration=_opt(o, "configuration", str, "domainMetadata") or "",
        removed=bool(_opt(o, "removed", bool, "domainMetadata")),
    )


def _decode_commit_info(o: Mapping[str, Any]) -> CommitInfo:
    return CommitInfo(FrozenMap(o))


_DECODERS: dict[str, Any] = {
    "add": _decode_add,
    "remove": _decode_remove,
    "metaData": _decode_metadata,
    "protocol": _decode_protocol,
    "txn": _decode_txn,
    "domainMetadata": _decode_domain,
    "commitInfo": _decode_commit_info,
}


def decode_commit(data: bytes, *, source: str = "commit file") -> list[Action]:
    """Decode the bytes of a commit file into its actions, in file order.

    Blank lines are skipped and a missing final newline is tolerated; unknown actions
    and fields are ignored.

    Args:
        data: The raw bytes of ``N.json``.
        source: Name of the file, used in error messages (e.g.
            ``_delta_log/00000000000000000007.json``).

    Returns:
        The decoded actions (unknown actions omitted).

    Raises:
        CorruptLogError: The file is not UTF-8, a line is not a JSON object, or a known
            action is malformed. The message names ``source`` and the line number.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptLogError(f"{source} is not valid UTF-8 ({exc})") from exc
    actions: list[Action] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(
                f"{source} line {lineno} is not valid JSON ({exc}); the commit file is "
                "damaged: restore it from a backup or repair the table"
            ) from exc
        if not isinstance(obj, dict):
            raise CorruptLogError(f"{source} line {lineno} is not a JSON object")
        try:
            action = action_from_json(obj)
        except CorruptLogError as exc:
            raise CorruptLogError(f"{source} line {lineno}: {exc.message}") from exc
        if action is not None:
            actions.append(action)
    return actions
