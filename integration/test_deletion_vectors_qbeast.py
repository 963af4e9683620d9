"""Qbeast tables with deletion vectors written by Delta's JVM (issue #32).

Delta's DELETE, UPDATE and MERGE on a table with ``delta.enableDeletionVectors=true`` mark
rows deleted in a vector instead of rewriting the file; the file keeps its ``add`` (and so
its qbeast tags) with a ``deletionVector``. On the server that runs Delta's engine:

* every read of ours (``QbeastTable``, samples, filters, ``format("qbeast")``, time travel)
  leaves out exactly the rows Delta leaves out, at every version;
* the index stays: the files keep their tags, ``sample(f)`` is exactly the rows Delta reads
  whose weight is below f's, and ``getIndexMetrics`` reports the deleted rows;
* we append to such a table, write its checkpoints (with the vectors), rewrite files that
  carry vectors (``optimize(0)``: the deleted rows stay deleted, the vectors go with the
  files) and vacuum it without losing a vector a live file needs; Delta reads all of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from server_plugin.delta.deletion_vectors import DeletionVectorDescriptor
from tests.spark.helpers import live_adds, spark_digest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        "cast(((id * 7919) % 10007) / 10.0 as double) as x",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "concat('k', cast(id % 31 as string)) as s",
    )


def _agree(dspark: Any, path: str, version: int | None = None) -> tuple[int, str]:
    """Delta's JVM, ``QbeastTable`` and ``format("qbeast")`` read the same rows."""
    reader = dspark.read.format("delta")
    qreader = dspark.read.format("qbeast")
    if version is not None:
        reader = reader.option("versionAsOf", version)
        qreader = qreader.option("versionAsOf", version)
    delta = spark_digest(reader.load(path))
    ours = spark_digest(qc.QbeastTable.forPath(dspark, path, versionAsOf=version).toDF())
    assert ours == delta, f"version {version}: QbeastTable {ours} vs Delta {delta}"
    assert spark_digest(qreader.load(path)) == delta, f"version {version}: format('qbeast')"
    return delta


def _delta_rows(dspark: Any, path: str) -> tuple[int, str]:
    """Delta's JVM's rows of the table at ``path``."""
    return spark_digest(dspark.read.format("delta").load(path))


def _exact_sample(dspark: Any, path: str, fraction: float) -> None:
    threshold = weight_from_fraction(fraction)
    expected = dspark.read.format("delta").load(path).filter(f"hash(x, d) < {threshold}")
    got = qc.QbeastTable.forPath(dspark, path).sample(fraction)
    assert spark_digest(got) == spark_digest(expected)


def _vectors(path: str) -> dict[str, dict[str, Any]]:
    return {p: a["deletionVector"] for p, a in live_adds(path).items() if a.get("deletionVector")}


def test_reads_samples_and_metrics_leave_out_deleted_rows(dspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "dv")
    qc.write(
        _rows(dspark, 0, 3000),
        path,
        columnsToIndex="x,d",
        cubeSize=400,
        **{"delta.checkpointInterval": "4"},
    )
    tagged = set(live_adds(path))
    dspark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    dspark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 3 OR id BETWEEN 100 AND 140")
    vectors = _vectors(path)
    # Delta marked rows of our files deleted: same paths, same tags, and a vector each
    assert vectors and set(vectors) <= tagged
    assert all((a.get("tags") or {}).get("revision") == "1" for a in live_adds(path).values())
    deleted = 3000 - dspark.read.format("delta").load(path).count()
    assert deleted == sum(int(v["cardinality"]) for v in vectors.values()) > 400

    assert _agree(dspark, path)[0] == 3000 - deleted
    _exact_sample(dspark, path, 0.1)
    _exact_sample(dspark, path, 0.5)
    where = "x BETWEEN 100 AND 400 AND d < date'2024-06-01'"
    ours = qc.QbeastTable.forPath(dspark, path).filter(where)
    assert spark_digest(ours) == spark_digest(dspark.read.format("delta").load(path).filter(where))
    # approx's count(*) without filter comes from the log: the live rows, exact
    (count,) = qc.QbeastTable.forPath(dspark, path).approx("count(*) AS n", fraction=0.1).rows()
    assert count["n"] == count["n_low"] == count["n_high"] == 3000 - deleted
    metrics = qc.QbeastTable.forPath(dspark, path).getIndexMetrics()
    assert metrics.deleted_rows == deleted and metrics.unindexed_files == 0
    assert f"{deleted} rows are deleted by deletion vectors" in str(metrics)
    # the same file gets a second vector (the pair path/vector changes in one commit)
    dspark.sql(f"UPDATE delta.`{path}` SET s = 'changed' WHERE id % 11 = 5")
    dspark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 4")
    assert any(_vectors(path)[p] != v for p, v in vectors.items() if p in _vectors(path))
    # we append to the table with vectors and write its checkpoints
    qc.write(_rows(dspark, 3000, 3600), path, mode="append")
    qc.write(_rows(dspark, 3600, 3700), path, mode="append")
    log = Path(path, "_delta_log")
    assert list(log.glob("*.checkpoint.parquet"))
    latest = qc.QbeastTable.forPath(dspark, path).version()
    for version in range(latest + 1):
        _agree(dspark, path, version)
    _exact_sample(dspark, path, 0.25)


