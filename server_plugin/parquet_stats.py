"""Which columns of a data file may carry parquet min/max statistics.

Arrow's parquet writer leaves NaN out of a float column's min/max. Spark's parquet reader
(parquet-mr filter pushdown) then trusts those bounds and skips row groups that do hold
matching rows: ``x = double('NaN')`` finds nothing, and ``x > 1e300`` misses the NaN rows,
which Spark orders above every other double. Spark's own writer drops the bounds of such
a column; we do the same by writing no statistics for it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["parquet_statistics"]


def _nan_leaves(array: Any, path: str, out: list[str]) -> None:
    t = array.type
    if pa.types.is_floating(t):
        if pc.any(pc.is_nan(array)).as_py():
            out.append(path)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            field = t.field(i)
            _nan_leaves(pc.struct_field(array, [i]), f"{path}.{field.name}", out)


def _leaf_paths(t: pa.DataType, path: str, out: list[str]) -> None:
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            field = t.field(i)
            _leaf_paths(field.type, f"{path}.{field.name}", out)
    elif not pa.types.is_nested(t):
        out.append(path)


def parquet_statistics(table: pa.Table) -> bool | list[str]:
    """The ``write_statistics`` argument of ``pyarrow.parquet.write_table`` for ``table``.

    ``True`` (statistics for every column) unless a float column, top-level or inside
    structs, holds NaN; then the list of the other leaf columns (lists and maps, where
    Spark pushes no filter down, then get no statistics either).
    """
    nan: list[str] = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        for chunk in column.chunks:
            found: list[str] = []
            _nan_leaves(chunk, name, found)
            nan.extend(p for p in found if p not in nan)
    if not nan:
        return True
    leaves: list[str] = []
    for field in table.schema:
        _leaf_paths(field.type, field.name, leaves)
    return [p for p in leaves if p not in nan]
