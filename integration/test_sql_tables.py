"""Named qbeast tables from SQL text alone (issue #34).

A plain ``pyspark`` Connect client, in a process that never imports qbeast-connect, sends
only SQL to a server with the plugin installed: ``CREATE TABLE ... USING qbeast LOCATION``
over an existing table or a new one (columns in the option ``schema``), ``SELECT`` with
and without a filter, ``TABLESAMPLE``, ``INSERT INTO``, ``INSERT OVERWRITE``,
``DESCRIBE``, ``DROP TABLE`` (the files stay). Answers are checked against ``deltalake``
reading the same table.

Spark gives a Python data source the catalog's options (the location) only when
``CREATE TABLE`` asks it for the schema; the plugin records the location and the write
options in that schema, which Spark hands to every later read and write
(``server_plugin.catalog_tables``). The suite's server runs qbeast-connect's SQL extension,
whose catalog rule hands every read and write the catalog's location and options, so a
column list, ``AS SELECT`` and managed tables (no ``LOCATION``) work too; on a server without
the extension (the last test) they fail with the supported form.
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

#: The start of every SQL-only client below: a plain pyspark session to the URL in argv[1],
#: the folder or table path in argv[2] as ``root``, and ``run(key, sql)`` keeping each
#: statement's rows (or its error) in ``out``.
_HEAD = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    url, root = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.remote(url).getOrCreate()
    out = {}

    def run(key, sql):
        try:
            out[key] = [list(r) for r in spark.sql(sql).collect()]
        except Exception as exc:
            out[key] = "ERROR: " + str(exc)
    """
)


