"""Table operations on real tables: optimize, convert, staging area, vacuum, hooks, history."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

import qbeast_connect as qc
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.weight import fraction_from_weight
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    live_adds,
    log_actions,
    row_digest,
    spark_digest,
)


def _rows(spark: Any, start: int, n: int, parts: int = 2) -> Any:
    return spark.range(start, start + n, numPartitions=parts).selectExpr(
        "id", "cast(rand(5) * 100 as double) as x", "cast(id % 500 as int) as y"
    )


def _appended_table(
    spark: Any, path: str, appends: int = 4, n: int = 3000, cube_size: int = 800
) -> Any:
    """A table of one revision built by several appends (many small files)."""
    data = _rows(spark, 0, n)
    # compaction off: the tests count the small files the appends leave
    qc.write(data, path, columnsToIndex="x,y", cubeSize=cube_size, autoCompact="false")
    for i in range(1, appends):
        more = _rows(spark, i * n, n)
        qc.write(more, path, mode="append")
        data = data.unionByName(more)
    return data


def _blocks_per_cube(path: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for add in live_adds(path).values():
        for b in decode_blocks(add["tags"]["blocks"]):
            counts[b.cube_id] = counts.get(b.cube_id, 0) + 1
    return counts


def test_optimize_revision_keeps_rows_and_improves_layout(spark: Any, table_path: str) -> None:
    data = _appended_table(spark, table_path)
    table = qc.QbeastTable.forPath(spark, table_path)
    assert table.lastRevisionID() == 1
    before_files = len(live_adds(table_path))
    before_blocks = sum(_blocks_per_cube(table_path).values())
    metrics_before = table.getIndexMetrics()
    result = table.optimize()
    assert result.version == table.version() + 1
    assert result.removed_files == before_files and result.rows == 12_000
    after = qc.QbeastTable.forPath(spark, table_path)
    assert spark_digest(after.toDF()) == spark_digest(data)
    assert row_digest(deltalake_table(table_path)) == spark_digest(data)
    after_files = len(live_adds(table_path))
    assert after_files < before_files
    assert sum(_blocks_per_cube(table_path).values()) < before_blocks
    assert after.getIndexMetrics().file_count < metrics_before.file_count
    last = [a for v, a in log_actions(table_path) if v == result.version]
    assert all(a[k]["dataChange"] is False for a in last for k in a if k in ("add", "remove"))
    assert latest_configuration(table_path)["qbeast.lastRevisionID"] == "1"
    assert after.history(limit=1)[0]["operation"] == "WRITE"  # as qbeast-spark commits it


def _selected_bytes(spark: Any, path: str) -> tuple[int, int]:
    """Bytes ``sample(0.01)`` and a 2% filter on ``x`` select."""
    table = qc.QbeastTable.forPath(spark, path)
    sample = table.explainScan(fraction=0.01).selected_bytes
    return sample, table.explainScan(where="x < 2").selected_bytes


def test_optimizing_a_banded_table_reads_no_more_afterwards(spark: Any, table_path: str) -> None:
    """A table written in weight bands keeps one block of a cube per band. Optimize took
    each block's rows as spread up to the cube's max weight, so the top band's blocks of
    the root's children looked nearly empty, joined the root's run, and ``sample(0.01)``
    read those rows too: 1.8x its bytes before the optimize (lineitem sf 0.1: 1.75x)."""
    rows = _rows(spark, 0, 60_000).withColumn("pad", F.expr("repeat('p', 30)"))
    qc.write(rows, table_path, columnsToIndex="x,y", cubeSize=2000)
    sample, where = _selected_bytes(spark, table_path)
    qc.QbeastTable.forPath(spark, table_path).optimize()
    assert spark_digest(qc.QbeastTable.forPath(spark, table_path).toDF()) == spark_digest(rows)
    after_sample, after_where = _selected_bytes(spark, table_path)
    assert after_sample <= 1.05 * sample, (after_sample, sample)
    assert after_where <= 1.05 * where, (after_where, where)


def test_optimize_by_fraction_and_by_files(spark: Any, table_path: str) -> None:
    data = _appended_table(spark, table_path, appends=3, cube_size=200)
    table = qc.QbeastTable.forPath(spark, table_path)
    adds = live_adds(table_path)
    top = {
        p
        for p, a in adds.items()
        if any(fraction_from_weight(b.min_weight) <= 0.05 for b in decode_blocks(a["tags"]["blocks"]))
    }
    assert 0 < len(top) < len(adds)
    result = table.optimize(fraction=0.05)
    assert result.removed_files == len(top)
    remaining = set(live_adds(table_path))
    assert (set(adds) - top) <= remaining  # untouched files stay
    assert not (top & remaining)
    table = table.refresh()
    assert spark_digest(table.toDF()) == spark_digest(data)

    some = sorted(remaining)[:2]
    result = table.optimize(files=some)
    assert result.removed_files == 2
    assert not (set(some) & set(live_adds(table_path)))
    assert spark_digest(table.refresh().toDF()) == spark_digest(data)
    with pytest.raises(qc.InvalidOptionError, match="not live files"):
        table.refresh().optimize(files=["nope.parquet"])
    with pytest.raises(qc.InvalidOptionError, match="fraction"):
        table.optimize(fraction=0)


def test_convert_parquet_directory_then_read_sample_append_and_optimize_staging(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "pq")
    data = _rows(spark, 0, 4000, parts=3)
    data.write.parquet(path)
    version = qc.convertToQbeast(spark, path, columnsToIndex="x,y", cubeSize=1000)
    assert version == 0
    table = qc.QbeastTable.forPath(spark, path)
    assert table.revisionIDs() == [0] and table.revision(0).is_staging
    assert spark_digest(table.toDF()) == spark_digest(data)
    assert row_digest(deltalake_table(path)) == spark_digest(data)
    expected_sample = data.filter("hash(x, y) < -1717986918")  # weight(0.1)
    assert spark_digest(table.sample(0.1)) == spark_digest(expected_sample)
    assert qc.convertToQbeast(spark, path, columnsToIndex="x,y") == 0  # no-op

    more = _rows(spark, 4000, 2000)
    appended = qc.write(more, path, mode="append")
    assert appended.revision_id == 1 and appended.new_revision
    both = data.unionByName(more)
    table = table.refresh()
    assert spark_digest(table.toDF()) == spark_digest(both)
    assert len(table.snapshot.staging_files()) == 3

    result = table.optimize(0)
    assert result.removed_files == 3
    table = table.refresh()
    assert table.snapshot.staging_files() == ()
    assert spark_digest(table.toDF()) == spark_digest(both)
    assert row_digest(deltalake_table(path)) == spark_digest(both)


def test_convert_deltalake_table(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "dl")
    arrow = pa.table({"k": list(range(300)), "v": [float(i) / 3 for i in range(300)]})
    write_deltalake(path, arrow)
    write_deltalake(path, arrow.slice(0, 50), mode="append")
    version = qc.convertToQbeast(spark, path, columnsToIndex="k,v", cubeSize=100,
                                 sourceFormat="delta")
    assert version == 2
    table = qc.QbeastTable.forPath(spark, path)
    assert table.toDF().count() == 350
    qc.write(spark.range(1000, 1100).selectExpr("id as k", "cast(id as double) as v"), path,
             mode="append")
    assert qc.QbeastTable.forPath(spark, path).toDF().count() == 450
    from deltalake import DeltaTable

    assert DeltaTable(path).to_pyarrow_table().num_rows == 450


def test_convert_rejects_partitioned_sources_and_bad_columns(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "parted")
    _rows(spark, 0, 100).write.partitionBy("y").parquet(path)
    with pytest.raises(qc.InvalidOptionError, match="partitioned"):
        qc.convertToQbeast(spark, path, columnsToIndex="x")
    plain = str(tmp_path / "plain")
    _rows(spark, 0, 100).write.parquet(plain)
    with pytest.raises(qc.InvalidOptionError, match="does not have"):
        qc.convertToQbeast(spark, plain, columnsToIndex="nope")
    assert not os.path.exists(os.path.join(plain, "_delta_log", "00000000000000000000.json"))


def test_vacuum_removes_only_unreferenced_old_files(spark: Any, table_path: str) -> None:
    _appended_table(spark, table_path, appends=2)
    table = qc.QbeastTable.forPath(spark, table_path)
    table.optimize()
    table = table.refresh()
    live = set(live_adds(table_path))
    on_disk = {f for f in os.listdir(table_path) if f.endswith(".parquet")}
    removed = on_disk - live
    assert removed
    orphan = Path(table_path) / "orphan-from-a-crashed-writer.parquet"
    orphan.write_bytes(b"not really parquet")
    old = time.time() - 3 * 3600
    os.utime(orphan, (old, old))
    with pytest.raises(qc.InvalidOptionError, match="enforceRetentionDuration"):
        table.vacuum(retentionHours=1)
    # removed files are younger than 1 hour: kept; the old orphan goes
    listed = table.vacuum(retentionHours=1, dryRun=True, enforceRetentionDuration=False)
    assert listed == ["orphan-from-a-crashed-writer.parquet"]
    assert orphan.exists()
    deleted = table.vacuum(retentionHours=0, enforceRetentionDuration=False)
    assert set(deleted) == removed | {orphan.name}
    assert {f for f in os.listdir(table_path) if f.endswith(".parquet")} == live
    assert table.refresh().toDF().count() == 6000


def test_pre_commit_hooks_are_allow_listed(spark: Any, table_path: str) -> None:
    df = _rows(spark, 0, 500)
    qc.write(df, table_path, columnsToIndex="x", **{
        "qbeastPreCommitHook.s": "commitSummary", "qbeastPreCommitHook.s.arg": "mine"})
    info = qc.QbeastTable.forPath(spark, table_path).history(limit=1)[0]
    assert info["tags"]["mine.addedRows"] == "500"
    assert int(info["tags"]["mine.addedFiles"]) == len(live_adds(table_path))
    with pytest.raises(qc.InvalidOptionError, match="does not allow"):
        qc.write(df, table_path, mode="append",
                 **{"qbeastPreCommitHook.evil": "os.system"})
    assert qc.QbeastTable.forPath(spark, table_path).version() == 0
    assert len([f for f in os.listdir(table_path) if f.endswith(".parquet")]) == len(
        live_adds(table_path))


def test_history_and_version(spark: Any, table_path: str) -> None:
    qc.write(_rows(spark, 0, 100), table_path, columnsToIndex="x", userMetadata="first load")
    qc.write(_rows(spark, 100, 100), table_path, mode="append")
    table = qc.QbeastTable.forPath(spark, table_path)
    assert table.version() == 1
    history = table.history()
    assert [h["version"] for h in history] == [1, 0]
    assert history[1]["userMetadata"] == "first load"
    assert history[0]["operationParameters"]["mode"] == "Append"
    assert history[0]["operationMetrics"]["numOutputRows"] == "100"
