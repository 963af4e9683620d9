"""Column transformers and transformations: value → coordinate in [0, 1] (spec §4, §1.2).

A :class:`Transformer` is the per-column *recipe* stored in a revision
(``"id:linear"``); given statistics it makes a :class:`Transformation`, the *parameters*
(min/max, null value, quantiles) that map values to coordinates. Both are serialized into the
revision JSON with a ``className`` discriminator (:func:`transformer_to_json`,
:func:`transformation_from_json`, …).

Value conventions for :meth:`Transformation.transform` and
:meth:`Transformer.make_transformation`:

* Integer/Long columns: ``int``; Double/Float columns: ``float``; Decimal: ``Decimal`` or
  ``float`` (converted to a double, as the reference stores decimal bounds as doubles);
* Timestamp columns: ``int`` epoch **milliseconds** (``datetime`` values are accepted and
  converted with ``floor(micros / 1000)`` like the writer's ``Timestamp.getTime``);
* Date columns: ``int`` epoch milliseconds of UTC midnight, i.e. ``days * 86_400_000``
  (``date`` values are accepted and converted that way);
* String columns: ``str``; ``None`` is a null.
"""

from __future__ import annotations

import datetime as _dt
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, ClassVar, TypeAlias

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model._json import jackson_tree_text
from qbeast_connect.model.hashing import (
    Float32,
    JavaRandom,
    java_decimal_to_string,
    java_double_to_string,
    java_float_to_string,
    scala_bytes_hash,
    scala_string_hash,
    to_float32,
)
from qbeast_connect.model.linear_scale import linear_coordinate, random_point, scaled_form
from qbeast_connect.model.weight import java_double_to_int, java_double_to_long

__all__ = [
    "CLASS_NAME_PREFIX",
    "DEFAULT_HISTOGRAM",
    "CDFNumericQuantilesTransformation",
    "CDFNumericQuantilesTransformer",
    "CDFStringQuantilesTransformation",
    "CDFStringQuantilesTransformer",
    "ColumnStats",
    "EmptyTransformation",
    "EmptyTransformer",
    "HashTransformation",
    "HashTransformer",
    "IdentityTransformation",
    "LinearTransformation",
    "LinearTransformer",
    "QDataType",
    "StringHistogramTransformation",
    "StringHistogramTransformer",
    "Transformation",
    "Transformer",
    "jackson_tree_text",
    "transformation_from_json",
    "transformation_to_json",
    "transformer_from_json",
    "transformer_to_json",
]

CLASS_NAME_PREFIX = "io.qbeast.core.transform."
"""Package of every transformer/transformation class name in the revision JSON."""

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


# ---------------------------------------------------------------------------------------------
# value helpers
# ---------------------------------------------------------------------------------------------


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


def _random_null(low: Number, high: Number, data_type: QDataType, rng: random.Random) -> Number:
    """Draw a fresh null value in ``[low, high)`` (``high`` only through rounding)."""
    r = rng.random()
    if data_type in _INTEGRAL_TYPES:
        assert isinstance(low, int) and isinstance(high, int)
        return min(high, low + int(r * (high - low)))
    value = random_point(float(low), float(high), r)
    if data_type is QDataType.FLOAT:
        return to_float32(value)
    return float(value)


