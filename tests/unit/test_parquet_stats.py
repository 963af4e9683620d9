"""Data files leave out the parquet min/max of float columns holding NaN."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from server_plugin.parquet_statistics import statistics_columns as parquet_statistics


def _stats_set(path: Path) -> dict[str, bool]:
    row_group = pq.ParquetFile(path).metadata.row_group(0)
    return {
        row_group.column(i).path_in_schema: row_group.column(i).is_stats_set
        for i in range(row_group.num_columns)
    }


def test_nan_columns_get_no_parquet_bounds(tmp_path: Path) -> None:
    table = pa.table(
        {
            "x": [1.0, math.nan, 3.0],
            "f": pa.array([1.0, 2.0, math.nan], pa.float32()),
            "ok": [1.0, math.inf, -0.0],
            "n": [1, 2, 3],
            "s": pa.array([{"a": math.nan, "b": 1.0}] * 3),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, write_statistics=parquet_statistics(table))
    assert _stats_set(path) == {
        "x": False, "f": False, "ok": True, "n": True, "s.a": False, "s.b": True
    }  # fmt: skip
    assert str(pq.read_table(path).to_pylist()) == str(table.to_pylist())


def test_files_without_nan_keep_every_bound() -> None:
    table = pa.table({"x": [1.0, math.inf], "n": [1, None]})
    assert parquet_statistics(table) is True


def test_page_index_only_for_columns_with_statistics(tmp_path: Path) -> None:
    from server_plugin.parquet_statistics import parquet_write_options

    table = pa.table(
        {
            "x": [1.0, math.nan, 3.0] * 1000,
            "z": [-0.0, 0.0, 2.0] * 1000,
            "n": list(range(3000)),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **parquet_write_options(table))
    chunk = pq.ParquetFile(path).metadata.row_group(0)
    indexed = {
        chunk.column(i).path_in_schema: chunk.column(i).has_column_index
        for i in range(chunk.num_columns)
    }
    assert indexed == {"x": False, "z": True, "n": True}
    assert str(pq.read_table(path).to_pylist()) == str(table.to_pylist())


def test_decimals_up_to_18_digits_are_stored_as_integers_like_spark(tmp_path: Path) -> None:
    import decimal

    from server_plugin.parquet_statistics import parquet_write_options

    d = decimal.Decimal
    table = pa.table(
        {
            "p9": pa.array([d("-1234567.89"), d("0.01"), None], pa.decimal128(9, 2)),
            "p15": pa.array([d("-9999999999999.99"), d("50900.00"), d("0")], pa.decimal128(15, 2)),
            "p20": pa.array([d("1.5"), None, d("-2.25")], pa.decimal128(20, 2)),
        }
    )
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, **parquet_write_options(table))
    meta = pq.ParquetFile(path).metadata
    physical = {meta.schema.column(i).name: meta.schema.column(i).physical_type for i in range(3)}
    assert physical == {"p9": "INT32", "p15": "INT64", "p20": "FIXED_LEN_BYTE_ARRAY"}
    assert pq.read_table(path).equals(table)
    stats = meta.row_group(0).column(1).statistics
    assert (stats.min, stats.max) == (d("-9999999999999.99"), d("50900.00"))


def test_near_unique_columns_are_written_without_a_dictionary(tmp_path: Path) -> None:
    import numpy as np

    from server_plugin.parquet_statistics import parquet_write_options

    rows = 50_000
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "key": pa.array(rng.permutation(rows), pa.int64()),
            "text": pa.array([f"comment {i} of a row" for i in rng.permutation(rows)]),
            "few": pa.array(rng.integers(0, 7, rows), pa.int64()),
            "flag": pa.array(rng.choice(["A", "N", "R"], rows)),
            "zero": pa.array(rng.integers(0, 3, rows).astype(float)),  # zeros: no dictionary
        }
    )
    options = parquet_write_options(table)
    assert options["use_dictionary"] == ["few", "flag"]
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    chunk = pq.ParquetFile(path).metadata.row_group(0)
    dictionary = {
        chunk.column(i).path_in_schema: "RLE_DICTIONARY" in chunk.column(i).encodings
        for i in range(chunk.num_columns)
    }
    assert dictionary == {"key": False, "text": False, "few": True, "flag": True, "zero": False}
    assert pq.read_table(path).equals(table)
    # small tables keep their dictionaries whatever their values
    assert "use_dictionary" not in parquet_write_options(table.slice(0, 1000).drop(["zero"]))
