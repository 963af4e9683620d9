"""Delta table properties (``metaData.configuration`` keys) used by this package.

Each key sits beside its default. Values in the log are always strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from qbeast_connect.exceptions import InvalidOptionError

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
    "get_bool",
    "get_int",
    "get_interval_ms",
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


def get_int(configuration: Mapping[str, str | None], key: str, default: int) -> int:
    """Return an integer property."""
    value = configuration.get(key)
    if value is None:
        return default
    try:
        return int(value.strip())
    except ValueError as exc:
        raise InvalidOptionError(f"table property {key}={value!r} must be an integer") from exc


def get_interval_ms(
    configuration: Mapping[str, str | None], key: str, default: str | None
) -> int | None:
    """Return a duration property in milliseconds (None when unset and no default)."""
    value = configuration.get(key)
    if value is None:
        return None if default is None else parse_interval_ms(default)
    return parse_interval_ms(value)