def _wrap(value: int, bits: int) -> int:
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def _legacy_null(low: Number, high: Number, data_type: QDataType, seed_text: str) -> Number:
    """The deterministic null value of a legacy LinearTransformation (spec §1.2)."""
    r = JavaRandom(scala_string_hash(seed_text)).next_double()
    if data_type is QDataType.INTEGER:
        assert isinstance(low, int) and isinstance(high, int)
        return _wrap(low + java_double_to_int(r * _wrap(high - low, 32)), 32)
    if data_type in _INTEGRAL_TYPES:
        assert isinstance(low, int) and isinstance(high, int)
        return _wrap(low + java_double_to_long(r * _wrap(high - low, 64)), 64)
    if data_type is QDataType.FLOAT:
        diff = to_float32(float(high) - float(low))
        return to_float32(float(low) + float(to_float32(r * diff)))
    return float(low) + r * (float(high) - float(low))


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Statistics of one column, from the data or from the ``columnStats`` option.

    Attributes:
        min: Minimum value (timestamps/dates as epoch milliseconds), or None.
        max: Maximum value, or None.
        quantiles: Sorted quantiles including both extremes (for ``quantiles``), or None.
        histogram: Sorted strings (for the legacy ``histogram``), or None.
    """

    min: object = None
    max: object = None
    quantiles: tuple[Any, ...] | None = None
    histogram: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """Freeze sequences into tuples."""
        if self.quantiles is not None and not isinstance(self.quantiles, tuple):
            object.__setattr__(self, "quantiles", tuple(self.quantiles))
        if self.histogram is not None and not isinstance(self.histogram, tuple):
            object.__setattr__(self, "histogram", tuple(self.histogram))

    @property
    def is_empty(self) -> bool:
        """Whether no statistic is set."""
        return self.min is None and self.max is None and not self.quantiles and not self.histogram


# ---------------------------------------------------------------------------------------------
# transformations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transformation:
    """Base of the value → [0, 1] mappings. Subclasses are frozen dataclasses."""

    class_name: ClassVar[str] = ""

    def transform(self, value: object) -> float:
        """Map a column value (``None`` for null) to its coordinate."""
        raise NotImplementedError

    def is_superseded_by(self, other: Transformation) -> bool:
        """Whether ``other`` (made from new data or stats) requires a new revision (§4.7)."""
        raise NotImplementedError

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Combine with ``other`` (§4.7); ``rng`` draws the null value of a new linear range."""
        raise NotImplementedError

    @property
    def is_empty(self) -> bool:
        """Whether this is an :class:`EmptyTransformation`."""
        return False

    def _json_fields(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class EmptyTransformation(Transformation):
    """No information: every value maps to 0.0. Used by the staging revision."""

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "EmptyTransformation"

    def transform(self, value: object) -> float:
        """Return 0.0."""
        return 0.0

    def is_superseded_by(self, other: Transformation) -> bool:
        """True for anything but another Empty."""
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Return ``other``."""
        return other

    @property
    def is_empty(self) -> bool:
        """True."""
        return True

    def _json_fields(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True, slots=True)
class IdentityTransformation(Transformation):
    """A column with a single value (or only nulls): every value maps to 0.0.

    Attributes:
        identity_value: The single value, or None for an all-null column.
        ordered_data_type: The column's ordered data type.
    """

    identity_value: Number | None
    ordered_data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "IdentityTransformation"

    def __post_init__(self) -> None:
        """Check and normalize the value."""
        dt = QDataType.parse(self.ordered_data_type)
        if not dt.is_ordered:
            raise InvalidOptionError("IdentityTransformation needs an ordered data type")
        object.__setattr__(self, "ordered_data_type", dt)
        if self.identity_value is not None:
            object.__setattr__(
                self, "identity_value", _coerce(self.identity_value, dt, "identityValue")
            )

    def transform(self, value: object) -> float:
        """Return 0.0."""
        return 0.0

    def is_superseded_by(self, other: Transformation) -> bool:
        """Spec §4.7: a different non-null identity, any linear, any other non-empty class."""
        if (
            isinstance(other, IdentityTransformation)
            and other.ordered_data_type == self.ordered_data_type
        ):
            return other.identity_value is not None and (
                self.identity_value is None or other.identity_value != self.identity_value
            )
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Spec §4.7 merge table, row Identity."""
        dt = self.ordered_data_type
        v = self.identity_value
        if isinstance(other, LinearTransformation) and other.ordered_data_type == dt:
            if v is None or other.min_number <= v <= other.max_number:
                return other
            return LinearTransformation.with_random_null(
                min(other.min_number, v), max(other.max_number, v), dt, rng
            )
        if isinstance(other, IdentityTransformation) and other.ordered_data_type == dt:
            nv = other.identity_value
            if nv is None or nv == v:
                return self
            if v is None:
                return other
            return LinearTransformation.with_random_null(min(v, nv), max(v, nv), dt, rng)
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def _json_fields(self) -> dict[str, Any]:
        return {
            "identityValue": self.identity_value,
            "orderedDataType": self.ordered_data_type.value,
        }


@dataclass(frozen=True, slots=True)
class LinearTransformation(Transformation):
    """Min/max scaling: ``(x - min) * (1.0 / (max - min))``, nulls mapped via ``null_value``.

    No clamping: finite values outside ``[min, max]`` give coordinates outside [0, 1]. NaN
    and ±infinity, and spans too wide or too narrow for that formula, follow the rules of
    :mod:`qbeast_connect.model.linear_scale`.

    Attributes:
        min_number: Lower bound (``int`` for Integer/Long/Timestamp/Date, ``float`` otherwise).
        max_number: Upper bound, strictly greater than ``min_number``.
        null_value: The value nulls are mapped as (normally random in ``[min, max)``).
        ordered_data_type: The column's ordered data type.
    """

    min_number: Number
    max_number: Number
    null_value: Number
    ordered_data_type: QDataType
    _factor: float = field(init=False, repr=False, compare=False)
    _offset: float = field(init=False, repr=False, compare=False)
    _scale: float = field(init=False, repr=False, compare=False)

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "LinearTransformation"

    def __post_init__(self) -> None:
        """Check the bounds and normalize the numbers to the data type."""
        dt = QDataType.parse(self.ordered_data_type)
        if not dt.is_ordered:
            raise InvalidOptionError(
                "LinearTransformation needs an ordered data type; use hashing for strings"
            )
        object.__setattr__(self, "ordered_data_type", dt)
        for name in ("min_number", "max_number", "null_value"):
            value = getattr(self, name)
            if value is None:
                raise InvalidOptionError(f"LinearTransformation.{name} cannot be None")
            object.__setattr__(self, name, _coerce(value, dt, name))
        low, high = float(self.min_number), float(self.max_number)
        if not high > low:
            raise InvalidOptionError(
                f"LinearTransformation needs max > min, got min={self.min_number!r} "
                f"max={self.max_number!r}; use IdentityTransformation for a single value"
            )
        factor, offset, scale = scaled_form(low, high)
        object.__setattr__(self, "_factor", factor)
        object.__setattr__(self, "_offset", offset)
        object.__setattr__(self, "_scale", scale)

    @property
    def scaled_form(self) -> tuple[float, float, float]:
        """``(factor, offset, scale)``: ``coordinate = (x * factor - offset) * scale``."""
        return self._factor, self._offset, self._scale

    @classmethod
    def with_random_null(
        cls, min_number: Number, max_number: Number, data_type: QDataType, rng: random.Random
    ) -> LinearTransformation:
        """Build the transformation with a null value drawn from ``rng`` in ``[min, max)``."""
        dt = QDataType.parse(data_type)
        low = _coerce(min_number, dt, "min_number")
        high = _coerce(max_number, dt, "max_number")
        return cls(low, high, _random_null(low, high, dt, rng), dt)

    def transform(self, value: object) -> float:
        """Return ``(x - min) * (1.0 / (max - min))`` with ``x = value`` or the null value
        (NaN and ``+inf`` → 1.0, ``-inf`` → 0.0; see :mod:`~qbeast_connect.model.linear_scale`)."""
        x = self.null_value if value is None else value
        return linear_coordinate(
            _to_double(x, self.ordered_data_type), self._factor, self._offset, self._scale
        )

    def is_superseded_by(self, other: Transformation) -> bool:
        """Spec §4.7: a wider range of the same type, or any other non-empty class/type."""
        dt = self.ordered_data_type
        if isinstance(other, LinearTransformation) and other.ordered_data_type == dt:
            return other.min_number < self.min_number or other.max_number > self.max_number
        if isinstance(other, IdentityTransformation) and other.ordered_data_type == dt:
            v = other.identity_value
            return v is not None and (v < self.min_number or v > self.max_number)
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Spec §4.7 merge table, row Linear (a widened range gets a new random null)."""
        dt = self.ordered_data_type
        if isinstance(other, LinearTransformation) and other.ordered_data_type == dt:
            return LinearTransformation.with_random_null(
                min(self.min_number, other.min_number),
                max(self.max_number, other.max_number),
                dt,
                rng,
            )
        if isinstance(other, IdentityTransformation) and other.ordered_data_type == dt:
            v = other.identity_value
            if v is None:
                return self
            return LinearTransformation.with_random_null(
                min(self.min_number, v), max(self.max_number, v), dt, rng
            )
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def _json_fields(self) -> dict[str, Any]:
        return {
            "minNumber": self.min_number,
            "maxNumber": self.max_number,
            "nullValue": self.null_value,
            "orderedDataType": self.ordered_data_type.value,
        }


def _hash_text(value: object) -> str:
    """The Java ``toString`` text the hashing transformation hashes (spec §3.3)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Float32):
        return java_float_to_string(value)
    if isinstance(value, float):
        return java_double_to_string(value)
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        if not isinstance(exponent, int):
            raise InvalidOptionError(f"cannot hash the non-finite decimal {value}")
        return java_decimal_to_string(value, -exponent)
    raise InvalidOptionError(
        f"the hashing transformation cannot map {type(value).__name__} value {value!r}; "
        "it supports strings and numbers (the reference fails on dates and timestamps too)"
    )


