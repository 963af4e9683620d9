"""Row-level changes on a time-partitioned table (issue #33): each partition is a tree of its
own, so a changed row lands in the partition its (possibly new) time names, and every
partition's index stays exact.

Checked against Spark computing the expected rows, against ``deltalake`` reading the table,
and against the index: ``sample(f)`` is exactly the rows whose weight is below f's, and
each file's blocks count its live rows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import deltalake_table, live_adds, row_digest, spark_digest

#: The partition column ``partitionBy="ts:daily"`` adds, and the rows' columns.
PARTITION = "ts_partition"
COLUMNS = ["id", "x", "s", "ts"]


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        "cast(((id * 7919) % 10007) / 10.0 as double) as x",
        "case when id % 7 = 0 then null else concat('k', cast(id % 13 as string)) end as s",
        # four days of events, ten minutes apart
        "timestamp_seconds(1700000000 + id * 300) as ts",
    )


def _partitions(path: str) -> dict[str, int]:
    """Live rows per partition value, from the blocks of every file (checked against the
    file's own row count)."""
    counts: dict[str, int] = {}
    for add in live_adds(path).values():
        tags = add["tags"]
        rows = sum(int(b["elementCount"]) for b in json.loads(tags["blocks"]))
        assert rows == json.loads(add["stats"])["numRecords"], add["path"]
        value = add["partitionValues"][PARTITION]
        counts[value] = counts.get(value, 0) + rows
    return counts


def _check(spark: Any, path: str, expected: Any) -> None:
    digest = spark_digest(expected, COLUMNS)
    table = qc.QbeastTable.forPath(spark, path)
    assert spark_digest(table.toDF(), COLUMNS) == digest
    assert row_digest(deltalake_table(path), COLUMNS) == digest
    per_day = {
        r["day"]: r["n"]
        for r in expected.selectExpr("date_format(ts, 'yyyy-MM-dd') as day")
        .groupBy("day")
        .count()
        .withColumnRenamed("count", "n")
        .collect()
    }
    assert _partitions(path) == per_day
    for fraction in (0.2, 0.5):
        want = expected.filter(f"hash(x) < {weight_from_fraction(fraction)}")
        assert spark_digest(table.sample(fraction), COLUMNS) == spark_digest(want, COLUMNS)
    where = "x BETWEEN 100 AND 400"
    assert spark_digest(table.filter(where), COLUMNS) == spark_digest(
        expected.filter(where), COLUMNS
    )


def test_delete_update_merge_on_a_time_partitioned_table(spark: Any, table_path: str) -> None:
    original = _rows(spark, 0, 1200)
    qc.write(original, table_path, columnsToIndex="x", cubeSize=100, partitionBy="ts:daily")
    table = qc.QbeastTable.forPath(spark, table_path)
    before = set(live_adds(table_path))
    days_before = _partitions(table_path)
    assert len(days_before) == 6

    # a delete inside one day rewrites only that day's files
    deleted = table.delete("ts < timestamp'2023-11-15 00:00:00' AND x < 500")
    expected = original.where(
        "NOT coalesce(ts < timestamp'2023-11-15 00:00:00' AND x < 500, false)"
    )
    assert deleted.num_deleted_rows == original.count() - expected.count() > 0
    removed = before - set(live_adds(table_path))
    assert len(removed) == deleted.num_removed_files > 0
    first_day = min(days_before)
    assert {
        a["partitionValues"][PARTITION] for a in (live_adds(table_path, 0)[p] for p in removed)
    } == {first_day}
    _check(spark, table_path, expected)

    # an update that moves rows to another day: they land in that day's partition
    moved = "id % 10 = 3"
    updated = qc.QbeastTable.forPath(spark, table_path).update(
        moved, {"ts": "ts + INTERVAL 1 DAY", "s": "'moved'"}
    )
    expected = expected.selectExpr(
        "id",
        "x",
        f"case when {moved} then 'moved' else s end as s",
        f"case when {moved} then ts + INTERVAL 1 DAY else ts end as ts",
    )
    assert updated.num_updated_rows == expected.where("s = 'moved'").count() > 0
    _check(spark, table_path, expected)
    assert len(_partitions(table_path)) == 7  # the last day's rows moved to a new one

    # a merge: updates, deletes and inserts across days
    source = _rows(spark, 1100, 1300).selectExpr("id", "x + 1 as x", "'src' as s", "ts")
    merged = (
        qc.QbeastTable.forPath(spark, table_path)
        .alias("t")
        .merge(source.alias("u"), "t.id = u.id")
        .whenMatchedDelete("u.id % 2 = 0")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    kept = expected.join(source.select("id"), "id", "left_anti")
    odd = source.where("id % 2 = 1").join(expected.select("id"), "id", "left_semi")
    new = source.join(expected.select("id"), "id", "left_anti")
    expected = kept.unionByName(odd).unionByName(new)
    assert (merged.num_target_rows_inserted, merged.num_target_rows_updated) == (
        new.count(),
        odd.count(),
    )
    _check(spark, table_path, expected)


def test_the_computed_partition_column_cannot_be_set(spark: Any, table_path: str) -> None:
    qc.write(_rows(spark, 0, 200), table_path, columnsToIndex="x", partitionBy="ts:daily")
    table = qc.QbeastTable.forPath(spark, table_path)
    with pytest.raises(qc.InvalidOptionError, match="computes from 'ts'; set 'ts' instead"):
        table.update("id = 1", {"TS_partition": "'2020-01-01'"})
    source = _rows(spark, 0, 5).selectExpr("*", "'2020-01-01' as ts_partition")
    with pytest.raises(qc.InvalidOptionError, match="partitionBy='ts:daily' computes"):
        (
            table.alias("t")
            .merge(source.alias("u"), "t.id = u.id")
            .whenMatchedUpdate(set={"ts_partition": "u.ts_partition"})
            .execute()
        )
    # ...All takes every column but the computed one, which follows the new time
    moved = _rows(spark, 0, 5).selectExpr("id", "x", "s", "ts - INTERVAL 30 DAYS as ts")
    table.alias("t").merge(moved.alias("u"), "t.id = u.id").whenMatchedUpdateAll().execute()
    assert qc.QbeastTable.forPath(spark, table_path).version() == 1
    assert sorted(_partitions(table_path)) == ["2023-10-15", "2023-11-14", "2023-11-15"]
