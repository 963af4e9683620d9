"""Races and hostile tables through the full stack: nothing lost, nothing half-visible."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from tests.spark.helpers import live_adds, spark_digest


def _rows(spark: Any, start: int, n: int) -> Any:
    return spark.range(start, start + n, numPartitions=2).selectExpr(
        "id", "cast(id % 97 as double) as x", "cast(id % 31 as int) as y"
    )


STATS = json.dumps({"x_min": 0.0, "x_max": 100.0, "y_min": 0, "y_max": 40})


def _table(spark: Any, path: str, appends: int = 3) -> Any:
    data = _rows(spark, 0, 2000)
    qc.write(data, path, columnsToIndex="x,y", cubeSize=300, columnStats=STATS)
    for i in range(1, appends):
        more = _rows(spark, i * 2000, 2000)
        qc.write(more, path, mode="append")
        data = data.unionByName(more)
    return data


def _race(*jobs: Any) -> list[Any]:
    """Run the jobs at the same time; return each result or the exception it raised."""
    results: list[Any] = [None] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def run(i: int, job: Any) -> None:
        barrier.wait()
        try:
            results[i] = job()
        except Exception as exc:  # collected for the assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, j)) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return results


def test_optimize_racing_optimize(spark: Any, table_path: str) -> None:
    data = _table(spark, table_path)
    table = qc.QbeastTable.forPath(spark, table_path)
    outcomes = _race(table.optimize, table.optimize)
    committed = [o for o in outcomes if isinstance(o, qc.OptimizeResult)]
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(committed) >= 1
    for error in failed:
        assert isinstance(error, qc.CommitConflictError), repr(error)
        assert "version" in str(error)
    assert spark_digest(table.refresh().toDF()) == spark_digest(data)
    on_disk = {p.name for p in Path(table_path).glob("*.parquet")}
    assert set(live_adds(table_path)) <= on_disk


def test_append_racing_optimize(spark: Any, table_path: str) -> None:
    data = _table(spark, table_path)
    table = qc.QbeastTable.forPath(spark, table_path)
    extra = _rows(spark, 100_000, 1500)
    outcomes = _race(table.optimize, lambda: qc.write(extra, table_path, mode="append"))
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            assert isinstance(outcome, qc.CommitConflictError), repr(outcome)
    expected = data
    if not isinstance(outcomes[1], Exception):
        expected = data.unionByName(extra)
    assert spark_digest(table.refresh().toDF()) == spark_digest(expected)


def _write_log(path: Path, actions: list[dict[str, Any]]) -> None:
    log = path / "_delta_log"
    log.mkdir(parents=True)
    (log / "00000000000000000000.json").write_text(
        "\n".join(json.dumps(a) for a in actions) + "\n"
    )


SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
)


def test_unsupported_protocol_is_refused_before_anything_is_written(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "dv"
    _write_log(
        path,
        [
            {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                          "readerFeatures": ["someFutureFeature"],
                          "writerFeatures": ["someFutureFeature"]}},
            {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                          "schemaString": SCHEMA, "partitionColumns": [], "configuration": {}}},
        ],
    )
    with pytest.raises(qc.UnsupportedProtocolError, match="someFutureFeature"):
        qc.QbeastTable.forPath(spark, str(path))
    with pytest.raises(qc.UnsupportedProtocolError, match="someFutureFeature"):
        qc.write(spark.range(3).selectExpr("id as a"), str(path), columnsToIndex="a",
                 mode="append")
    assert sorted(p.name for p in (path / "_delta_log").iterdir()) == ["00000000000000000000.json"]


def test_log_paths_outside_the_table_are_refused(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "evil"
    _write_log(
        path,
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                          "schemaString": SCHEMA, "partitionColumns": [], "configuration": {}}},
            {"add": {"path": "../../../etc/passwd", "partitionValues": {}, "size": 10,
                     "modificationTime": 0, "dataChange": True}},
        ],
    )
    with pytest.raises((qc.UnsafePathError, qc.CorruptLogError)):
        qc.QbeastTable.forPath(spark, str(path)).toDF()


def test_not_a_table_and_existing_table(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(qc.TableNotFoundError):
        qc.QbeastTable.forPath(spark, str(tmp_path / "missing"))
    path = str(tmp_path / "t")
    qc.write(_rows(spark, 0, 10), path, columnsToIndex="x")
    with pytest.raises(qc.TableAlreadyExistsError, match="append"):
        qc.write(_rows(spark, 0, 10), path, columnsToIndex="x")
