"""Zero-install: a stock Spark Connect server, whose Python has only ``pyspark[connect]``.

The server's Python (driver and workers) is a fresh ``venv`` whose site-packages holds one
``.pth`` line: a directory of symlinks to exactly the distributions ``pyspark[connect]``
requires, read from their ``importlib.metadata`` requirements, transitively. So it sees
pyspark, py4j, pandas, pyarrow, numpy, grpc and their own dependencies, and not
qbeast-connect, its ``pyspark_qbeast`` shim or ``mmh3``. The test proves that in the
server's own workers before any client ships anything; then a normal client runs every
operation and ``deltalake`` reads each table the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stock_python import (
    FORBIDDEN,
    REQUIRED,
    build_stock_python,
    imports_udf,
    start_stock_server,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stock_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_stock_python(tmp_path_factory.mktemp("stock"))


@pytest.fixture(scope="module")
def stock_server(stock_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = start_stock_server(stock_python, tmp_path_factory.mktemp("stock-server"))
    try:
        yield server.url
    finally:
        server.stop()


def test_stock_python_cannot_import_the_plugin(stock_python: str, tmp_path: Path) -> None:
    names = (*FORBIDDEN, *REQUIRED)
    code = (
        "import importlib.util, json; "
        f"print(json.dumps({{n: importlib.util.find_spec(n) is not None for n in {names!r}}}))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [stock_python, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    found = json.loads(out.stdout)
    assert found == {**dict.fromkeys(FORBIDDEN, False), **dict.fromkeys(REQUIRED, True)}


def test_zero_install_on_a_stock_server(
    stock_server: str, stock_python: str, tmp_path: Path
) -> None:
    from pyspark.sql import SparkSession

    # 1. the server's own workers, before anything is shipped: no plugin, no mmh3
    # create(), not getOrCreate(): another session of this process (the suite's) would be reused
    raw = SparkSession.builder.remote(stock_server).create()
    try:
        answer = json.loads(raw.range(1).select(imports_udf()("id")).collect()[0][0])
    finally:
        raw.stop()
    assert answer["executable"] == stock_python
    found = answer["found"]
    assert {n: found[n] for n in FORBIDDEN} == dict.fromkeys(FORBIDDEN)
    assert all(found[n] for n in REQUIRED)

    # 2. a normal client: qc.session ships the plugin, and every operation works
    from pyspark.sql import functions as F

    import qbeast_connect as qc
    from qbeast_connect.planning.file_planner import sample_weight_sql
    from qbeast_connect.spark.bundle import build_bundle
    from qbeast_connect.spark.plugin_setup import SESSION_CONF, probe_server
    from qbeast_connect.timeline import load_timelines, write_partitioned
    from server_plugin.datasource import PLUGIN_VERSION
    from tests.spark.helpers import deltalake_table, row_digest, spark_digest

    spark = qc.session(stock_server)
    try:
        shipped = probe_server(spark)
        assert shipped.version == PLUGIN_VERSION
        assert shipped.origin is not None and build_bundle().name in shipped.origin
        assert {k: spark.conf.get(k) for k in SESSION_CONF} == dict(SESSION_CONF)

        table = str(tmp_path / "indexed")
        df = spark.range(0, 20_000, numPartitions=4).select(
            "id",
            (F.col("id") % 1000 / 10.0).alias("x"),
            F.concat(F.lit("k"), (F.col("id") % 37).cast("string")).alias("k"),
        )
        first = qc.write(df, table, columnsToIndex="x,k", cubeSize=1_000)
        second = qc.write(
            df.select((F.col("id") + 20_000).alias("id"), "x", "k"), table, mode="append"
        )
        assert (first.version, second.version) == (0, 1)
        t = qc.QbeastTable.forPath(spark, table)
        assert t.toDF().count() == 40_000
        # 50 of every 1000 ids have x < 5
        assert t.filter("x < 5").count() == 2_000
        assert spark.read.format("qbeast").load(table).where("x < 5").count() == 2_000
        sample = t.sample(0.2).count()
        assert sample == t.toDF().where(sample_weight_sql(t.indexedColumns(), 0.2)).count()
        assert 0.1 * 40_000 < sample < 0.3 * 40_000
        before = spark_digest(t.toDF())
        assert before[0] == 40_000

        optimized = t.optimize()
        assert optimized.rows == 40_000 and optimized.removed_files > 0
        t = t.refresh()
        metrics = t.getIndexMetrics()
        assert metrics.element_count == 40_000 and metrics.cube_count > 1
        assert spark_digest(t.toDF()) == before == row_digest(deltalake_table(table))
        live = {p.name for p in Path(table).glob("**/*.parquet")}
        vacuumed = t.vacuum(retentionHours=0, enforceRetentionDuration=False)
        assert len(vacuumed) == optimized.removed_files
        assert len({p.name for p in Path(table).glob("**/*.parquet")}) == len(live) - len(vacuumed)
        assert row_digest(deltalake_table(table)) == before

        # df.write.format("qbeast") through the explicitly registered source
        fmt = str(tmp_path / "format")
        (
            df.write.format("qbeast")
            .mode("append")
            .option("columnsToIndex", "x")
            .option("columnStats", '{"x_min": 0, "x_max": 100}')
            .save(fmt)
        )
        assert row_digest(deltalake_table(fmt)) == spark_digest(df)
        assert spark.read.format("qbeast").load(fmt).where("x >= 99").count() == 200

        # convert a parquet directory, then index its staging area
        plain = str(tmp_path / "plain")
        df.write.parquet(plain)
        qc.convertToQbeast(spark, plain, "x,k", cubeSize=2_000)
        converted = qc.QbeastTable.forPath(spark, plain)
        assert converted.toDF().count() == 20_000
        assert converted.optimize(0).rows == 20_000
        assert row_digest(deltalake_table(plain)) == spark_digest(df)

        # a time-partitioned table with its timeline
        daily = str(tmp_path / "daily")
        events = spark.range(0, 96).select(
            "id",
            F.timestamp_seconds(F.lit(1_422_489_600) + F.col("id") * 1_800).alias("ts"),
        )
        written = write_partitioned(events, daily, partitionColumn="ts", updatePeriod="daily")
        assert written.version == 0
        timelines = load_timelines(spark, daily)
        assert [str(p) for p in next(iter(timelines.values())).partitions()] == [
            "2015-01-29",
            "2015-01-30",
        ]
        assert row_digest(deltalake_table(daily), ["id"]) == spark_digest(events, ["id"])
    finally:
        qc.stop(remote=stock_server)


def test_installed_plugin_of_another_version_is_refused(stock_server: str, tmp_path: Path) -> None:
    """A session whose workers import a plugin of another version never gets to write.

    The "installed" plugin is a stand-in added to a fresh session as an artifact, so that
    this runs on the module's stock server; that its probe sees 0.0.1 and not the plugin
    an earlier session shipped also shows that sessions' Python workers are kept apart.
    """
    import zipfile

    from pyspark.sql import SparkSession

    from qbeast_connect.exceptions import PluginVersionMismatchError
    from qbeast_connect.spark.session import register_plugin
    from server_plugin.datasource import PLUGIN_VERSION

    old = tmp_path / "old_plugin.zip"
    with zipfile.ZipFile(old, "w") as archive:
        archive.writestr("server_plugin/__init__.py", "")
        archive.writestr("server_plugin/datasource.py", 'PLUGIN_VERSION = "0.0.1"\n')
    spark = SparkSession.builder.remote(stock_server).create()
    try:
        spark.addArtifacts(str(old), pyfile=True)
        with pytest.raises(PluginVersionMismatchError) as raised:
            register_plugin(spark)
        text = str(raised.value)
        assert "qbeast-connect 0.0.1 installed" in text and "old_plugin.zip" in text
        assert f"this client is qbeast-connect {PLUGIN_VERSION}" in text
        # nothing was registered on the session
        with pytest.raises(Exception, match="qbeast_snapshot"):
            spark.read.format("qbeast_snapshot").option("probe", "true").load().collect()
    finally:
        spark.stop()


def test_a_refused_client_joining_a_session_leaves_its_owner_alone(
    stock_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: a client of another version that joins a live session (``;session_id=``)
    is refused, and the refusal must neither call the other client's shipped plugin
    "installed" nor close the session under its owner (whose calls all failed after it
    with INVALID_HANDLE.SESSION_CLOSED)."""
    import qbeast_connect as qc
    import server_plugin.datasource as datasource
    from qbeast_connect.exceptions import PluginVersionMismatchError

    owner = qc.session(stock_server)
    table = str(tmp_path / "t")
    qc.write(owner.range(500), table, columnsToIndex="id", cubeSize=100)
    owner_version = datasource.PLUGIN_VERSION
    monkeypatch.setattr(datasource, "PLUGIN_VERSION", "0.0.0+other")
    with pytest.raises(PluginVersionMismatchError) as raised:
        qc.session(f"{stock_server}/;session_id={owner.session_id}")
    monkeypatch.undo()
    text = str(raised.value)
    assert f"qbeast-connect {owner_version}, shipped to it by another client" in text
    assert "installed (" not in text
    # the owner's session is intact: its plugin, its data sources, its reads
    assert qc.QbeastTable.forPath(owner, table).toDF().count() == 500
    assert owner.read.format("qbeast").load(table).where("id < 10").count() == 10


