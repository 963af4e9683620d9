"""The statistics and encodings a data file's float columns may carry, so Spark reads them right.

Spark's Parquet reader (parquet-mr) skips row groups with two filters, both of which can
drop matching rows of FLOAT/DOUBLE columns written by pyarrow:

- **min/max statistics.** pyarrow leaves NaN out of a column's min/max, while Spark orders
  NaN above every number and treats ``NaN = NaN`` as true: with those bounds
  ``x = double('NaN')`` or ``x > 50`` skips row groups holding matching NaN rows. A float
  column holding NaN (top level or inside a struct) is written without statistics, as
  Spark's own writer drops NaN bounds. Zeros are safe here: pyarrow writes a zero min as
  ``-0.0`` and a zero max as ``+0.0``, as the Parquet spec asks.
- **dictionary filtering.** parquet-mr looks a literal up in a row group's dictionary with
  ``Double.equals``, which tells ``-0.0`` from ``0.0``, while Spark compares them as equal:
  a row group whose dictionary holds only ``-0.0`` is skipped for ``x = 0.0``. Float
  columns holding a zero of either sign are therefore not dictionary-encoded.

Files also carry a page index (per-page min/max, which Spark's reader uses to skip pages
inside a row group). pyarrow writes it only for the columns that have statistics, so the
NaN rule above covers it; a page of zeros is bounded by ``-0.0`` and ``+0.0`` as a row
group is.

Columns whose values barely repeat (nearly every value distinct in a sample of the file's
rows: keys, prices, free text) are written without a dictionary. A dictionary gains them
nothing: it would hold almost every value once more, plus an index per row, and pyarrow
gives it up for plain pages anyway once it outgrows its page limit, after hashing the
values for nothing. On TPC-H lineitem this cuts the parquet encoding's CPU by about a
quarter and the files are slightly smaller (``bench/write_task_bench.py``).

Decimals of precision up to 18 are stored as INT32/INT64 (``store_decimal_as_integer``), as
Spark's own writer stores them, not as fixed-length byte arrays: Spark's vectorized reader
decodes those with a conversion per value, which made aggregating decimal columns of an
indexed table slower per byte than over a plain parquet copy. Wider decimals stay
fixed-length byte arrays, as in Spark. Statistics of either form compare like the decimals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["parquet_write_options", "statistics_columns"]

#: Rows sampled (evenly spread over the file) to tell whether a column's values repeat.
DICTIONARY_SAMPLE_ROWS = 8192
#: A column with at least this share of distinct values in the sample gets no dictionary.
DICTIONARY_DISTINCT_SHARE = 0.95


def _nan_leaves(array: Any, path: str, out: list[str]) -> None:
    t = array.type
    if pa.types.is_floating(t):
        if pc.any(pc.is_nan(array)).as_py():
            out.append(path)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            _nan_leaves(pc.struct_field(array, [i]), f"{path}.{t.field(i).name}", out)


def _leaf_paths(t: pa.DataType, path: str, out: list[str]) -> None:
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _leaf_paths(t.field(i).type, f"{path}.{t.field(i).name}", out)
    elif not pa.types.is_nested(t):
        out.append(path)


def statistics_columns(table: pa.Table) -> bool | list[str]:
    """``write_statistics`` for ``pyarrow.parquet.write_table``: True, or the safe leaves.

    ``True`` unless a float column, top-level or inside structs, holds NaN; then the list
    of the other leaf columns (lists and maps, where Spark pushes no filter down, get no
    statistics then).
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


def _holds_zero(column: Any) -> bool:
    zero = pc.equal(column, pa.scalar(0, column.type))  # true for -0.0 as well
    return bool(pc.any(zero).as_py())


def _near_unique_columns(table: pa.Table) -> list[str]:
    """Top-level non-nested columns nearly all of whose sampled values are distinct (none
    for tables smaller than the sample: their dictionaries cost little)."""
    rows = table.num_rows
    if rows < DICTIONARY_SAMPLE_ROWS:
        return []
    step = rows // DICTIONARY_SAMPLE_ROWS
    sample = pa.array(np.arange(DICTIONARY_SAMPLE_ROWS, dtype=np.int64) * step)
    out = []
    for name, field in zip(table.column_names, table.schema, strict=True):
        if pa.types.is_nested(field.type) or pa.types.is_boolean(field.type):
            continue
        values = pc.take(table.column(name), sample)
        distinct = pc.count_distinct(values, mode="all").as_py()
        if distinct >= DICTIONARY_DISTINCT_SHARE * DICTIONARY_SAMPLE_ROWS:
            out.append(name)
    return out


def parquet_write_options(table: pa.Table) -> dict[str, Any]:
    """``write_statistics``, ``use_dictionary``, ``write_page_index`` and
    ``store_decimal_as_integer`` for ``pyarrow.parquet.write_table`` (and ``ParquetWriter``)."""
    # float columns holding a zero (Spark's dictionary filtering), and near-unique columns
    no_dictionary = [
        name
        for name, field in zip(table.column_names, table.schema, strict=True)
        if pa.types.is_floating(field.type) and _holds_zero(table.column(name))
    ]
    no_dictionary += _near_unique_columns(table)
    options: dict[str, Any] = {
        "write_statistics": statistics_columns(table),
        "write_page_index": True,
        "store_decimal_as_integer": True,
    }
    if no_dictionary:
        options["use_dictionary"] = [n for n in table.column_names if n not in no_dictionary]
    return options
