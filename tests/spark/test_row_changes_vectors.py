"""Deletes that write deletion vectors (issues #33 and #32), on a stock server.

A qbeast table created with ``delta.enableDeletionVectors=true`` gets the
``deletionVectors`` feature (reader 3 / writer 7), and ``QbeastTable.delete`` on it marks the
matching rows in vectors, as Delta's DELETE does on such a table: no data file is written,
each file keeps its ``add`` and its qbeast tags, and every reader leaves the rows out:
ours, and the files read with pyarrow minus the rows their vectors list (``deltalake``
cannot read vectors; Delta's JVM reads these tables in
``integration/test_deletion_vectors_qbeast.py``). ``sample(f)`` stays exactly the live rows below f's weight. Later
appends, updates, optimize and vacuum work on the table; a table without the property
still rewrites (``test_row_changes``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from server_plugin.delta.deletion_vectors import read_deletion_vector
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage
from tests.spark.helpers import live_adds, log_actions, row_digest, spark_digest

VECTORS = {"delta.enableDeletionVectors": "true"}


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        "cast(((id * 7919) % 10007) / 10.0 as double) as x",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "case when id % 11 = 0 then null else concat('k', cast(id % 23 as string)) end as s",
    )


def _files_minus_vectors(path: str) -> pa.Table:
    """The live rows, read file by file with pyarrow, leaving out the rows each file's
    vector lists."""
    storage = LocalStorage(path)
    parts = []
    for add in read_snapshot(storage).files.values():
        rows = pq.read_table(Path(path) / add.path)
        if add.deletion_vector is not None:
            gone = read_deletion_vector(storage, add.deletion_vector)
            keep = np.ones(rows.num_rows, dtype=bool)
            keep[gone.astype(np.int64)] = False
            rows = rows.filter(pa.array(keep))
        parts.append(rows)
    # files written by different jobs may differ in nullability only
    schema = pa.schema([f.with_nullable(True) for f in parts[0].schema])
    return pa.concat_tables([p.cast(schema) for p in parts])


def _data_files(path: str) -> set[str]:
    return {p.name for p in Path(path).glob("*.parquet")}


def _check(spark: Any, path: str, expected: Any) -> None:
    """Every reader sees ``expected``; samples and a filter are exact."""
    digest = spark_digest(expected)
    table = qc.QbeastTable.forPath(spark, path)
    assert spark_digest(table.toDF()) == digest
    assert spark_digest(spark.read.format("qbeast").load(path)) == digest
    assert row_digest(_files_minus_vectors(path)) == digest
    for fraction in (0.1, 0.4):
        want = expected.filter(f"hash(x, d) < {weight_from_fraction(fraction)}")
        assert spark_digest(table.sample(fraction)) == spark_digest(want)
    where = "x BETWEEN 100 AND 300"
    assert spark_digest(table.filter(where)) == spark_digest(expected.filter(where))


def test_a_delete_marks_rows_in_vectors_and_writes_no_data_file(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, 3000), table_path, columnsToIndex="x,d", cubeSize=300, **VECTORS)
    ((_, first),) = [(v, a) for v, a in log_actions(table_path) if "protocol" in a]
    assert first["protocol"] == {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors"],
    }
    files, adds = _data_files(table_path), live_adds(table_path)
    condition = "s = 'k3' OR id BETWEEN 100 AND 140"  # s is NULL on some rows: they stay
    original = _rows(spark, 0, 3000)
    expected = original.where(f"NOT coalesce({condition}, false)")
    result = qc.QbeastTable.forPath(spark, table_path).delete(condition)
    assert result.num_deleted_rows == original.where(condition).count() > 0
    assert result.num_added_files == 0 and result.num_deletion_vectors > 0
    assert _data_files(table_path) == files  # nothing rewritten
    after = live_adds(table_path)
    assert set(after) == set(adds) - set()  # the same files, a vector on those that matched
    marked = {p for p, a in after.items() if a.get("deletionVector")}
    assert len(marked) == result.num_deletion_vectors
    assert all(after[p]["tags"] == adds[p]["tags"] for p in after)
    assert sum(after[p]["deletionVector"]["cardinality"] for p in marked) == (
        result.num_deleted_rows
    )
    (info,) = [a["commitInfo"] for v, a in log_actions(table_path) if v == 1 and "commitInfo" in a]
    assert info["operation"] == "DELETE"
    assert json.loads(info["operationParameters"]["predicate"]) == [condition]
    _check(spark, table_path, expected)
    metrics = qc.QbeastTable.forPath(spark, table_path).getIndexMetrics()
    assert metrics.deleted_rows == result.num_deleted_rows

    # a second delete on an indexed column joins the old vectors; deleted rows are not
    # counted twice; no match commits nothing
    table = qc.QbeastTable.forPath(spark, table_path)
    again = table.delete("x < 60 OR id BETWEEN 120 AND 160")
    expected = expected.where("NOT (x < 60 OR id BETWEEN 120 AND 160)")
    assert again.num_deleted_rows == 3000 - result.num_deleted_rows - expected.count()
    assert table.delete("id < 0").version is None
    assert qc.QbeastTable.forPath(spark, table_path).version() == 2
    assert _data_files(table_path) == files
    _check(spark, table_path, expected)


def test_vector_tables_take_appends_updates_optimize_and_vacuum(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, 2000), table_path, columnsToIndex="x,d", cubeSize=300, **VECTORS)
    table = qc.QbeastTable.forPath(spark, table_path)
    options = {"txnAppId": "cleanup", "txnVersion": "1"}
    first = table.delete("id % 5 = 0", options=options)
    assert first.version == 1 and first.num_deleted_rows == 400
    # the same transaction again: already committed, nothing happens
    with pytest.warns(UserWarning, match="already committed txnVersion 1"):
        again = qc.QbeastTable.forPath(spark, table_path).delete("id % 5 = 1", options)
    assert again.version is None
    expected = _rows(spark, 0, 2000).where("id % 5 != 0")
    qc.write(_rows(spark, 2000, 2600), table_path, mode="append")
    expected = expected.unionByName(_rows(spark, 2000, 2600))
    table = qc.QbeastTable.forPath(spark, table_path)
    table.update("id % 5 = 2", {"s": "'updated'"})
    expected = expected.selectExpr(
        "id", "x", "d", "case when id % 5 = 2 then 'updated' else s end as s"
    )
    _check(spark, table_path, expected)
    # vacuum keeps the vector files live files name
    qc.QbeastTable.forPath(spark, table_path).vacuum(0, enforceRetentionDuration=False)
    _check(spark, table_path, expected)
    # optimize rewrites the files that carry vectors: the deleted rows stay deleted
    qc.QbeastTable.forPath(spark, table_path).optimize()
    _check(spark, table_path, expected)


def test_turning_vectors_on_for_an_existing_table_is_refused(spark: Any, table_path: str) -> None:
    qc.write(_rows(spark, 0, 200), table_path, columnsToIndex="x,d", cubeSize=300)
    with pytest.raises(qc.UnsupportedProtocolError, match="ALTER TABLE"):
        qc.write(
            _rows(spark, 0, 200), table_path, columnsToIndex="x,d", mode="overwrite", **VECTORS
        )
    assert qc.QbeastTable.forPath(spark, table_path).version() == 0
    # deletes on the table without vectors still rewrite files
    result = qc.QbeastTable.forPath(spark, table_path).delete("id < 10")
    assert result.num_deletion_vectors == 0 and result.num_removed_files >= 1
    assert not [a for a in live_adds(table_path).values() if a.get("deletionVector")]


def test_an_update_marks_old_rows_in_vectors_and_appends_the_new_ones(
    spark: Any, table_path: str
) -> None:
    """Delta's UPDATE on a table with vectors: the matched rows leave their files through
    vectors and their new versions are appended; files without a match are untouched. An
    indexed value moved outside the space opens a revision, as an append would."""
    qc.write(_rows(spark, 0, 3000), table_path, columnsToIndex="x,d", cubeSize=300, **VECTORS)
    files, adds = _data_files(table_path), live_adds(table_path)
    table = qc.QbeastTable.forPath(spark, table_path)
    result = table.update("s = 'k5' OR id < 20", {"s": "'changed'", "x": "x + 5000"})
    original = _rows(spark, 0, 3000)
    matched = original.where("s = 'k5' OR id < 20").count()
    assert result.num_updated_rows == matched > 0
    assert result.num_deletion_vectors > 0 and result.num_removed_files == 0
    assert result.revision_id == 2  # x + 5000 lies outside revision 1's space
    expected = original.selectExpr(
        "id",
        "case when coalesce(s = 'k5' OR id < 20, false) then x + 5000 else x end as x",
        "d",
        "case when coalesce(s = 'k5' OR id < 20, false) then 'changed' else s end as s",
    )
    after = live_adds(table_path)
    assert set(adds) <= set(after)  # every old file stays, some with a vector
    assert files <= _data_files(table_path)
    new = set(after) - set(adds)
    assert sum(json.loads(after[p]["stats"])["numRecords"] for p in new) == matched
    (info,) = [a["commitInfo"] for v, a in log_actions(table_path) if v == 1 and "commitInfo" in a]
    assert info["operation"] == "UPDATE"
    _check(spark, table_path, expected)
    # an update of rows already updated: their new files get vectors in turn
    again = qc.QbeastTable.forPath(spark, table_path).update("s = 'changed'", {"s": "'twice'"})
    assert again.num_updated_rows == matched
    expected = expected.selectExpr(
        "id", "x", "d", "case when s = 'changed' then 'twice' else s end as s"
    )
    _check(spark, table_path, expected)


def test_a_merge_marks_changed_rows_in_vectors_and_writes_only_new_rows(
    spark: Any, table_path: str
) -> None:
    """Delta's MERGE on a table with vectors: matched rows that are updated or deleted
    leave their files through vectors, also files that already carry one (their live rows'
    positions come from the plugin's reader), and only updated and inserted rows are
    written."""
    qc.write(_rows(spark, 0, 3000), table_path, columnsToIndex="x,d", cubeSize=300, **VECTORS)
    qc.QbeastTable.forPath(spark, table_path).delete("id % 10 = 1")  # vectors on most files
    files = _data_files(table_path)
    source = (
        _rows(spark, 0, 3400)
        .where("id % 7 = 2 OR id >= 3000")
        .selectExpr("id", "x + 1 AS x", "d", "concat(coalesce(s, 'none'), '!') AS s")
    )
    table = qc.QbeastTable.forPath(spark, table_path)
    result = (
        table.alias("t")
        .merge(source.alias("src"), "t.id = src.id")
        .whenMatchedDelete("src.id % 3 = 0")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    kept = _rows(spark, 0, 3000).where("id % 10 != 1")
    matched = kept.where("id % 7 = 2")
    # source rows whose target row the first delete took are inserted again
    inserted = source.join(kept.select("id"), on="id", how="left_anti")
    assert result.num_target_rows_deleted == matched.where("id % 3 = 0").count() > 0
    assert result.num_target_rows_updated == matched.where("id % 3 != 0").count() > 0
    assert result.num_target_rows_inserted == inserted.count() > 400
    assert result.num_deletion_vectors > 0 and result.num_removed_files == 0
    assert result.num_target_rows_copied == 0
    assert files <= _data_files(table_path)  # no file rewritten
    new = set(live_adds(table_path)) - set(live_adds(table_path, 1))
    assert sum(json.loads(live_adds(table_path)[p]["stats"])["numRecords"] for p in new) == (
        result.num_target_rows_updated + result.num_target_rows_inserted
    )
    updated = source.where("id % 3 != 0").join(kept.select("id"), on="id", how="left_semi")
    expected = kept.where("id % 7 != 2").unionByName(updated).unionByName(inserted)
    _check(spark, table_path, expected)


def _sample_bytes(spark: Any, path: str, fraction: float) -> int:
    sizes = {p.rsplit("/", 1)[-1]: int(a["size"]) for p, a in live_adds(path).items()}
    files = qc.QbeastTable.forPath(spark, path).sample(fraction).inputFiles()
    return sum(sizes[f.rsplit("/", 1)[-1]] for f in files)


def test_rows_an_update_or_merge_writes_are_cut_in_fine_weight_bands(
    spark: Any, table_path: str
) -> None:
    """The rows an update or merge appends join a tree many times their number: their
    files are cut in the fine weight bands of a compaction's, so ``sample(0.01)`` reads the
    few of them below its weight, not one file of them all. Before, both changes' rows were
    one file each, read whole: the sample read 2.1x its bytes before."""
    rows = _rows(spark, 0, 40000).withColumn("pad", F.expr("repeat('p', 40)"))
    qc.write(rows, table_path, columnsToIndex="x,d", cubeSize=2000, **VECTORS)
    before = _sample_bytes(spark, table_path, 0.01)
    table = qc.QbeastTable.forPath(spark, table_path)
    assert table.update("id % 40 = 3", {"s": "'updated'"}).num_updated_rows == 1000
    source = _rows(spark, 39000, 41000).withColumn("pad", F.lit("q"))
    merged = (
        qc.QbeastTable.forPath(spark, table_path).alias("t").merge(source.alias("u"), "t.id = u.id")
    )
    merged.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    after = _sample_bytes(spark, table_path, 0.01)
    assert after <= 1.5 * before, (after, before)
    expected = (
        rows.selectExpr(
            "id", "x", "d", "case when id % 40 = 3 then 'updated' else s end as s", "pad"
        )
        .where("id < 39000")
        .unionByName(source)
    )
    table = qc.QbeastTable.forPath(spark, table_path)
    assert spark_digest(table.toDF()) == spark_digest(expected)
    for fraction in (0.01, 0.1):
        want = expected.filter(f"hash(x, d) < {weight_from_fraction(fraction)}")
        assert spark_digest(table.sample(fraction)) == spark_digest(want)
