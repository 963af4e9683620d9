"""Qbeast data types and the value rules every transformation shares (spec §1.2, §4).

:class:`QDataType` names a column's type as the revision JSON stores it. The helpers turn a
bound or a column value into the number the reference computes with (``_coerce``,
``_to_double``), and compare and search in Java's order (``java.lang.Double.compare``,
``String.compareTo``, Scala ``Searching.search``).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from decimal import Decimal
from enum import StrEnum
from typing import TypeAlias

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.hashing import to_float32

Number: TypeAlias = int | float
"""A bound of an ordered transformation: ``int`` for Integer/Long/Timestamp/Date, ``float``
for Double/Decimal/Float (:class:`~qbeast_connect.model.hashing.Float32` for Float)."""

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MS_PER_DAY = 86_400_000
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_DATETIME = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_ONE_MS = _dt.timedelta(milliseconds=1)


class QDataType(StrEnum):
    """Qbeast data type names, exactly as stored in the revision JSON.

    Members are strings (``QDataType.INTEGER == "IntegerDataType"``).
    """

    DOUBLE = "DoubleDataType"
    INTEGER = "IntegerDataType"
    FLOAT = "FloatDataType"
    LONG = "LongDataType"
    DECIMAL = "DecimalDataType"
    TIMESTAMP = "TimestampDataType"
    DATE = "DateDataType"
    STRING = "StringDataType"

    @property
    def is_ordered(self) -> bool:
        """Whether the type is ordered (every type except ``StringDataType``)."""
        return self is not QDataType.STRING

    @property
    def is_integral(self) -> bool:
        """Whether values are Python ints (Integer, Long, Timestamp, Date)."""
        return self in _INTEGRAL_TYPES

    @classmethod
    def parse(cls, value: object, *, error: type[Exception] = InvalidOptionError) -> QDataType:
        """Return the member named by ``value`` (e.g. ``"IntegerDataType"``).

        Raises:
            InvalidOptionError: (or ``error``) The name is unknown.
        """
        if isinstance(value, QDataType):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        names = ", ".join(m.value for m in cls)
        raise error(f"unknown Qbeast data type {value!r}; expected one of {names}")


_INTEGRAL_TYPES = frozenset(
    {QDataType.INTEGER, QDataType.LONG, QDataType.TIMESTAMP, QDataType.DATE}
)

DEFAULT_HISTOGRAM: tuple[str, ...] = tuple(chr(c) for c in range(ord("a"), ord("z") + 1))
"""The histogram used by the legacy string histogram when none is given: ``"a"`` … ``"z"``."""


def _datetime_to_ms(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return (value - _EPOCH_DATETIME) // _ONE_MS  # floor, like Timestamp.getTime


def _date_to_ms(value: _dt.date) -> int:
    return (value - _EPOCH_DATE).days * _MS_PER_DAY


def _coerce(value: object, data_type: QDataType, what: str) -> Number:
    """Convert a bound/statistic to the canonical Python value of an ordered data type."""
    if data_type is QDataType.STRING:
        raise InvalidOptionError(f"{what}: StringDataType has no numeric values")
    if isinstance(value, bool):
        value = int(value)
    if data_type in _INTEGRAL_TYPES:
        if isinstance(value, _dt.datetime):
            result = _datetime_to_ms(value)
        elif isinstance(value, _dt.date):
            result = _date_to_ms(value)
        elif isinstance(value, int):
            result = value
        elif isinstance(value, float | Decimal) and _finite(value) and value == int(value):
            result = int(value)
        else:
            raise InvalidOptionError(
                f"{what} must be an integer for {data_type.value}, got {value!r}"
            )
        low, high = (
            (_INT32_MIN, _INT32_MAX) if data_type is QDataType.INTEGER else (_INT64_MIN, _INT64_MAX)
        )
        if not low <= result <= high:
            raise InvalidOptionError(
                f"{what} {result} is outside the range of {data_type.value} [{low}, {high}]"
            )
        return result
    if not isinstance(value, int | float | Decimal):
        raise InvalidOptionError(f"{what} must be a number for {data_type.value}, got {value!r}")
    if not _finite(value):
        raise InvalidOptionError(
            f"{what} is {value}: a range bound must be finite; give finite bounds (NaN and "
            "infinite values in the data need none: they sit at the ends of the dimension)"
        )
    if data_type is QDataType.FLOAT:
        return to_float32(float(value))
    result_f = float(value)
    if not math.isfinite(result_f):
        raise InvalidOptionError(f"{what} {value} is out of the double range")
    return result_f


def _finite(value: float | Decimal) -> bool:
    if isinstance(value, Decimal):
        return value.is_finite()
    return math.isfinite(value)


def _to_double(value: object, data_type: QDataType) -> float:
    """Convert a column value to the double the reference computes with."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, _dt.datetime):
        return float(_datetime_to_ms(value))
    if isinstance(value, _dt.date):
        return float(_date_to_ms(value))
    raise InvalidOptionError(
        f"cannot map {type(value).__name__} value {value!r} of a {data_type.value} column "
        "to a coordinate; pass numbers (epoch milliseconds for timestamps and dates)"
    )


def _double_bits(x: float) -> int:
    import struct

    if math.isnan(x):
        return 0x7FF8000000000000
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _java_double_compare(a: float, b: float) -> int:
    """``java.lang.Double.compare``: -0.0 < 0.0, NaN above everything and equal to itself."""
    if a < b:
        return -1
    if a > b:
        return 1
    ab, bb = _double_bits(a), _double_bits(b)
    return (ab > bb) - (ab < bb)


def _java_string_compare(a: str, b: str) -> int:
    if a == b:
        return 0
    if all(ord(ch) <= 0xFFFF for ch in a) and all(ord(ch) <= 0xFFFF for ch in b):
        return -1 if a < b else 1
    ka = a.encode("utf-16-be", errors="surrogatepass")
    kb = b.encode("utf-16-be", errors="surrogatepass")
    return -1 if ka < kb else 1


def _search(n: int, compare_to: Callable[[int], int]) -> tuple[bool, int]:
    """Scala ``Searching.search``: ``(True, index)`` when found, else ``(False, insertion)``.

    ``compare_to(i)`` compares the searched value against element ``i``.
    """
    lo, hi = 0, n
    while lo < hi:
        mid = lo + (hi - lo - 1) // 2
        c = compare_to(mid)
        if c < 0:
            hi = mid
        elif c > 0:
            lo = mid + 1
        else:
            return True, mid
    return False, lo


def _string_step(text: str, sorted_strings: tuple[str, ...]) -> float:
    """Coordinate of ``text`` among sorted strings (Java order): found at ``i`` → ``i/(n-1)``,
    before the first → 0.0, else the bin below the insertion point ``k`` → ``(k-1)/(n-1)``
    (1.0 after the last); a single string maps everything to 0.0."""
    n = len(sorted_strings)
    if n == 1:
        return 0.0
    found, index = _search(n, lambda i: _java_string_compare(text, sorted_strings[i]))
    if found:
        return index / (n - 1)
    if index == 0:
        return 0.0
    return (index - 1) / (n - 1)
