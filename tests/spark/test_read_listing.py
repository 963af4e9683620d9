"""A read names its table files one by one; Spark must not run a listing job for them.

Above ``spark.sql.sources.parallelPartitionDiscovery.threshold`` paths (32 by default)
Spark checks the paths of a read with a distributed job, one task per path, in every query.
Servers started by qbeast-connect raise the threshold at start-up; a read through any other
server (a remote one) raises it for its session (``spark/files.py``). The test puts the
session back on Spark's default, reads a table of more than 32 files, and looks for the
listing job's own line in the embedded server's log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qbeast_connect as qc
from qbeast_connect.spark import files
from qbeast_connect.spark.session import embedded_server
from tests.spark.helpers import live_adds, spark_digest

#: What Spark's driver logs when it starts a distributed listing job.
LISTING_JOB_LINE = "Listing leaf files and directories in parallel"


def test_read_of_more_than_32_files_runs_no_listing_job(spark: Any, tmp_path: Path) -> None:
    plain = str(tmp_path / "plain")
    spark.range(0, 12_000, numPartitions=2).selectExpr(
        "id", "rand(1) as x", "rand(2) as y", "concat('row-', id) as payload"
    ).write.parquet(plain)
    path = str(tmp_path / "qbeast")
    qc.write(spark.read.parquet(plain), path, columnsToIndex="x,y", cubeSize=200)
    assert len(live_adds(path)) > 40

    server = embedded_server()
    assert server is not None, "the test reads the embedded server's log"
    log = Path(server.log_path)
    where = "id % 7 = 3"  # no pruning: every file of the table is read
    spark.conf.set(files.LISTING_THRESHOLD_CONF, str(files.SPARK_LISTING_THRESHOLD))
    files._driver_listing.discard(spark)  # as a fresh session to a remote server
    try:
        start = log.stat().st_size
        df = qc.QbeastTable.forPath(spark, path).filter(where)
        assert len(df.inputFiles()) == len(live_adds(path))
        expected = spark_digest(spark.read.parquet(plain).filter(where))
        assert spark_digest(df) == expected
        assert expected[0] == 12_000 // 7 + (1 if 12_000 % 7 > 3 else 0)
        with log.open("rb") as f:
            f.seek(start)
            written = f.read().decode("utf-8", "replace")
        assert LISTING_JOB_LINE not in written
        assert spark.conf.get(files.LISTING_THRESHOLD_CONF) == str(files.DRIVER_LISTING_PATHS)
    finally:
        spark.conf.set(files.LISTING_THRESHOLD_CONF, str(files.DRIVER_LISTING_PATHS))
