"""Which Delta protocol versions and table features this implementation supports.

We implement protocol **(1, 2)**: reader version 1, writer version 2 (``appendOnly`` and
``invariants``; SQL invariants cannot be evaluated here, so a table that declares one
is refused for writing). Explicit feature lists are accepted (reader 3 / writer 7) only
when every listed feature is supported:

* ``v2Checkpoint`` (reader+writer): UUID-named checkpoints, ``checkpointMetadata`` and
  ``sidecar`` files are read; our own checkpoints on such a table follow the V2 spec.
* ``timestampNtz`` (reader+writer): the ``timestamp_ntz`` type.
* ``typeWidening`` / ``typeWidening-preview`` (reader+writer): files written before a
  widening are read as the table type; we never change a type ourselves.
* ``domainMetadata`` (writer): domains are replayed, checkpointed and kept; we never
  write ``domainMetadata`` actions ourselves.
* ``vacuumProtocolCheck`` (reader only), ``appendOnly``, ``invariants`` (writer).
* ``columnMapping`` (reader+writer, also the legacy protocol **(2, 5)**, whose writer 5
  implies ``checkConstraints``, ``changeDataFeed`` and ``generatedColumns``: such a table
  is written only while it uses none of those three;
  :mod:`qbeast_connect.rules.column_mapping`).
* ``deletionVectors`` (reader+writer): vectors are applied on every read; deletes on a
  table with ``delta.enableDeletionVectors=true`` write them (:mod:`server_plugin.row_deletes`),
  and a table created with that property gets the feature (:data:`VECTORS_PROTOCOL`).

Everything else is refused *before* the schema, files or stats are used, with an
UnsupportedProtocolError naming the unsupported versions or features.
"""

from __future__ import annotations

import re

from qbeast_connect.exceptions import CorruptLogError, UnsupportedProtocolError
from qbeast_connect.rules.column_mapping import column_mapping, mapping_mode

from .actions import Metadata, Protocol
from .properties import (
    APPEND_ONLY,
    CHECKPOINT_INTERVAL,
    COLUMN_MAPPING_MODE,
    get_bool,
    get_int,
)
from .schema import (
    delta_to_arrow_schema,
    schema_field_metadata_keys,
    schema_primitive_types,
    schema_type_changes,
)

__all__ = [
    "DEFAULT_PROTOCOL",
    "MAX_READER_VERSION",
    "MAX_WRITER_VERSION",
    "SUPPORTED_READER_FEATURES",
    "SUPPORTED_WRITER_FEATURES",
    "UNUSED_ONLY_WRITER_FEATURES",
    "VECTORS_PROTOCOL",
    "check_readable",
    "check_type_changes",
    "check_writable",
    "has_feature",
]

DEFAULT_PROTOCOL = Protocol(1, 2, None, None)
"""The protocol of tables we create: reader 1, writer 2, no feature lists."""

VECTORS_PROTOCOL = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
"""The protocol of tables we create with ``delta.enableDeletionVectors=true``."""

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

SUPPORTED_READER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "vacuumProtocolCheck",
        "v2Checkpoint",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
    }
)
"""Reader features (reader version 3) we can read with."""

SUPPORTED_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "appendOnly",
        "columnMapping",
        "deletionVectors",
        "invariants",
        "v2Checkpoint",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "domainMetadata",
    }
)
"""Writer features (writer version 7) we honour when writing."""

UNUSED_ONLY_WRITER_FEATURES: frozenset[str] = frozenset(
    {"checkConstraints", "changeDataFeed", "generatedColumns"}
)
"""Writer features (listed at writer 7, or implied by writer 5) we write under only while
the table does not use them: no ``delta.constraints.*``, change data feed off, no
generation expression (Delta lists them when it upgrades a (2, 5) table to (3, 7))."""

_FIX_READ = (
    "read the table with an engine that supports them (e.g. Spark with Delta Lake), "
    "or disable the features there"
)
_FIX_WRITE = (
    "write to this table with an engine that supports them (e.g. Spark with Delta "
    "Lake), or write to a new table"
)


def _fmt(features: set[str] | list[str]) -> str:
    return ", ".join(sorted(features))


def _check_features(
    side: str,
    version: int,
    features: tuple[str, ...] | None,
    features_version: int,
    supported: frozenset[str],
    refusal: str,
) -> None:
    """Check a feature list: present exactly at ``features_version``, and all supported.

    Args:
        side: ``"reader"`` or ``"writer"``.
        version: The protocol's ``min<Side>Version``.
        features: Its ``<side>Features`` list, or None.
        features_version: The version that carries a feature list (3 or 7).
        supported: The features of this side we implement.
        refusal: How the message ends when a feature is not supported.
    """
    name = f"{side}Features"
    version_name = f"min{side.capitalize()}Version"
    if version == features_version:
        if features is None:
            raise UnsupportedProtocolError(
                f"table has {version_name} {features_version} but no {name} list; the "
                "protocol action is invalid"
            )
        unsupported = set(features) - supported
        if unsupported:
            raise UnsupportedProtocolError(
                f"table requires {side} features [{_fmt(unsupported)}], which "
                f"qbeast-connect {refusal}"
            )
    elif features is not None:
        raise UnsupportedProtocolError(
            f"table lists {name} at {version_name} {version} (only allowed at "
            f"{features_version}); the protocol action is invalid"
        )


