"""Write options, named and defaulted as in qbeast-spark.

Option names are matched case-insensitively, as Spark does for DataFrameWriter options.
Each default is written once, here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.rules import auto_compact
from qbeast_connect.rules.table_properties import checked_table_properties
from qbeast_connect.rules.time_partitioning import parse_partition_by

COLUMNS_TO_INDEX = "columnsToIndex"
CUBE_SIZE = "cubeSize"
COLUMN_STATS = "columnStats"
TXN_APP_ID = "txnAppId"
TXN_VERSION = "txnVersion"
USER_METADATA = "userMetadata"
MERGE_SCHEMA = "mergeSchema"
TABLE_FORMAT = "tableFormat"
PARTITION_BY = "partitionBy"
PRE_COMMIT_HOOK_PREFIX = "qbeastPreCommitHook"

#: Desired number of rows per cube, as qbeast-spark's ``spark.qbeast.index.defaultCubeSize``.
CUBE_SIZE_DEFAULT = 5_000_000
#: Rows per local tree in the estimation job (qbeast-spark's cubeDomainsBufferCapacity).
BUFFER_CAPACITY_DEFAULT = 100_000
#: Largest ``txnVersion``: Delta stores it as a signed 64-bit integer.
TXN_VERSION_MAX = 2**63 - 1

WriteMode = Literal["errorifexists", "append", "overwrite", "ignore"]
WRITE_MODES: tuple[str, ...] = ("errorifexists", "append", "overwrite", "ignore")
_MODE_ALIASES = {"error": "errorifexists", "default": "errorifexists"}

_KNOWN = {
    name.lower(): name
    for name in (
        COLUMNS_TO_INDEX,
        CUBE_SIZE,
        COLUMN_STATS,
        TXN_APP_ID,
        TXN_VERSION,
        USER_METADATA,
        MERGE_SCHEMA,
        TABLE_FORMAT,
        PARTITION_BY,
        *auto_compact.OPTION_KEYS,
        "path",
    )
}


def parse_mode(mode: str | None) -> WriteMode:
    """Normalize a save mode name (case-insensitive; ``error`` means ``errorifexists``).

    None means the default, ``errorifexists``, as in PySpark's ``DataFrameWriter.save``.

    Raises:
        InvalidOptionError: the mode is not one of the accepted names.
    """
    if mode is None:
        return "errorifexists"
    if not isinstance(mode, str):
        raise InvalidOptionError(
            f"the save mode must be a string, one of {', '.join(WRITE_MODES)}; got {mode!r}"
        )
    key = mode.strip().lower()
    key = _MODE_ALIASES.get(key, key)
    if key not in WRITE_MODES:
        raise InvalidOptionError(
            f"unknown save mode {mode!r}: use one of {', '.join(WRITE_MODES)}"
        )
    return key  # type: ignore[return-value]


@dataclass(frozen=True)
class WriteOptions:
    """Validated write options.

    Attributes:
        columns_to_index: the ``columnsToIndex`` text (None: reuse the table's).
        cube_size: desired rows per cube (None: the table's, or the default for a new table).
        column_stats: the ``columnStats`` JSON text, or None.
        txn_app_id: idempotent-write application id.
        txn_version: idempotent-write version (int64).
        user_metadata: stored as ``commitInfo.userMetadata``.
        merge_schema: allow appends that add columns.
        table_properties: ``delta.*`` and other table properties to store in the metadata
            (the ``autoCompact*`` options become ``qbeast.autoCompact*`` properties, see
            :mod:`qbeast_connect.rules.auto_compact`).
        hooks: pre-commit hook options (``qbeastPreCommitHook.<name>`` and ``.<name>.arg``).
        partition_by: ``partitionBy``: ``<time column>:<update period>`` (time partitions,
            see :mod:`qbeast_connect.rules.time_partitioning`), or None.
    """

    columns_to_index: str | None = None
    cube_size: int | None = None
    column_stats: str | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None
    user_metadata: str | None = None
    merge_schema: bool = False
    table_properties: Mapping[str, str] = field(default_factory=dict)
    hooks: Mapping[str, str] = field(default_factory=dict)
    partition_by: str | None = None


def _as_int(name: str, value: object, *, positive: bool) -> int:
    if isinstance(value, bool):
        raise InvalidOptionError(f"option {name} must be an integer, got {value!r}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        try:
            number = int(text)
        except ValueError:
            raise InvalidOptionError(
                f"option {name} must be an integer, got {value!r}"
            ) from None
    if positive and number <= 0:
        raise InvalidOptionError(f"option {name} must be a positive integer, got {number}")
    return number


def _txn_version(value: object) -> int:
    number = _as_int(TXN_VERSION, value, positive=False)
    if not 0 <= number <= TXN_VERSION_MAX:
        raise InvalidOptionError(
            f"option {TXN_VERSION} must be between 0 and 2**63-1 (a Delta txn version is a "
            f"signed 64-bit integer), got {number}"
        )
    return number


def _column_stats_text(value: object) -> str:
    """``columnStats`` as JSON text: a JSON string, or a dict encoded as JSON."""
    if isinstance(value, Mapping):
        try:
            return json.dumps(dict(value), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidOptionError(
                f"option {COLUMN_STATS} given as a dict must hold JSON values (numbers, "
                f"strings, lists of them), as in {{'a_min': 0, 'a_max': 10}}: {exc}"
            ) from None
    if isinstance(value, str):
        return value
    raise InvalidOptionError(
        f"option {COLUMN_STATS} must be a JSON string or a dict like "
        f"{{'a_min': 0, 'a_max': 10}}, got {type(value).__name__}"
    )


def parse_bool(name: str, value: object) -> bool:
    """An option's boolean value: a bool, or ``true``/``1``/``yes``, ``false``/``0``/``no``
    in any case.

    Raises:
        InvalidOptionError: any other value.
    """
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {name} must be true or false, got {value!r}")


def parse_write_options(options: Mapping[str, object]) -> WriteOptions:
    """Validate raw write options (``DataFrameWriter.option`` style, any case).

    ``delta.*`` keys become table properties; ``qbeastPreCommitHook.*`` keys configure
    pre-commit hooks. Any other unknown key is an error, so a typo cannot be silently
    ignored.

    Raises:
        InvalidOptionError: an unknown option, or a value of the wrong form.
    """
    values: dict[str, object] = {}
    properties: dict[str, str] = {}
    hooks: dict[str, str] = {}
    for raw_key, value in options.items():
        if value is None:
            continue
        key = str(raw_key)
        canonical = _KNOWN.get(key.lower())
        if canonical is not None:
            if canonical in values:
                raise InvalidOptionError(f"option {canonical} is given twice")
            values[canonical] = value
        elif key.lower().startswith("delta."):
            properties[key] = str(value).lower() if isinstance(value, bool) else str(value)
        elif key.lower().startswith(PRE_COMMIT_HOOK_PREFIX.lower() + "."):
            hooks[key[len(PRE_COMMIT_HOOK_PREFIX) + 1 :]] = str(value)
        else:
            known = ", ".join(sorted(n for n in _KNOWN.values() if n != "path"))
            raise InvalidOptionError(
                f"unknown option {key!r}: accepted options are {known}, "
                f"'delta.*' table properties and '{PRE_COMMIT_HOOK_PREFIX}.*' hooks"
            )
    fmt = values.get(TABLE_FORMAT)
    if fmt is not None and str(fmt).lower() != "delta":
        raise InvalidOptionError(f"option tableFormat must be 'delta', got {fmt!r}")
    columns = values.get(COLUMNS_TO_INDEX)
    if columns is not None and not isinstance(columns, str):
        if isinstance(columns, (list, tuple)):
            columns = ",".join(str(c) for c in columns)
        else:
            raise InvalidOptionError(
                f"option columnsToIndex must be a string like 'a,b:hashing', got {columns!r}"
            )
    cube_size = values.get(CUBE_SIZE)
    app_id = values.get(TXN_APP_ID)
    txn_version = values.get(TXN_VERSION)
    if (app_id is None) != (txn_version is None):
        raise InvalidOptionError(
            "options txnAppId and txnVersion go together: give both or neither"
        )
    if app_id is not None and str(app_id).strip() == "":
        raise InvalidOptionError("option txnAppId must not be empty")
    stats = values.get(COLUMN_STATS)
    partition_by = values.get(PARTITION_BY)
    if partition_by is not None:
        time_column, period = parse_partition_by(partition_by)
        partition_by = f"{time_column}:{period.value}"
    properties = checked_table_properties(properties)
    properties.update(
        auto_compact.auto_compact_properties(
            {name: values[name] for name in auto_compact.OPTION_KEYS if name in values}
        )
    )
    return WriteOptions(
        columns_to_index=columns,
        cube_size=None if cube_size is None else _as_int(CUBE_SIZE, cube_size, positive=True),
        column_stats=None if stats is None else _column_stats_text(stats),
        txn_app_id=None if app_id is None else str(app_id),
        txn_version=None if txn_version is None else _txn_version(txn_version),
        user_metadata=None if values.get(USER_METADATA) is None else str(values[USER_METADATA]),
        merge_schema=parse_bool(MERGE_SCHEMA, values.get(MERGE_SCHEMA, False)),
        table_properties=properties,
        hooks=hooks,
        partition_by=partition_by,
    )