@dataclass(frozen=True, slots=True)
class HashTransformation(Transformation):
    """Hash of the value's Java text (Scala 2.12 ``bytesHash``), scaled to [0, 1].

    ``transform(v) = (scala_bytes_hash(utf8(text(v))) & 0x7fffffff) / 2147483647.0``, where
    ``text`` is Java ``toString`` (a ``Decimal`` keeps its own exponent as the scale; a
    :class:`~qbeast_connect.model.hashing.Float32` is rendered as a Java float).

    Attributes:
        null_value: The value nulls are hashed as: normally a random int32. Any JSON scalar
            is accepted on read. ``None`` only when the JSON had no ``nullValue``; nulls then
            hash as the string ``"null"`` (the reference would draw a new random value on
            every load).
    """

    null_value: int | float | str | bool | None

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "HashTransformation"

    def __post_init__(self) -> None:
        """Check the null value is a scalar."""
        v = self.null_value
        if v is not None and not isinstance(v, int | float | str):
            raise InvalidOptionError(
                f"HashTransformation.null_value must be an int, float or str, got {v!r}"
            )
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidOptionError("HashTransformation.null_value cannot be NaN or infinite")

    def transform(self, value: object) -> float:
        """Return the hashed coordinate of ``value`` (or of the null value)."""
        if value is None:
            value = "null" if self.null_value is None else self.null_value
        # Java getBytes() replaces unencodable (lone surrogate) characters with '?'
        h = scala_bytes_hash(_hash_text(value).encode("utf-8", errors="replace"))
        return (h & 0x7FFFFFFF) / 2147483647.0

    def is_superseded_by(self, other: Transformation) -> bool:
        """True for anything but Hash or Empty."""
        return not isinstance(other, HashTransformation | EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Empty → self; anything else → ``other``."""
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def _json_fields(self) -> dict[str, Any]:
        return {} if self.null_value is None else {"nullValue": self.null_value}


def _check_quantiles(values: Sequence[Any], what: str) -> None:
    if len(values) < 2:
        raise InvalidOptionError(
            f"{what} needs at least 2 quantiles (including both extremes), got {len(values)}"
        )


@dataclass(frozen=True, slots=True)
class CDFNumericQuantilesTransformation(Transformation):
    """Piecewise-linear empirical CDF over numeric quantiles (spec §4.4).

    Attributes:
        quantiles: Sorted doubles, at least 2, including both extremes.
        data_type: The column's ordered data type.
    """

    quantiles: tuple[float, ...]
    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "CDFNumericQuantilesTransformation"

    def __post_init__(self) -> None:
        """Check the quantiles and normalize them to doubles."""
        dt = QDataType.parse(self.data_type)
        if not dt.is_ordered:
            raise InvalidOptionError(
                "CDFNumericQuantilesTransformation needs an ordered data type; "
                "use CDFStringQuantilesTransformation for strings"
            )
        object.__setattr__(self, "data_type", dt)
        qs = tuple(_to_double(q, dt) for q in self.quantiles)
        _check_quantiles(qs, "CDFNumericQuantilesTransformation")
        if not all(math.isfinite(q) for q in qs):
            raise InvalidOptionError("quantiles cannot be NaN or infinite")
        object.__setattr__(self, "quantiles", qs)

    def transform(self, value: object) -> float:
        """Null → 0.0; found → ``i/(n-1)``; else interpolate inside the bin; clamp outside."""
        if value is None:
            return 0.0
        v = _to_double(value, self.data_type)
        qs = self.quantiles
        n = len(qs)
        found, index = _search(n, lambda i: _java_double_compare(v, qs[i]))
        if found:
            return index / (n - 1)
        if index == 0:
            return 0.0
        if index == n:
            return 1.0
        lo = index - 1
        return (lo + (v - qs[lo]) / (qs[index] - qs[lo])) / (n - 1)

    def is_superseded_by(self, other: Transformation) -> bool:
        """Other numeric quantiles that are non-empty and different; any other non-empty class."""
        if isinstance(other, CDFNumericQuantilesTransformation):
            return other.data_type != self.data_type or (
                len(other.quantiles) > 0 and other.quantiles != self.quantiles
            )
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Empty → self; anything else → ``other``."""
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def _json_fields(self) -> dict[str, Any]:
        return {"quantiles": list(self.quantiles), "dataType": self.data_type.value}


@dataclass(frozen=True, slots=True)
class CDFStringQuantilesTransformation(Transformation):
    """Step CDF over string quantiles (Java ``String.compareTo`` order, spec §4.4).

    Attributes:
        quantiles: Sorted strings, at least 2, including both extremes.
    """

    quantiles: tuple[str, ...]

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "CDFStringQuantilesTransformation"

    def __post_init__(self) -> None:
        """Check the quantiles."""
        qs = tuple(self.quantiles)
        if not all(isinstance(q, str) for q in qs):
            raise InvalidOptionError("string quantiles must all be strings")
        _check_quantiles(qs, "CDFStringQuantilesTransformation")
        object.__setattr__(self, "quantiles", qs)

    def transform(self, value: object) -> float:
        """Null → 0.0; found → ``i/(n-1)``; insertion ``k`` → ``(k-1)/(n-1)`` (0 and 1 at ends)."""
        if value is None:
            return 0.0
        if not isinstance(value, str):
            raise InvalidOptionError(
                f"string quantiles cannot map {type(value).__name__} value {value!r}"
            )
        qs = self.quantiles
        n = len(qs)
        found, index = _search(n, lambda i: _java_string_compare(value, qs[i]))
        if found:
            return index / (n - 1)
        if index == 0:
            return 0.0
        if index == n:
            return 1.0
        return (index - 1) / (n - 1)

    def is_superseded_by(self, other: Transformation) -> bool:
        """Other string quantiles that are non-empty and different; any other non-empty class."""
        if isinstance(other, CDFStringQuantilesTransformation):
            return len(other.quantiles) > 0 and other.quantiles != self.quantiles
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Empty → self; anything else → ``other``."""
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def _json_fields(self) -> dict[str, Any]:
        return {"quantiles": list(self.quantiles)}


@dataclass(frozen=True, slots=True)
class StringHistogramTransformation(Transformation):
    """Deprecated string histogram (spec §4.5); kept to read old tables.

    Attributes:
        histogram: Sorted strings (the default is ``"a"`` … ``"z"``).
    """

    histogram: tuple[str, ...]

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "StringHistogramTransformation"

    def __post_init__(self) -> None:
        """Check the histogram."""
        hist = tuple(self.histogram)
        if not hist or not all(isinstance(h, str) for h in hist):
            raise InvalidOptionError("a string histogram needs at least one string bin")
        object.__setattr__(self, "histogram", hist)

    @property
    def is_default(self) -> bool:
        """Whether this is the default ``a``…``z`` histogram."""
        return self.histogram == DEFAULT_HISTOGRAM

    def transform(self, value: object) -> float:
        """Null → ``"null"``; found → ``i/(n-1)``; insertion 0 → 0; else ``(k-1)/(n-1)``."""
        text = "null" if value is None else _hash_text(value)
        hist = self.histogram
        n = len(hist)
        if n == 1:
            return 0.0
        found, index = _search(n, lambda i: _java_string_compare(text, hist[i]))
        if found:
            return index / (n - 1)
        if index == 0:
            return 0.0
        return (index - 1) / (n - 1)

    def is_superseded_by(self, other: Transformation) -> bool:
        """Spec §4.7 histogram row."""
        if isinstance(other, StringHistogramTransformation):
            if self.is_default:
                return not other.is_default
            if other.is_default:
                return False
            return other.histogram != self.histogram
        return not isinstance(other, EmptyTransformation)

    def merge(self, other: Transformation, rng: random.Random) -> Transformation:
        """Empty → self; anything else → ``other``."""
        if isinstance(other, EmptyTransformation):
            return self
        return other

    def _json_fields(self) -> dict[str, Any]:
        return {"histogram": list(self.histogram)}


# ---------------------------------------------------------------------------------------------
# transformers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transformer:
    """Base of the per-column recipes stored in ``columnTransformers``.

    Attributes:
        column_name: The indexed column.
    """

    column_name: str

    class_name: ClassVar[str] = ""
    type_name: ClassVar[str] = ""

    def __post_init__(self) -> None:
        """Check the column name."""
        if not isinstance(self.column_name, str) or not self.column_name:
            raise InvalidOptionError(f"a transformer needs a column name, got {self.column_name!r}")

    @property
    def spec(self) -> str:
        """``"<column>:<type_name>"``, e.g. ``"id:linear"``."""
        return f"{self.column_name}:{self.type_name}"

    @property
    def needs_min_max(self) -> bool:
        """Whether :meth:`make_transformation` uses min/max statistics of the data."""
        return False

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Build the transformation for the given statistics (spec §4.2-4.5).

        Args:
            stats: Statistics of the column, or None when there are none.
            rng: Source of the random null values.
        """
        raise NotImplementedError

    def _json_fields(self) -> dict[str, Any]:
        return {"columnName": self.column_name}


@dataclass(frozen=True, slots=True)
class LinearTransformer(Transformer):
    """``linear``: min/max scaling of an ordered column.

    Attributes:
        data_type: The column's ordered data type.
    """

    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "LinearTransformer"
    type_name: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        """Check the data type."""
        Transformer.__post_init__(self)
        dt = QDataType.parse(self.data_type)
        if not dt.is_ordered:
            raise InvalidOptionError(
                f"column {self.column_name!r} is a string: 'linear' needs an ordered type; "
                "use 'hashing' or 'quantiles' for strings"
            )
        object.__setattr__(self, "data_type", dt)

    @property
    def needs_min_max(self) -> bool:
        """True."""
        return True

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Identity when min == max or a bound is missing; otherwise Linear with a random null.

        Raises:
            InvalidOptionError: min > max, or a bound does not fit the data type.
        """
        dt = self.data_type
        low_raw = None if stats is None else stats.min
        high_raw = None if stats is None else stats.max
        if low_raw is None and high_raw is None:
            return IdentityTransformation(None, dt)
        if low_raw is None or high_raw is None:
            return IdentityTransformation(low_raw if low_raw is not None else high_raw, dt)  # type: ignore[arg-type]
        low = _coerce(low_raw, dt, f"{self.column_name} min")
        high = _coerce(high_raw, dt, f"{self.column_name} max")
        if low == high:
            return IdentityTransformation(low, dt)
        if low > high:
            raise InvalidOptionError(
                f"column {self.column_name!r}: min {low_raw!r} is greater than max {high_raw!r}"
            )
        return LinearTransformation.with_random_null(low, high, dt, rng)

    def _json_fields(self) -> dict[str, Any]:
        return {"columnName": self.column_name, "dataType": self.data_type.value}


@dataclass(frozen=True, slots=True)
class HashTransformer(Transformer):
    """``hashing``: hash of the value's text; needs no statistics.

    Attributes:
        data_type: The column's data type.
    """

    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "HashTransformer"
    type_name: ClassVar[str] = "hashing"

    def __post_init__(self) -> None:
        """Check the data type."""
        Transformer.__post_init__(self)
        object.__setattr__(self, "data_type", QDataType.parse(self.data_type))

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Return a HashTransformation with a random int32 null value."""
        return HashTransformation(rng.randint(_INT32_MIN, _INT32_MAX))

    def _json_fields(self) -> dict[str, Any]:
        return {"columnName": self.column_name, "dataType": self.data_type.value}


@dataclass(frozen=True, slots=True)
class CDFNumericQuantilesTransformer(Transformer):
    """``quantiles`` on an ordered column; the quantiles come from ``columnStats``.

    Attributes:
        ordered_data_type: The column's ordered data type.
    """

    ordered_data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "CDFNumericQuantilesTransformer"
    type_name: ClassVar[str] = "quantiles"

    def __post_init__(self) -> None:
        """Check the data type."""
        Transformer.__post_init__(self)
        dt = QDataType.parse(self.ordered_data_type)
        if not dt.is_ordered:
            raise InvalidOptionError(
                "CDFNumericQuantilesTransformer needs an ordered type; "
                "use CDFStringQuantilesTransformer for strings"
            )
        object.__setattr__(self, "ordered_data_type", dt)

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """CDF over ``stats.quantiles``; Empty when there are none."""
        if stats is None or not stats.quantiles:
            return EmptyTransformation()
        return CDFNumericQuantilesTransformation(stats.quantiles, self.ordered_data_type)

    def _json_fields(self) -> dict[str, Any]:
        return {"columnName": self.column_name, "orderedDataType": self.ordered_data_type.value}


@dataclass(frozen=True, slots=True)
class CDFStringQuantilesTransformer(Transformer):
    """``quantiles`` on a string column; the quantiles come from ``columnStats``."""

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "CDFStringQuantilesTransformer"
    type_name: ClassVar[str] = "quantiles"

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """CDF over ``stats.quantiles``; Empty when there are none."""
        if stats is None or not stats.quantiles:
            return EmptyTransformation()
        return CDFStringQuantilesTransformation(stats.quantiles)


@dataclass(frozen=True, slots=True)
class StringHistogramTransformer(Transformer):
    """Deprecated ``histogram`` on a string column.

    Attributes:
        data_type: The column's data type (StringDataType).
    """

    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "StringHistogramTransformer"
    type_name: ClassVar[str] = "histogram"

    def __post_init__(self) -> None:
        """Check the data type."""
        Transformer.__post_init__(self)
        object.__setattr__(self, "data_type", QDataType.parse(self.data_type))

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Histogram from ``stats.histogram``, or the default ``a``…``z``."""
        if stats is None or not stats.histogram:
            return StringHistogramTransformation(DEFAULT_HISTOGRAM)
        return StringHistogramTransformation(stats.histogram)

    def _json_fields(self) -> dict[str, Any]:
        return {"columnName": self.column_name, "dataType": self.data_type.value}


@dataclass(frozen=True, slots=True)
class EmptyTransformer(Transformer):
    """``empty``: the staging revision's placeholder; makes Empty transformations."""

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "EmptyTransformer"
    type_name: ClassVar[str] = "empty"

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Return an EmptyTransformation."""
        return EmptyTransformation()


# ---------------------------------------------------------------------------------------------
# JSON (className registry)
# ---------------------------------------------------------------------------------------------


def _field(d: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in d:
        raise MetadataFormatError(f"{what} JSON has no {key!r} field: {d!r}")
    return d[key]


def _str_field(d: Mapping[str, Any], key: str, what: str) -> str:
    value = _field(d, key, what)
    if not isinstance(value, str):
        raise MetadataFormatError(f"{what} field {key!r} must be a string, got {value!r}")
    return value


def _dtype_field(d: Mapping[str, Any], key: str, what: str) -> QDataType:
    return QDataType.parse(_field(d, key, what), error=MetadataFormatError)


def _json_number(value: Any, dt: QDataType, key: str, what: str, *, nullable: bool = False) -> Any:
    """Check a bound read from JSON against the strict typing table of spec §1.2."""
    if value is None:
        if nullable:
            return None
        raise MetadataFormatError(f"{what} field {key!r} is null; the reference reader rejects it")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MetadataFormatError(f"{what} field {key!r} must be a number, got {value!r}")
    if dt is QDataType.INTEGER and not isinstance(value, int):
        raise MetadataFormatError(
            f"{what} field {key!r} is {value!r}, but IntegerDataType bounds must be integer "
            "literals (the reference reader rejects floating literals)"
        )
    if dt in _INTEGRAL_TYPES and isinstance(value, float):
        if not math.isfinite(value):
            raise MetadataFormatError(f"{what} field {key!r} is not finite")
        return java_double_to_long(value)  # Jackson's asLong on a DoubleNode
    if dt in _INTEGRAL_TYPES:
        return value
    return float(value)


def _decode_linear(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    what = "LinearTransformation"
    dt = _dtype_field(d, "orderedDataType", what)
    low = _json_number(_field(d, "minNumber", what), dt, "minNumber", what)
    high = _json_number(_field(d, "maxNumber", what), dt, "maxNumber", what)
    if "nullValue" in d:
        null = _json_number(d["nullValue"], dt, "nullValue", what)
    else:  # tables written before Feb 2022: deterministic null from the JSON text
        null = _legacy_null(
            _coerce(low, dt, "minNumber"), _coerce(high, dt, "maxNumber"), dt, jackson_tree_text(d)
        )
    return LinearTransformation(low, high, null, dt)


def _decode_identity(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    what = "IdentityTransformation"
    dt = _dtype_field(d, "orderedDataType", what)
    value = _json_number(d.get("identityValue"), dt, "identityValue", what, nullable=True)
    return IdentityTransformation(value, dt)


def _infer_type(value: Any, hint: QDataType | None) -> QDataType:
    if hint is not None and hint.is_ordered:
        return hint
    if isinstance(value, int) and not isinstance(value, bool):
        return QDataType.INTEGER if _INT32_MIN <= value <= _INT32_MAX else QDataType.LONG
    return QDataType.DOUBLE


def _decode_identity_to_zero(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    value = d.get("identityValue")
    dt = _infer_type(value, hint)
    return IdentityTransformation(
        _json_number(value, dt, "identityValue", "IdentityToZeroTransformation", nullable=True), dt
    )


def _decode_null_to_zero(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    return IdentityTransformation(None, _infer_type(None, hint))


def _decode_hash(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    value = d.get("nullValue")
    if isinstance(value, list | dict):
        raise MetadataFormatError(f"HashTransformation nullValue must be a scalar, got {value!r}")
    return HashTransformation(value)


def _decode_cdf_numeric(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    what = "CDFNumericQuantilesTransformation"
    quantiles = _field(d, "quantiles", what)
    if not isinstance(quantiles, list) or not all(
        isinstance(q, int | float) and not isinstance(q, bool) for q in quantiles
    ):
        raise MetadataFormatError(f"{what} quantiles must be an array of numbers: {quantiles!r}")
    return CDFNumericQuantilesTransformation(
        tuple(float(q) for q in quantiles), _dtype_field(d, "dataType", what)
    )


def _string_list(d: Mapping[str, Any], key: str, what: str) -> tuple[str, ...]:
    values = _field(d, key, what)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise MetadataFormatError(f"{what} {key} must be an array of strings: {values!r}")
    return tuple(values)


def _decode_cdf_string(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    return CDFStringQuantilesTransformation(
        _string_list(d, "quantiles", "CDFStringQuantilesTransformation")
    )


def _decode_histogram(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    return StringHistogramTransformation(
        _string_list(d, "histogram", "StringHistogramTransformation")
    )


def _decode_empty(d: Mapping[str, Any], hint: QDataType | None) -> Transformation:
    return EmptyTransformation()


_TRANSFORMATION_DECODERS: dict[
    str, Callable[[Mapping[str, Any], QDataType | None], Transformation]
] = {
    LinearTransformation.class_name: _decode_linear,
    IdentityTransformation.class_name: _decode_identity,
    HashTransformation.class_name: _decode_hash,
    CDFNumericQuantilesTransformation.class_name: _decode_cdf_numeric,
    CDFStringQuantilesTransformation.class_name: _decode_cdf_string,
    StringHistogramTransformation.class_name: _decode_histogram,
    EmptyTransformation.class_name: _decode_empty,
    CLASS_NAME_PREFIX + "IdentityToZeroTransformation": _decode_identity_to_zero,
    CLASS_NAME_PREFIX + "NullToZeroTransformation$": _decode_null_to_zero,
    CLASS_NAME_PREFIX + "NullToZeroTransformation": _decode_null_to_zero,
}


def _decode_linear_transformer(d: Mapping[str, Any]) -> Transformer:
    what = "LinearTransformer"
    return LinearTransformer(_str_field(d, "columnName", what), _dtype_field(d, "dataType", what))


def _decode_hash_transformer(d: Mapping[str, Any]) -> Transformer:
    what = "HashTransformer"
    # dataType is missing in very old tables; hashing does not depend on it.
    dt = _dtype_field(d, "dataType", what) if "dataType" in d else QDataType.STRING
    return HashTransformer(_str_field(d, "columnName", what), dt)


def _decode_cdf_numeric_transformer(d: Mapping[str, Any]) -> Transformer:
    what = "CDFNumericQuantilesTransformer"
    return CDFNumericQuantilesTransformer(
        _str_field(d, "columnName", what), _dtype_field(d, "orderedDataType", what)
    )


def _decode_cdf_string_transformer(d: Mapping[str, Any]) -> Transformer:
    return CDFStringQuantilesTransformer(
        _str_field(d, "columnName", "CDFStringQuantilesTransformer")
    )


def _decode_histogram_transformer(d: Mapping[str, Any]) -> Transformer:
    what = "StringHistogramTransformer"
    dt = _dtype_field(d, "dataType", what) if "dataType" in d else QDataType.STRING
    return StringHistogramTransformer(_str_field(d, "columnName", what), dt)


def _decode_empty_transformer(d: Mapping[str, Any]) -> Transformer:
    return EmptyTransformer(_str_field(d, "columnName", "EmptyTransformer"))


_TRANSFORMER_DECODERS: dict[str, Callable[[Mapping[str, Any]], Transformer]] = {
    LinearTransformer.class_name: _decode_linear_transformer,
    HashTransformer.class_name: _decode_hash_transformer,
    CDFNumericQuantilesTransformer.class_name: _decode_cdf_numeric_transformer,
    CDFStringQuantilesTransformer.class_name: _decode_cdf_string_transformer,
    StringHistogramTransformer.class_name: _decode_histogram_transformer,
    EmptyTransformer.class_name: _decode_empty_transformer,
}


def _class_name(d: Mapping[str, Any], what: str) -> str:
    if not isinstance(d, Mapping):
        raise MetadataFormatError(f"a {what} must be a JSON object, got {d!r}")
    name = d.get("className")
    if not isinstance(name, str):
        raise MetadataFormatError(f"{what} JSON has no className: {d!r}")
    return name


def transformer_to_json(t: Transformer) -> dict[str, Any]:
    """Return the JSON object of a transformer: ``className`` first, then its fields."""
    return {"className": t.class_name, **t._json_fields()}


def transformer_from_json(d: Mapping[str, Any]) -> Transformer:
    """Decode a transformer JSON object (unknown fields are ignored).

    Raises:
        MetadataFormatError: Unknown className, or a missing/invalid field.
    """
    name = _class_name(d, "column transformer")
    decoder = _TRANSFORMER_DECODERS.get(name)
    if decoder is None:
        known = ", ".join(sorted(_TRANSFORMER_DECODERS))
        raise MetadataFormatError(f"unknown column transformer className {name!r}; known: {known}")
    try:
        return decoder(d)
    except InvalidOptionError as err:
        raise MetadataFormatError(f"invalid {name} JSON {dict(d)!r}: {err.message}") from None


def transformation_to_json(t: Transformation) -> dict[str, Any]:
    """Return the JSON object of a transformation: ``className`` first, then its fields.

    Numbers keep their kind: ints for Integer/Long/Timestamp/Date bounds, floats for
    Double/Decimal, :class:`~qbeast_connect.model.hashing.Float32` for Float.
    """
    return {"className": t.class_name, **t._json_fields()}


def transformation_from_json(
    d: Mapping[str, Any], *, data_type: QDataType | str | None = None
) -> Transformation:
    """Decode a transformation JSON object (unknown fields are ignored).

    Legacy ``IdentityToZeroTransformation`` and ``NullToZeroTransformation$`` decode to
    :class:`IdentityTransformation`; a legacy ``LinearTransformation`` without ``nullValue``
    gets the reference's deterministic null value (spec §1.2).

    Args:
        d: The parsed JSON object (ints and floats as parsed by :mod:`json`).
        data_type: The column's data type, used for the legacy identity classes that do not
            store one (otherwise inferred from the value).

    Raises:
        MetadataFormatError: Unknown className, or a missing/invalid field.
    """
    name = _class_name(d, "transformation")
    decoder = _TRANSFORMATION_DECODERS.get(name)
    if decoder is None:
        known = ", ".join(sorted(_TRANSFORMATION_DECODERS))
        raise MetadataFormatError(f"unknown transformation className {name!r}; known: {known}")
    hint = None if data_type is None else QDataType.parse(data_type, error=MetadataFormatError)
    try:
        return decoder(d, hint)
    except InvalidOptionError as err:
        raise MetadataFormatError(f"invalid {name} JSON {dict(d)!r}: {err.message}") from None
