"""Delta table properties as the Delta layer reads them.

The names, defaults and the validation of the properties a write sets are core rules
(:mod:`qbeast_connect.rules.table_properties`); this module adds reading a duration.
"""

from __future__ import annotations

from collections.abc import Mapping

from qbeast_connect.rules.table_properties import (
    APPEND_ONLY,
    CHECKPOINT_INTERVAL,
    CHECKPOINT_INTERVAL_DEFAULT,
    CHECKPOINT_RETENTION,
    COLUMN_MAPPING_MODE,
    DATA_SKIPPING_NUM_INDEXED_COLS,
    DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT,
    DELETED_FILE_RETENTION,
    DELETED_FILE_RETENTION_DEFAULT,
    ENABLE_CHANGE_DATA_FEED,
    ENABLE_DELETION_VECTORS,
    ENABLE_IN_COMMIT_TIMESTAMPS,
    ENABLE_ROW_TRACKING,
    ENABLE_TYPE_WIDENING,
    LOG_RETENTION,
    LOG_RETENTION_DEFAULT,
    SET_TRANSACTION_RETENTION,
    get_bool,
    get_int,
    parse_interval_ms,
)

__all__ = [
    "APPEND_ONLY",
    "CHECKPOINT_INTERVAL",
    "CHECKPOINT_INTERVAL_DEFAULT",
    "CHECKPOINT_RETENTION",
    "COLUMN_MAPPING_MODE",
    "DATA_SKIPPING_NUM_INDEXED_COLS",
    "DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT",
    "DELETED_FILE_RETENTION",
    "DELETED_FILE_RETENTION_DEFAULT",
    "ENABLE_CHANGE_DATA_FEED",
    "ENABLE_DELETION_VECTORS",
    "ENABLE_IN_COMMIT_TIMESTAMPS",
    "ENABLE_ROW_TRACKING",
    "ENABLE_TYPE_WIDENING",
    "LOG_RETENTION",
    "LOG_RETENTION_DEFAULT",
    "SET_TRANSACTION_RETENTION",
    "get_bool",
    "get_int",
    "get_interval_ms",
    "parse_interval_ms",
]


def get_interval_ms(
    configuration: Mapping[str, str | None], key: str, default: str | None
) -> int | None:
    """Return a duration property in milliseconds (None when unset and no default)."""
    value = configuration.get(key)
    if value is None:
        return None if default is None else parse_interval_ms(default)
    return parse_interval_ms(value)
