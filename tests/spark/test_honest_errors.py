"""Every error a user can cause says what is wrong with their input (issue 36).

Each case here was answered with Spark's own error about a query qbeast built, or with a
message about something else than the input.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import InvalidOptionError, QbeastError, UnsupportedInputError


@pytest.fixture(scope="module")
def small_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from pyspark.sql import functions as F

    path = str(tmp_path_factory.mktemp("approx") / "t")
    df = spark.range(400).select(
        F.col("id"),
        (F.col("id") % 7).alias("g"),
        F.date_add(F.lit(dt.date(2024, 1, 1)), (F.col("id") % 30).cast("int")).alias("d"),
    )
    qc.write(df, path, columnsToIndex="id", cubeSize=100)
    return qc.QbeastTable.forPath(spark, path)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"aggregates": "count(*) AS n", "groupBy": "nope"}, "groupBy names the column 'nope'"),
        ({"aggregates": "sum(nope) AS s"}, "aggregate 's' names the column 'nope'"),
        ({"aggregates": "count(*) AS n", "where": "nope > 3"}, "where='nope > 3'"),
    ],
)
def test_approx_names_an_unknown_column_as_a_qbeast_error(
    small_table: Any, kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidOptionError, match=named) as raised:
        small_table.approx(fraction=1.0, **kwargs)
    assert "id, g, d" in str(raised.value) or "d, g, id" in str(raised.value)


def test_approx_refuses_the_average_of_a_date_naming_its_type(small_table: Any) -> None:
    with pytest.raises(UnsupportedInputError, match=r"avg\(d\): 'd' is a date column"):
        small_table.approx("avg(d)", fraction=1.0)
    # the same column's count and bounds are estimated as before
    rows = small_table.approx(["count(d) AS n", "min(d) AS lo"], fraction=1.0).rows()
    assert rows[0]["n"] == 400 and rows[0]["lo"] == dt.date(2024, 1, 1)


def test_approx_case_insensitive_names_are_accepted(small_table: Any) -> None:
    rows = small_table.approx("sum(ID) AS s", groupBy="G", fraction=1.0).rows()
    assert sum(r["s"] for r in rows) == sum(range(400))


def test_longs_a_double_cannot_tell_apart_are_refused_for_linear_indexing(
    spark: Any, tmp_path: Path
) -> None:
    """Distinct longs near 2**63 were refused with 'needs max > min, got min=...508
    max=...807': the linear index computes in doubles (as qbeast-spark does), where the
    two bounds are one number. The refusal now says so and names the way out, which works."""
    from pyspark.sql import functions as F

    top = 2**63 - 1
    path = str(tmp_path / "t")
    df = spark.range(300).select((F.lit(top) - F.col("id")).alias("v"))
    with pytest.raises(UnsupportedInputError, match=r"column 'v' holds values from .*hashing"):
        qc.write(df, path, columnsToIndex="v", cubeSize=100)
    assert not (tmp_path / "t").exists()
    qc.write(df, path, columnsToIndex="v:hashing", cubeSize=100)
    table = qc.QbeastTable.forPath(spark, path)
    assert sorted(r["v"] for r in table.toDF().collect()) == [top - i for i in range(299, -1, -1)]
    assert table.filter(f"v > {top - 10}").count() == 10


def test_a_timestamp_past_year_9999_is_refused_naming_the_value(
    spark: Any, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    df = spark.range(3).select(
        "id", F.expr("timestamp'10000-01-02 00:00:00' - make_interval(0,0,0,id)").alias("ts")
    )
    with pytest.raises(QbeastError, match="10000") as raised:
        qc.write(df, path, columnsToIndex="id", cubeSize=100, partitionBy="ts:daily")
    assert "not a daily partition" not in str(raised.value)
    assert not (tmp_path / "t").exists()
