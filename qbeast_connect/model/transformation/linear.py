"""The min/max family (``linear``): Linear and Identity transformations, LinearTransformer.

A column's min and max make a :class:`LinearTransformation`, or an
:class:`IdentityTransformation` when they are equal or missing; the two merge into each other
(spec §4.7), so they live together.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedInputError
from qbeast_connect.model.hashing import JavaRandom, scala_string_hash, to_float32
from qbeast_connect.model.linear_scale import linear_coordinate, random_point, scaled_form
from qbeast_connect.model.transformation.base import (
    CLASS_NAME_PREFIX,
    ColumnStats,
    Transformation,
    Transformer,
)
from qbeast_connect.model.transformation.datatypes import (
    _INTEGRAL_TYPES,
    Number,
    QDataType,
    _coerce,
    _to_double,
)
from qbeast_connect.model.weight import java_double_to_int, java_double_to_long


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


def _check_span(low: Number, high: Number, column: str | None = None) -> None:
    """Refuse distinct bounds that are one number as doubles, the precision the linear
    formula computes in (as qbeast-spark's does): e.g. longs near 2**63, 300 apart.

    Raises:
        UnsupportedInputError: ``low < high`` but ``float(low) == float(high)``.
    """
    if low < high and not float(high) > float(low):
        what = "a column" if column is None else f"column {column!r}"
        raise UnsupportedInputError(
            f"{what} holds values from {low!r} to {high!r}, which are one number at double "
            "precision, the precision of the linear index's coordinates (as in "
            "qbeast-spark): a linear index cannot tell them apart. Index the column with "
            "hashing instead (columnsToIndex='<column>:hashing'), or index other columns"
        )


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
        return not other.is_empty

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
        return Transformation.merge(self, other, rng)

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
        _check_span(self.min_number, self.max_number)
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
        return not other.is_empty

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
        return Transformation.merge(self, other, rng)

    def _json_fields(self) -> dict[str, Any]:
        return {
            "minNumber": self.min_number,
            "maxNumber": self.max_number,
            "nullValue": self.null_value,
            "orderedDataType": self.ordered_data_type.value,
        }


@dataclass(frozen=True, slots=True)
class LinearTransformer(Transformer):
    """``linear``: min/max scaling of an ordered column.

    Attributes:
        data_type: The column's ordered data type.
    """

    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "LinearTransformer"
    type_name: ClassVar[str] = "linear"
    type_field: ClassVar[tuple[str, str] | None] = ("data_type", "dataType")
    unordered_error: ClassVar[str] = (
        "column {column!r} is a string: 'linear' needs an ordered type; "
        "use 'hashing' or 'quantiles' for strings"
    )

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
        _check_span(low, high, self.column_name)
        return LinearTransformation.with_random_null(low, high, dt, rng)
