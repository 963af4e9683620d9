"""Tables whose names, paths and values users really have: written, then read back exactly
(issue 36).

* qbeast's internal columns live in the ``_qbeast`` namespace, which no written column may
  use in any case: a user column of such a name is refused before anything is written
  (before, ``_qbeastGroup`` was silently nulled by time-partitioned writes and optimize).
* table paths holding glob characters read back (Spark would expand them as globs).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import InvalidOptionError
from tests.spark.helpers import deltalake_table, live_adds, row_digest, spark_digest

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _events(spark: Any, rows: int, extra: str) -> Any:
    """``rows`` events over three days, with an extra long column named ``extra``."""
    from pyspark.sql import functions as F

    return spark.range(rows).select(
        F.col("id"),
        (F.col("id") * 7 % 1000).alias("x"),
        (F.lit(START) + F.make_interval(secs=F.col("id") * 120)).alias("ts"),
        (F.col("id") * 3).alias(extra),
    )


@pytest.mark.parametrize(
    ("column", "options"),
    [
        ("_qbeastGroup", {"partitionBy": "ts:daily"}),  # was nulled by the grouping column
        ("_qbeastGroup", {}),  # ... and by optimize() of a plain table
        ("_QBEASTWEIGHT", {}),  # Spark names are case-insensitive
        ("_qbeastPart", {}),
        ("_qbeastSpillCube", {}),
    ],
)
def test_a_column_in_the_internal_namespace_is_refused_before_writing(
    spark: Any, tmp_path: Path, column: str, options: dict[str, str]
) -> None:
    path = str(tmp_path / "t")
    df = _events(spark, 2_000, column)
    with pytest.raises(InvalidOptionError, match=rf"\['{column}'\].*'_qbeast'.*withColumnRenamed"):
        qc.write(df, path, columnsToIndex="x", cubeSize=200, **options)
    assert not (tmp_path / "t").exists()
    # any Spark client's format("qbeast") write: Spark's error carries our coded message
    with pytest.raises(Exception, match=rf"QBEAST_INVALID_OPTION\] columns \['{column}'\]"):
        df.write.format("qbeast").mode("overwrite").option("columnsToIndex", "x").save(path)
    assert not (tmp_path / "t").exists()


def test_a_parquet_directory_with_an_internal_column_name_is_not_converted(
    spark: Any, tmp_path: Path
) -> None:
    source = str(tmp_path / "p")
    _events(spark, 100, "_qbeastGroup").drop("ts").write.parquet(source)
    with pytest.raises(InvalidOptionError, match="_qbeastGroup"):
        qc.convertToQbeast(spark, source, columnsToIndex="x", cubeSize=100)
    assert not (tmp_path / "p" / "_delta_log").exists()


def test_a_column_named_like_the_partition_column_in_another_case_is_refused(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    df = _events(spark, 100, "TS_PARTITION")
    with pytest.raises(InvalidOptionError, match="'TS_PARTITION'"):
        qc.write(df, path, columnsToIndex="x", cubeSize=100, partitionBy="ts:daily")
    assert not (tmp_path / "t").exists()


def test_user_columns_survive_time_partitions_and_optimize(spark: Any, tmp_path: Path) -> None:
    """The columns qbeast adds while writing (weight, file group, partition) never touch a
    user column: every value reads back, in our reader and in delta-rs."""
    df = _events(spark, 2_000, "qbeastGroup")
    expected = spark_digest(df)
    for name, options in (("tp", {"partitionBy": "ts:daily"}), ("plain", {})):
        path = str(tmp_path / name)
        qc.write(df, path, columnsToIndex="x", cubeSize=200, **options)
        table = qc.QbeastTable.forPath(spark, path)
        table.optimize()
        table = qc.QbeastTable.forPath(spark, path)
        columns = df.columns
        assert spark_digest(table.toDF(), columns) == expected
        assert row_digest(deltalake_table(path), columns) == expected


#: A directory name with the characters Hadoop's glob syntax gives a meaning but ``\\``
#: (delta-rs reads it as a path separator: the next test has it, read with pyarrow).
GLOB_NAME = "t brack[1] brace{a,b} q?x star*"


def _live_rows(path: str) -> pa.Table:
    """The rows of the table's live files, read by pyarrow from the log's add actions."""
    from urllib.parse import unquote

    return pa.concat_tables(
        pq.read_table(f"{path}/{unquote(p)}") for p in sorted(live_adds(path))
    )


def _check_reads(spark: Any, path: str, df: Any) -> None:
    """Every read of the table at ``path`` gives exactly the rows of ``df``: ours (whole,
    filtered, sampled), format("qbeast") and delta-rs."""
    expected = spark_digest(df)
    table = qc.QbeastTable.forPath(spark, path)
    assert spark_digest(table.toDF(), df.columns) == expected
    assert row_digest(deltalake_table(path), df.columns) == expected
    assert spark.read.format("qbeast").load(path).count() == df.count()
    where = "x < 300"
    assert spark_digest(table.filter(where), df.columns) == spark_digest(df.where(where))
    sampled = table.sample(0.5).count()
    assert 0 < sampled < df.count()


def test_a_table_in_a_directory_named_with_glob_characters_reads_back(
    spark: Any, tmp_path: Path
) -> None:
    """Spark expands the paths of a file read as globs: before, every read of this table
    failed with PATH_NOT_FOUND although it was written (and delta-rs read it)."""
    path = str(tmp_path / GLOB_NAME)
    df = _events(spark, 1_000, "y")
    more = _events(spark, 1_200, "y").where("id >= 1000")
    qc.write(df, path, columnsToIndex="x,id", cubeSize=100)
    qc.write(more, path, mode="append", autoCompact="true")
    _check_reads(spark, path, df.union(more))
    table = qc.QbeastTable.forPath(spark, path)
    approx = table.approx("count(*) AS n", fraction=1.0).rows()
    assert approx[0]["n"] == 1_200
    table.optimize(mergeRevisions=True)
    _check_reads(spark, path, df.union(more))


def test_a_question_mark_path_reads_back_beside_a_sibling_with_a_colon(
    spark: Any, tmp_path: Path
) -> None:
    """A ``?`` made Spark list the parent directory, where ``t colon:x`` does not parse as a
    relative path (URISyntaxException)."""
    (tmp_path / "t colon:x").mkdir()
    path = str(tmp_path / "t q?x back\\slash")
    df = _events(spark, 1_000, "y")
    qc.write(df, path, columnsToIndex="x", cubeSize=100, partitionBy="ts:daily")
    partitioned = qc.QbeastTable.forPath(spark, path).toDF().drop("ts_partition")
    assert spark_digest(partitioned, df.columns) == spark_digest(df)
    assert row_digest(_live_rows(path), df.columns) == spark_digest(df)
    qc.QbeastTable.forPath(spark, path).optimize()
    assert spark_digest(qc.QbeastTable.forPath(spark, path).filter("x < 300"), df.columns) == (
        spark_digest(df.where("x < 300"))
    )


def test_a_path_spark_cannot_glob_is_refused_before_writing(spark: Any, tmp_path: Path) -> None:
    """A glob character makes Spark glob the path even escaped, and Hadoop's globber fails
    on any segment with a ':' (before: the write succeeded, every read failed with
    URISyntaxException). Refused, naming the segment; nothing is created."""
    from qbeast_connect.exceptions import UnsupportedInputError

    df = _events(spark, 100, "y")
    for name in ("a:b/t[1]", "t[:1]"):
        path = str(tmp_path / name)
        with pytest.raises(UnsupportedInputError, match="cannot open files under such a path"):
            qc.write(df, path, columnsToIndex="x", cubeSize=100)
        assert not Path(path).exists()
