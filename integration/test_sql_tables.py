"""Named qbeast tables from SQL text alone (issue #34, first part).

A plain ``pyspark`` Connect client, in a process that never imports qbeast-connect, sends
only SQL to a server with the plugin installed: ``CREATE TABLE ... USING qbeast LOCATION``
over an existing table, ``SELECT`` with and without a filter, ``INSERT INTO``,
``DESCRIBE``, ``DROP TABLE`` (the files stay). Its answers are checked against
``deltalake`` reading the same table.

Spark gives a Python data source the catalog's options (the location) only when
``CREATE TABLE`` asks it for the schema; the plugin records the location in that schema,
which Spark hands to every later read and write (``server_plugin.qbeast_format``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import qbeast_connect as qc
from tests.spark.helpers import deltalake_table

pytestmark = [pytest.mark.slow]

_CLIENT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    url, path = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.remote(url).getOrCreate()
    out = {}

    def run(key, sql):
        try:
            out[key] = [list(r) for r in spark.sql(sql).collect()]
        except Exception as exc:
            out[key] = "ERROR: " + str(exc)

    run("drop0", "DROP TABLE IF EXISTS sql_events")
    run("create", f"CREATE TABLE sql_events USING qbeast LOCATION '{path}'")
    run("all", "SELECT count(*), sum(x) FROM sql_events")
    run("filtered", "SELECT count(*), sum(x) FROM sql_events WHERE id BETWEEN 100 AND 199")
    run("insert", "INSERT INTO sql_events SELECT id, id * 3 FROM range(10, 60)")
    run("after", "SELECT count(*), sum(x) FROM sql_events")
    run("describe", "DESCRIBE TABLE sql_events")
    run("drop", "DROP TABLE sql_events")
    run("columns", f"CREATE TABLE sql_cols (id BIGINT, x BIGINT) USING qbeast LOCATION '{path}'")
    run("columns_read", "SELECT count(*) FROM sql_cols")
    run("drop_cols", "DROP TABLE sql_cols")
    out["imported"] = sorted(m for m in sys.modules if m.startswith(("qbeast", "server_plugin")))
    print(json.dumps(out))
    """
)


def test_sql_text_alone_creates_reads_inserts_and_drops(
    remote_spark: Any, remote_url: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "events")
    qc.write(
        remote_spark.range(1000).selectExpr("id", "id * 2 as x"),
        path,
        columnsToIndex="id,x",
        cubeSize=100,
    )
    done = subprocess.run(
        [sys.executable, "-c", _CLIENT, remote_url, path],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["imported"] == []
    assert out["create"] == [] and out["insert"] == [] and out["drop"] == []
    assert out["all"] == [[1000, 999000]]
    assert out["filtered"] == [[100, sum(2 * i for i in range(100, 200))]]
    inserted = sum(3 * i for i in range(10, 60))
    assert out["after"] == [[1050, 999000 + inserted]]
    assert [row[:2] for row in out["describe"]] == [["id", "bigint"], ["x", "bigint"]]
    # the table is the files at the location: deltalake reads what SQL wrote, DROP kept them
    table = deltalake_table(path)
    assert table.num_rows == 1050
    assert pc.sum(table.column("x")).as_py() == 999000 + inserted
    # a column list keeps the schema call, so the location is not known: a clear error
    assert "without a column list" in out["columns_read"]


def test_for_name_opens_a_catalog_table(remote_spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "named")
    qc.write(
        remote_spark.range(500).selectExpr("id", "id % 7 as x"),
        path,
        columnsToIndex="id,x",
        cubeSize=100,
    )
    remote_spark.sql("DROP TABLE IF EXISTS named_events")
    remote_spark.sql(f"CREATE TABLE named_events USING qbeast LOCATION '{path}'")
    try:
        table = qc.QbeastTable.forName(remote_spark, "named_events")
        assert table.path == qc.QbeastTable.forPath(remote_spark, path).path
        assert table.toDF().count() == 500
        assert (
            table.sample(0.5).count()
            == qc.QbeastTable.forPath(remote_spark, path).sample(0.5).count()
        )
    finally:
        remote_spark.sql("DROP TABLE IF EXISTS named_events")
    with pytest.raises(qc.TableNotFoundError, match="no table 'nope_events'"):
        qc.QbeastTable.forName(remote_spark, "nope_events")
