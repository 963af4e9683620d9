"""Structured Streaming into a qbeast table through ``foreachBatch``, each batch once.

The crash tests (a server killed between the data files and the commit, and between the
qbeast commit and the streaming checkpoint, then the query restarted) are in
``integration/test_stream.py``; here the state the second kill leaves is built directly, so
that one short query shows the replayed batch skipped.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import qbeast_connect as qc
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    log_actions,
    row_digest,
    spark_digest,
)

SCHEMA = "id long, x double, user string"


def drop_batch_file(directory: Path, index: int, rows: int = 40) -> list[dict[str, Any]]:
    """Write the ``index``-th input file (rows ``index*rows ..``) of a JSON stream source."""
    directory.mkdir(parents=True, exist_ok=True)
    records = [
        {"id": i, "x": float(i % 97), "user": f"u{i % 7}"}
        for i in range(index * rows, (index + 1) * rows)
    ]
    tmp = directory / f".part-{index:03d}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
    os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))  # the source's order
    tmp.rename(directory / f"part-{index:03d}.json")  # appear whole to the source
    return records


def run_available(spark: Any, source: Path, table: str, checkpoint: Path) -> Any:
    """Run the stream until it has consumed every file present, one file per batch."""
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    query = qc.write_stream(
        stream,
        table,
        checkpointLocation=str(checkpoint),
        trigger={"availableNow": True},
        columnsToIndex="x,user",
        cubeSize=50,
    )
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    return query


def txn_versions(path: str) -> list[tuple[int, str, int]]:
    """(commit version, appId, txn version) of every ``txn`` action, in log order."""
    return [(v, a["txn"]["appId"], a["txn"]["version"]) for v, a in log_actions(path) if "txn" in a]


def test_batch_committed_before_a_restart_is_not_appended_twice(
    spark: Any, tmp_path: Path, table_path: str
) -> None:
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    # The state a query leaves when it is killed after batch 0's qbeast commit and before
    # Spark recorded the batch: its id in the checkpoint, batch 0's rows committed under
    # (id, 0), no record of batch 0 in the checkpoint's commits.
    query_id = str(uuid.uuid4())
    checkpoint.mkdir()
    (checkpoint / "metadata").write_text(json.dumps({"id": query_id}))
    rows = drop_batch_file(source, 0)
    stale = spark.createDataFrame(rows, SCHEMA)
    qc.write(stale, table_path, columnsToIndex="x,user", cubeSize=50, txnAppId=query_id,
             txnVersion=0)
    rows += drop_batch_file(source, 1)

    query = run_available(spark, source, table_path, checkpoint)

    assert query.id == query_id, "the query keeps the id its checkpoint holds"
    # batch 0 ran again and was skipped; batch 1 is the only new commit
    assert txn_versions(table_path) == [(0, query_id, 0), (1, query_id, 1)]
    assert (checkpoint / "commits" / "0").exists() and (checkpoint / "commits" / "1").exists()
    expected = spark.createDataFrame(rows, SCHEMA)
    table = qc.QbeastTable.forPath(spark, table_path).toDF()
    assert spark_digest(table) == spark_digest(expected)
    assert spark_digest(table)[0] == 80
    assert row_digest(deltalake_table(table_path)) == spark_digest(expected)
    # qbeast-spark's metadata: every file names a revision of the table and its blocks
    config = latest_configuration(table_path)
    adds = [a["add"] for _, a in log_actions(table_path) if "add" in a]
    assert adds and all(f"qbeast.revision.{a['tags']['revision']}" in config for a in adds)
    assert all(a["tags"]["blocks"] for a in adds)
