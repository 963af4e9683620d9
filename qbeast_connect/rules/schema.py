"""Schema rules of a write, on Spark schema JSON (``StructType.json()``, a Delta
``schemaString``).

A new table stores the data's schema with every field nullable (as qbeast-spark); an
append must bring the table's columns with the same types, and may add columns only with
``mergeSchema``. Types are compared as Spark's ``simpleString`` shows them, so field
metadata and nullability never make an append fail.
"""

from __future__ import annotations

import json
from typing import Any

from qbeast_connect.exceptions import SchemaMismatchError

__all__ = [
    "append_schema",
    "column_types",
    "nullable_schema_json",
    "simple_string",
    "spark_type_name",
]

#: ``simpleString`` of the primitive types whose JSON name differs from it.
_SIMPLE_NAMES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}


def spark_type_name(type_json: Any) -> str:
    """The type's name as ``DataType.typeName()`` gives it, from its JSON form.

    Decimals keep precision and scale (``decimal(10,2)``): the index needs them.
    """
    if isinstance(type_json, dict):
        return str(type_json.get("type", ""))
    text = str(type_json)
    if text.startswith("decimal"):
        return text
    if text.startswith("char(") or text.startswith("varchar("):
        return text.partition("(")[0]
    if text.startswith("string collate "):
        return "string"
    if text.startswith("interval "):
        return "yearmonthinterval" if text.endswith(("year", "month")) else "daytimeinterval"
    return text


def simple_string(type_json: Any) -> str:
    """The type as ``DataType.simpleString()`` shows it (``int``, ``array<bigint>``, ...)."""
    if not isinstance(type_json, dict):
        text = str(type_json)
        return _SIMPLE_NAMES.get(text, text)
    kind = type_json.get("type")
    if kind == "array":
        return f"array<{simple_string(type_json['elementType'])}>"
    if kind == "map":
        key = simple_string(type_json["keyType"])
        return f"map<{key},{simple_string(type_json['valueType'])}>"
    if kind == "struct":
        fields = ",".join(
            f"{f['name']}:{simple_string(f['type'])}" for f in type_json.get("fields", ())
        )
        return f"struct<{fields}>"
    return str(kind)


def _fields(schema_json: str) -> list[dict[str, Any]]:
    return list(json.loads(schema_json).get("fields", ()))


def column_types(schema_json: str) -> dict[str, str]:
    """Top-level column name -> :func:`spark_type_name` of its type."""
    return {f["name"]: spark_type_name(f["type"]) for f in _fields(schema_json)}


def _relax(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _relax(v) for k, v in node.items()}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in out:
                out[key] = True
        return out
    if isinstance(node, list):
        return [_relax(v) for v in node]
    return node


def nullable_schema_json(schema_json: str) -> str:
    """The schema a write commits: the data's, with every field (also nested ones, array
    elements and map values) nullable."""
    return json.dumps(_relax(json.loads(schema_json)), separators=(",", ":"))


def append_schema(table_string: str, data_json: str, merge: bool, path: str) -> str | None:
    """The schema to commit with an append to the table at ``path`` (None: unchanged).

    Column names match case-insensitively. With ``merge`` the data may add columns, which
    go after the table's (nullable).

    Raises:
        SchemaMismatchError: a column of another type, a table column missing from the
            data, or new columns without ``merge``.
    """
    table_fields = {f["name"].lower(): f for f in _fields(table_string)}
    data_fields = {f["name"].lower(): f for f in _fields(data_json)}
    mismatched = []
    for key, f in data_fields.items():
        if key not in table_fields:
            continue
        table_type = simple_string(table_fields[key]["type"])
        data_type = simple_string(f["type"])
        if table_type != data_type:
            mismatched.append(f"{f['name']}: table {table_type}, data {data_type}")
    missing = [f["name"] for k, f in table_fields.items() if k not in data_fields]
    extra = [f["name"] for k, f in data_fields.items() if k not in table_fields]
    if mismatched or missing or (extra and not merge):
        parts = []
        if mismatched:
            parts.append("different types: " + "; ".join(mismatched))
        if missing:
            parts.append("columns missing from the data: " + ", ".join(missing))
        if extra:
            parts.append("columns not in the table: " + ", ".join(extra))
        hint = (
            "set mergeSchema=true to add the new columns"
            if extra and not mismatched and not missing
            else "make the data match the table schema, or overwrite the table"
        )
        raise SchemaMismatchError(f"cannot append to {path}: {'; '.join(parts)}; {hint}")
    if not extra:
        return None
    added = [f for k, f in data_fields.items() if k not in table_fields]
    merged = {"type": "struct", "fields": _fields(table_string) + added}
    return nullable_schema_json(json.dumps(merged))
