"""forPath with the snapshot caches: every read sees the latest commit, whoever made it."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa

import qbeast_connect as qc
from qbeast_connect.spark import snapshot as client_snapshot
from tests.spark.helpers import live_adds


def _view(table: Any) -> tuple[Any, ...]:
    state = table._state
    adds = {a["path"]: json.dumps({**a, "dataChange": True}, sort_keys=True) for a in state.adds}
    return state.version, adds, dict(state.metadata), dict(state.txns)


def _full_view(spark: Any, path: str) -> tuple[Any, ...]:
    client_snapshot.CACHE_ENABLED = False
    try:
        return _view(qc.QbeastTable.forPath(spark, path))
    finally:
        client_snapshot.CACHE_ENABLED = True


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr("id", "cast(id % 97 as double) as x")


def test_forpath_sees_commits_by_this_client_another_client_and_deltalake(
    spark: Any, table_path: str
) -> None:
    from deltalake import write_deltalake
    from pyspark.sql import SparkSession

    from qbeast_connect.spark.session import embedded_server, register_plugin

    qc.write(_rows(spark, 0, 400), table_path, columnsToIndex="x", cubeSize=100)
    first = qc.QbeastTable.forPath(spark, table_path)
    assert first.version() == 0
    # this client
    qc.write(_rows(spark, 400, 500), table_path, mode="append")
    mine = qc.QbeastTable.forPath(spark, table_path)
    assert mine.version() == 1
    assert _view(mine) == _full_view(spark, table_path)
    # another client: its own Connect session (its own cached state) on the same server
    server = embedded_server()
    url = os.environ.get("SPARK_REMOTE") or (server.url if server else "")
    other = SparkSession.builder.remote(url).create()
    try:
        register_plugin(other)
        qc.write(_rows(other, 500, 650), table_path, mode="append", txnAppId="o", txnVersion=3)
    finally:
        other.stop()
    theirs = qc.QbeastTable.forPath(spark, table_path)
    assert theirs.version() == 2
    assert theirs._state.txns == {"o": 3}
    assert _view(theirs) == _full_view(spark, table_path)
    # deltalake appends a plain file
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64())])
    write_deltalake(table_path, pa.table({"id": [9000], "x": [1.0]}, schema=schema), mode="append")
    after = qc.QbeastTable.forPath(spark, table_path)
    assert after.version() == 3
    assert set(a["path"] for a in after._state.adds) == set(live_adds(table_path))
    assert _view(after) == _full_view(spark, table_path)
    assert qc.QbeastTable.forPath(spark, table_path).read().count() == 651


def test_incremental_client_state_equals_full_state_after_overwrite_and_optimize(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, 300), table_path, columnsToIndex="x", cubeSize=50)
    qc.QbeastTable.forPath(spark, table_path)
    for i in range(3):
        qc.write(_rows(spark, 1000 * (i + 1), 1000 * (i + 1) + 40), table_path, mode="append")
    table = qc.QbeastTable.forPath(spark, table_path)
    assert _view(table) == _full_view(spark, table_path)
    table.optimize()
    optimized = qc.QbeastTable.forPath(spark, table_path)
    assert optimized.version() == table.version() + 1
    assert _view(optimized) == _full_view(spark, table_path)
    qc.write(_rows(spark, 0, 50), table_path, mode="overwrite", columnsToIndex="x")
    overwritten = qc.QbeastTable.forPath(spark, table_path)
    assert set(a["path"] for a in overwritten._state.adds) == set(live_adds(table_path))
    assert _view(overwritten) == _full_view(spark, table_path)
    assert qc.QbeastTable.forPath(spark, table_path).read().count() == 50