def check_readable(protocol: Protocol) -> None:
    """Refuse a table whose protocol we cannot read correctly.

    Args:
        protocol: The table's protocol action.

    Raises:
        UnsupportedProtocolError: ``minReaderVersion`` is above 3, version 3 lists a
            reader feature we do not implement, or the feature lists
            are inconsistent with the versions. The message names the features.
    """
    reader = protocol.min_reader_version
    if reader < 1:
        raise UnsupportedProtocolError(f"invalid minReaderVersion {reader}; the log is damaged")
    if reader > MAX_READER_VERSION:
        raise UnsupportedProtocolError(
            f"table requires minReaderVersion {reader}; qbeast-connect reads versions 1, 2 "
            f"(columnMapping) and 3 (with features {_fmt(list(SUPPORTED_READER_FEATURES))}); "
            "upgrade qbeast-connect or use another Delta engine"
        )
    _check_features(
        "reader",
        reader,
        protocol.reader_features,
        3,
        SUPPORTED_READER_FEATURES,
        f"does not support; {_FIX_READ}",
    )


def check_writable(protocol: Protocol, metadata: Metadata) -> None:
    """Refuse to write a table whose protocol or metadata we cannot honour.

    Passes :func:`check_readable` first (writers read the log). Then accepts writer
    versions 1-2, 5 (column mapping; while the table declares no check constraint, no
    generated column and no change data feed) and 7 only with the writer features of
    :data:`SUPPORTED_WRITER_FEATURES` (and of :data:`UNUSED_ONLY_WRITER_FEATURES` while the
    table does not use them). Also refuses SQL invariants (we cannot evaluate
    them), a column mapping mode the protocol does not allow, a schema we cannot parse,
    partition columns missing from the schema and malformed values of
    the properties we enforce.

    Args:
        protocol: The protocol the table will have after the commit.
        metadata: The metadata the table will have after the commit.

    Raises:
        UnsupportedProtocolError: Naming the unsupported version, features or columns.
        InvalidOptionError: A property we enforce has a malformed value.
    """
    check_readable(protocol)
    writer = protocol.min_writer_version
    if writer < 1:
        raise UnsupportedProtocolError(f"invalid minWriterVersion {writer}; the log is damaged")
    if writer == 5:
        _check_unused_features(metadata, "minWriterVersion 5")
    elif 3 <= writer <= 6:
        implied = {
            3: "checkConstraints",
            4: "checkConstraints, changeDataFeed, generatedColumns",
            5: "checkConstraints, changeDataFeed, generatedColumns, columnMapping",
            6: "checkConstraints, changeDataFeed, generatedColumns, columnMapping, identityColumns",
        }[writer]
        raise UnsupportedProtocolError(
            f"table requires minWriterVersion {writer} (features {implied}); qbeast-connect "
            f"writes only versions 1, 2 and 7 with features "
            f"[{_fmt(list(SUPPORTED_WRITER_FEATURES))}]; {_FIX_WRITE}"
        )
    if writer > MAX_WRITER_VERSION:
        raise UnsupportedProtocolError(
            f"table requires minWriterVersion {writer}; qbeast-connect writes versions up "
            f"to {MAX_WRITER_VERSION}; upgrade qbeast-connect or use another Delta engine"
        )
    _check_features(
        "writer",
        writer,
        protocol.writer_features,
        7,
        SUPPORTED_WRITER_FEATURES | UNUSED_ONLY_WRITER_FEATURES,
        f"cannot write; {_FIX_WRITE}",
    )
    listed = set(protocol.writer_features or ()) & UNUSED_ONLY_WRITER_FEATURES
    if writer == 7 and listed:
        _check_unused_features(metadata, f"writer features [{_fmt(listed)}]")
    _check_metadata_writable(protocol, metadata)


def _check_unused_features(metadata: Metadata, declared: str) -> None:
    """checkConstraints, changeDataFeed and generatedColumns (implied by writer version 5
    or listed at 7) are not implemented by this writer: refuse a table that uses any."""
    used = []
    if any(k.lower().startswith("delta.constraints.") for k in metadata.configuration):
        used.append("checkConstraints (delta.constraints.*)")
    if str(metadata.configuration.get("delta.enableChangeDataFeed", "")).lower() == "true":
        used.append("changeDataFeed (delta.enableChangeDataFeed)")
    if any(
        "delta.generationExpression" in keys
        for keys in schema_field_metadata_keys(metadata.schema_string).values()
    ):
        used.append("generatedColumns (delta.generationExpression)")
    if used:
        raise UnsupportedProtocolError(
            f"table has {declared} and uses {', '.join(used)}, which qbeast-connect "
            f"does not write; {_FIX_WRITE}"
        )