def _run_client(script: str, url: str, root: str) -> dict[str, Any]:
    """What a SQL-only client script printed: its ``out``, as JSON on its last line."""
    done = subprocess.run(
        [sys.executable, "-c", script, url, root],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


_CLIENT = _HEAD + textwrap.dedent(
    """
    path = root

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
    out = _run_client(_CLIENT, remote_url, path)
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
    # a column list skips the schema call: the extension's catalog rule gives the location
    assert out["columns"] == [] and out["columns_read"] == [[1050]]


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


_NEW_TABLE_CLIENT = _HEAD + textwrap.dedent(
    """

    stats = '{"id_min": 0, "id_max": 1000, "x_min": 0, "x_max": 1}'
    run("create", f\"\"\"CREATE TABLE sql_new USING qbeast OPTIONS (
        schema 'id BIGINT, x DOUBLE, name STRING',
        columnsToIndex 'id,x', cubeSize '50', columnStats '{stats}')
        LOCATION '{root}/new'\"\"\")
    run("empty", "SELECT count(*) FROM sql_new")
    run("describe", "DESCRIBE TABLE sql_new")
    run("insert", "INSERT INTO sql_new SELECT id, id / 1000.0, concat('n', id) FROM range(0, 500)")
    run("values", "INSERT INTO sql_new VALUES (900, 0.5, 'v')")
    run("all", "SELECT count(*), sum(id), sum(x) FROM sql_new")
    run("filtered", "SELECT count(*), sum(id) FROM sql_new WHERE id BETWEEN 100 AND 199")
    run("named", "SELECT name FROM sql_new WHERE id = 900")
    run("sample", "SELECT id FROM sql_new TABLESAMPLE (20 PERCENT)")
    run("sample_table", f"CREATE TABLE sql_new_s USING qbeast OPTIONS (sampleFraction '0.2') "
        f"LOCATION '{root}/new'")
    run("sample_rows", "SELECT id FROM sql_new_s")
    run("sample_drop", "DROP TABLE sql_new_s")
    run("outside", "INSERT INTO sql_new VALUES (5000, 0.5, 'out')")
    run("after_outside", "SELECT count(*) FROM sql_new")
    run("overwrite", "INSERT OVERWRITE sql_new SELECT id, 0.25, 'o' FROM range(0, 100)")
    run("overwritten", "SELECT count(*), sum(id), sum(x) FROM sql_new")
    # a column list, AS SELECT and managed tables: Spark shows the source no location; the
    # server's SQL extension hands it the catalog's
    idx = "columnsToIndex 'id', columnStats '{\\"id_min\\": 0, \\"id_max\\": 9}'"
    run("cols_create", f"CREATE TABLE sql_cols (id BIGINT) USING qbeast OPTIONS ({idx}) "
        f"LOCATION '{root}/cols'")
    run("cols_insert", "INSERT INTO sql_cols VALUES (1), (2)")
    run("cols_read", "SELECT * FROM sql_cols")
    run("cols_overwrite", "INSERT OVERWRITE sql_cols VALUES (7)")
    run("cols_after", "SELECT * FROM sql_cols")
    run("ctas", f"CREATE TABLE sql_ctas USING qbeast OPTIONS ({idx}) LOCATION '{root}/ctas' "
        "AS SELECT id FROM range(5)")
    run("ctas_read", "SELECT count(*), sum(id) FROM sql_ctas")
    run("replace", f"CREATE OR REPLACE TABLE sql_ctas USING qbeast OPTIONS ({idx}) "
        f"LOCATION '{root}/ctas' AS SELECT id FROM range(3)")
    run("replace_read", "SELECT count(*), sum(id) FROM sql_ctas")
    run("drop_ctas", "DROP TABLE IF EXISTS sql_ctas")
    run("db", f"CREATE DATABASE qb_sql_db LOCATION '{root}/db'")
    run("managed", f"CREATE TABLE qb_sql_db.sql_managed (id BIGINT) USING qbeast "
        f"OPTIONS ({idx})")
    run("managed_insert", "INSERT INTO qb_sql_db.sql_managed SELECT id FROM range(4)")
    run("managed_read", "SELECT count(*), sum(id) FROM qb_sql_db.sql_managed")
    import os
    out["managed_files"] = sorted(os.listdir(f"{root}/db")) if os.path.isdir(f"{root}/db") else []
    run("managed_drop", "DROP TABLE qb_sql_db.sql_managed")
    out["managed_files_after"] = (
        sorted(os.listdir(f"{root}/db")) if os.path.isdir(f"{root}/db") else []
    )
    run("managed_ctas", f"CREATE TABLE qb_sql_db.sql_mctas USING qbeast OPTIONS ({idx}) "
        "AS SELECT id FROM range(6)")
    run("managed_ctas_read", "SELECT count(*) FROM qb_sql_db.sql_mctas")
    run("parted", f"CREATE TABLE sql_parted (id BIGINT, d STRING) USING qbeast "
        f"PARTITIONED BY (d) OPTIONS ({idx}) LOCATION '{root}/parted'")
    run("parted_insert", "INSERT INTO sql_parted VALUES (1, 'a')")
    run("parted_drop", "DROP TABLE sql_parted")
    run("no_location", f"CREATE TABLE sql_managed USING qbeast OPTIONS (schema 'id BIGINT', {idx})")
    run("drop_db", "DROP DATABASE qb_sql_db CASCADE")
    # the errors: no columns for a new table, columns that are not the existing table's
    run("no_schema", f"CREATE TABLE sql_noschema USING qbeast LOCATION '{root}/none'")
    run("no_stats", f"CREATE TABLE sql_nostats USING qbeast OPTIONS (schema 'id BIGINT', "
        f"columnsToIndex 'id') LOCATION '{root}/nostats'")
    run("mismatch", f"CREATE TABLE sql_bad USING qbeast OPTIONS (schema 'id INT') "
        f"LOCATION '{root}/new'")
    run("tables", "SHOW TABLES")
    run("drop", "DROP TABLE sql_new")
    run("drop_cols", "DROP TABLE IF EXISTS sql_cols")
    run("tables_after", "SHOW TABLES")
    out["imported"] = sorted(m for m in sys.modules if m.startswith(("qbeast", "server_plugin")))
    print(json.dumps(out))
    """
)


def test_sql_text_alone_creates_a_new_table(
    remote_spark: Any, remote_url: str, tmp_path: Path
) -> None:
    out = _run_client(_NEW_TABLE_CLIENT, remote_url, str(tmp_path))
    assert out["imported"] == []
    assert out["create"] == [] and out["empty"] == [[0]]
    assert [row[:2] for row in out["describe"]] == [
        ["id", "bigint"],
        ["x", "double"],
        ["name", "string"],
    ]
    assert out["insert"] == [] and out["values"] == []
    ids = [*range(500), 900]
    count, total, xs = out["all"][0]
    assert (count, total) == (501, sum(ids))
    assert xs == pytest.approx(sum(i / 1000 for i in range(500)) + 0.5)
    assert out["filtered"] == [[100, sum(range(100, 200))]]
    assert out["named"] == [["v"]]
    sampled = [row[0] for row in out["sample"]]
    assert 0 < len(sampled) < 501 and set(sampled) <= set(ids)
    # the server runs the SQL extension: TABLESAMPLE is the qbeast sample, the rows of a
    # table created with sampleFraction
    assert out["sample_table"] == [] and out["sample_drop"] == []
    assert sorted(sampled) == sorted(row[0] for row in out["sample_rows"])
    # a row outside the space the options fixed is refused, and nothing is written
    assert "QBEAST_INVALID_OPTION" in out["outside"] and "outside the space" in out["outside"]
    assert out["after_outside"] == [[501]]
    assert out["overwrite"] == []
    assert out["overwritten"] == [[100, sum(range(100)), 25.0]]

    # deltalake reads what SQL wrote: the rows, and the index the options asked for
    path = tmp_path / "new"
    table = deltalake_table(str(path))
    assert table.num_rows == 100
    assert pc.sum(table.column("id")).as_py() == sum(range(100))
    assert sorted(set(table.column("name").to_pylist())) == ["o"]
    qt = qc.QbeastTable.forPath(remote_spark, str(path))
    assert qt.indexedColumns() == ["id", "x"]
    assert qt.cubeSize() == 50
    # the catalog's records stay out of the Delta log
    log = "".join(p.read_text() for p in sorted((path / "_delta_log").glob("*.json")))
    assert "qbeast.location" not in log and "qbeast.options" not in log

    # through the extension's catalog rule: a column list, INSERT OVERWRITE, CTAS, CREATE OR
    # REPLACE ... AS SELECT, managed tables (their files go with DROP)
    assert out["cols_create"] == [] and out["cols_insert"] == []
    assert sorted(out["cols_read"]) == [[1], [2]]
    assert out["cols_overwrite"] == [] and out["cols_after"] == [[7]]
    assert deltalake_table(str(tmp_path / "cols")).column("id").to_pylist() == [7]
    assert qc.QbeastTable.forPath(remote_spark, str(tmp_path / "cols")).indexedColumns() == ["id"]
    assert out["ctas"] == [] and out["ctas_read"] == [[5, 10]]
    assert out["replace"] == [] and out["replace_read"] == [[3, 3]]
    assert sorted(deltalake_table(str(tmp_path / "ctas")).column("id").to_pylist()) == [0, 1, 2]
    assert out["db"] == [] and out["managed"] == [] and out["managed_insert"] == []
    assert out["managed_read"] == [[4, 6]]
    assert out["managed_files"] == ["sql_managed"] and out["managed_drop"] == []
    assert out["managed_files_after"] == []
    assert out["managed_ctas_read"] == [[6]] and out["drop_db"] == []
    assert not (tmp_path / "db").exists() or not any((tmp_path / "db").iterdir())
    # PARTITIONED BY columns: refused at the first write, nothing written
    assert out["parted"] == [] and out["parted_drop"] == []
    assert "QBEAST_UNSUPPORTED_OPERATION" in out["parted_insert"]
    assert "PARTITIONED BY (d)" in out["parted_insert"]
    assert not (tmp_path / "parted" / "_delta_log").exists()
    # without a column list, CREATE asks the source for the schema, and Spark gives it no
    # managed location: still refused, naming LOCATION
    unsupported = "QBEAST_UNSUPPORTED_OPERATION"
    assert unsupported in out["no_location"] and "needs LOCATION" in out["no_location"]
    assert "QBEAST_TABLE_NOT_FOUND" in out["no_schema"] and "option schema" in out["no_schema"]
    assert "QBEAST_INVALID_OPTION" in out["no_stats"] and "columnStats" in out["no_stats"]
    assert "QBEAST_SCHEMA_MISMATCH" in out["mismatch"]
    # the failed CREATEs left no table behind, in the catalog or on disk
    assert sorted(row[1] for row in out["tables"]) == ["sql_cols", "sql_new"]
    for name in ("none", "nostats"):
        assert not (tmp_path / name).exists(), name
    # DROP TABLE forgets the name and keeps the files (the tables are external)
    assert out["drop"] == [] and out["drop_cols"] == []
    assert [row[1] for row in out["tables_after"]] == []
    assert deltalake_table(str(path)).num_rows == 100


def test_write_to_a_named_table(remote_spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "named_write")
    first = remote_spark.range(300).selectExpr("id", "id % 5 as x")
    remote_spark.sql("DROP TABLE IF EXISTS qc_named")
    try:
        with pytest.raises(qc.TableNotFoundError, match="give its location"):
            qc.write(first, table="qc_named", columnsToIndex="id,x")
        qc.write(first, path, table="qc_named", columnsToIndex="id,x", cubeSize=100)
        # the new name is in the catalog: SQL reads it
        row = remote_spark.sql("SELECT count(*), sum(id) FROM qc_named").collect()[0]
        assert tuple(row) == (300, sum(range(300)))
        more = remote_spark.range(300, 400).selectExpr("id", "id % 5 as x")
        qc.writer(more).mode("append").saveAsTable("qc_named")  # at the table's location
        assert deltalake_table(path).num_rows == 400
        assert qc.QbeastTable.forName(remote_spark, "qc_named").toDF().count() == 400
        with pytest.raises(qc.InvalidOptionError, match="not at"):
            qc.write(more, str(tmp_path / "elsewhere"), table="qc_named", mode="append")
        with pytest.raises(qc.InvalidOptionError, match="table name"):
            qc.write(more, table="qc_named; DROP TABLE x", mode="append")
        with pytest.raises(qc.InvalidOptionError, match="path"):
            qc.write(more)
    finally:
        remote_spark.sql("DROP TABLE IF EXISTS qc_named")
    assert deltalake_table(path).num_rows == 400
    assert not (tmp_path / "elsewhere").exists()


_NO_EXTENSION_CLIENT = _HEAD + textwrap.dedent(
    """

    idx = "columnsToIndex 'id', columnStats '{\\"id_min\\": 0, \\"id_max\\": 9}'"
    run("cols_create", f"CREATE TABLE sql_cols (id BIGINT) USING qbeast LOCATION '{root}/cols'")
    run("cols_read", "SELECT * FROM sql_cols")
    run("cols_insert", "INSERT INTO sql_cols VALUES (1)")
    run("ctas", f"CREATE TABLE sql_ctas USING qbeast OPTIONS ({idx}) LOCATION '{root}/ctas' "
        "AS SELECT id FROM range(5)")
    run("managed", f"CREATE TABLE sql_managed USING qbeast OPTIONS (schema 'id BIGINT', {idx})")
    run("tables", "SHOW TABLES")
    run("drop_cols", "DROP TABLE sql_cols")
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def plain_server_url() -> Any:
    """A server started without qbeast-connect's SQL extension (one task slot)."""
    from qbeast_connect.spark.server import LocalConnectServer

    server = LocalConnectServer(master="local[1]", sql_extension=False).start()
    try:
        yield server.url
    finally:
        server.stop()


def test_without_the_extension_what_spark_hides_is_refused(
    plain_server_url: str, tmp_path: Path
) -> None:
    """Without the extension a Python data source never learns a catalog table's location
    when CREATE did not ask it for the schema: a column list, CTAS and managed tables fail
    with QBEAST_UNSUPPORTED_OPERATION naming the form that works, and leave nothing."""
    out = _run_client(_NO_EXTENSION_CLIENT, plain_server_url, str(tmp_path))
    unsupported = "QBEAST_UNSUPPORTED_OPERATION"
    assert out["cols_create"] == []  # Spark runs no code of the source here
    for key in ("cols_read", "cols_insert", "ctas"):
        assert unsupported in out[key] and "option schema" in out[key], key
    assert unsupported in out["managed"] and "needs LOCATION" in out["managed"]
    assert sorted(row[1] for row in out["tables"]) == ["sql_cols"]
    assert out["drop_cols"] == []
    for name in ("cols", "ctas"):
        assert not (tmp_path / name).exists(), name


def test_a_session_can_require_the_extension(plain_server_url: str, remote_url: str) -> None:
    from qbeast_connect.spark.sql_extension import EXTENSION_CLASS

    with pytest.raises(qc.MissingDependencyError, match=f"does not name {EXTENSION_CLASS}"):
        qc.session(remote=plain_server_url, sql_extension=True)
    # the suite's server runs it (the session is the module's, cached)
    spark = qc.session(remote=remote_url, sql_extension=True)
    assert EXTENSION_CLASS in spark.conf.get("spark.sql.extensions").split(",")
