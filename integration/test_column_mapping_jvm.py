"""Qbeast tables with Delta column mapping, against Delta's JVM engine (issue #32).

Delta's column mapping (``delta.columnMapping.mode`` ``name`` or ``id``, protocol (2, 5))
stores data under physical column names; ``RENAME COLUMN`` and ``DROP COLUMN`` change only
the logical schema. On the server that runs Delta's engine:

* every read of ours (``QbeastTable``, samples, filters, ``format("qbeast")``) returns
  exactly Delta's rows under the logical names, after renames and drops of columns the
  index does not use;
* our appends and optimize write physical names (and field ids in ``id`` mode) that
  Delta reads back;
* renaming or dropping an indexed column makes reads that use the index and appends fail
  with ``IndexedColumnMissingError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import IndexedColumnMissingError, SchemaMismatchError
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import live_adds, spark_digest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        "cast(((id * 7919) % 10007) / 10.0 as double) as x",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "concat('k', cast(id % 31 as string)) as s",
        "named_struct('a', id % 5, 'b', concat('b', cast(id % 3 as string))) as nest",
    )


def _agree(dspark: Any, path: str) -> tuple[int, str]:
    """Delta's JVM, ``QbeastTable`` and ``format("qbeast")`` read the same rows."""
    delta_df = dspark.read.format("delta").load(path)
    delta = spark_digest(delta_df)
    table = qc.QbeastTable.forPath(dspark, path)
    assert table.schema.names == delta_df.schema.names
    ours = spark_digest(table.toDF())
    assert ours == delta, f"QbeastTable {ours} vs Delta {delta}"
    qbeast = dspark.read.format("qbeast").load(path)
    assert qbeast.schema.names == delta_df.schema.names
    assert spark_digest(qbeast) == delta, "format('qbeast')"
    return delta


def _exact_sample(dspark: Any, path: str, fraction: float) -> None:
    threshold = weight_from_fraction(fraction)
    expected = dspark.read.format("delta").load(path).filter(f"hash(x, d) < {threshold}")
    got = qc.QbeastTable.forPath(dspark, path).sample(fraction)
    assert spark_digest(got) == spark_digest(expected)


def _filter_agrees(dspark: Any, path: str, where: str) -> None:
    ours = qc.QbeastTable.forPath(dspark, path).filter(where)
    delta = dspark.read.format("delta").load(path).filter(where)
    assert spark_digest(ours) == spark_digest(delta)
    qbeast = dspark.read.format("qbeast").load(path).filter(where)
    assert spark_digest(qbeast) == spark_digest(delta)


def _enable_name_mapping(dspark: Any, path: str) -> None:
    dspark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )


def test_reads_after_renames_and_drops_of_columns_the_index_does_not_use(
    dspark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "cm_name")
    qc.write(_rows(dspark, 0, 2000), path, columnsToIndex="x,d", cubeSize=400)
    _enable_name_mapping(dspark, path)
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO label")
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN nest.a TO alpha")
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN nest TO inner_struct")
    dspark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN id")
    # a new column named like the dropped one: Delta gives it a new physical name, and
    # the old column's statistics must not prune it
    dspark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (id BIGINT)")
    assert dspark.read.format("delta").load(path).columns == [
        "x",
        "d",
        "label",
        "inner_struct",
        "id",
    ]
    count, _ = _agree(dspark, path)
    assert count == 2000
    _exact_sample(dspark, path, 0.25)
    _filter_agrees(dspark, path, "label = 'k3' AND x < 500")
    _filter_agrees(dspark, path, "id IS NULL AND inner_struct.alpha = 2")
    assert qc.QbeastTable.forPath(dspark, path).filter("id IS NULL").count() == 2000
    assert qc.QbeastTable.forPath(dspark, path).filter("label = 'k3'").count() == len(
        [i for i in range(2000) if i % 31 == 3]
    )


def test_renaming_or_dropping_an_indexed_column_is_refused(dspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "cm_indexed")
    qc.write(_rows(dspark, 0, 600), path, columnsToIndex="x,d", cubeSize=200)
    _enable_name_mapping(dspark, path)
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN x TO x2")
    table = qc.QbeastTable.forPath(dspark, path)
    # a read that does not use the index still works
    assert table.toDF().count() == 600
    with pytest.raises(IndexedColumnMissingError, match=r"x indexed by revision 1") as info:
        table.sample(0.3).count()
    assert info.value.code == "QBEAST_INDEXED_COLUMN_MISSING"
    with pytest.raises(IndexedColumnMissingError, match="x indexed"):
        table.filter("x2 > 3").count()
    with pytest.raises(IndexedColumnMissingError, match="x indexed"):
        qc.write(dspark.read.format("delta").load(path).limit(10), path, mode="append")
    # renamed back: the index is usable again
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN x2 TO x")
    _exact_sample(dspark, path, 0.3)
    dspark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN d")
    with pytest.raises(IndexedColumnMissingError, match="d indexed"):
        qc.QbeastTable.forPath(dspark, path).sample(0.5).count()


