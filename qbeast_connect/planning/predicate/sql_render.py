"""Spark SQL text of identifiers and literals: the one quoting function of the project."""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate.literals import normalize_literal

__all__ = ["literal_sql", "quote_identifier"]

_UTC = _dt.UTC


def quote_identifier(name: str) -> str:
    """Return ``name`` as a backquoted Spark SQL identifier (backquotes doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _quote_string(s: str) -> str:
    # Backslash escapes work in every Spark version (doubled quotes only since Spark 4).
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _format_timestamp(value: _dt.datetime) -> str:
    value = value.astimezone(_UTC)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.year < 1000:
        text = f"{value.year:04d}" + text[text.index("-") :]
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def literal_sql(value: object) -> str:
    """Render a literal as Spark SQL.

    ``None`` → ``NULL``; booleans → ``TRUE``/``FALSE``; floats → ``1.5D`` (a double, not a
    decimal; NaN and infinities as ``CAST('NaN' AS DOUBLE)``); ``Decimal`` → ``1.50BD``;
    strings single-quoted with backslash escapes; dates → ``DATE 'yyyy-mm-dd'``; datetimes
    → ``TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]Z'`` in UTC.

    Raises:
        InvalidOptionError: The value is not a supported literal (or a NaN Decimal).
    """
    value = normalize_literal(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
        return repr(value) + "D"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidOptionError(f"cannot render the decimal {value} as a SQL literal")
        return format(value, "f") + "BD"
    if isinstance(value, str):
        return _quote_string(value)
    if isinstance(value, _dt.datetime):
        return f"TIMESTAMP '{_format_timestamp(value)}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    raise InvalidOptionError(f"cannot render {value!r} as a SQL literal")  # pragma: no cover
