"""The snapshot of forPath comes back in the schema of one analysed query (no Spark job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import qbeast_connect as qc
from qbeast_connect.spark import snapshot as client_snapshot
from tests.spark.helpers import live_adds


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=2).selectExpr("id", "cast(id % 97 as double) as x")


def _state_by_query(spark: Any, path: str, **options: str) -> Any:
    """The state decoded from the plugin's rows, read by a plain collect of a full answer."""
    reader = spark.read.format("qbeast_snapshot").option("path", path).option("cache", "false")
    rows = reader.options(**options).load().collect()
    return client_snapshot.decode_state_rows(path, [(r[0], r[1]) for r in rows])


def _same(a: Any, b: Any) -> None:
    assert a.version == b.version
    assert {x["path"]: x for x in a.adds} == {x["path"]: x for x in b.adds}
    assert dict(a.metadata) == dict(b.metadata)
    assert dict(a.protocol) == dict(b.protocol)
    assert dict(a.txns) == dict(b.txns)


def _no_rows_query(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(df: Any) -> Any:
        raise AssertionError("a small state must not need a rows query")

    monkeypatch.setattr(client_snapshot, "_collect_pairs", fail)


def test_small_state_is_answered_by_the_schema_alone(
    spark: Any, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    qc.write(_rows(spark, 0, 300), table_path, columnsToIndex="x", cubeSize=50)
    qc.write(_rows(spark, 300, 360), table_path, mode="append", txnAppId="a", txnVersion=7)
    _no_rows_query(monkeypatch)
    client_snapshot.clear_state_cache()
    first = qc.QbeastTable.forPath(spark, table_path)  # a full state
    again = qc.QbeastTable.forPath(spark, table_path)  # a difference to it
    old = qc.QbeastTable.forPath(spark, table_path, versionAsOf=0)
    monkeypatch.undo()
    full = _state_by_query(spark, table_path)
    assert first.version() == again.version() == 1
    assert set(a["path"] for a in first._state.adds) == set(live_adds(table_path))
    assert first._state.txns == {"a": 7}
    _same(first._state, full)
    _same(again._state, full)
    _same(old._state, _state_by_query(spark, table_path, versionAsOf="0"))
    assert old.version() == 0


def test_schema_answers_see_every_new_commit(
    spark: Any, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import write_deltalake

    qc.write(_rows(spark, 0, 200), table_path, columnsToIndex="x", cubeSize=50)
    _no_rows_query(monkeypatch)
    versions = [qc.QbeastTable.forPath(spark, table_path).version()]
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64())])
    for i in range(3):
        write_deltalake(table_path, pa.table({"id": [i], "x": [1.0]}, schema=schema), mode="append")
        versions.append(qc.QbeastTable.forPath(spark, table_path).version())
    last = qc.QbeastTable.forPath(spark, table_path)
    monkeypatch.undo()
    assert versions == [0, 1, 2, 3]
    assert set(a["path"] for a in last._state.adds) == set(live_adds(table_path))
    _same(last._state, _state_by_query(spark, table_path))
    assert last.read().count() == 203


def test_state_larger_than_the_schema_limit_is_read_as_rows(
    spark: Any, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    qc.write(_rows(spark, 0, 300), table_path, columnsToIndex="x", cubeSize=50)
    qc.write(_rows(spark, 300, 400), table_path, mode="append")
    calls: list[int] = []
    collect = client_snapshot._collect_pairs

    def counted(df: Any) -> Any:
        calls.append(1)
        return collect(df)

    nonce = client_snapshot._nonce
    schema_asks: list[int] = []

    def counted_nonce() -> str:
        schema_asks.append(1)
        return nonce()

    monkeypatch.setattr(client_snapshot, "_collect_pairs", counted)
    monkeypatch.setattr(client_snapshot, "_nonce", counted_nonce)
    monkeypatch.setattr(client_snapshot, "STATE_LIMIT", 100)
    client_snapshot.clear_state_cache()
    table = qc.QbeastTable.forPath(spark, table_path)
    assert (calls, schema_asks) == ([1], [1])
    _same(table._state, _state_by_query(spark, table_path))
    assert table.read().count() == 400
    # the state came from a rows query: the next reads go there at once, for a difference
    qc.write(_rows(spark, 400, 450), table_path, mode="append")
    calls.clear()
    schema_asks.clear()
    after = qc.QbeastTable.forPath(spark, table_path)
    assert (calls, schema_asks) == ([1], [])
    assert after.version() == 2
    assert set(a["path"] for a in after._state.adds) == set(live_adds(table_path))
    _same(after._state, _state_by_query(spark, table_path))
    assert after.read().count() == 450


def test_schema_answer_errors_keep_their_qbeast_type(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    qc.write(_rows(spark, 0, 10), path, columnsToIndex="x")
    with pytest.raises(qc.InvalidOptionError, match="version 5 does not exist"):
        qc.QbeastTable.forPath(spark, path, versionAsOf=5)
    with pytest.raises(qc.TableNotFoundError):
        qc.QbeastTable.forPath(spark, str(tmp_path / "missing"))
    assert qc.QbeastTable.forPath(spark, path).version() == 0
