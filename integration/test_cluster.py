"""Qbeast tables on a real Spark standalone cluster, with a loopback S3 server as storage.

One cluster per module: a standalone master and two workers (separate JVMs, one core
each, started from the pyspark wheel by ``StandaloneCluster``), the project's Connect
server driving them with ``--master spark://...``, and a moto S3 server on loopback as the
shared storage. Neither the server nor the workers have any S3 setting in their
environment: the endpoint, region and credentials come from the client
(``qc.set_storage_options``, or per table as ``format("qbeast")`` options), so every S3
access below, on the driver and in the executors, proves they travel with the calls.
Every answer is checked against ``deltalake`` reading the same S3 objects.

Every test runs twice on the same cluster (the ``mode`` parameter): with the project's
server, whose driver and executors import the plugin from this checkout ("installed"), and
with a zero-install server ("stock"), whose driver and executors run a Python that has only
``pyspark[connect]`` and ``boto3`` (the S3 client the plugin needs): the client ships the
plugin as a session artifact and the executors import it from there. The two servers never
run at once (the cluster's two cores go to one application at a time).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

import qbeast_connect as qc  # noqa: E402
from qbeast_connect.model.weight import weight_from_fraction  # noqa: E402
from qbeast_connect.spark.cluster import StandaloneCluster  # noqa: E402
from qbeast_connect.spark.server import LocalConnectServer, discovery_pythonpath  # noqa: E402
from qbeast_connect.spark.session import register_plugin  # noqa: E402
from tests.moto_server import AWS_ENV_VARS, moto_s3_server, s3_client  # noqa: E402
from tests.spark.helpers import row_digest, spark_digest  # noqa: E402
from tests.stock_python import (  # noqa: E402
    FORBIDDEN,
    build_stock_python,
    imports_udf,
    start_stock_server,
)

ACCESS_KEY = "qbeast-cluster-key"
#: Searched for in every log and every stored object: it must appear in none.
SECRET_KEY = "qbeast-cluster-secret-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def no_aws_env() -> Iterator[None]:
    patch = pytest.MonkeyPatch()
    for name in AWS_ENV_VARS:  # neither the JVMs nor their Python workers get any
        patch.delenv(name, raising=False)
    # no shared config or credential files either
    patch.setenv("AWS_CONFIG_FILE", "/nonexistent/qbeast-aws-config")
    patch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/qbeast-aws-credentials")
    patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield
    patch.undo()


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    with moto_s3_server() as url:
        yield url


@pytest.fixture(scope="module")
def s3(s3_url: str) -> Any:
    """The test's own boto3 client (the Spark processes have no credentials)."""
    return s3_client(s3_url, ACCESS_KEY, SECRET_KEY)


@pytest.fixture(scope="module")
def storage(s3_url: str) -> dict[str, str]:
    return {
        "fs.s3a.endpoint": s3_url,
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
    }


#: Processes seen running on the cluster (executor JVMs, Python workers): all must be gone
#: once the cluster is stopped.
_SEEN: set[int] = set()