def test_rewrites_drop_deleted_rows_and_vacuum_keeps_live_vectors(
    dspark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "dv_rewrite")
    qc.write(_rows(dspark, 0, 2000), path, columnsToIndex="x,d", cubeSize=400)
    dspark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    # Delta's own rows (no qbeast tags), then vectors on both kinds of files
    _rows(dspark, 2000, 2600).write.format("delta").mode("append").save(path)
    dspark.sql(f"DELETE FROM delta.`{path}` WHERE id % 5 = 1")
    untagged = {p for p, a in live_adds(path).items() if not (a.get("tags") or {})}
    assert untagged and set(_vectors(path)) & untagged and set(_vectors(path)) - untagged
    expected = _agree(dspark, path)
    assert expected[0] == 2600 - 520
    table = qc.QbeastTable.forPath(dspark, path)
    table.optimize(0)  # reads Delta's files (vectors applied) into the index
    after = live_adds(path)
    assert all((a.get("tags") or {}) for a in after.values())
    assert not set(_vectors(path)) & untagged
    assert _agree(dspark, path) == expected
    _exact_sample(dspark, path, 0.3)
    # vacuum: the rewritten files and the vector files no live file names go; every
    # vector file a live file names stays
    live_vector_files = {
        DeletionVectorDescriptor.from_json(v).file_path() for v in _vectors(path).values()
    }
    assert live_vector_files
    before = {p.name for p in Path(path).rglob("deletion_vector_*.bin")}
    removed = qc.QbeastTable.forPath(dspark, path).vacuum(
        retentionHours=0, enforceRetentionDuration=False
    )
    on_disk = {p.name for p in Path(path).rglob("deletion_vector_*.bin")}
    assert on_disk == {Path(f).name for f in live_vector_files}
    assert {Path(str(r)).name for r in removed} >= (before - on_disk) | {
        Path(p).name for p in untagged
    }
    assert _agree(dspark, path) == expected
    dspark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")
    assert _agree(dspark, path) == expected


def test_our_vector_deletes_read_by_delta_and_mixed_with_deltas_own(
    dspark: Any, tmp_path: Path
) -> None:
    """Issue #33: ``QbeastTable.delete``, ``update`` and ``merge`` on a table with vectors
    enabled write vectors that Delta's JVM reads; Delta's DELETE then joins our vectors, and ours
    join Delta's; the same changes through Delta alone give the same rows."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for path in (ours, theirs):
        qc.write(
            _rows(dspark, 0, 3000),
            path,
            columnsToIndex="x,d",
            cubeSize=400,
            **{"delta.enableDeletionVectors": "true"},
        )
    files = {p.name for p in Path(ours).glob("*.parquet")}
    steps = ["x < 80 OR s = 'k4'", "id % 7 = 3", "d < date'2024-02-01' AND s IS NOT NULL"]
    for i, condition in enumerate(steps):
        if i == 1:  # Delta's own DELETE on our table, between two of ours
            dspark.sql(f"DELETE FROM delta.`{ours}` WHERE {condition}")
        else:
            result = qc.QbeastTable.forPath(dspark, ours).delete(condition)
            assert result.num_deletion_vectors > 0 and result.num_added_files == 0
        dspark.sql(f"DELETE FROM delta.`{theirs}` WHERE {condition}")
        assert _agree(dspark, ours) == _delta_rows(dspark, theirs)
    assert {p.name for p in Path(ours).glob("*.parquet")} == files  # no file rewritten
    assert all((a.get("tags") or {}).get("revision") == "1" for a in live_adds(ours).values())
    # an update: the old rows leave through vectors, the new ones are appended (indexed)
    result = qc.QbeastTable.forPath(dspark, ours).update("x < 300", {"s": "'updated'"})
    assert result.num_deletion_vectors > 0 and result.num_removed_files == 0
    dspark.sql(f"UPDATE delta.`{theirs}` SET s = 'updated' WHERE x < 300")
    assert _agree(dspark, ours) == _delta_rows(dspark, theirs)
    assert files < {p.name for p in Path(ours).glob("*.parquet")}
    # a merge: updated and deleted rows through vectors, new rows appended
    source = _rows(dspark, 0, 3300).where("id % 5 = 0 OR id >= 3000")
    source = source.selectExpr("id", "x", "d", "'merged' AS s")
    source.createOrReplaceTempView("dv_merge_source")
    result = (
        qc.QbeastTable.forPath(dspark, ours)
        .alias("t")
        .merge(source.alias("m"), "t.id = m.id")
        .whenMatchedDelete("m.id % 3 = 0")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert result.num_deletion_vectors > 0 and result.num_removed_files == 0
    dspark.sql(
        f"MERGE INTO delta.`{theirs}` t USING dv_merge_source m ON t.id = m.id "
        "WHEN MATCHED AND m.id % 3 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    assert _agree(dspark, ours) == _delta_rows(dspark, theirs)
    _exact_sample(dspark, ours, 0.2)