def test_a_table_delta_created_in_id_mode_converted_read_and_appended(
    dspark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "cm_id")
    dspark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, x DOUBLE, d DATE, s STRING, "
        "nest STRUCT<a: BIGINT, b: STRING>) USING delta TBLPROPERTIES "
        "('delta.columnMapping.mode' = 'id')"
    )
    _rows(dspark, 0, 1500).write.format("delta").mode("append").save(path)
    stats = [str(a.get("stats")) for a in live_adds(path).values()]
    assert stats and all('"col-' in text for text in stats)  # keyed by physical names
    qc.convertToQbeast(dspark, path, columnsToIndex="x,d", cubeSize=300, sourceFormat="delta")
    assert _agree(dspark, path)[0] == 1500
    _filter_agrees(dspark, path, "x < 100 AND s = 'k4'")
    qc.write(_rows(dspark, 1500, 2500), path, mode="append")
    assert _agree(dspark, path)[0] == 2500
    qc.QbeastTable.forPath(dspark, path).optimize(0)
    assert _agree(dspark, path)[0] == 2500
    _exact_sample(dspark, path, 0.2)
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO label")
    qc.write(_rows(dspark, 2500, 2600).withColumnRenamed("s", "label"), path, mode="append")
    assert _agree(dspark, path)[0] == 2600
    _filter_agrees(dspark, path, "label = 'k7' AND x > 10")


def test_appends_and_optimize_to_a_name_mapped_table_are_read_by_delta(
    dspark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "cm_append")
    qc.write(_rows(dspark, 0, 1000), path, columnsToIndex="x,d", cubeSize=300)
    _enable_name_mapping(dspark, path)
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO label")
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN nest.b TO beta")
    more = _rows(dspark, 1000, 1800).selectExpr(
        "id", "x", "d", "s as label", "named_struct('a', nest.a, 'beta', nest.b) as nest"
    )
    qc.write(more.where("id < 1600"), path, mode="append")
    # format("qbeast") writes resolve the mapping on the server too
    more.where("id >= 1600").write.format("qbeast").mode("append").save(path)
    count, _ = _agree(dspark, path)
    assert count == 1800
    # a column added by our write would need a new physical name and id: refused
    with pytest.raises(SchemaMismatchError, match="ADD COLUMNS"):
        qc.write(more.selectExpr("*", "1 as extra"), path, mode="append", mergeSchema="true")
    assert qc.QbeastTable.forPath(dspark, path).toDF().count() == 1800
    delta = dspark.read.format("delta").load(path)
    assert delta.filter("label = 'k5' AND nest.beta = 'b1'").count() == len(
        [i for i in range(1800) if i % 31 == 5 and i % 3 == 1]
    )
    # our files' stats are keyed by physical names: Delta prunes with them correctly
    _filter_agrees(dspark, path, "label = 'k9'")
    qc.QbeastTable.forPath(dspark, path).optimize()
    assert _agree(dspark, path)[0] == 1800
    _exact_sample(dspark, path, 0.4)


def test_deletion_vectors_on_a_name_mapped_table(dspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "cm_dv")
    qc.write(_rows(dspark, 0, 1500), path, columnsToIndex="x,d", cubeSize=300)
    _enable_name_mapping(dspark, path)
    dspark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    dspark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s TO label")
    dspark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 3")
    assert any(a.get("deletionVector") for a in live_adds(path).values())
    live = len([i for i in range(1500) if i % 7 != 3])
    assert _agree(dspark, path)[0] == live
    _exact_sample(dspark, path, 0.3)
    _filter_agrees(dspark, path, "label = 'k2' AND x < 600")
    # the upgraded protocol lists Delta's legacy writer features, which this table does
    # not use: we append to it and rewrite its files
    qc.write(_rows(dspark, 1500, 1800).withColumnRenamed("s", "label"), path, mode="append")
    assert _agree(dspark, path)[0] == live + 300
    qc.QbeastTable.forPath(dspark, path).optimize(0)
    assert _agree(dspark, path)[0] == live + 300
    _exact_sample(dspark, path, 0.3)
    # our delete and update by a renamed column's logical name write vectors Delta reads
    table = qc.QbeastTable.forPath(dspark, path)
    assert table.delete("label = 'k4'").num_deletion_vectors > 0
    result = qc.QbeastTable.forPath(dspark, path).update("label = 'k6'", {"label": "'six'"})
    assert result.num_deletion_vectors > 0
    rows = dspark.read.format("delta").load(path)
    assert rows.filter("label = 'k4'").count() == 0
    assert (
        rows.filter("label = 'six'").count()
        == len([i for i in range(1800) if i % 31 == 6 and not (i < 1500 and i % 7 == 3)])
        > 0
    )
    _agree(dspark, path)
    _exact_sample(dspark, path, 0.3)
