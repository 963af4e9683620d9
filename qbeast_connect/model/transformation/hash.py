"""The ``hashing`` family: HashTransformation and HashTransformer (spec §3.3, §4.3)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.hashing import (
    Float32,
    java_decimal_to_string,
    java_double_to_string,
    java_float_to_string,
    scala_bytes_hash,
)
from qbeast_connect.model.transformation.base import (
    CLASS_NAME_PREFIX,
    ColumnStats,
    Transformation,
    Transformer,
)
from qbeast_connect.model.transformation.datatypes import _INT32_MAX, _INT32_MIN, QDataType


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
        return not (isinstance(other, HashTransformation) or other.is_empty)

    def _json_fields(self) -> dict[str, Any]:
        return {} if self.null_value is None else {"nullValue": self.null_value}


@dataclass(frozen=True, slots=True)
class HashTransformer(Transformer):
    """``hashing``: hash of the value's text; needs no statistics.

    Attributes:
        data_type: The column's data type.
    """

    data_type: QDataType

    class_name: ClassVar[str] = CLASS_NAME_PREFIX + "HashTransformer"
    type_name: ClassVar[str] = "hashing"
    type_field: ClassVar[tuple[str, str] | None] = ("data_type", "dataType")
    type_default: ClassVar[QDataType | None] = QDataType.STRING

    def make_transformation(self, stats: ColumnStats | None, rng: random.Random) -> Transformation:
        """Return a HashTransformation with a random int32 null value."""
        return HashTransformation(rng.randint(_INT32_MIN, _INT32_MAX))
