"""Conversion between pyarrow schemas and the Delta schema JSON (``schemaString``).

Type mapping (Delta type string ↔ pyarrow):

==================================  ==============================================
``boolean`` / ``byte`` / ``short``  bool / int8 / int16
``integer`` / ``long``              int32 / int64
``float`` / ``double``              float32 / float64
``decimal(p,s)``                    decimal128(p, s) (decimal256 with p <= 38 too)
``string`` / ``binary``             string, large_string, string_view / binary, ...
``date``                            date32 (date64 accepted when writing)
``timestamp``                       timestamp(unit, tz=<any zone>) (read as us, UTC)
``timestamp_ntz``                   timestamp without tz (read only; needs a feature)
``array`` / ``map`` / ``struct``    list, large_list, fixed_size_list / map / struct
==================================  ==============================================

Naive timestamps, unsigned integers, dictionaries, half floats, time-of-day, durations,
intervals and fixed-size binaries have no (1,2)-compatible Delta type and are refused
with an error that says which cast to apply.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from qbeast_connect.exceptions import CorruptLogError, InvalidOptionError, UnsupportedProtocolError

__all__ = [
    "arrow_schema_to_delta",
    "arrow_type_to_delta",
    "delta_to_arrow_schema",
    "schema_type_changes",
]

_PRIMITIVES_TO_ARROW: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}

_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_CHAR_RE = re.compile(r"^(?:var)?char\(\s*\d+\s*\)$")


def _unsupported(type_: pa.DataType, where: str, fix: str) -> InvalidOptionError:
    return InvalidOptionError(f"column {where} has type {type_}, which Delta cannot store; {fix}")


def arrow_type_to_delta(type_: pa.DataType, where: str = "<value>") -> str | dict[str, Any]:
    """Return the Delta type (a string or a nested-type object) of a pyarrow type.

    Args:
        type_: The pyarrow type.
        where: Column path used in error messages.

    Returns:
        A primitive type string such as ``"long"``, or a dict for array/map/struct.

    Raises:
        InvalidOptionError: The type has no Delta equivalent usable at protocol (1,2);
            the message names the column and the cast to apply.
    """
    t = pa.types
    if t.is_boolean(type_):
        return "boolean"
    if t.is_int8(type_):
        return "byte"
    if t.is_int16(type_):
        return "short"
    if t.is_int32(type_):
        return "integer"
    if t.is_int64(type_):
        return "long"
    if t.is_unsigned_integer(type_):
        raise _unsupported(
            type_,
            where,
            "Delta has no unsigned integers: cast to a wider signed type "
            "(uint8->int16, uint16->int32, uint32->int64; uint64->int64 or decimal(20,0))",
        )
    if t.is_float16(type_):
        raise _unsupported(type_, where, "cast it to float32")
    if t.is_float32(type_):
        return "float"
    if t.is_float64(type_):
        return "double"
    if t.is_decimal(type_):
        if type_.precision > 38:
            raise _unsupported(
                type_,
                where,
                "Delta decimals hold at most 38 digits; reduce "
                "the precision or store the value as a string",
            )
        return f"decimal({type_.precision},{type_.scale})"
    if t.is_string(type_) or t.is_large_string(type_) or t.is_string_view(type_):
        return "string"
    if t.is_binary(type_) or t.is_large_binary(type_) or t.is_binary_view(type_):
        return "binary"
    if t.is_fixed_size_binary(type_):
        raise _unsupported(type_, where, "cast it to binary")
    if t.is_date(type_):
        return "date"
    if t.is_timestamp(type_):
        if type_.tz is None:
            raise InvalidOptionError(
                f"column {where} is a timestamp without time zone ({type_}); a protocol "
                "(1,2) Delta table only stores instants: convert it to UTC, e.g. "
                "pc.assume_timezone(col, 'UTC') or col.cast(pa.timestamp('us', tz='UTC'))"
            )
        return "timestamp"
    if t.is_dictionary(type_):
        raise _unsupported(
            type_,
            where,
            f"decode it first (cast to {type_.value_type} or call .dictionary_decode())",
        )
    if t.is_null(type_):
        raise _unsupported(
            type_,
            where,
            "a column of type null cannot be written; cast it "
            "to the intended type (e.g. pa.string())",
        )
    if (
        t.is_list(type_)
        or t.is_large_list(type_)
        or t.is_fixed_size_list(type_)
        or (hasattr(t, "is_list_view") and (t.is_list_view(type_) or t.is_large_list_view(type_)))
    ):
        value_field = type_.value_field
        return {
            "type": "array",
            "elementType": arrow_type_to_delta(value_field.type, f"{where}.element"),
            "containsNull": value_field.nullable,
        }
    if t.is_map(type_):
        return {
            "type": "map",
            "keyType": arrow_type_to_delta(type_.key_field.type, f"{where}.key"),
            "valueType": arrow_type_to_delta(type_.item_field.type, f"{where}.value"),
            "valueContainsNull": type_.item_field.nullable,
        }
    if t.is_struct(type_):
        fields = [type_.field(i) for i in range(type_.num_fields)]
        if not fields:
            raise _unsupported(type_, where, "a struct needs at least one field")
        return _struct_to_delta(fields, where)
    raise _unsupported(
        type_,
        where,
        "supported types are bool, signed ints, float32/64, "
        "decimal, string, binary, date, UTC timestamps, list, map and struct",
    )


def _struct_to_delta(fields: list[pa.Field], where: str | None) -> dict[str, Any]:
    seen: dict[str, str] = {}
    out = []
    for f in fields:
        path = f.name if where is None else f"{where}.{f.name}"
        if not f.name:
            raise InvalidOptionError(f"a column under {where or 'the root'} has an empty name")
        lower = f.name.lower()
        if lower in seen:
            raise InvalidOptionError(
                f"column names must be unique ignoring case, but {seen[lower]!r} and "
                f"{f.name!r} collide under {where or 'the root'}; rename one of them"
            )
        seen[lower] = f.name
        out.append(
            {
                "name": f.name,
                "type": arrow_type_to_delta(f.type, path),
                "nullable": f.nullable,
                "metadata": {},
            }
        )
    return {"type": "struct", "fields": out}


def arrow_schema_to_delta(schema: pa.Schema) -> str:
    """Return the Delta ``schemaString`` of a pyarrow schema.

    Field metadata is not carried over (``"metadata": {}``), like deltalake does.

    Args:
        schema: The table schema.

    Returns:
        The schema JSON serialized on one line.

    Raises:
        InvalidOptionError: A column has no Delta type at protocol (1,2) (naive
            timestamp, unsigned int, dictionary, ...), names collide ignoring case, or
            the schema has no columns.
    """
    if len(schema) == 0:
        raise InvalidOptionError("a Delta table needs at least one column")
    obj = _struct_to_delta(list(schema), None)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _delta_type_to_arrow(t: Any, where: str) -> pa.DataType:
    if isinstance(t, str):
        prim = _PRIMITIVES_TO_ARROW.get(t)
        if prim is not None:
            return prim
        m = _DECIMAL_RE.match(t)
        if m:
            precision, scale = int(m.group(1)), int(m.group(2))
            if not 1 <= precision <= 38 or scale > precision:
                raise CorruptLogError(f"column {where} has invalid type {t!r}")
            return pa.decimal128(precision, scale)
        if _CHAR_RE.match(t):
            return pa.string()
        raise UnsupportedProtocolError(
            f"column {where} has Delta type {t!r}, which qbeast-connect does not support; "
            "read the table with a Delta engine that does (e.g. Spark with Delta Lake)"
        )
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "array":
            element = _delta_type_to_arrow(t.get("elementType"), f"{where}.element")
            return pa.list_(
                pa.field("element", element, nullable=bool(t.get("containsNull", True)))
            )
        if kind == "map":
            key = _delta_type_to_arrow(t.get("keyType"), f"{where}.key")
            value = _delta_type_to_arrow(t.get("valueType"), f"{where}.value")
            return pa.map_(
                pa.field("key", key, nullable=False),
                pa.field("value", value, nullable=bool(t.get("valueContainsNull", True))),
            )
        if kind == "struct":
            return pa.struct(_delta_fields_to_arrow(t, where))
    raise CorruptLogError(f"column {where} has an unreadable Delta type {t!r}")


def _delta_fields_to_arrow(struct: dict[str, Any], where: str | None) -> list[pa.Field]:
    fields_json = struct.get("fields")
    if not isinstance(fields_json, list):
        raise CorruptLogError(f"struct {where or '<root>'} has no 'fields' list")
    fields = []
    for fj in fields_json:
        if not isinstance(fj, dict) or not isinstance(fj.get("name"), str):
            raise CorruptLogError(f"struct {where or '<root>'} has a malformed field {fj!r}")
        name = fj["name"]
        path = name if where is None else f"{where}.{name}"
        metadata = fj.get("metadata") or {}
        arrow_meta = (
            {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}
            if isinstance(metadata, dict)
            else {}
        )
        fields.append(
            pa.field(
                name,
                _delta_type_to_arrow(fj.get("type"), path),
                nullable=bool(fj.get("nullable", True)),
                metadata=arrow_meta or None,
            )
        )
    return fields


def delta_to_arrow_schema(schema_string: str) -> pa.Schema:
    """Parse a Delta ``schemaString`` into a pyarrow schema.

    ``timestamp`` becomes ``timestamp("us", tz="UTC")``; field metadata is kept as
    string-valued pyarrow field metadata (non-string values JSON-encoded).

    Args:
        schema_string: The ``metaData.schemaString`` text.

    Returns:
        The pyarrow schema.

    Raises:
        CorruptLogError: The text is not a Delta struct schema.
        UnsupportedProtocolError: A type this implementation cannot read (``variant``, ...).
    """
    try:
        obj = json.loads(schema_string)
    except ValueError as exc:
        raise CorruptLogError(f"metaData.schemaString is not valid JSON ({exc})") from exc
    if not isinstance(obj, dict) or obj.get("type") != "struct":
        raise CorruptLogError("metaData.schemaString must be a JSON object of type 'struct'")
    return pa.schema(_delta_fields_to_arrow(obj, None))


def _field_metadata(schema_string: str) -> dict[str, dict[str, Any]]:
    """The non-empty field metadata per column path (nested fields included: ``a.b``,
    ``a.element``, ``m.key``, ``m.value``)."""
    out: dict[str, dict[str, Any]] = {}

    def visit(t: Any, where: str | None) -> None:
        if isinstance(t, dict):
            kind = t.get("type")
            if kind == "struct":
                for f in t.get("fields", []):
                    path = f["name"] if where is None else f"{where}.{f['name']}"
                    meta = f.get("metadata") or {}
                    if isinstance(meta, dict) and meta:
                        out[path] = meta
                    visit(f.get("type"), path)
            elif kind == "array":
                visit(t.get("elementType"), f"{where}.element")
            elif kind == "map":
                visit(t.get("keyType"), f"{where}.key")
                visit(t.get("valueType"), f"{where}.value")

    visit(json.loads(schema_string), None)
    return out


def schema_field_metadata_keys(schema_string: str) -> dict[str, set[str]]:
    """Return the field-metadata keys per column path (nested fields included)."""
    return {path: set(meta) for path, meta in _field_metadata(schema_string).items()}


def schema_type_changes(schema_string: str) -> dict[str, list[Any]]:
    """Return the ``delta.typeChanges`` lists (type widening history) per column path."""
    out: dict[str, list[Any]] = {}
    for path, meta in _field_metadata(schema_string).items():
        changes = meta.get("delta.typeChanges")
        if changes is not None:
            out[path] = changes if isinstance(changes, list) else [changes]
    return out


def schema_primitive_types(schema_string: str) -> set[str]:
    """Return every primitive Delta type string used in a schema, nested ones included."""
    out: set[str] = set()

    def visit(t: Any) -> None:
        if isinstance(t, str):
            out.add(t)
        elif isinstance(t, dict):
            kind = t.get("type")
            if kind == "struct":
                for f in t.get("fields", []):
                    visit(f.get("type"))
            elif kind == "array":
                visit(t.get("elementType"))
            elif kind == "map":
                visit(t.get("keyType"))
                visit(t.get("valueType"))

    visit(json.loads(schema_string))
    return out
