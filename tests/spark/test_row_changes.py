"""``QbeastTable.delete`` and ``update``: Delta's answers, the index kept (issue #33).

Each change is checked against Spark computing the expected table from the same rows
(the condition TRUE: deleted or updated; FALSE or NULL: kept as it was), against
``deltalake`` reading the table, and against the index: every file still carries its
qbeast tags, the blocks count exactly the live rows, ``sample(f)`` is exactly the rows
whose weight is below f's, and files without a matching row are not rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

import qbeast_connect as qc
from qbeast_connect import row_changes
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import deltalake_table, live_adds, log_actions, row_digest, spark_digest


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        "cast(((id * 7919) % 10007) / 10.0 as double) as x",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "case when id % 11 = 0 then null else concat('k', cast(id % 23 as string)) end as s",
    )


def _write(spark: Any, path: str, n: int = 3000) -> None:
    qc.write(_rows(spark, 0, n), path, columnsToIndex="x,d", cubeSize=300)


def _block_rows(path: str) -> int:
    total = 0
    for add in live_adds(path).values():
        tags = add.get("tags") or {}
        assert tags.get("revision") not in (None, "0"), add["path"]
        total += sum(int(b["elementCount"]) for b in json.loads(tags["blocks"]))
    return total


def _check_index(spark: Any, path: str, expected: Any) -> None:
    """The table reads as ``expected`` everywhere and its index is exact."""
    digest = spark_digest(expected)
    table = qc.QbeastTable.forPath(spark, path)
    assert spark_digest(table.toDF()) == digest
    assert row_digest(deltalake_table(path)) == digest
    assert _block_rows(path) == digest[0]
    for fraction in (0.1, 0.4):
        threshold = weight_from_fraction(fraction)
        want = expected.filter(f"hash(x, d) < {threshold}")
        assert spark_digest(table.sample(fraction)) == spark_digest(want)
    where = "x BETWEEN 100 AND 300"
    assert spark_digest(table.filter(where)) == spark_digest(expected.filter(where))


def test_delete_matches_spark_and_keeps_the_index(spark: Any, table_path: str) -> None:
    _write(spark, table_path)
    before = set(live_adds(table_path))
    condition = "x < 40 AND s IS NOT NULL"
    result = qc.QbeastTable.forPath(spark, table_path).delete(condition)
    original = _rows(spark, 0, 3000)
    expected = original.where(f"NOT coalesce({condition}, false)")
    deleted = original.where(condition).count()
    assert deleted > 0
    assert result.num_deleted_rows == deleted
    assert result.version == 1 and result.num_removed_files >= 1
    assert result.num_copied_rows + deleted == sum(
        json.loads(a["stats"])["numRecords"]
        for p, a in live_adds(table_path, 0).items()
        if p not in live_adds(table_path)
    )
    after = set(live_adds(table_path))
    # only files that held a matching row were rewritten
    assert len(before - after) == result.num_removed_files < len(before)
    _check_index(spark, table_path, expected)
    commit = [a["commitInfo"] for v, a in log_actions(table_path) if v == 1 and "commitInfo" in a]
    assert commit[0]["operation"] == "DELETE"
    assert json.loads(commit[0]["operationParameters"]["predicate"]) == [condition]
    changes = [a for v, a in log_actions(table_path) if v == 1 and ("add" in a or "remove" in a)]
    assert all(next(iter(a.values()))["dataChange"] for a in changes)

    # NULL in the condition keeps the row; a Column condition; no match commits nothing
    table = qc.QbeastTable.forPath(spark, table_path)
    result = table.delete(F.col("s") == "k3")
    expected = expected.where("NOT coalesce(s = 'k3', false)")
    assert result.num_deleted_rows > 0
    assert table.delete("id < 0").version is None
    assert qc.QbeastTable.forPath(spark, table_path).version() == 2
    _check_index(spark, table_path, expected)
    # every row
    assert qc.QbeastTable.forPath(spark, table_path).delete().num_deleted_rows == expected.count()
    assert qc.QbeastTable.forPath(spark, table_path).toDF().count() == 0


def _sample_bytes(spark: Any, path: str, fraction: float) -> int:
    """Bytes of the files ``sample(fraction)`` reads."""
    sizes = {p.rsplit("/", 1)[-1]: int(a["size"]) for p, a in live_adds(path).items()}
    files = qc.QbeastTable.forPath(spark, path).sample(fraction).inputFiles()
    return sum(sizes[f.rsplit("/", 1)[-1]] for f in files)


def test_a_rewriting_delete_keeps_the_files_weight_bands(spark: Any, table_path: str) -> None:
    """The survivors of a rewritten file go back to their cubes and weight bands, as
    optimize rewrites them: ``sample(0.01)`` reads no more bytes than before the delete.
    Written as an append (before), they were laid out as new rows, and the sample read
    1.73x its bytes before. An update of a column the index does not use keeps every
    row's place too, and is rewritten the same way."""
    rows = _rows(spark, 0, 40000).withColumn("pad", F.expr("repeat('p', 40)"))
    qc.write(rows, table_path, columnsToIndex="x,d", cubeSize=500)
    before = {f: _sample_bytes(spark, table_path, f) for f in (0.01, 0.1)}
    condition = "x BETWEEN 100 AND 120"
    result = qc.QbeastTable.forPath(spark, table_path).delete(condition)
    assert result.num_deleted_rows == rows.where(condition).count() > 0
    assert result.num_removed_files > 10  # many files touched, their survivors rewritten
    for fraction, was in before.items():
        now = _sample_bytes(spark, table_path, fraction)
        assert now <= 1.05 * was, (fraction, now, was)
    expected = rows.where(f"NOT ({condition})")
    _check_index(spark, table_path, expected)
    commit = [a["commitInfo"] for v, a in log_actions(table_path) if v == 1 and "commitInfo" in a]
    assert commit[0]["operation"] == "DELETE"
    assert commit[0]["operationMetrics"]["numOutputRows"] == str(result.num_copied_rows)

    update = "x BETWEEN 500 AND 600 AND id % 2 = 0"
    result = qc.QbeastTable.forPath(spark, table_path).update(update, {"s": "'new'"})
    assert result.num_updated_rows == expected.where(update).count() > 0
    assert result.revision_id == 1 and result.num_removed_files > 10
    for fraction, was in before.items():
        now = _sample_bytes(spark, table_path, fraction)
        assert now <= 1.05 * was, (fraction, now, was)
    expected = expected.withColumn("s", F.expr(f"CASE WHEN {update} THEN 'new' ELSE s END"))
    _check_index(spark, table_path, expected)
    commit = [a["commitInfo"] for v, a in log_actions(table_path) if v == 2 and "commitInfo" in a]
    assert commit[0]["operation"] == "UPDATE"


