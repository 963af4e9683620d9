"""Indexed files written in cube order, one row group per block (index/block_order.py).

Spark's parquet reader skips row groups by their min/max statistics and dictionaries. With
several row groups per file, every filter below is answered twice, through the index and by
Spark reading every live file directly (so only row-group skipping prunes), and both answers
must equal the same filter over the plain parquet copy; float columns hold NaN, -0.0 and
0.0, the values whose statistics trap parquet readers (server_plugin/parquet_statistics.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import qbeast_connect as qc
from qbeast_connect.index.block_order import row_group_bounds
from qbeast_connect.model.block import decode_blocks
from server_plugin import writer
from tests.spark.helpers import deltalake_table, live_adds, row_digest, spark_digest

N = 40_000
CUBE = 2_000


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    base = tmp_path_factory.mktemp("block_layout")
    plain = str(base / "plain")
    spark.range(0, N, numPartitions=2).selectExpr(
        "id",
        "CASE id % 13 WHEN 0 THEN double('NaN') WHEN 1 THEN -0.0D WHEN 2 THEN 0.0D "
        "WHEN 3 THEN NULL ELSE (rand(1) - 0.5) * 200 END as x",
        "rand(2) as y",
        "CASE id % 11 WHEN 0 THEN double('NaN') WHEN 1 THEN -0.0D WHEN 2 THEN 0.0D "
        "ELSE rand(3) END as z",
        "cast(rand(4) * 1000 as decimal(10, 2)) as price",
        "concat('row-', id) as payload",
    ).write.parquet(plain)
    path = str(base / "qbeast")
    qc.write(spark.read.parquet(plain), path, columnsToIndex="x,y,price", cubeSize=CUBE)
    return plain, path


def test_indexed_files_hold_one_row_group_per_block_and_read_back_in_deltalake(
    spark: Any, tables: tuple[str, str]
) -> None:
    plain, path = tables
    adds = live_adds(path)
    most, least = writer.row_group_limits(CUBE)
    multi = 0
    rows = 0
    for name, add in adds.items():
        blocks = decode_blocks(add["tags"]["blocks"])
        meta = pq.ParquetFile(Path(path) / name).metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        counts = [b.element_count for b in blocks]
        assert sizes == row_group_bounds(counts, most, least), name
        price = meta.schema.column(meta.schema.names.index("price"))
        assert price.physical_type == "INT64", "decimals are stored as integers, as Spark does"
        assert meta.num_row_groups >= sum(c >= least for c in counts)
        multi += meta.num_row_groups > 1
        rows += meta.num_rows
    assert rows == N
    assert multi >= 3, "multi-cube files are written as several row groups"
    assert row_digest(deltalake_table(path)) == spark_digest(spark.read.parquet(plain))


@pytest.mark.parametrize(
    "where",
    [
        "x BETWEEN 10 AND 30",
        "x > 50 AND y < 0.2",
        "x = 0.0",
        "x = -0.0",
        "x <= 0.0 AND x >= 0.0",
        "isnan(x)",
        "x = double('NaN')",
        "x > 90",
        "x IS NULL",
        "z = 0.0",
        "z = -0.0",
        "z > 0.9",
        "isnan(z)",
        "y BETWEEN 0.25 AND 0.26",
        "price BETWEEN 100 AND 120.5",
        "price < 5 OR x < -95",
    ],
)
def test_filters_over_block_row_groups_equal_plain_parquet(
    spark: Any, tables: tuple[str, str], where: str
) -> None:
    plain, path = tables
    expected = spark_digest(spark.read.parquet(plain).filter(where))
    assert expected[0] > 0, where
    indexed = qc.QbeastTable.forPath(spark, path).filter(where)
    assert spark_digest(indexed) == expected, where
    every_file = spark.read.parquet(*[str(Path(path) / p) for p in live_adds(path)])
    assert spark_digest(every_file.filter(where)) == expected, where


LARGE_N = 150_000
LARGE_CUBE = 65_536


def test_large_blocks_are_cut_into_32_z_order_row_groups_and_answers_are_unchanged(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A full block is cut into 32 row groups (server_plugin/writer.py::row_group_limits),
    # fine enough for a filter on one of three indexed columns to skip inside the cube.
    base = tmp_path_factory.mktemp("large_blocks")
    plain = str(base / "plain")
    spark.range(0, LARGE_N, numPartitions=2).selectExpr(
        "id", "rand(5) * 100 as x", "rand(6) as y", "cast(rand(7) * 1000 as decimal(10, 2)) as p"
    ).write.parquet(plain)
    path = str(base / "qbeast")
    qc.write(spark.read.parquet(plain), path, columnsToIndex="x,y,p", cubeSize=LARGE_CUBE)
    most, _ = writer.row_group_limits(LARGE_CUBE)
    assert most == LARGE_CUBE // 32
    root_groups = 0
    for name, add in live_adds(path).items():
        blocks = decode_blocks(add["tags"]["blocks"])
        meta = pq.ParquetFile(Path(path) / name).metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        assert max(sizes) <= most, name
        if blocks[0].cube_id == "" and blocks[0].element_count >= 8 * most:
            cut = row_group_bounds([blocks[0].element_count], most, most)
            assert sizes[: len(cut)] == cut, name
            root_groups += len(cut)
    assert root_groups >= 16, "the root's rows are cut into Z-order row groups"
    every_file = spark.read.parquet(*[str(Path(path) / p) for p in live_adds(path)])
    for where in ["x BETWEEN 40 AND 41", "y > 0.995", "p BETWEEN 500 AND 505", "x < 1 OR y < 0.01"]:
        expected = spark_digest(spark.read.parquet(plain).filter(where))
        assert expected[0] > 0, where
        assert spark_digest(qc.QbeastTable.forPath(spark, path).filter(where)) == expected, where
        assert spark_digest(every_file.filter(where)) == expected, where
    assert row_digest(deltalake_table(path)) == spark_digest(spark.read.parquet(plain))
