"""Kill the server in the middle of a write: the table is unchanged or fully committed."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from tests.crash_server import run_until_crash
from tests.spark.helpers import live_adds, log_actions, row_digest, spark_digest

pytestmark = pytest.mark.slow

CLIENT = textwrap.dedent(
    """
    import sys
    import qbeast_connect as qc
    spark = qc.session(remote=sys.argv[1])
    df = spark.range(1000, 1600, numPartitions=2).selectExpr("id", "cast(id % 90 as double) as x")
    qc.write(df, sys.argv[2], mode="append")
    """
)


@pytest.mark.parametrize(
    ("point", "committed"),
    [
        pytest.param("after_files", False, id="after-data-files"),
        pytest.param("commit_temp_written", False, id="during-commit"),
        pytest.param("after_commit", True, id="after-commit"),
    ],
)
def test_crash_leaves_the_table_whole(
    remote_spark: Any, tmp_path: Path, point: str, committed: bool
) -> None:
    path = str(tmp_path / point)
    first = remote_spark.range(0, 1000, numPartitions=2).selectExpr(
        "id", "cast(id % 90 as double) as x"
    )
    qc.write(first, path, columnsToIndex="x", cubeSize=200)
    before = sorted(live_adds(path))
    run_until_crash(point, CLIENT, path)

    versions = {v for v, _ in log_actions(path)}
    table = qc.QbeastTable.forPath(remote_spark, path)
    parquet_on_disk = {p.name for p in Path(path).glob("*.parquet")}
    if committed:
        assert versions == {0, 1}
        assert table.toDF().count() == 1600
    else:
        assert versions == {0}, "a crashed write must not leave a commit"
        assert sorted(live_adds(path)) == before
        assert spark_digest(table.toDF()) == spark_digest(first)
        if point == "after_files":
            assert parquet_on_disk - set(before), "the crash came after the data files"
    # orphans are invisible to readers and removed by vacuum
    orphans = parquet_on_disk - set(live_adds(path))
    removed = table.vacuum(retentionHours=0, enforceRetentionDuration=False)
    assert set(removed) == orphans
    # a retry succeeds
    again = remote_spark.range(5000, 5100).selectExpr("id", "cast(id % 90 as double) as x")
    qc.write(again, path, mode="append")
    final = qc.QbeastTable.forPath(remote_spark, path).toDF()
    assert final.count() == (1600 if committed else 1000) + 100
    from deltalake import DeltaTable

    assert row_digest(DeltaTable(path).to_pyarrow_table()) == spark_digest(final)


DELETE_CLIENT = textwrap.dedent(
    """
    import sys
    import qbeast_connect as qc
    spark = qc.session(remote=sys.argv[1])
    qc.QbeastTable.forPath(spark, sys.argv[2]).delete("x < 30")
    """
)


def test_crash_during_a_delete_leaves_the_table_whole(remote_spark: Any, tmp_path: Path) -> None:
    """A row-level change commits its removes and adds in one commit through the same
    writer as an append (#33): a server killed while committing leaves the table as it was,
    and the delete then runs again."""
    path = str(tmp_path / "t")
    first = remote_spark.range(0, 1000, numPartitions=2).selectExpr(
        "id", "cast(id % 90 as double) as x"
    )
    qc.write(first, path, columnsToIndex="x", cubeSize=200)
    before = sorted(live_adds(path))
    run_until_crash("commit_temp_written", DELETE_CLIENT, path)
    assert {v for v, _ in log_actions(path)} == {0}, "a crashed delete must not leave a commit"
    assert sorted(live_adds(path)) == before
    table = qc.QbeastTable.forPath(remote_spark, path)
    assert spark_digest(table.toDF()) == spark_digest(first)
    result = table.delete("x < 30")
    assert result.version == 1
    assert result.num_deleted_rows == first.where("x < 30").count()
    final = qc.QbeastTable.forPath(remote_spark, path).toDF()
    from deltalake import DeltaTable

    assert row_digest(DeltaTable(path).to_pyarrow_table()) == spark_digest(final)
    assert spark_digest(final) == spark_digest(first.where("x >= 30"))
