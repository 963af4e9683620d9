"""The staging revision's placeholder family: Empty transformer and transformation."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from qbeast_connect.model.transformation.base import (
    CLASS_NAME_PREFIX,
    ColumnStats,
    Transformation,
    Transformer,
)


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
class EmptyTransformer(Transformer):
    """``empty``: the staging revision's placeholder; makes Empty transformations."""

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "EmptyTransformer"
    type_name: ClassVar[str] = "empty"

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Return an EmptyTransformation."""
        return EmptyTransformation()
