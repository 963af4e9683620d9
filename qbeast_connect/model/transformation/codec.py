"""The revision JSON of transformers and transformations, keyed by ``className`` (spec §1.2).

Decoding goes through fixed tables of known class names, never through code named by the
metadata. Legacy classes and fields of old tables decode to today's classes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model._json import jackson_tree_text
from qbeast_connect.model.transformation.base import CLASS_NAME_PREFIX, Transformation, Transformer
from qbeast_connect.model.transformation.datatypes import (
    _INT32_MAX,
    _INT32_MIN,
    _INTEGRAL_TYPES,
    QDataType,
    _coerce,
)
from qbeast_connect.model.transformation.empty import EmptyTransformation, EmptyTransformer
from qbeast_connect.model.transformation.hash import HashTransformation, HashTransformer
from qbeast_connect.model.transformation.histogram import (
    StringHistogramTransformation,
    StringHistogramTransformer,
)
from qbeast_connect.model.transformation.linear import (
    IdentityTransformation,
    LinearTransformation,
    LinearTransformer,
    _legacy_null,
)
from qbeast_connect.model.transformation.quantiles import (
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformation,
    CDFStringQuantilesTransformer,
)
from qbeast_connect.model.weight import java_double_to_long

_T = TypeVar("_T")
_E = TypeVar("_E")


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


_TRANSFORMER_CLASSES: dict[str, type[Transformer]] = {
    cls.class_name: cls
    for cls in (
        LinearTransformer,
        HashTransformer,
        CDFNumericQuantilesTransformer,
        CDFStringQuantilesTransformer,
        StringHistogramTransformer,
        EmptyTransformer,
    )
}


def _decode_transformer(cls: type[Transformer], d: Mapping[str, Any]) -> Transformer:
    """Build ``cls`` from its JSON: ``columnName`` and the data type field the class names."""
    what = cls.__name__
    fields: dict[str, Any] = {"column_name": _str_field(d, "columnName", what)}
    if cls.type_field is not None:
        attribute, key = cls.type_field
        if key not in d and cls.type_default is not None:
            fields[attribute] = cls.type_default  # very old tables; the family ignores it
        else:
            fields[attribute] = _dtype_field(d, key, what)
    return cls(**fields)


def _known_class(d: Mapping[str, Any], what: str, table: Mapping[str, _E]) -> tuple[str, _E]:
    """The ``className`` of ``d`` and its entry in ``table`` (only known names decode)."""
    if not isinstance(d, Mapping):
        raise MetadataFormatError(f"a {what} must be a JSON object, got {d!r}")
    name = d.get("className")
    if not isinstance(name, str):
        raise MetadataFormatError(f"{what} JSON has no className: {d!r}")
    entry = table.get(name)
    if entry is None:
        known = ", ".join(sorted(table))
        raise MetadataFormatError(f"unknown {what} className {name!r}; known: {known}")
    return name, entry


def _decoded(name: str, d: Mapping[str, Any], build: Callable[[], _T]) -> _T:
    """Run ``build``; invalid values are a malformed table, reported with the JSON."""
    try:
        return build()
    except InvalidOptionError as err:
        raise MetadataFormatError(f"invalid {name} JSON {dict(d)!r}: {err.message}") from None


def transformer_to_json(t: Transformer) -> dict[str, Any]:
    """Return the JSON object of a transformer: ``className`` first, then its fields."""
    return {"className": t.class_name, **t._json_fields()}


def transformer_from_json(d: Mapping[str, Any]) -> Transformer:
    """Decode a transformer JSON object (unknown fields are ignored).

    Raises:
        MetadataFormatError: Unknown className, or a missing/invalid field.
    """
    name, cls = _known_class(d, "column transformer", _TRANSFORMER_CLASSES)
    return _decoded(name, d, lambda: _decode_transformer(cls, d))


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
    name, decoder = _known_class(d, "transformation", _TRANSFORMATION_DECODERS)
    hint = None if data_type is None else QDataType.parse(data_type, error=MetadataFormatError)
    return _decoded(name, d, lambda: decoder(d, hint))
