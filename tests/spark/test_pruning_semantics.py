"""Pruning never changes an answer: the cases of the open issues, each checked against Spark.

Every count is compared with Spark's own count over every live file of the table read as
plain parquet (no pruning at all), for ``QbeastTable.filter`` and for ``format("qbeast")``.
"""

from __future__ import annotations

import datetime as dt
import math
from functools import reduce
from typing import Any

import pytest

import qbeast_connect as qc
from tests.spark.helpers import live_adds

ROWS = 400


@pytest.fixture(scope="module")
def special(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """400 rows, indexed on (id, d, ts) with a small cube size so there are many files.

    ``d`` holds 2024-04-09 in exactly 10 rows, ``ts`` holds 2024-01-05 07:00:00 in exactly
    one row, ``nd`` (not indexed) holds NaN in 77 rows, ``z`` (not indexed) holds -0.0 in 11
    rows and 0.0 in 36 rows.
    """
    from pyspark.sql import types as T

    # 2024-04-09 is the largest date and 2024-01-05 00:00 the earliest instant, so the files
    # holding the matching rows have a max date / min timestamp on that very day
    base_day = dt.date(2024, 1, 1)
    base_ts = dt.datetime(2024, 1, 5, tzinfo=dt.UTC)
    rows = []
    for i in range(ROWS):
        day = dt.date(2024, 4, 9) if i % 40 == 7 else base_day + dt.timedelta(days=(i * 7) % 99)
        moment = base_ts + dt.timedelta(minutes=i * 17)
        if i == 123:
            moment = dt.datetime(2024, 1, 5, 7, 0, 0, tzinfo=dt.UTC)
        nd = math.nan if i % 5 == 1 and i < 385 else float(i % 97) - 40.0
        if i % 37 == 3:
            z = -0.0
        elif i % 11 == 5 or i == 398:
            z = 0.0
        else:
            z = float(i % 23) / 4.0 or 0.25  # no negative value: many files have min 0.0
        rows.append((i, day, moment, nd, z))
    schema = T.StructType(
        [
            T.StructField("id", T.IntegerType()),
            T.StructField("d", T.DateType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("nd", T.DoubleType()),
            T.StructField("z", T.DoubleType()),
        ]
    )
    df = spark.createDataFrame(rows, schema).repartition(3)
    path = str(tmp_path_factory.mktemp("special") / "t")
    qc.write(df, path, columnsToIndex="id,d,ts", cubeSize=40)
    assert len(live_adds(path)) >= 6
    return path


@pytest.fixture(scope="module")
def dated(spark: Any, special: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The id, d and ts columns of ``special`` alone (a file holding NaN gets no Delta stats
    from our writer, so only a table without NaN shows how the stats prune dates)."""
    df = spark.read.parquet(*[f"{special}/{p}" for p in live_adds(special)]).select("id", "d", "ts")
    path = str(tmp_path_factory.mktemp("dated") / "t")
    qc.write(df.repartition(3), path, columnsToIndex="id,d,ts", cubeSize=40)
    assert len(live_adds(path)) >= 6
    return path


def _plain(spark: Any, path: str) -> Any:
    return spark.read.parquet(*[f"{path}/{p}" for p in live_adds(path)])


def _counts(spark: Any, path: str, condition: Any) -> tuple[int, int, int]:
    """(Spark's count without pruning, QbeastTable.filter count, format("qbeast") count)."""
    expected = _plain(spark, path).filter(condition).count()
    table = qc.QbeastTable.forPath(spark, path).filter(condition).count()
    fmt = spark.read.format("qbeast").load(path).filter(condition).count()
    return expected, table, fmt


def test_date_column_compared_with_a_timestamp_string(spark: Any, dated: str) -> None:
    assert _counts(spark, dated, "d = '2024-04-09 12:00'") == (10, 10, 10)
    assert _counts(spark, dated, "d = '2024-04-09'") == (10, 10, 10)


def test_timestamp_column_compared_with_a_string(spark: Any, dated: str) -> None:
    assert _counts(spark, dated, "ts = '2024-01-05 07:00:00'") == (1, 1, 1)


def test_nan_equality_matches_nan_rows(spark: Any, special: str) -> None:
    assert _counts(spark, special, "nd = double('NaN')") == (77, 77, 77)
    assert _counts(spark, special, "nd > 50") == _expected_triple(spark, special, "nd > 50")


def test_negative_zero_equals_zero(spark: Any, special: str) -> None:
    assert _counts(spark, special, "z = -0.0") == (47, 47, 47)
    assert _counts(spark, special, "z = 0.0D") == (47, 47, 47)


def _expected_triple(spark: Any, path: str, condition: Any) -> tuple[int, int, int]:
    n = _plain(spark, path).filter(condition).count()
    return n, n, n


def test_500_ands_and_1000_ors_as_sql(spark: Any, special: str) -> None:
    ands = " AND ".join(f"id <> {k}" for k in range(500))
    ors = " OR ".join(f"id = {k}" for k in range(1000))
    assert _counts(spark, special, ands) == (0, 0, 0)
    assert _counts(spark, special, ors) == (ROWS, ROWS, ROWS)


def test_500_ands_and_1000_ors_as_columns(spark: Any, special: str) -> None:
    from pyspark.sql import functions as F

    def pairwise(cols: list[Any], join: Any) -> Any:
        while len(cols) > 1:
            cols = [join(cols[i], cols[i + 1]) for i in range(0, len(cols) - 1, 2)] + (
                [cols[-1]] if len(cols) % 2 else []
            )
        return cols[0]

    table = qc.QbeastTable.forPath(spark, special)
    fmt = spark.read.format("qbeast").load(special)
    and_terms = [F.col("id") != k for k in range(500)]
    or_terms = [F.col("id") == k for k in range(1000)]
    # reduce() nests them 500 and 1000 levels deep: QbeastTable.filter takes them as they are
    ands = reduce(lambda a, b: a & b, and_terms)
    ors = reduce(lambda a, b: a | b, or_terms)
    assert table.filter(ands).count() == 0
    assert table.filter(ors).count() == ROWS
    # pyspark's own client cannot send a 500-level Column: format("qbeast") gets them balanced
    assert fmt.filter(pairwise(and_terms, lambda a, b: a & b)).count() == 0
    assert fmt.filter(pairwise(or_terms, lambda a, b: a | b)).count() == ROWS
    assert _plain(spark, special).filter(pairwise(or_terms, lambda a, b: a | b)).count() == ROWS
