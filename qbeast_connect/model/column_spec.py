"""The ``columnsToIndex`` option: parsing, type mapping and transformer choice (spec §4.1).

Example:
    >>> [s.spec for s in parse_columns_to_index("id, name:HASH")]
    ['id', 'name:hashing']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.transformation import (
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformer,
    HashTransformer,
    LinearTransformer,
    QDataType,
    StringHistogramTransformer,
    Transformer,
)

__all__ = [
    "ACCEPTED_TRANSFORMER_TYPES",
    "ColumnSpec",
    "parse_columns_to_index",
    "qdatatype_for_spark_type",
    "transformer_for",
]

ACCEPTED_TRANSFORMER_TYPES: tuple[str, ...] = (
    "linear",
    "hashing",
    "hash",
    "quantiles",
    "histogram",
)
"""Transformer types accepted in ``name:type`` (case-insensitive). ``hash`` is our alias of
``hashing``; the reference rejects it."""

_CANONICAL_TYPE = {
    "linear": "linear",
    "hashing": "hashing",
    "hash": "hashing",
    "quantiles": "quantiles",
    "histogram": "histogram",
}
_ACCEPTED_TEXT = ", ".join(ACCEPTED_TRANSFORMER_TYPES)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One item of ``columnsToIndex``.

    Attributes:
        name: Column name.
        transformer_type: Canonical lower-case type (``linear``, ``hashing``, ``quantiles``,
            ``histogram``), or None to use the default for the column's type.
    """

    name: str
    transformer_type: str | None = None

    def __post_init__(self) -> None:
        """Check the name and canonicalize the type."""
        if not isinstance(self.name, str) or not self.name:
            raise InvalidOptionError(f"a column spec needs a non-empty name, got {self.name!r}")
        if self.transformer_type is not None:
            canonical = _CANONICAL_TYPE.get(self.transformer_type.lower())
            if canonical is None:
                raise InvalidOptionError(
                    f"unknown transformer type {self.transformer_type!r} for column "
                    f"{self.name!r}; accepted types: {_ACCEPTED_TEXT}"
                )
            object.__setattr__(self, "transformer_type", canonical)

    @property
    def spec(self) -> str:
        """The item text: ``name`` or ``name:type``."""
        return (
            self.name if self.transformer_type is None else f"{self.name}:{self.transformer_type}"
        )


_ITEM_RE = re.compile(r"([^:]+)(?::([^:]*))?")


