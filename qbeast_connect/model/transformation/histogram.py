"""The deprecated ``histogram`` family on string columns (spec §4.5), kept to read old tables."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.transformation.base import (
    CLASS_NAME_PREFIX,
    ColumnStats,
    Transformation,
    Transformer,
)
from qbeast_connect.model.transformation.datatypes import QDataType, _string_step
from qbeast_connect.model.transformation.hash import _hash_text

DEFAULT_HISTOGRAM: tuple[str, ...] = tuple(chr(c) for c in range(ord("a"), ord("z") + 1))
"""The histogram used by the legacy string histogram when none is given: ``"a"`` … ``"z"``."""


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
        return _string_step(text, self.histogram)

    def is_superseded_by(self, other: Transformation) -> bool:
        """Spec §4.7 histogram row."""
        if isinstance(other, StringHistogramTransformation):
            if self.is_default:
                return not other.is_default
            if other.is_default:
                return False
            return other.histogram != self.histogram
        return not other.is_empty

    def _json_fields(self) -> dict[str, Any]:
        return {"histogram": list(self.histogram)}


@dataclass(frozen=True, slots=True)
class StringHistogramTransformer(Transformer):
    """Deprecated ``histogram`` on a string column.

    Attributes:
        data_type: The column's data type (StringDataType).
    """

    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "StringHistogramTransformer"
    type_name: ClassVar[str] = "histogram"
    type_field: ClassVar[tuple[str, str] | None] = ("data_type", "dataType")
    type_default: ClassVar[QDataType | None] = QDataType.STRING

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Histogram from ``stats.histogram``, or the default ``a``…``z``."""
        if stats is None or not stats.histogram:
            return StringHistogramTransformation(DEFAULT_HISTOGRAM)
        return StringHistogramTransformation(stats.histogram)
