"""``format("qbeast")`` through the Connect server: reads prune files, writes index exactly.

Static discovery (a server that registers ``qbeast`` by itself, for a client that never
imports qbeast-connect) is proven in ``integration/test_cli_server.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.planning.file_planner import sample_weight_sql


def _events(spark: Any, n: int, start: int = 0) -> Any:
    return spark.range(start, start + n, numPartitions=3).selectExpr(
        "id",
        "cast(id % 1000 as double) / 10 as x",
        "concat('k', cast(id % 37 as string)) as k",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "timestamp_seconds(1704067200 + (id % 5000) * 3600) as ts",
        "cast(id % 97 as decimal(10, 2)) as price",
        "id % 2 = 0 as even",
    )


@pytest.fixture(scope="module")
def indexed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table written by qbeast_connect.write: many cubes and files."""
    path = str(tmp_path_factory.mktemp("format") / "events")
    qc.write(_events(spark, 12_000), path, columnsToIndex="x,k", cubeSize=800)
    return path


def test_format_reads_the_table_with_its_schema(spark: Any, indexed: str) -> None:
    table = qc.QbeastTable.forPath(spark, indexed)
    df = spark.read.format("qbeast").load(indexed)
    assert df.schema == table.schema
    assert sorted(df.collect()) == sorted(table.toDF().collect())


FILTERS = [
    "x < 3.5",
    "x >= 20 and x < 21 and k = 'k3'",
    "k in ('k1', 'k2') and x > 99",
    "d = date'2024-03-01'",
    "ts < timestamp'2024-01-02 00:00:00' and price > 50",
    "k like 'k1%' or not (x < 99.5)",
    "x is null",
]


def test_filtered_format_reads_are_exact(spark: Any, indexed: str) -> None:
    full = qc.QbeastTable.forPath(spark, indexed).toDF()
    expected = full.selectExpr(
        *[f"count_if({where}) as c{i}" for i, where in enumerate(FILTERS)]
    ).collect()[0]
    # one DataFrame for every query: a pruned read plan must not leak into the next query
    df = spark.read.format("qbeast").load(indexed)
    for i, where in enumerate(FILTERS):
        assert df.where(where).count() == expected[f"c{i}"], where
    assert df.count() == 12_000


def test_pushed_filters_skip_files(spark: Any, tmp_path: Path) -> None:
    """The files the planner rules out are never opened: deleting them changes nothing."""
    path = str(tmp_path / "t")
    qc.write(_events(spark, 6_000), path, columnsToIndex="x,k", cubeSize=500)
    table = qc.QbeastTable.forPath(spark, path)
    where = "x < 3.5 and ts < timestamp'2024-01-03 00:00:00'"
    expected = table.toDF().where(where).count()
    kept = set(table.explainScan(where="x < 3.5").files)
    unneeded = [f for f in (path + "/" + p.path for p in table.snapshot.files) if f not in kept]
    assert expected > 0 and unneeded
    for f in unneeded:
        os.remove(f)
    assert spark.read.format("qbeast").load(path).where(where).count() == expected
    # a file the log lists but storage lacks is named (DataFileMissingError)
    with pytest.raises(Exception, match=r"QBEAST_DATA_FILE_MISSING.* lists the file .*not in"):
        spark.read.format("qbeast").load(path).count()


def _weight_consistent(spark: Any, path: str) -> None:
    """Samples through the index equal a full scan filtered by the same weight: the block
    weights the writer recorded are Spark's ``hash`` of the indexed columns."""
    table = qc.QbeastTable.forPath(spark, path)
    everything = spark.read.schema(table.schema).parquet(*table.explainScan().files)
    columns = table.indexedColumns()
    fraction = 0.3
    full = everything.where(sample_weight_sql(columns, fraction)).count()
    assert table.sample(fraction).count() == full
    min_weights = {
        f.path: min(b.min_weight for b in f.blocks)
        for f in table.snapshot.files_of(table.lastRevisionID())
    }
    for rel, expected in list(min_weights.items())[:1]:
        got = (
            spark.read.parquet(f"{path}/{rel}")
            .selectExpr(f"min(hash({', '.join(columns)})) as w")
            .collect()[0]["w"]
        )
        assert got == expected


def test_format_creates_a_table_with_column_stats(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    stats = {
        "x_min": 0,
        "x_max": 100,
        "ts_min": "2024-01-01 00:00:00",
        "ts_max": "2024-12-31 00:00:00",
    }
    (
        _events(spark, 3_000)
        .write.format("qbeast")
        .option("columnsToIndex", "x,k,ts")
        .option("columnStats", json.dumps(stats))
        .option("cubeSize", 1_000)
        .mode("append")
        .save(path)
    )
    table = qc.QbeastTable.forPath(spark, path)
    assert table.indexedColumns() == ["x", "k", "ts"] and table.cubeSize() == 1_000
    assert [str(c) for c in table.snapshot.cube_statuses(1)] == [""]  # one pass: the root
    assert table.toDF().count() == 3_000
    _weight_consistent(spark, path)


def test_format_appends_into_the_existing_index(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    qc.write(_events(spark, 8_000), path, columnsToIndex="x,k,d", cubeSize=600)
    before = qc.QbeastTable.forPath(spark, path)
    cubes = set(before.snapshot.cube_statuses(1))
    _events(spark, 4_000, start=8_000).write.format("qbeast").mode("append").save(path)
    after = before.refresh()
    assert after.lastRevisionID() == 1 and after.toDF().count() == 12_000
    assert set(after.snapshot.cube_statuses(1)) >= cubes
    _weight_consistent(spark, path)
    where = "x between 10 and 12 and d < date'2024-02-01'"
    assert after.filter(where).count() == after.toDF().where(where).count() > 0
    assert spark.read.format("qbeast").option("versionAsOf", 0).load(path).count() == 8_000


def test_format_write_errors_name_qbeast_connect_write(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = _events(spark, 100)
    with pytest.raises(Exception, match="x_min and x_max.*qbeast_connect.write"):
        df.write.format("qbeast").option("columnsToIndex", "x,k").mode("append").save(path)
    with pytest.raises(Exception, match="(?i)Append.*Overwrite"):
        df.write.format("qbeast").option("columnsToIndex", "x,k").save(path)  # errorifexists
    df.write.format("qbeast").option("columnsToIndex", "x").option(
        "columnStats", '{"x_min": 0, "x_max": 50}'
    ).mode("overwrite").save(path)
    wide = _events(spark, 1_000)  # x reaches 99.9
    with pytest.raises(Exception, match="outside the space.*qbeast_connect.write"):
        wide.write.format("qbeast").mode("append").save(path)
    # nothing was committed (a task still running when the job failed may leave an
    # unreferenced file: invisible to readers, removed by vacuum)
    assert qc.QbeastTable.forPath(spark, path).version() == 0
    assert spark.read.format("qbeast").load(path).count() == 100
