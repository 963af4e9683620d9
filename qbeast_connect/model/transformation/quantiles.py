"""The ``quantiles`` family: CDF over numeric or string quantiles (spec §4.4)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.transformation.base import (
    CLASS_NAME_PREFIX,
    ColumnStats,
    Transformation,
    Transformer,
)
from qbeast_connect.model.transformation.datatypes import (
    QDataType,
    _java_double_compare,
    _search,
    _string_step,
    _to_double,
)
from qbeast_connect.model.transformation.empty import EmptyTransformation


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
        return not other.is_empty

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
        return _string_step(value, self.quantiles)

    def is_superseded_by(self, other: Transformation) -> bool:
        """Other string quantiles that are non-empty and different; any other non-empty class."""
        if isinstance(other, CDFStringQuantilesTransformation):
            return len(other.quantiles) > 0 and other.quantiles != self.quantiles
        return not other.is_empty

    def _json_fields(self) -> dict[str, Any]:
        return {"quantiles": list(self.quantiles)}


@dataclass(frozen=True, slots=True)
class CDFNumericQuantilesTransformer(Transformer):
    """``quantiles`` on an ordered column; the quantiles come from ``columnStats``.

    Attributes:
        ordered_data_type: The column's ordered data type.
    """

    ordered_data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "CDFNumericQuantilesTransformer"
    type_name: ClassVar[str] = "quantiles"
    type_field: ClassVar[tuple[str, str] | None] = ("ordered_data_type", "orderedDataType")
    unordered_error: ClassVar[str] = (
        "CDFNumericQuantilesTransformer needs an ordered type; "
        "use CDFStringQuantilesTransformer for strings"
    )

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """CDF over ``stats.quantiles``; Empty when there are none."""
        if stats is None or not stats.quantiles:
            return EmptyTransformation()
        return CDFNumericQuantilesTransformation(stats.quantiles, self.ordered_data_type)


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
