"""The bases of the column transformations: statistics, Transformation and Transformer.

A :class:`Transformer` is the per-column recipe stored in a revision; given
:class:`ColumnStats` it makes a :class:`Transformation`, the parameters that map values to
coordinates in [0, 1]. Each family lives in its own module of this package.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.transformation.datatypes import QDataType

CLASS_NAME_PREFIX = "io.qbeast.core.transform."
"""Package of every transformer/transformation class name in the revision JSON."""


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
        """Combine with ``other`` (§4.7); ``rng`` draws the null value of a new linear range.

        This default is the rule of every family without a range: an Empty ``other`` keeps
        ``self``, anything else replaces it.
        """
        return self if other.is_empty else other

    @property
    def is_empty(self) -> bool:
        """Whether this is an :class:`EmptyTransformation`."""
        return False

    def _json_fields(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Transformer:
    """Base of the per-column recipes stored in ``columnTransformers``.

    Attributes:
        column_name: The indexed column.
    """

    column_name: str

    class_name: ClassVar[str] = ""
    type_name: ClassVar[str] = ""
    type_field: ClassVar[tuple[str, str] | None] = None
    """``(attribute, JSON key)`` of the data type field, for the classes that have one."""
    type_default: ClassVar[QDataType | None] = None
    """The data type of JSON written without the key (very old tables), if allowed."""
    unordered_error: ClassVar[str] = ""
    """When set, the data type must be ordered; the message (``{column!r}`` is replaced)."""

    def __post_init__(self) -> None:
        """Check the column name and normalize the data type field (when there is one)."""
        if not isinstance(self.column_name, str) or not self.column_name:
            raise InvalidOptionError(f"a transformer needs a column name, got {self.column_name!r}")
        if self.type_field is not None:
            attribute = self.type_field[0]
            dt = QDataType.parse(getattr(self, attribute))
            if self.unordered_error and not dt.is_ordered:
                raise InvalidOptionError(self.unordered_error.format(column=self.column_name))
            object.__setattr__(self, attribute, dt)

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
        fields: dict[str, Any] = {"columnName": self.column_name}
        if self.type_field is not None:
            attribute, key = self.type_field
            fields[key] = getattr(self, attribute).value
        return fields
