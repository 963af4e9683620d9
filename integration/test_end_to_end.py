"""Write and read a table through a standalone Connect server, check with deltalake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qbeast_connect as qc
from tests.spark.helpers import deltalake_table, row_digest, spark_digest


def test_write_append_and_read_back_through_a_standalone_server(
    remote_spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    df = remote_spark.range(0, 6000, numPartitions=2).selectExpr(
        "id", "cast(id % 100 as double) as x", "concat('k', cast(id % 37 as string)) as k"
    )
    first = qc.write(df, path, columnsToIndex="x,k", cubeSize=500)
    more = df.selectExpr("id + 6000 as id", "x", "k")
    second = qc.write(more, path, mode="append")
    assert (first.version, second.version) == (0, 1)
    expected = spark_digest(df.unionByName(more))
    assert row_digest(deltalake_table(path)) == expected
    assert spark_digest(qc.QbeastTable.forPath(remote_spark, path).toDF()) == expected