def test_stock_python_needs_boto3_for_s3_and_nothing_else(
    stock_python: str, tmp_path: Path
) -> None:
    """The shipped bundle alone, in the pyspark[connect]-only Python: local tables need
    nothing more; an ``s3://`` table needs boto3 (the storage client the bundle does not
    carry), and the error says so."""
    from qbeast_connect.spark.bundle import build_bundle

    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from server_plugin.delta.storage import storage_for; "
        "from qbeast_connect.exceptions import QbeastError; "
        "local = storage_for(sys.argv[2]); "
        "local.put_atomic('probe.txt', b'ok'); "
        "answer = {'local': local.read_bytes('probe.txt').decode()}\n"
        "try:\n"
        "    storage_for('s3://bucket/table', {}).exists('_delta_log')\n"
        "except QbeastError as exc:\n"
        "    answer['s3'] = [type(exc).__name__, exc.code, str(exc)]\n"
        "print(json.dumps(answer))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "AWS_"))}
    out = subprocess.run(
        [stock_python, "-c", code, str(build_bundle().path), str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    answer = json.loads(out.stdout)
    assert answer["local"] == "ok"
    name, code_, text = answer["s3"]
    assert name == "MissingDependencyError" and "boto3" in text and "pip install boto3" in text
    assert code_
