"""Our DELETE, UPDATE and MERGE give Delta's own answers (issue #33).

The same rows go into a plain Delta table (written by Delta's JVM) and into a qbeast table;
Delta's SQL changes the one, ``QbeastTable.delete/update/merge`` the other, step by step,
and after each step both read the same rows — NULLs in conditions and values included.
Delta's JVM also reads our table after each of our commits, and our sample stays exactly
the rows below the weight.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import spark_digest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        "case when id % 17 = 0 then null else cast(((id * 7919) % 10007) / 10.0 as double) "
        "end as x",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "case when id % 11 = 0 then null else concat('k', cast(id % 23 as string)) end as s",
    )


def _same(dspark: Any, delta: str, ours: str) -> None:
    expected = spark_digest(dspark.read.format("delta").load(delta))
    table = qc.QbeastTable.forPath(dspark, ours)
    assert spark_digest(table.toDF()) == expected
    assert spark_digest(dspark.read.format("delta").load(ours)) == expected
    threshold = weight_from_fraction(0.3)
    want = dspark.read.format("delta").load(delta).filter(f"hash(x, d) < {threshold}")
    assert spark_digest(table.sample(0.3)) == spark_digest(want)


def test_delete_update_merge_give_deltas_answers(dspark: Any, tmp_path: Path) -> None:
    delta, ours = str(tmp_path / "delta"), str(tmp_path / "ours")
    _rows(dspark, 0, 2500).write.format("delta").save(delta)
    qc.write(_rows(dspark, 0, 2500), ours, columnsToIndex="x,d", cubeSize=300)
    _same(dspark, delta, ours)

    condition = "x < 120 OR s = 'k3'"  # NULL x or s: not TRUE
    dspark.sql(f"DELETE FROM delta.`{delta}` WHERE {condition}")
    assert qc.QbeastTable.forPath(dspark, ours).delete(condition).num_deleted_rows > 0
    _same(dspark, delta, ours)

    dspark.sql(
        f"UPDATE delta.`{delta}` SET x = x * 2, s = NULL WHERE d < date'2024-03-01' AND x > 500"
    )
    qc.QbeastTable.forPath(dspark, ours).update(
        "d < date'2024-03-01' AND x > 500", {"x": "x * 2", "s": "NULL"}
    )
    _same(dspark, delta, ours)

    source = _rows(dspark, 2000, 3000).selectExpr(
        "id", "x + 1 as x", "d", "case when id % 3 = 0 then 'k3' else s end as s"
    )
    source.createOrReplaceTempView("changes")
    dspark.sql(
        f"MERGE INTO delta.`{delta}` t USING changes s ON t.id = s.id "
        "WHEN MATCHED AND s.s = 'k3' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.x = s.x, t.s = concat(t.s, '+') "
        "WHEN NOT MATCHED AND s.id % 4 <> 1 THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.id < 50 THEN UPDATE SET t.s = 'old'"
    )
    result = (
        qc.QbeastTable.forPath(dspark, ours)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.s = 'k3'")
        .whenMatchedUpdate(set={"x": "s.x", "s": "concat(t.s, '+')"})
        .whenNotMatchedInsertAll("s.id % 4 <> 1")
        .whenNotMatchedBySourceUpdate("t.id < 50", set={"s": "'old'"})
        .execute()
    )
    assert result.num_target_rows_inserted > 0 and result.num_target_rows_deleted > 0
    _same(dspark, delta, ours)
    history = dspark.sql(f"DESCRIBE HISTORY delta.`{ours}`").select("operation").collect()
    assert [r["operation"] for r in history][:3] == ["MERGE", "UPDATE", "DELETE"]