def test_update_matches_spark_and_places_rows_as_an_append(spark: Any, table_path: str) -> None:
    _write(spark, table_path)
    table = qc.QbeastTable.forPath(spark, table_path)
    condition = "id % 5 = 0"
    # s is not indexed; x is, and its new values leave the index's space
    result = table.update(condition, {"s": "'changed'", "x": "x + 5000"})
    original = _rows(spark, 0, 3000)
    hit = F.coalesce(F.expr(condition), F.lit(False))
    expected = original.select(
        "id",
        F.when(hit, F.col("x") + 5000).otherwise(F.col("x")).alias("x"),
        "d",
        F.when(hit, F.lit("changed")).otherwise(F.col("s")).alias("s"),
    )
    assert result.num_updated_rows == 600
    assert result.revision_id == 2  # the new x values opened a revision, as an append would
    _check_index(spark, table_path, expected)
    commit = [a["commitInfo"] for v, a in log_actions(table_path) if "commitInfo" in a][-1]
    assert commit["operation"] == "UPDATE"
    # a value of another type is cast to the column's; NULL in the condition: untouched
    result = qc.QbeastTable.forPath(spark, table_path).update("s = 'k4'", {"x": "1"})
    expected = expected.select(
        "id",
        F.when(F.coalesce(F.expr("s = 'k4'"), F.lit(False)), F.lit(1.0))
        .otherwise(F.col("x"))
        .alias("x"),
        "d",
        "s",
    )
    assert result.num_updated_rows == expected.where("x = 1.0").count() > 0
    _check_index(spark, table_path, expected)