@pytest.fixture(scope="module")
def cluster(no_aws_env: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cluster = StandaloneCluster(
        workers=2, cores=1, memory="1g", work_dir=str(tmp_path_factory.mktemp("cluster"))
    ).start()
    started: set[int] = set()
    cluster_pids = cluster.pids
    try:
        yield cluster
        started = cluster.process_tree() | _SEEN
    finally:
        cluster.stop()
    # nothing is left behind: no master, worker or executor JVM, no Python worker
    assert set(cluster_pids) <= started and len(started) >= 3
    alive = [pid for pid in started if _running(pid)]
    assert alive == [], f"processes of the cluster still running: {alive}"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module", params=["installed", "stock"])
def mode(request: pytest.FixtureRequest) -> str:
    """Which server drives the cluster: the project's own, or a zero-install one."""
    return str(request.param)


@pytest.fixture(scope="module")
def stock_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    # boto3 (and its own dependencies) is the storage client the plugin needs for s3://
    return build_stock_python(tmp_path_factory.mktemp("stock"), also=("boto3",))


@pytest.fixture(scope="module")
def server(
    mode: str,
    cluster: StandaloneCluster,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    conf = {
        **cluster.app_conf(executor_memory="512m"),
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
    }
    log = str(tmp_path_factory.mktemp("server") / "server.log")
    if mode == "stock":
        stock_python = request.getfixturevalue("stock_python")
        # the executors run the stock Python too, and do not inherit the workers' path
        # to this checkout: what they import of the plugin is what the client ships
        conf["spark.executorEnv.PYTHONPATH"] = ""
        conf["spark.executorEnv.PYSPARK_PYTHON"] = stock_python
        workdir = tmp_path_factory.mktemp("stock-server")
        server = start_stock_server(
            stock_python, workdir, master=cluster.master_url, conf=conf, log_path=log
        )
    else:
        server = LocalConnectServer(master=cluster.master_url, conf=conf, log_path=log).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def spark(server: LocalConnectServer, storage: dict[str, str]) -> Iterator[Any]:
    session = qc.session(remote=server.url)
    qc.set_storage_options(session, storage)
    try:
        yield session
    finally:
        qc.stop(remote=server.url)


@pytest.fixture(scope="module")
def other_spark(spark: Any, server: LocalConnectServer, storage: dict[str, str]) -> Iterator[Any]:
    """A second client session on the same server, with its own storage settings."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(server.url).create()
    register_plugin(session)
    qc.set_storage_options(session, storage)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"qb-cl-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _keys(s3: Any, bucket: str, prefix: str = "") -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents") or ())


def _delta(s3_url: str, uri: str) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(
        uri,
        storage_options={
            "AWS_ENDPOINT_URL": s3_url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        },
    )


def _rows(spark: Any, start: int, end: int) -> Any:
    return spark.range(start, end, numPartitions=4).selectExpr(
        "id", "cast(id % 100 as double) as x", "concat('k', cast(id % 37 as string)) as k"
    )


def _where_tasks_ran(spark: Any, partitions: int = 8) -> list[dict[str, Any]]:
    """Where each task of a job ran: its pid, its executor JVM's pid, that JVM's parent,
    the executor id, the task's Python and the file its ``server_plugin`` came from."""
    from pyspark.sql.functions import udf

    def locate(_):  # type: ignore[no-untyped-def]  # no hints: Spark would infer an arrow UDF
        import json
        import sys
        import time

        time.sleep(0.4)  # long enough for both executors to take tasks
        try:
            import server_plugin

            plugin = server_plugin.__file__
        except ImportError:
            plugin = None
        pid = os.getpid()
        found = {"task": pid, "jvm": -1, "parent": -1, "executor": -1}
        for _step in range(8):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args:
                with open(f"/proc/{pid}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                executor = int(args[args.index(b"--executor-id") + 1].decode())
                found.update(jvm=pid, parent=parent, executor=executor)
                break
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        return json.dumps({**found, "python": sys.executable, "plugin": plugin})

    where = udf(locate, "string")
    rows = spark.range(0, partitions, numPartitions=partitions).select(where("id").alias("w"))
    return [json.loads(row["w"]) for row in rows.collect()]


def test_executors_run_in_the_two_workers(
    mode: str,
    spark: Any,
    cluster: StandaloneCluster,
    server: LocalConnectServer,
    request: pytest.FixtureRequest,
) -> None:
    where = _where_tasks_ran(spark)
    assert len(where) == 8
    _SEEN.update(pid for w in where for pid in (w["task"], w["jvm"]))
    # every task ran in an executor JVM whose parent is one of our worker JVMs ...
    assert {w["parent"] for w in where} == set(cluster.worker_pids)
    # ... two executors, one per worker, none of them the Connect server (the driver)
    executors = {(w["jvm"], w["executor"]) for w in where}
    assert len(executors) == 2 and {e for _j, e in executors} == {0, 1}
    assert server.pid not in {w["jvm"] for w in where}
    state = cluster.state()
    assert state is not None and len(cluster.alive_workers()) == 2
    apps = [a for a in state["activeapps"] if a["name"] == "qbeast-connect"]
    assert len(apps) == 1 and apps[0]["cores"] == 2 and apps[0]["memoryperexecutor"] == 512
    plugins = {w["plugin"] for w in where}
    if mode == "installed":
        assert {w["python"] for w in where} == {sys.executable}
        checkout = discovery_pythonpath() or ""
        assert len(plugins) == 1 and str(plugins.pop()).startswith(checkout)
        return
    # stock: the executors' Python is the stock one, and the plugin they imported is the
    # bundle this client shipped, fetched by each executor into its own directory
    from qbeast_connect.spark.bundle import build_bundle

    assert {w["python"] for w in where} == {request.getfixturevalue("stock_python")}
    bundle = build_bundle().name
    work = os.path.realpath(cluster.work_dir)
    assert len(plugins) == 2, plugins  # one copy per executor
    for plugin in plugins:
        assert bundle in str(plugin) and os.path.realpath(str(plugin)).startswith(work), plugin


def test_stock_executors_have_no_plugin_until_the_client_ships_it(
    mode: str, server: LocalConnectServer, request: pytest.FixtureRequest
) -> None:
    """A session that was never given the plugin: its executors cannot import it, nor mmh3
    (installed mode: they import the checkout's); ``boto3`` is there in both modes."""
    from pyspark.sql.connect.session import SparkSession

    raw = SparkSession.builder.remote(server.url).create()
    try:
        names = (*FORBIDDEN, "boto3")
        rows = raw.range(0, 8, numPartitions=8).select(imports_udf(names)("id")).collect()
    finally:
        raw.stop()
    answers = [json.loads(row[0]) for row in rows]
    _SEEN.update(a["pid"] for a in answers)
    for answer in answers:
        found = answer["found"]
        assert found["boto3"]
        if mode == "stock":
            assert answer["executable"] == request.getfixturevalue("stock_python")
            assert {n: found[n] for n in FORBIDDEN} == dict.fromkeys(FORBIDDEN)
        else:
            assert answer["executable"] == sys.executable
            assert found["server_plugin"] and found["mmh3"]


def test_write_append_sample_filter_optimize_vacuum_on_cluster(
    spark: Any, s3: Any, s3_url: str, bucket: str
) -> None:
    path = f"s3://{bucket}/tables/events"
    df, more = _rows(spark, 0, 6000), _rows(spark, 6000, 9000)
    assert qc.write(df, path, columnsToIndex="x,k", cubeSize=500).version == 0
    assert qc.write(more, path, mode="append").version == 1
    everything = df.unionByName(more)
    expected = spark_digest(everything)
    assert _delta(s3_url, path).version() == 1
    assert row_digest(_delta(s3_url, path).to_pyarrow_table()) == expected

    table = qc.QbeastTable.forPath(spark, path)
    scan = table.explainScan()
    assert scan.reader == "qbeast-plugin" and scan.total_files > 2
    assert spark_digest(table.toDF()) == expected
    # inputFiles() names the selected s3:// files, as it does for local tables
    assert sorted(table.toDF().inputFiles()) == sorted(scan.files)
    assert all(f.startswith(path + "/") and f.endswith(".parquet") for f in scan.files)
    sampled = table.sample(0.01)
    assert sorted(sampled.inputFiles()) == sorted(table.explainScan(fraction=0.01).files)
    assert 0 < len(sampled.inputFiles()) < scan.total_files

    fraction = 0.1
    weighted = everything.filter(f"hash(x, k) < {weight_from_fraction(fraction)}")
    assert spark_digest(table.sample(fraction)) == spark_digest(weighted)
    assert table.explainScan(fraction=0.01).selected_files < scan.total_files
    where = "x < 10"
    assert spark_digest(table.filter(where)) == spark_digest(everything.filter(where))
    assert table.explainScan(where=where).selected_bytes < scan.total_bytes

    result = table.optimize()
    optimized = table.refresh()
    assert optimized.version() == result.version == 2
    assert spark_digest(optimized.toDF()) == expected
    assert spark_digest(optimized.sample(fraction)) == spark_digest(weighted)
    delta = _delta(s3_url, path)
    assert delta.version() == 2
    assert row_digest(delta.to_pyarrow_table()) == expected
    live = {add["path"] for add in optimized._state.adds}
    assert set(delta.file_uris()) == {f"{path}/{p}" for p in live}

    doomed = optimized.vacuum(retentionHours=0, dryRun=True, enforceRetentionDuration=False)
    assert doomed and not set(doomed) & live
    deleted = optimized.vacuum(retentionHours=0, enforceRetentionDuration=False)
    assert sorted(deleted) == sorted(doomed)
    data_keys = {
        k.removeprefix("tables/events/")
        for k in _keys(s3, bucket, "tables/events/")
        if "/_delta_log/" not in f"/{k}"
    }
    assert data_keys == live  # exactly the live files are left
    assert row_digest(_delta(s3_url, path).to_pyarrow_table()) == expected
    assert spark_digest(qc.QbeastTable.forPath(spark, path).toDF()) == expected


def test_concurrent_appends_from_two_clients(
    spark: Any, other_spark: Any, s3_url: str, bucket: str
) -> None:
    path = f"s3a://{bucket}/shared"
    assert qc.write(_rows(spark, 0, 2000), path, columnsToIndex="x", cubeSize=400).version == 0
    results: dict[str, Any] = {}

    def append(name: str, session: Any, start: int) -> None:
        try:
            results[name] = qc.write(_rows(session, start, start + 1500), path, mode="append")
        except BaseException as exc:  # reported below
            results[name] = exc

    threads = [
        threading.Thread(target=append, args=("a", spark, 10_000)),
        threading.Thread(target=append, args=("b", other_spark, 20_000)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert sorted(r.version for r in results.values()) == [1, 2]
    expected = spark_digest(
        _rows(spark, 0, 2000)
        .unionByName(_rows(spark, 10_000, 11_500))
        .unionByName(_rows(spark, 20_000, 21_500))
    )
    delta = _delta(s3_url, path.replace("s3a://", "s3://"))
    assert delta.version() == 2
    assert row_digest(delta.to_pyarrow_table()) == expected
    assert spark_digest(qc.QbeastTable.forPath(other_spark, path).toDF()) == expected


def test_per_table_storage_options_of_the_qbeast_format(
    server: LocalConnectServer, s3_url: str, storage: dict[str, str], bucket: str
) -> None:
    from pyspark.sql.connect.session import SparkSession

    # a plain session without qc storage settings: the options of each read and write
    plain = SparkSession.builder.remote(server.url).create()
    try:
        register_plugin(plain)
        path = f"s3://{bucket}/by-format"
        df = _rows(plain, 0, 3000)
        writer = df.write.format("qbeast").options(**storage).mode("overwrite")
        writer = writer.option("columnsToIndex", "x").option("cubeSize", "500")
        writer.option("columnStats", '{"x_min": 0.0, "x_max": 100.0}').save(path)
        back = plain.read.format("qbeast").options(**storage).load(path)
        assert spark_digest(back) == spark_digest(df)
        assert spark_digest(back.where("x < 5")) == spark_digest(df.where("x < 5"))
        assert row_digest(_delta(s3_url, path).to_pyarrow_table()) == spark_digest(df)
        # without them the server has no credentials at all
        with pytest.raises(Exception, match=r"(?i)credential|AWS_ACCESS_KEY_ID"):
            plain.read.format("qbeast").load(path).count()
    finally:
        plain.stop()


def test_secret_is_never_logged_nor_stored(
    spark: Any,
    s3: Any,
    cluster: StandaloneCluster,
    server: LocalConnectServer,
    bucket: str,
) -> None:
    path = f"s3://{bucket}/secret-check"
    qc.write(_rows(spark, 0, 1000), path, columnsToIndex="x", cubeSize=300)
    secret = SECRET_KEY.encode()
    # every object the module wrote (the earlier tests' tables too): logs and data files
    searched = 0
    for name in (b["Name"] for b in s3.list_buckets()["Buckets"]):
        for key in _keys(s3, name):
            assert secret not in s3.get_object(Bucket=name, Key=key)["Body"].read(), key
            searched += 1
    assert searched >= 3
    logs = [Path(server.log_path)] + [p for p in Path(cluster.work_dir).rglob("*") if p.is_file()]
    assert any("stderr" in p.name for p in logs)  # the executors' logs are searched too
    for log in logs:
        assert secret not in log.read_bytes(), log
