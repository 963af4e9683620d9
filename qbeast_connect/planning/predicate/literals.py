"""Literal values of predicates: their canonical form and the DATE/TIMESTAMP text Spark reads.

Literal values are Python objects: ``None`` (SQL NULL), ``bool``, ``int``, ``float``,
``Decimal``, ``str``, ``datetime.date`` (DATE) and timezone-aware UTC ``datetime.datetime``
(TIMESTAMP, microsecond precision). A timestamp literal written without a zone is read as UTC,
the session time zone of our servers.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from decimal import Decimal
from typing import Any, TypeAlias

from qbeast_connect.exceptions import InvalidOptionError

# the names the package re-exports; normalize_literal and to_float32 serve its other modules
__all__ = ["LiteralValue", "parse_date_literal", "parse_timestamp_literal"]

LiteralValue: TypeAlias = "bool | int | float | Decimal | str | _dt.date | _dt.datetime | None"

_UTC = _dt.UTC


def normalize_literal(value: object) -> Any:
    """Validate a literal and bring it to its canonical form (UTC-aware datetimes)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=_UTC)
        return value.astimezone(_UTC)
    if isinstance(value, _dt.date):
        return value
    raise InvalidOptionError(
        f"unsupported literal {value!r} ({type(value).__name__}); use None, bool, int, float, "
        "Decimal, str, datetime.date or datetime.datetime"
    )


def to_float32(x: float) -> float:
    """``x`` rounded to the nearest FLOAT (single precision); too large gives ±infinity."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


_DATE_RE = re.compile(r"([+-]?\d{4,})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", re.ASCII)
_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?", re.ASCII)
_ZONE_RE = re.compile(r"\s*(?:(Z|UTC|GMT|UT)?\s*(?:([+-])(\d{1,2})(?::?(\d{2}))?)?)", re.ASCII)


def parse_date_literal(text: str) -> _dt.date | None:
    """Parse a Spark DATE string (``yyyy[-m[m][-d[d]]]``, optionally followed by ``T…``)."""
    s = text.strip()
    m = _DATE_RE.match(s)
    if m is None:
        return None
    rest = s[m.end() :]
    if rest and not (m.group(3) and rest[0] in " T"):
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None


def parse_timestamp_literal(text: str) -> _dt.datetime | None:
    """Parse a Spark TIMESTAMP string; no zone means UTC (our servers' session time zone)."""
    s = text.strip()
    m = _DATE_RE.match(s)
    if m is None:
        return None
    try:
        day = _dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None
    rest = s[m.end() :]
    hour = minute = second = micro = 0
    if rest:
        if not m.group(3) or rest[0] not in " T":
            return None
        rest = rest[1:]
        t = _TIME_RE.match(rest)
        if t is not None:
            hour, minute = int(t.group(1)), int(t.group(2))
            second = int(t.group(3) or 0)
            fraction = (t.group(4) or "")[:6]
            micro = int(fraction.ljust(6, "0")) if fraction else 0
            rest = rest[t.end() :]
        elif rest.strip():
            return None
    offset = _dt.timedelta(0)
    if rest.strip():
        z = _ZONE_RE.fullmatch(rest)
        if z is None or not (z.group(1) or z.group(2)):
            return None
        if z.group(2):
            hours = int(z.group(3))
            minutes = int(z.group(4) or 0)
            if hours > 18 or minutes > 59:
                return None
            offset = _dt.timedelta(hours=hours, minutes=minutes)
            if z.group(2) == "-":
                offset = -offset
    try:
        local = _dt.datetime(day.year, day.month, day.day, hour, minute, second, micro, tzinfo=_UTC)
        return (local - offset).astimezone(_UTC)
    except (ValueError, OverflowError):
        return None
