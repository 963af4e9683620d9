"""Which columns of a data file may carry Parquet min/max statistics.

Parquet writers leave NaN out of a float column's min/max, and Spark's Parquet reader skips
a row group whose min/max rule a value out — but Spark orders NaN above every number, so
``x = double('NaN')`` or ``x > 50`` would skip row groups holding NaN rows that match. A
FLOAT or DOUBLE column holding NaN is therefore written without statistics (Spark's own
writer, parquet-mr, does the same).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["statistics_columns"]


def _may_hold_nan(type_: pa.DataType) -> bool:
    if pa.types.is_floating(type_):
        return True
    if pa.types.is_struct(type_):
        return any(_may_hold_nan(type_.field(i).type) for i in range(type_.num_fields))
    # nested values: judged as a whole below
    return bool(pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_map(type_))


def _holds_nan(column: Any) -> bool:
    type_ = column.type
    if pa.types.is_floating(type_):
        return bool(pc.any(pc.is_nan(column)).as_py())
    return True  # nested columns with floats: not inspected, no statistics


def statistics_columns(table: pa.Table) -> bool | list[str]:
    """``write_statistics`` for ``pyarrow.parquet.write_table``: True, or the safe columns."""
    unsafe = {
        name
        for name, field in zip(table.column_names, table.schema, strict=True)
        if _may_hold_nan(field.type) and _holds_nan(table.column(name))
    }
    if not unsafe:
        return True
    safe = [
        name
        for name, field in zip(table.column_names, table.schema, strict=True)
        if name not in unsafe and not pa.types.is_nested(field.type)
    ]
    return safe