def test_bad_requests_are_refused_and_write_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(spark, path, 500)
    table = qc.QbeastTable.forPath(spark, path)
    with pytest.raises(qc.InvalidOptionError, match="does not have"):
        table.update("id = 1", {"nope": "1"})
    with pytest.raises(qc.InvalidOptionError, match="needs set"):
        table.update("id = 1", {})
    with pytest.raises(qc.InvalidOptionError, match="condition is empty"):
        table.delete("  ")
    with pytest.raises(qc.InvalidOptionError, match="SQL text, a Column or None"):
        table.delete(5)  # type: ignore[arg-type]
    with pytest.raises(qc.InvalidOptionError, match="cubeSize"):
        table.delete("id = 1", options={"cubeSize": "10"})
    assert qc.QbeastTable.forPath(spark, path).version() == 0
    # idempotent like writes: the same txnAppId/txnVersion commits once
    txn = {"txnAppId": "cleanup", "txnVersion": "1"}
    assert qc.QbeastTable.forPath(spark, path).delete("id < 10", options=txn).version == 1
    with pytest.warns(UserWarning, match="already committed txnVersion 1"):
        again = qc.QbeastTable.forPath(spark, path).delete("id < 20", options=txn)
    assert again.version is None
    assert qc.QbeastTable.forPath(spark, path).toDF().count() == 490


