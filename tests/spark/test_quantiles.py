"""computeQuantilesForColumn: quantiles for the ``quantiles`` transformer, on skewed data."""

from __future__ import annotations

import json
from typing import Any

import pytest

import qbeast_connect as qc
from tests.spark.helpers import deltalake_table, row_digest, spark_digest


def _skewed(spark: Any, n: int = 20_000) -> Any:
    # x = 1000 * u^6: most values crowd near 0; y uniform
    return spark.range(0, n, numPartitions=2).selectExpr(
        "id",
        "pow(rand(3), 6) * 1000 as x",
        "rand(4) * 1000 as y",
        "concat('k', lpad(cast(cast(pow(rand(5), 3) * 5000 as int) as string), 5, '0')) as s",
        "date_add(date'2020-01-01', cast(id % 50 as int)) as d",
    )


def test_numeric_quantiles_follow_the_distribution(spark: Any) -> None:
    df = _skewed(spark)
    qs = qc.computeQuantilesForColumn(df, "x", numberOfQuantiles=11, relativeError=0.01)
    exact = df.agg({"x": "min"}).first()[0], df.agg({"x": "max"}).first()[0]
    assert qs[0] == exact[0] and qs[-1] == exact[1]
    assert qs == sorted(set(qs)) and 3 <= len(qs) <= 13
    median = qs[len(qs) // 2]
    below = df.where(f"x <= {median!r}").count() / 20_000
    assert 0.35 <= below <= 0.65, (median, below)
    # the median of 1000 * u^6 is 1000 / 64 = 15.6, far below the linear middle (500)
    assert median < 100


def test_numeric_quantiles_skip_nan_and_infinity(spark: Any) -> None:
    df = spark.range(0, 2000, numPartitions=2).selectExpr(
        "CASE id % 4 WHEN 0 THEN double('NaN') WHEN 1 THEN double('Infinity') "
        "WHEN 2 THEN double('-Infinity') ELSE cast(id as double) END as x"
    )
    qs = qc.computeQuantilesForColumn(df, "x", numberOfQuantiles=5, relativeError=0.0)
    assert qs[0] == 3.0 and qs[-1] == 1999.0 and qs == sorted(set(qs)) and len(qs) == 5


def test_string_quantiles(spark: Any) -> None:
    df = _skewed(spark)
    qs = qc.computeQuantilesForColumn(df, "s", numberOfQuantiles=5)
    assert qs == sorted(set(qs))
    bounds = df.selectExpr("min(s)", "max(s)").first()
    assert qs[0] == bounds[0] and qs[-1] == bounds[1]


def test_quantiles_make_a_shallower_tree_on_skewed_data(spark: Any, tmp_path: Any) -> None:
    df = _skewed(spark)
    linear = str(tmp_path / "linear")
    qc.write(df, linear, columnsToIndex="x,y", cubeSize=500)
    stats = json.dumps({"x_quantiles": qc.computeQuantilesForColumn(df, "x")})
    cdf = str(tmp_path / "cdf")
    qc.write(df, cdf, columnsToIndex="x:quantiles,y", cubeSize=500, columnStats=stats)
    h_linear = qc.QbeastTable.forPath(spark, linear).getIndexMetrics().height
    h_cdf = qc.QbeastTable.forPath(spark, cdf).getIndexMetrics().height
    assert h_cdf < h_linear, (h_cdf, h_linear)
    assert row_digest(deltalake_table(cdf)) == spark_digest(df)
    # a range filter on the quantile-indexed column returns the same rows as Spark
    table = qc.QbeastTable.forPath(spark, cdf)
    where = "x >= 1.5 AND x < 20.0 AND y < 300"
    assert table.filter(where).count() == df.where(where).count()
    assert table.explainScan(where=where).selected_files < table.explainScan().selected_files


@pytest.mark.parametrize(
    ("column", "kwargs", "match"),
    [
        ("nope", {}, "no column 'nope'"),
        ("d", {}, "type date"),
        ("x", {"numberOfQuantiles": 1}, "numberOfQuantiles"),
        ("x", {"relativeError": 1.5}, "relativeError"),
    ],
)
def test_quantile_errors(spark: Any, column: str, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(qc.InvalidOptionError, match=match):
        qc.computeQuantilesForColumn(_skewed(spark, 100), column, **kwargs)


def test_quantiles_of_an_all_null_column(spark: Any) -> None:
    df = spark.range(0, 10).selectExpr("id", "cast(null as double) as x")
    with pytest.raises(qc.InvalidOptionError, match="no non-null value"):
        qc.computeQuantilesForColumn(df, "x")
