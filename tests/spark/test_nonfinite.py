"""Indexed DOUBLE columns holding NaN, ±infinity, -0.0, subnormals and extreme values.

Each table is written, read back by the independent ``deltalake`` reader, and queried
through the index; every answer is compared with Spark's own answer on a full scan.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.transformation import LinearTransformation
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    live_adds,
    row_digest,
    spark_digest,
)

N = 6000
CUBE = 300


def _full(spark: Any, path: str) -> Any:
    """Every live file of the table, read without the index."""
    return spark.read.parquet(*[f"{path}/{p}" for p in live_adds(path)])


def _linear(path: str, rid: int = 1) -> list[LinearTransformation]:
    config = latest_configuration(path)
    text = config[f"qbeast.revision.{rid}"]
    assert "NaN" not in text and "Infinity" not in text  # Jackson could not read them
    revision = Revision.from_json(text)
    out = [t for t in revision.transformations if isinstance(t, LinearTransformation)]
    assert len(out) == len(revision.transformations)
    return out


def _write_and_check(spark: Any, path: str, df: Any, columns: str) -> None:
    result = qc.write(df, path, columnsToIndex=columns, cubeSize=CUBE)
    assert result.revision_id == 1 and result.new_revision
    assert row_digest(deltalake_table(path)) == spark_digest(df)
    assert spark_digest(qc.QbeastTable.forPath(spark, path).toDF()) == spark_digest(df)


def test_nan_indexed_write_succeeds_and_reads_back_exactly_in_deltalake(
    spark: Any, table_path: str
) -> None:
    df = spark.range(0, N, numPartitions=3).selectExpr(
        "id",
        "CASE WHEN id % 7 = 0 THEN double('NaN') ELSE cast(id % 500 as double) - 100 END as x",
        "cast(rand(3) as double) as y",
    )
    _write_and_check(spark, table_path, df, "x,y")
    x, _ = _linear(table_path)
    assert (x.min_number, x.max_number) == (-100.0, 399.0)  # NaN kept out of the bounds
    table = qc.QbeastTable.forPath(spark, table_path)
    assert table.filter("isnan(x)").count() == len(range(0, N, 7))


def test_infinite_indexed_write_succeeds_and_reads_back_exactly_in_deltalake(
    spark: Any, table_path: str
) -> None:
    df = spark.range(0, N, numPartitions=3).selectExpr(
        "id",
        "CASE id % 5 WHEN 0 THEN double('Infinity') WHEN 1 THEN double('-Infinity') "
        "ELSE cast(id % 300 as double) / 4 END as x",
        "cast(id % 17 as int) as k",
    )
    _write_and_check(spark, table_path, df, "x,k")
    x, _ = _linear(table_path)
    assert (x.min_number, x.max_number) == (0.5, 74.75)
    # an append of infinities alone keeps the revision: they never widen the space
    more = spark.range(N, 2 * N, numPartitions=2).selectExpr(
        "id", "double('-Infinity') as x", "cast(id % 17 as int) as k"
    )
    result = qc.write(more, table_path, mode="append")
    assert not result.new_revision and result.revision_id == 1
    everything = spark_digest(df.unionByName(more))
    assert row_digest(deltalake_table(table_path)) == everything
    # optimize assigns the rows again through the same mapping
    qc.QbeastTable.forPath(spark, table_path).optimize()
    assert row_digest(deltalake_table(table_path)) == everything


def test_extreme_doubles_and_subnormals_index_and_filter_like_a_full_scan(
    spark: Any, table_path: str
) -> None:
    df = spark.range(0, N, numPartitions=3).selectExpr(
        "id",
        "CASE id % 6 WHEN 0 THEN 1.7e308D WHEN 1 THEN -1.7e308D "
        "WHEN 2 THEN 1.7976931348623157E308D ELSE (rand(5) * 2 - 1) * 1.75e308D END as big",
        "cast(id % 40 as double) * 4.9E-324D as tiny",
    )
    _write_and_check(spark, table_path, df, "big,tiny")
    big, tiny = _linear(table_path)
    assert big.max_number == 1.7976931348623157e308 and big.min_number < -1.7e308
    assert tiny.min_number == 0.0 and tiny.max_number == 39 * 5e-324
    table = qc.QbeastTable.forPath(spark, table_path)
    full = _full(spark, table_path)
    total = len(live_adds(table_path))
    pruned = 0
    for where in [
        "big > 1e300",
        "big < -1.7e308",
        "big = 1.7e308D",
        "big >= 1.7976931348623157E308D",
        "big BETWEEN -1e300 AND 1e300",
        "tiny = 4.9E-324D",
        "tiny > 1.0E-322D",
        "tiny <= 0.0 AND big > 0",
        "tiny < 0",
    ]:
        got = table.filter(where)
        assert spark_digest(got) == spark_digest(full.filter(where)), where
        pruned += len(got.inputFiles()) < total
    assert pruned >= 5
    threshold = weight_from_fraction(0.3)
    got = table.read(where="big > 0", fraction=0.3)
    expected = full.filter(f"big > 0 AND hash(big, tiny) < {threshold}")
    assert spark_digest(got) == spark_digest(expected)


@pytest.fixture(scope="module")
def nonfinite(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """x holds NaN, +inf, -inf, -0.0, 0.0 and nulls among finite values; y is uniform."""
    path = str(tmp_path_factory.mktemp("nonfinite") / "t")
    df = spark.range(0, N, numPartitions=4).selectExpr(
        "id",
        "CASE id % 10 WHEN 0 THEN double('NaN') WHEN 1 THEN double('Infinity') "
        "WHEN 2 THEN double('-Infinity') WHEN 3 THEN -0.0D WHEN 4 THEN 0.0D "
        "WHEN 5 THEN NULL ELSE (rand(8) - 0.5) * 1000 END as x",
        "rand(9) as y",
    )
    qc.write(df, path, columnsToIndex="x,y", cubeSize=CUBE)
    assert row_digest(deltalake_table(path)) == spark_digest(df)
    return path


def test_filters_on_nan_and_infinity_return_spark_count(spark: Any, nonfinite: str) -> None:
    from pyspark.sql import functions as F

    table = qc.QbeastTable.forPath(spark, nonfinite)
    full = _full(spark, nonfinite)
    total = len(live_adds(nonfinite))
    x = F.col("x")
    tenth = N // 10
    cases: list[tuple[Any, int | None]] = [
        (x == float("nan"), tenth),
        (x == math.inf, tenth),
        (x == -math.inf, tenth),
        (x >= math.inf, 2 * tenth),  # +inf and NaN
        (x > math.inf, tenth),  # NaN is above +inf
        (x > 1e300, 2 * tenth),
        (x < -1e300, tenth),
        (x == 0.0, 2 * tenth),  # -0.0 = 0.0
        (x == -0.0, 2 * tenth),
        (x.isNull(), tenth),
        (x < float("nan"), None),  # every non-NaN, non-null value
        (x.isin(float("nan"), -math.inf), 2 * tenth),
        ((x == float("nan")) & (F.col("y") < 0.5), None),
        (~(x < 100.0), None),
        ("x > 400 OR x IS NULL", None),
    ]
    selective = 0
    for condition, count in cases:
        got = table.filter(condition)
        expected = full.filter(condition)
        digest = spark_digest(got)
        assert digest == spark_digest(expected), str(condition)
        if count is not None:
            assert digest[0] == count, str(condition)
        selective += len(got.inputFiles()) < total
    assert selective >= 8
    nan_scan = table.explainScan(where=x == float("nan"))
    assert nan_scan.selected_files < nan_scan.total_files


@pytest.mark.parametrize("fraction", [0.05, 0.2])
def test_sample_bounds_on_a_table_with_nan_and_infinity(
    spark: Any, nonfinite: str, fraction: float
) -> None:
    table = qc.QbeastTable.forPath(spark, nonfinite)
    sample = table.sample(fraction)
    expected = _full(spark, nonfinite).filter(f"hash(x, y) < {weight_from_fraction(fraction)}")
    count, digest = spark_digest(sample)
    assert (count, digest) == spark_digest(expected)
    sigma = math.sqrt(N * fraction * (1 - fraction))
    assert abs(count - fraction * N) <= 3 * sigma
    scan = table.explainScan(fraction=fraction)
    assert count <= scan.selected_rows <= 2 * fraction * N + 2 * CUBE
    assert scan.selected_bytes < (2 * fraction + 2 * CUBE / N) * scan.total_bytes * 1.5
    # the rows at the ends of x are sampled like the others
    ends = sample.filter("isnan(x) OR x IN (double('Infinity'), double('-Infinity'))").count()
    assert abs(ends - 0.3 * count) <= 4 * math.sqrt(count * 0.3 * 0.7) + 1


def test_revision_json_of_nonfinite_table_is_plain(nonfinite: str) -> None:
    text = latest_configuration(nonfinite)["qbeast.revision.1"]
    x = json.loads(text)["transformations"][0]
    assert all(math.isfinite(x[k]) for k in ("minNumber", "maxNumber", "nullValue"))
    assert -500.0 <= x["minNumber"] < x["maxNumber"] <= 500.0