def test_a_file_changed_meanwhile_is_a_conflict(
    spark: Any, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(spark, table_path, 1000)
    original = row_changes._touched
    calls: list[int] = []

    def racing(table: Any, where: Any, condition: Any) -> Any:
        found = original(table, where, condition)
        if not calls:
            calls.append(1)
            # another writer deletes rows of the same files before this one commits
            qc.QbeastTable.forPath(spark, table_path).delete("id = 7")
        return found

    monkeypatch.setattr(row_changes, "_touched", racing)
    # found by the commit (Delta's rule: both remove the same file), nothing of it visible
    with pytest.raises(qc.CommitConflictError, match="ConcurrentDeleteDelete"):
        qc.QbeastTable.forPath(spark, table_path).delete("id <= 10")
    monkeypatch.undo()
    assert qc.QbeastTable.forPath(spark, table_path).version() == 1
    ids = {r["id"] for r in qc.QbeastTable.forPath(spark, table_path).toDF().collect()}
    assert ids == set(range(1000)) - {7}


def _source(spark: Any, start: int, end: int) -> Any:
    """Rows for a merge: the same ids as the table's where they overlap, new x values."""
    return _rows(spark, start, end).selectExpr("id", "x + 0.5 as x", "d", "s")


def test_merge_matches_spark_and_keeps_the_index(spark: Any, table_path: str) -> None:
    _write(spark, table_path, 2000)
    before = set(live_adds(table_path))
    source = _source(spark, 1500, 2500)
    result = (
        qc.QbeastTable.forPath(spark, table_path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.s = 'k1'")  # NULL: not TRUE, the next clause decides
        .whenMatchedUpdate(set={"x": "s.x", "s": "'upd'"})
        .whenNotMatchedInsertAll("s.id % 2 = 0")
        .whenNotMatchedBySourceDelete("t.id < 100")
        .execute()
    )
    target = _rows(spark, 0, 2000)
    matched = (
        target.alias("t")
        .join(source.alias("s"), F.expr("t.id = s.id"))
        .where("NOT coalesce(s.s = 'k1', false)")
        .selectExpr("t.id", "s.x", "t.d", "'upd' as s")
    )
    expected = (
        target.where("id >= 100 AND id < 1500")
        .unionByName(matched)
        .unionByName(source.where("id >= 2000 AND id % 2 = 0"))
    )
    deleted_matched = source.where("id < 2000 AND s = 'k1'").count()
    assert result.num_target_rows_deleted == deleted_matched + 100
    assert result.num_target_rows_updated == 500 - deleted_matched
    assert result.num_target_rows_inserted == 250
    assert result.version == 1
    _check_index(spark, table_path, expected)
    commit = [a["commitInfo"] for v, a in log_actions(table_path) if "commitInfo" in a][-1]
    assert commit["operation"] == "MERGE"
    assert json.loads(commit["operationParameters"]["predicate"]) == ["t.id = s.id"]
    # files without a changed row stayed
    assert before & set(live_adds(table_path))


def test_merge_inserts_only_and_refuses_ambiguous_matches(spark: Any, table_path: str) -> None:
    _write(spark, table_path, 1000)
    before = set(live_adds(table_path))
    table = qc.QbeastTable.forPath(spark, table_path)
    result = (
        table.merge(_source(spark, 900, 1100), "target.id = source.id")
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert (result.num_target_rows_inserted, result.num_removed_files) == (100, 0)
    assert before <= set(live_adds(table_path))  # an insert rewrites no file
    expected = _rows(spark, 0, 1000).unionByName(_source(spark, 1000, 1100))
    _check_index(spark, table_path, expected)
    twice = _source(spark, 10, 20).unionByName(_source(spark, 15, 16))
    with pytest.raises(qc.UnsupportedOperationError, match="several source rows match"):
        (
            qc.QbeastTable.forPath(spark, table_path)
            .alias("t")
            .merge(twice.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .execute()
        )
    with pytest.raises(qc.InvalidOptionError, match="at least one clause"):
        qc.QbeastTable.forPath(spark, table_path).merge(twice, "true").execute()
    with pytest.raises(qc.InvalidOptionError, match="can never apply"):
        (
            qc.QbeastTable.forPath(spark, table_path)
            .merge(twice, "target.id = source.id")
            .whenMatchedDelete()
            .whenMatchedUpdateAll()
        )
    assert qc.QbeastTable.forPath(spark, table_path).version() == 1


def test_merge_reads_only_the_files_the_source_keys_can_match(spark: Any, table_path: str) -> None:
    """Late events for five days (the index's ``d``): the merge skips the files whose
    ``d`` range misses the source's, and its rows are still Spark's."""
    _write(spark, table_path, 3000)
    late = _rows(spark, 0, 3000).where("d between date'2024-03-01' and date'2024-03-05'")
    source = late.selectExpr("id", "x + 0.5 as x", "d", "'late' as s").unionByName(
        spark.range(5000, 5010).selectExpr("id", "1.0 as x", "date'2024-03-03' as d", "'new' as s")
    )
    result = (
        qc.QbeastTable.forPath(spark, table_path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id AND t.d = s.d")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert result.num_target_files_after_skipping < result.num_target_files_before_skipping
    assert result.num_target_rows_updated == late.count()
    assert result.num_target_rows_inserted == 10
    target = _rows(spark, 0, 3000)
    expected = target.join(late.select("id"), "id", "left_anti").unionByName(source)
    _check_index(spark, table_path, expected)


def test_merge_skipping_keeps_every_row_a_clause_needs(spark: Any, table_path: str) -> None:
    """No skipping where a NOT MATCHED BY SOURCE clause needs every target row, nor for a
    Column condition; a source whose keys are all NULL matches nothing."""
    _write(spark, table_path, 1000)
    table = qc.QbeastTable.forPath(spark, table_path)
    nulls = _source(spark, 0, 5).selectExpr("cast(null as bigint) as id", "x", "d", "s")
    inserted = (
        table.alias("t")
        .merge(nulls.alias("s"), "t.id = s.id")
        .whenMatchedDelete()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert (inserted.num_target_files_after_skipping, inserted.num_target_rows_inserted) == (0, 5)
    by_source = (
        qc.QbeastTable.forPath(spark, table_path)
        .alias("t")
        .merge(_source(spark, 10, 20).alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"s": "'m'"})
        .whenNotMatchedBySourceDelete("t.id >= 990")
        .execute()
    )
    assert by_source.num_target_files_after_skipping == by_source.num_target_files_before_skipping
    assert by_source.num_target_rows_deleted == 10
    column = (
        qc.QbeastTable.forPath(spark, table_path)
        .alias("t")
        .merge(_source(spark, 30, 31).alias("s"), F.expr("t.id = s.id"))
        .whenMatchedDelete()
        .execute()
    )
    assert column.num_target_files_after_skipping == column.num_target_files_before_skipping
    expected = (
        _rows(spark, 0, 1000)
        .where("id < 990 AND id != 30")
        .selectExpr("id", "x", "d", "case when id >= 10 and id < 20 then 'm' else s end as s")
        .unionByName(nulls)
    )
    _check_index(spark, table_path, expected)
