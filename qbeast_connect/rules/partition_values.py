"""The typed values of a file's ``partitionValues``, as the Delta protocol serialises them.

A Delta table keeps the value of each partition column in the log (``add.partitionValues``,
one string per column), not in the data files. Both readers turn those strings into values
of the column's type here: the plugin's parquet reader builds Arrow columns from
:func:`partition_value`, and the client's Spark reads add :func:`partition_value_sql` as a
literal column. The text forms follow the Delta protocol (``delta-log.md`` §4): JSON null or
``""`` is null; numbers are plain decimal text; booleans ``true``/``false``; dates
``YYYY-MM-DD``; timestamps ISO 8601 in UTC (``...T...Z``), or the legacy
``YYYY-MM-DD HH:MM:SS[.ffffff]``, read as UTC like Delta kernel and delta-rs do;
``timestamp_ntz`` as ``YYYY-MM-DD HH:MM:SS[.ffffff]``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from qbeast_connect.exceptions import CorruptLogError
from qbeast_connect.planning.predicate.sql_render import literal_sql

#: The directory value Hive and Spark write for a null (or empty) partition value.
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

__all__ = ["HIVE_DEFAULT_PARTITION", "partition_columns", "partition_value", "partition_value_sql"]

_INTEGERS = {"byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT"}
_SQL_TYPES = {
    **_INTEGERS,
    "string": "STRING",
    "float": "FLOAT",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "binary": "BINARY",
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def _type_name(data_type: Any) -> str:
    """The schema's type name (``"integer"``, ``"decimal(10,2)"``) of a partition column."""
    if isinstance(data_type, str):
        name = data_type.strip().lower()
        if name in _SQL_TYPES or _DECIMAL.fullmatch(name):
            return name
    raise CorruptLogError(
        f"a partition column has the type {data_type!r}, which Delta cannot partition by; "
        "the table's metadata is damaged or written by an unsupported writer"
    )


def _bad(text: str, type_name: str, column: str) -> CorruptLogError:
    return CorruptLogError(
        f"the partition value {text!r} of column {column!r} is not a {type_name} as the Delta "
        "protocol writes it; the table's log is damaged or written by an unsupported writer"
    )


def partition_value(text: str | None, data_type: Any, column: str = "?") -> object:
    """The Python value of one partition value ``text`` of a column of ``data_type``.

    Args:
        text: the log's string (None or ``""`` is null).
        data_type: the column's type as the schema JSON names it.
        column: the column name, for error messages.

    Returns:
        None, ``str``, ``int``, ``float``, ``Decimal`` (at the column's scale), ``bool``,
        ``date``, ``datetime`` (aware UTC for ``timestamp``, naive for ``timestamp_ntz``) or
        ``bytes``.

    Raises:
        CorruptLogError: the text is not a value of that type, or the type cannot partition.
    """
    type_name = _type_name(data_type)
    if text is None or text == "":
        return None
    try:
        if type_name == "string":
            return text
        if type_name in _INTEGERS:
            return int(text)
        if type_name in ("float", "double"):
            return float(text)
        decimal = _DECIMAL.fullmatch(type_name)
        if decimal is not None:
            scale = int(decimal.group(2))
            value = Decimal(text)
            exact = value.quantize(Decimal(1).scaleb(-scale))
            if exact != value or len(exact.as_tuple().digits) > int(decimal.group(1)):
                raise ValueError(text)
            return exact
        if type_name == "boolean":
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError(text)
            return lowered == "true"
        if type_name == "date":
            return _dt.date.fromisoformat(text)
        if type_name == "timestamp":
            moment = _dt.datetime.fromisoformat(text)
            if moment.tzinfo is None:
                return moment.replace(tzinfo=_dt.UTC)
            return moment.astimezone(_dt.UTC)
        if type_name == "timestamp_ntz":
            moment = _dt.datetime.fromisoformat(text)
            if moment.tzinfo is not None:
                raise ValueError(text)
            return moment
        return text.encode("utf-8")  # binary
    except (ValueError, InvalidOperation, OverflowError):
        raise _bad(text, type_name, column) from None


def partition_value_sql(text: str | None, data_type: Any, column: str = "?") -> str:
    """Spark SQL for the value of one partition value ``text``, typed as the column.

    Raises:
        CorruptLogError: as :func:`partition_value`.
    """
    type_name = _type_name(data_type)
    value = partition_value(text, type_name, column)
    sql_type = _SQL_TYPES.get(type_name) or type_name.upper()
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS {sql_type})"
    if isinstance(value, _dt.datetime) and value.tzinfo is None:
        return f"TIMESTAMP_NTZ '{value.isoformat(sep=' ')}'"
    if isinstance(value, bool | _dt.date | str):  # datetime is a date
        return literal_sql(value)
    return f"CAST({literal_sql(value)} AS {sql_type})"


def partition_columns(
    fields: Sequence[Mapping[str, Any]], values: Sequence[Mapping[str, str | None]]
) -> dict[str, str]:
    """The schema's partition columns among ``fields`` (schema JSON fields) that appear in
    any file's partition ``values``: key as the log spells it -> the schema's name.

    Delta matches partition columns to the schema case-insensitively.
    """
    keys = {k.lower(): k for v in values for k in v}
    out: dict[str, str] = {}
    for field in fields:
        name = str(field["name"])
        key = keys.get(name.lower())
        if key is not None:
            out[key] = name
    return out