def _column_mapping_allowed(protocol: Protocol) -> bool:
    if protocol.min_writer_version == 7:
        return "columnMapping" in (protocol.writer_features or ())
    return protocol.min_reader_version >= 2 and protocol.min_writer_version >= 5


def has_feature(protocol: Protocol, feature: str) -> bool:
    """Whether ``feature`` is listed among the protocol's reader or writer features."""
    return feature in (protocol.reader_features or ()) or feature in (
        protocol.writer_features or ()
    )


_INTEGERS = ("byte", "short", "integer", "long")


def _widening_allowed(from_type: str, to_type: str) -> bool:
    """Whether Delta's type widening allows ``from_type`` -> ``to_type`` (PROTOCOL.md)."""
    if from_type in _INTEGERS and to_type in _INTEGERS:
        return _INTEGERS.index(from_type) < _INTEGERS.index(to_type)
    if from_type == "float" and to_type == "double":
        return True
    if from_type in ("byte", "short", "integer") and to_type == "double":
        return True
    if from_type == "date" and to_type == "timestamp_ntz":
        return True
    to_decimal = _DECIMAL_RE.match(to_type)
    if to_decimal is None:
        return False
    to_p, to_s = int(to_decimal.group(1)), int(to_decimal.group(2))
    from_decimal = _DECIMAL_RE.match(from_type)
    if from_decimal is not None:
        from_p, from_s = int(from_decimal.group(1)), int(from_decimal.group(2))
    elif from_type in ("byte", "short", "integer"):
        from_p, from_s = 10, 0
    elif from_type == "long":
        from_p, from_s = 20, 0
    else:
        return False
    k1, k2 = to_p - from_p, to_s - from_s
    return k1 >= k2 >= 0


_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def check_type_changes(metadata: Metadata) -> None:
    """Refuse a schema whose ``delta.typeChanges`` holds a change we cannot read.

    Type widening (PROTOCOL.md "Reader Requirements for Type Widening"): readers must
    validate every recorded change and convert the values of older files to the current
    type, which our reads do for the changes Delta allows (integers to wider integers,
    to double or to a wide enough decimal, float to double, date to timestamp_ntz,
    decimal precision/scale increases).

    Raises:
        UnsupportedProtocolError: A recorded change is not one of those.
        CorruptLogError: A ``delta.typeChanges`` entry is malformed.
    """
    for path, changes in schema_type_changes(metadata.schema_string).items():
        for change in changes:
            if not isinstance(change, dict):
                raise CorruptLogError(
                    f"column {path}: delta.typeChanges entry {change!r} is not an object"
                )
            from_type, to_type = change.get("fromType"), change.get("toType")
            if not isinstance(from_type, str) or not isinstance(to_type, str):
                raise CorruptLogError(
                    f"column {path}: delta.typeChanges entry {change!r} lacks fromType/toType"
                )
            if not _widening_allowed(from_type, to_type):
                where = path if not change.get("fieldPath") else f"{path}.{change['fieldPath']}"
                raise UnsupportedProtocolError(
                    f"column {where} was changed from {from_type} to {to_type}, a type "
                    f"change qbeast-connect cannot read; {_FIX_READ}"
                )


def _check_metadata_writable(protocol: Protocol, metadata: Metadata) -> None:
    mode = mapping_mode(metadata.configuration)
    if mode != "none":
        if not _column_mapping_allowed(protocol):
            raise UnsupportedProtocolError(
                f"table property {COLUMN_MAPPING_MODE}={mode!r} needs the columnMapping "
                "feature (protocol (2, 5), or the feature listed at (3, 7)), which the table's "
                "protocol does not have; enable it with Delta Lake (ALTER TABLE ... SET "
                "TBLPROPERTIES with delta.minReaderVersion 2 and delta.minWriterVersion 5)"
            )
        column_mapping(metadata.configuration, metadata.schema_string)  # every field mapped
    schema = delta_to_arrow_schema(metadata.schema_string)  # raises on unreadable types
    names = set(schema.names)
    missing = [c for c in metadata.partition_columns if c not in names]
    if missing:
        raise UnsupportedProtocolError(
            f"partition columns {missing} are not in the table schema {schema.names}; "
            "the metaData action is invalid"
        )
    invariants = sorted(
        path
        for path, keys in schema_field_metadata_keys(metadata.schema_string).items()
        if "delta.invariants" in keys
    )
    if invariants:
        raise UnsupportedProtocolError(
            f"columns [{', '.join(invariants)}] declare SQL invariants (delta.invariants), "
            f"which qbeast-connect cannot evaluate; {_FIX_WRITE}"
        )
    if "timestamp_ntz" in schema_primitive_types(
        metadata.schema_string
    ) and not has_feature(protocol, "timestampNtz"):
        raise UnsupportedProtocolError(
            "the schema has a timestamp_ntz column, which needs the timestampNtz feature "
            "in the table protocol (reader 3 / writer 7); store instants as UTC "
            "timestamps, or create the table with that feature"
        )
    get_bool(metadata.configuration, APPEND_ONLY)
    get_int(metadata.configuration, CHECKPOINT_INTERVAL, 10)
