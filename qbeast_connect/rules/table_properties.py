"""Delta table properties (``metaData.configuration`` keys): names, defaults, validation.

Each key sits beside its default. Values in the log are always strings. Pure rules: the
write options check the properties a write sets with :func:`checked_table_properties`,
and the Delta layer (``server_plugin.delta.properties``) reads them with the same names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedProtocolError

__all__ = [
    "APPEND_ONLY",
    "CHECKPOINT_INTERVAL",
    "CHECKPOINT_INTERVAL_DEFAULT",
    "COLUMN_MAPPING_MODE",
    "DATA_SKIPPING_NUM_INDEXED_COLS",
    "DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT",
    "DELETED_FILE_RETENTION",
    "DELETED_FILE_RETENTION_DEFAULT",
    "ENABLE_IN_COMMIT_TIMESTAMPS",
    "LOG_RETENTION",
    "LOG_RETENTION_DEFAULT",
    "SET_TRANSACTION_RETENTION",
    "checked_table_properties",
    "deletion_vectors_on",
    "get_bool",
    "get_int",
    "parse_interval_ms",
]

APPEND_ONLY = "delta.appendOnly"
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
CHECKPOINT_INTERVAL_DEFAULT = 10
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
DATA_SKIPPING_NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT = 32
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
DELETED_FILE_RETENTION_DEFAULT = "interval 1 week"
ENABLE_IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
LOG_RETENTION = "delta.logRetentionDuration"
LOG_RETENTION_DEFAULT = "interval 30 days"
SET_TRANSACTION_RETENTION = "delta.setTransactionRetentionDuration"
CHECKPOINT_RETENTION = "delta.checkpointRetentionDuration"
ENABLE_DELETION_VECTORS = "delta.enableDeletionVectors"
ENABLE_CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ENABLE_TYPE_WIDENING = "delta.enableTypeWidening"

_UNIT_MS = {
    "nanosecond": 1e-6,
    "microsecond": 1e-3,
    "millisecond": 1,
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
_INTERVAL_RE = re.compile(r"^\s*(?:interval\s+)?(-?\d+)\s+([a-z]+?)s?\s*$", re.IGNORECASE)


def parse_interval_ms(text: str) -> int:
    """Parse a Delta duration such as ``interval 7 days`` into milliseconds.

    Args:
        text: ``interval <n> <unit>`` (the ``interval`` word is optional); units from
            nanosecond to week, singular or plural. Months and years are not allowed.

    Returns:
        The duration in milliseconds (truncated).

    Raises:
        InvalidOptionError: The text is not a duration in that form.
    """
    m = _INTERVAL_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNIT_MS:
        raise InvalidOptionError(
            f"cannot parse duration {text!r}; use 'interval <n> <unit>' with unit one of "
            f"{', '.join(_UNIT_MS)} (e.g. 'interval 7 days')"
        )
    return int(int(m.group(1)) * _UNIT_MS[unit])


def get_bool(configuration: Mapping[str, str | None], key: str, default: bool = False) -> bool:
    """Return a boolean property (``"true"``/``"false"``, case-insensitive)."""
    value = configuration.get(key)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise InvalidOptionError(f"table property {key}={value!r} must be 'true' or 'false'")


def deletion_vectors_on(
    configuration: Mapping[str, str | None],
    reader_features: Iterable[str] | None,
    writer_features: Iterable[str] | None,
) -> bool:
    """Whether row changes mark rows in deletion vectors instead of rewriting files
    (Delta's rule): ``delta.enableDeletionVectors=true`` with the ``deletionVectors``
    feature listed for readers and writers."""
    return (
        get_bool(configuration, ENABLE_DELETION_VECTORS)
        and "deletionVectors" in (reader_features or ())
        and "deletionVectors" in (writer_features or ())
    )


def get_int(configuration: Mapping[str, str | None], key: str, default: int) -> int:
    """Return an integer property."""
    value = configuration.get(key)
    if value is None:
        return default
    try:
        return int(value.strip())
    except ValueError as exc:
        raise InvalidOptionError(f"table property {key}={value!r} must be an integer") from exc


#: Boolean properties whose ``true`` needs a table feature this writer does not write.
_NEEDS_FEATURE = {
    ENABLE_CHANGE_DATA_FEED: "changeDataFeed (writer 4: change files for every overwrite)",
    ENABLE_ROW_TRACKING: "rowTracking (writer 7)",
    ENABLE_TYPE_WIDENING: "typeWidening (reader 3 / writer 7)",
    ENABLE_IN_COMMIT_TIMESTAMPS: "inCommitTimestamp (writer 7)",
}
_DURATIONS = (
    LOG_RETENTION,
    DELETED_FILE_RETENTION,
    SET_TRANSACTION_RETENTION,
    CHECKPOINT_RETENTION,
)
_BOOLEANS = (APPEND_ONLY, *_NEEDS_FEATURE)
_CANONICAL = {
    key.lower(): key
    for key in (
        CHECKPOINT_INTERVAL,
        COLUMN_MAPPING_MODE,
        DATA_SKIPPING_NUM_INDEXED_COLS,
        *_DURATIONS,
        *_BOOLEANS,
    )
}


def checked_table_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Validate ``delta.*`` table properties given to a write, before anything is written.

    Known keys get their canonical spelling back (option keys are case-insensitive, the
    log is not). Values of known properties must be usable by this implementation and by
    other Delta readers; other ``delta.*`` keys are stored as they are.

    Returns:
        The properties with canonical keys.

    Raises:
        InvalidOptionError: a malformed value (``delta.checkpointInterval`` not a positive
            integer, a retention that is not a non-negative ``interval <n> <unit>``, a
            boolean that is not ``true``/``false``).
        UnsupportedProtocolError: a property that needs a Delta table feature this writer
            does not implement (change data feed, column mapping, ...).
            ``delta.enableDeletionVectors=true`` is accepted: a table created with it gets
            the ``deletionVectors`` feature, and deletes then write vectors.
    """
    out: dict[str, str] = {}
    for raw_key, raw_value in properties.items():
        key = _CANONICAL.get(raw_key.lower(), raw_key)
        value = str(raw_value).strip()
        if key in out:
            raise InvalidOptionError(f"table property {key} is given twice")
        if key.lower().startswith("delta.feature."):
            raise UnsupportedProtocolError(
                f"table property {raw_key}: qbeast-connect writes Delta protocol 1/2 tables "
                "and cannot enable table features; remove it"
            )
        if key == CHECKPOINT_INTERVAL:
            if get_int({key: value}, key, 0) <= 0:
                raise InvalidOptionError(
                    f"table property {key}={raw_value!r} must be a positive integer "
                    "(a checkpoint every that many commits; default 10)"
                )
        elif key == DATA_SKIPPING_NUM_INDEXED_COLS:
            if get_int({key: value}, key, 0) < -1:
                raise InvalidOptionError(
                    f"table property {key}={raw_value!r} must be -1 (all columns) or >= 0"
                )
        elif key in _DURATIONS:
            try:
                ms = parse_interval_ms(value)
            except InvalidOptionError as exc:
                raise InvalidOptionError(f"table property {key}: {exc.message}") from None
            if ms < 0:
                raise InvalidOptionError(f"table property {key}={raw_value!r} must not be negative")
        elif key in _BOOLEANS:
            enabled = get_bool({key: value}, key)
            value = "true" if enabled else "false"
            if enabled and key in _NEEDS_FEATURE:
                raise UnsupportedProtocolError(
                    f"table property {key}=true needs the Delta table feature "
                    f"{_NEEDS_FEATURE[key]}, which qbeast-connect does not write; leave it "
                    "unset (or false), or write the table with Delta Lake"
                )
        elif key == COLUMN_MAPPING_MODE and value.lower() != "none":
            raise UnsupportedProtocolError(
                f"table property {key}={raw_value!r} (feature columnMapping): qbeast-connect "
                "reads, appends to and optimizes column-mapped tables but does not turn column "
                "mapping on; enable it with Delta Lake (ALTER TABLE delta.`<path>` SET "
                f"TBLPROPERTIES ('{key}' = 'name', 'delta.minReaderVersion' = '2', "
                "'delta.minWriterVersion' = '5')), or leave it unset (or 'none')"
            )
        out[key] = value if key in _CANONICAL.values() else str(raw_value)
    return out
