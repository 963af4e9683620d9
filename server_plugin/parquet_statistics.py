"""Which columns of a data file may carry Parquet min/max statistics.

Spark's Parquet reader skips a row group whose min/max rule a pushed filter out, comparing
with Java's total order of doubles, where ``-0.0 < 0.0``; Spark SQL has ``-0.0 = 0.0`` and
orders NaN above every number. pyarrow leaves NaN out of min/max and keeps the sign of zero,
so with its statistics ``x = double('NaN')`` or ``x > 50`` skip row groups holding NaN rows
that match, and ``x = -0.0`` skips a row group whose min is ``0.0``. A FLOAT or DOUBLE column
holding NaN or a zero of either sign is therefore written without statistics (parquet-mr
avoids the same traps by dropping NaN statistics and writing a zero min as ``-0.0``).

Its dictionary filter has the same trap: it looks ``-0.0`` up in a row group's dictionary
with Java's ``Double.equals``, which tells ``-0.0`` from ``0.0``, so ``x = -0.0`` would skip a
row group whose dictionary holds only ``0.0``. Such columns are not dictionary-encoded.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["parquet_write_options", "statistics_columns"]


def _may_hold_nan(type_: pa.DataType) -> bool:
    if pa.types.is_floating(type_):
        return True
    if pa.types.is_struct(type_):
        return any(_may_hold_nan(type_.field(i).type) for i in range(type_.num_fields))
    # nested values: judged as a whole below
    return bool(pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_map(type_))


def _holds_zero(column: Any) -> bool:
    zero = pc.equal(column, pa.scalar(0, column.type))  # true for -0.0 as well
    return bool(pc.any(zero).as_py())


def _holds_nan_or_zero(column: Any) -> bool:
    type_ = column.type
    if pa.types.is_floating(type_):
        return bool(pc.any(pc.is_nan(column)).as_py()) or _holds_zero(column)
    return True  # nested columns with floats: not inspected, no statistics


def statistics_columns(table: pa.Table) -> bool | list[str]:
    """``write_statistics`` for ``pyarrow.parquet.write_table``: True, or the safe columns."""
    unsafe = {
        name
        for name, field in zip(table.column_names, table.schema, strict=True)
        if _may_hold_nan(field.type) and _holds_nan_or_zero(table.column(name))
    }
    if not unsafe:
        return True
    safe = [
        name
        for name, field in zip(table.column_names, table.schema, strict=True)
        if name not in unsafe and not pa.types.is_nested(field.type)
    ]
    return safe


def parquet_write_options(table: pa.Table) -> dict[str, Any]:
    """``write_statistics`` and ``use_dictionary`` for ``pyarrow.parquet.write_table``."""
    zeros = [
        name
        for name, field in zip(table.column_names, table.schema, strict=True)
        if pa.types.is_floating(field.type) and _holds_zero(table.column(name))
    ]
    options: dict[str, Any] = {"write_statistics": statistics_columns(table)}
    if zeros:
        options["use_dictionary"] = [n for n in table.column_names if n not in zeros]
    return options
