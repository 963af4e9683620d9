"""Arrow data of a column-mapped table under its physical names, for writing data files.

Rows reach the writer under logical names (qbeast indexes by them); a data file of a table
with ``delta.columnMapping.mode`` ``name`` or ``id`` stores every column, nested fields
too, under its ``delta.columnMapping.physicalName``, and in ``id`` mode with its
``delta.columnMapping.id`` as the parquet field id. Statistics computed on the renamed
table are then keyed by physical names, as Delta expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import SchemaMismatchError
from qbeast_connect.rules.column_mapping import (
    COLUMN_ID_KEY,
    PHYSICAL_NAME_KEY,
    ColumnMapping,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["FIELD_ID_KEY", "physical_table"]

#: The Arrow field metadata key pyarrow writes as the parquet field id.
FIELD_ID_KEY = b"PARQUET:field_id"


def _by_name(fields: Any, where: str) -> dict[str, Mapping[str, Any]]:
    return {str(f["name"]).lower(): f for f in fields or () if isinstance(f, Mapping)}


def _field(arrow: pa.Field, delta: Mapping[str, Any], ids: bool, where: str) -> pa.Field:
    import pyarrow as pa

    metadata = delta.get("metadata") or {}
    physical = metadata.get(PHYSICAL_NAME_KEY)
    if not isinstance(physical, str):
        raise SchemaMismatchError(f"column {where} has no physical name in the table schema")
    kind = _type(arrow.type, delta.get("type"), ids, where)
    extra = {FIELD_ID_KEY: str(int(metadata[COLUMN_ID_KEY])).encode()} if ids else None
    return pa.field(physical, kind, arrow.nullable, metadata=extra)


def _type(arrow: pa.DataType, delta: Any, ids: bool, where: str) -> pa.DataType:
    import pyarrow as pa

    if not isinstance(delta, Mapping):
        return arrow
    kind = delta.get("type")
    if kind == "struct" and pa.types.is_struct(arrow):
        children = _by_name(delta.get("fields"), where)
        fields = []
        for i in range(arrow.num_fields):
            child = arrow.field(i)
            spec = children.get(child.name.lower())
            if spec is None:
                raise SchemaMismatchError(
                    f"field {where}.{child.name} of the data is not in the table schema"
                )
            fields.append(_field(child, spec, ids, f"{where}.{child.name}"))
        return pa.struct(fields)
    if kind == "array" and (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)):
        value = arrow.value_field
        element = value.with_type(_type(value.type, delta.get("elementType"), ids, where))
        return pa.large_list(element) if pa.types.is_large_list(arrow) else pa.list_(element)
    if kind == "map" and pa.types.is_map(arrow):
        key = arrow.key_field.with_type(_type(arrow.key_type, delta.get("keyType"), ids, where))
        item = arrow.item_field.with_type(
            _type(arrow.item_type, delta.get("valueType"), ids, where)
        )
        return pa.map_(key, item)
    return arrow


def physical_table(table: pa.Table, mapping: ColumnMapping) -> pa.Table:
    """``table`` (logical column names, matched case-insensitively with the table schema)
    with every column and nested field renamed to its physical name, field ids in ``id``
    mode; the data is shared, not copied.

    Raises:
        SchemaMismatchError: a column or field the table schema does not have.
    """
    import pyarrow as pa

    columns = _by_name(mapping.logical_schema.get("fields"), "")
    ids = mapping.mode == "id"
    fields = []
    arrays = []
    for field, column in zip(table.schema, table.columns, strict=True):
        spec = columns.get(field.name.lower())
        if spec is None:
            raise SchemaMismatchError(f"column {field.name} of the data is not in the table schema")
        out = _field(field, spec, ids, field.name)
        fields.append(out)
        arrays.append(
            pa.chunked_array([chunk.view(out.type) for chunk in column.chunks], type=out.type)
        )
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
