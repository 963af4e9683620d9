"""Table locations through a real Connect server: relative paths, non-empty directories,
tables inside tables, rejected first writes, and paths the server cannot use."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

import qbeast_connect as qc
from qbeast_connect.exceptions import InvalidOptionError, QbeastError
from qbeast_connect.spark.session import embedded_server, register_plugin
from tests.spark.helpers import row_digest


def _rows(spark: Any, n: int) -> Any:
    return spark.range(n).selectExpr("id", "id % 7 as k", "cast(id * 3 as string) as s")


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = (Path(dirpath) / name).lstat()
            out[str((Path(dirpath) / name).relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _server_url() -> str:
    server = embedded_server()
    return os.environ.get("SPARK_REMOTE") or (server.url if server else "")


def test_relative_path_resolves_against_the_server_working_directory(
    spark: Any, tmp_path: Path
) -> None:
    # the embedded server was started from this process's directory, which relative
    # paths mean for it (as for Spark's own df.write.parquet("events"))
    target = tmp_path / "events"
    relative = os.path.relpath(target, os.getcwd())
    assert not os.path.isabs(relative)
    data = _rows(spark, 300)
    expected = row_digest(data.toArrow())

    result = qc.write(data, relative, columnsToIndex="id,k", cubeSize=100)

    assert result.path == str(target)
    assert (target / "_delta_log" / "00000000000000000000.json").is_file()
    assert row_digest(DeltaTable(str(target)).to_pyarrow_table()) == expected
    table = qc.QbeastTable.forPath(spark, relative)
    assert table.path == str(target)
    assert row_digest(table.read().toArrow()) == expected
    assert table.sample(1.0).count() == 300
    # another session of the server (with its own temporary directories) finds it too
    from pyspark.sql.connect.session import SparkSession

    other = SparkSession.builder.remote(_server_url()).create()
    try:
        register_plugin(other)
        again = qc.QbeastTable.forPath(other, relative)
        assert again.path == str(target)
        assert row_digest(again.read().toArrow()) == expected
    finally:
        other.stop()
    # format("qbeast") resolves relative paths the same way, in the plugin
    fmt = tmp_path / "fmt"
    rel_fmt = os.path.relpath(fmt, os.getcwd())
    stats = {"id_min": 0, "id_max": 299, "k_min": 0, "k_max": 6}
    (
        data.write.format("qbeast")
        .option("columnsToIndex", "id,k")
        .option("columnStats", json.dumps(stats))
        .mode("append")
        .save(rel_fmt)
    )
    assert row_digest(DeltaTable(str(fmt)).to_pyarrow_table()) == expected
    assert spark.read.format("qbeast").load(rel_fmt).count() == 300


def test_write_into_non_empty_directory_is_refused(spark: Any, tmp_path: Path) -> None:
    target = tmp_path / "busy"
    (target / "photos").mkdir(parents=True)
    (target / "notes.txt").write_text("not a table")
    (target / "photos" / "cat.parquet").write_bytes(b"PAR1 not really")
    before = _tree(target)

    with pytest.raises(InvalidOptionError, match="not empty"):
        qc.write(_rows(spark, 100), str(target), columnsToIndex="id,k")

    assert _tree(target) == before
    # format("qbeast") refuses it the same way (a plain Spark error carrying our code)
    with pytest.raises(Exception, match="QBEAST_INVALID_OPTION.*not empty"):
        (
            _rows(spark, 100)
            .write.format("qbeast")
            .option("columnsToIndex", "id,k")
            .option("columnStats", '{"id_min": 0, "id_max": 99, "k_min": 0, "k_max": 6}')
            .mode("append")
            .save(str(target))
        )
    assert _tree(target) == before


def test_table_inside_another_table_is_refused(spark: Any, tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    data = _rows(spark, 200)
    qc.write(data, str(outer), columnsToIndex="id,k", cubeSize=100)
    before = _tree(outer)

    for inner in (outer / "inner", outer / "_delta_log" / "inner"):
        with pytest.raises(InvalidOptionError, match="inside the table"):
            qc.write(_rows(spark, 50), str(inner), columnsToIndex="id")

    assert _tree(outer) == before
    assert row_digest(DeltaTable(str(outer)).to_pyarrow_table()) == row_digest(data.toArrow())
    # vacuum of the outer table still deletes nothing of its own live files
    assert qc.QbeastTable.forPath(spark, str(outer)).vacuum(
        retentionHours=0, enforceRetentionDuration=False
    ) == []


def test_rejected_first_write_leaves_no_directory(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    target = tmp_path / "never"
    where = str(target)

    def fail_late(value):  # type: ignore[no-untyped-def]  # no hints: a plain Python UDF
        # the task of ids >= 100 fails once the other task has written its file (and so
        # created the table directory) and had time to report it: no task outlives the job
        import os as os_
        import time as time_

        if value == 150:
            deadline = time_.monotonic() + 60
            while time_.monotonic() < deadline and not (
                os_.path.isdir(where) and any(n.endswith(".parquet") for n in os_.listdir(where))
            ):
                time_.sleep(0.05)
            time_.sleep(3)
            raise ValueError("row 150 is refused")
        return value

    # the failing column is not indexed: statistics and estimation never evaluate it
    data = (
        spark.range(0, 200, numPartitions=2)
        .selectExpr("id", "id % 7 as k")
        .withColumn("bad", F.udf(fail_late, "long")("id"))
    )

    with pytest.raises(Exception, match="row 150 is refused"):
        qc.write(data, where, columnsToIndex="id,k")

    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_proc_self_gives_project_errors(spark: Any) -> None:
    with pytest.raises(QbeastError):
        qc.QbeastTable.forPath(spark, "/proc/self")
    with pytest.raises(QbeastError):
        qc.QbeastTable.forPath(spark, "/proc/self", versionAsOf=0)
    with pytest.raises(QbeastError):
        qc.write(_rows(spark, 10), "/proc/self", columnsToIndex="id")
    with pytest.raises(QbeastError):
        qc.write(_rows(spark, 10), "/proc/self/fd/new", columnsToIndex="id")