def parse_columns_to_index(text: str) -> tuple[ColumnSpec, ...]:
    """Parse the ``columnsToIndex`` option: comma-separated ``name`` or ``name:type`` items.

    Whitespace around items, names and types is stripped (the reference does not strip, and
    would then fail to find the column). Types are case-insensitive.

    Args:
        text: The option value, e.g. ``"id,name:hashing"``.

    Returns:
        One :class:`ColumnSpec` per item, in order.

    Raises:
        InvalidOptionError: Empty text, an empty or malformed item, an unknown type, or a column
            named twice (compared case-insensitively, as Spark resolves names).
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidOptionError(
            "columnsToIndex is empty; give a comma-separated list such as 'a,b:hashing'"
        )
    specs: list[ColumnSpec] = []
    seen: dict[str, str] = {}
    for raw in text.split(","):
        item = raw.strip()
        match = _ITEM_RE.fullmatch(item)
        if not item or match is None:
            raise InvalidOptionError(
                f"invalid item {raw!r} in columnsToIndex {text!r}: each item must be 'name' or "
                f"'name:type' with type one of {_ACCEPTED_TEXT}"
            )
        name = match.group(1).strip()
        type_text = match.group(2)
        if type_text is not None:
            type_text = type_text.strip()
            if type_text.lower() not in _CANONICAL_TYPE:
                raise InvalidOptionError(
                    f"invalid item {raw!r} in columnsToIndex {text!r}: unknown transformer type "
                    f"{type_text!r}; accepted types: {_ACCEPTED_TEXT}"
                )
        if not name:
            raise InvalidOptionError(
                f"invalid item {raw!r} in columnsToIndex {text!r}: the column name is empty"
            )
        key = name.lower()
        if key in seen:
            raise InvalidOptionError(
                f"column {name!r} appears twice in columnsToIndex {text!r} (as {seen[key]!r} "
                "too; names are case-insensitive); index each column once"
            )
        seen[key] = name
        specs.append(ColumnSpec(name, type_text))
    return tuple(specs)


_DECIMAL_RE = re.compile(r"decimal(\s*\(\s*\d+\s*,\s*-?\d+\s*\))?")
_SPARK_TO_QDATATYPE = {
    "integer": QDataType.INTEGER,
    "int": QDataType.INTEGER,
    "long": QDataType.LONG,
    "bigint": QDataType.LONG,
    "double": QDataType.DOUBLE,
    "float": QDataType.FLOAT,
    "real": QDataType.FLOAT,
    "timestamp": QDataType.TIMESTAMP,
    "date": QDataType.DATE,
    "string": QDataType.STRING,
    # Our extension: the reference rejects these; their values are small ints (boolean 0/1),
    # and Spark's hash() treats them like ints, so the row weight is unchanged.
    "short": QDataType.INTEGER,
    "smallint": QDataType.INTEGER,
    "byte": QDataType.INTEGER,
    "tinyint": QDataType.INTEGER,
    "boolean": QDataType.INTEGER,
}


def qdatatype_for_spark_type(spark_simple_type: str, *, column: str | None = None) -> QDataType:
    """Map a Spark simple type name to the Qbeast data type of an indexed column.

    ``integer``/``int`` → Integer, ``long``/``bigint`` → Long, ``double`` → Double,
    ``float`` → Float, ``decimal(p,s)`` → Decimal, ``timestamp`` → Timestamp, ``date`` → Date,
    ``string`` → String. As an extension of the reference, ``short``, ``byte`` and
    ``boolean`` (as 0/1) map to Integer.

    Args:
        spark_simple_type: E.g. ``"integer"``, ``"decimal(10,2)"`` (case-insensitive).
        column: Column name, for the error message.

    Raises:
        InvalidOptionError: The type cannot be indexed (binary, timestamp_ntz, nested, …).
    """
    t = spark_simple_type.strip().lower()
    found = _SPARK_TO_QDATATYPE.get(t)
    if found is not None:
        return found
    if _DECIMAL_RE.fullmatch(t):
        return QDataType.DECIMAL
    where = f"column {column!r} has type" if column is not None else "type"
    raise InvalidOptionError(
        f"{where} {spark_simple_type!r}, which cannot be indexed; indexable types: integer, "
        "long, short, byte, boolean, double, float, decimal, timestamp, date, string"
    )


def transformer_for(spec: ColumnSpec, data_type: QDataType | str) -> Transformer:
    """Choose the transformer for a column: the explicit type, or the default for its type.

    Defaults: ordered types → ``linear``; String → ``hashing``. ``quantiles`` picks the numeric
    or string variant.

    Args:
        spec: The parsed ``columnsToIndex`` item.
        data_type: The column's Qbeast data type.

    Raises:
        InvalidOptionError: The type does not fit the column (``linear`` on a string,
            ``histogram`` on a number, ``hashing`` on a timestamp or date).
    """
    dt = QDataType.parse(data_type)
    kind = spec.transformer_type
    if kind is None:
        kind = "linear" if dt.is_ordered else "hashing"
    if kind == "linear":
        if not dt.is_ordered:
            raise InvalidOptionError(
                f"column {spec.name!r} is a string and cannot use 'linear'; use "
                f"'{spec.name}:hashing' or '{spec.name}:quantiles'"
            )
        return LinearTransformer(spec.name, dt)
    if kind == "hashing":
        if dt in (QDataType.TIMESTAMP, QDataType.DATE):
            raise InvalidOptionError(
                f"column {spec.name!r} is a {dt.value} and cannot use 'hashing' (the reference "
                f"fails on it); use '{spec.name}:linear'"
            )
        return HashTransformer(spec.name, dt)
    if kind == "quantiles":
        if dt.is_ordered:
            return CDFNumericQuantilesTransformer(spec.name, dt)
        return CDFStringQuantilesTransformer(spec.name)
    if kind == "histogram":
        if dt is not QDataType.STRING:
            raise InvalidOptionError(
                f"column {spec.name!r} is a {dt.value}; 'histogram' only applies to strings, "
                f"use '{spec.name}:linear' or '{spec.name}:quantiles'"
            )
        return StringHistogramTransformer(spec.name, dt)
    raise InvalidOptionError(  # unreachable: ColumnSpec canonicalizes the type
        f"unknown transformer type {kind!r}; accepted types: {_ACCEPTED_TEXT}"
    )
