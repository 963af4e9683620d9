"""Qbeast tables on S3 through a standalone Connect server, against a real S3 server.

A moto S3 server runs on a free loopback port; a Spark Connect server is started with the
endpoint and credentials in its environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...),
and the client (this process) has none: every S3 access happens in the server. The server
has no Hadoop S3 connector, so reads go through the plugin's reader, which the scan
explanation reports.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

import qbeast_connect as qc  # noqa: E402
from qbeast_connect.model.weight import weight_from_fraction  # noqa: E402
from qbeast_connect.spark.server import LocalConnectServer  # noqa: E402
from tests.moto_server import AWS_ENV_VARS, moto_s3_server, s3_client  # noqa: E402
from tests.spark.helpers import row_digest, spark_digest  # noqa: E402

ACCESS_KEY = "qbeast-it-key"
SECRET_KEY = "qbeast-it-secret"  # moto accepts any credentials


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    with moto_s3_server() as url:
        yield url


@pytest.fixture(scope="module")
def s3(s3_server: str) -> Any:
    """A boto3 client of the test (the Spark client itself has no credentials)."""
    return s3_client(s3_server, ACCESS_KEY, SECRET_KEY)


@pytest.fixture(scope="module")
def s3_spark(s3_server: str, monkeypatch_module: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in AWS_ENV_VARS:  # prove that the client needs no credentials
        monkeypatch_module.delenv(name, raising=False)
    env = {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1",
    }
    server = LocalConnectServer(
        master="local[2]", conf={"spark.sql.shuffle.partitions": "4"}, env=env
    ).start()
    spark = None
    try:
        spark = qc.session(remote=server.url)
        yield spark
    finally:
        if spark is not None:
            spark.stop()
        server.stop()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    patch = pytest.MonkeyPatch()
    yield patch
    patch.undo()


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"qb-it-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _keys(s3: Any, bucket: str, prefix: str) -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents") or ())


def test_write_append_read_sample_filter_optimize_on_s3(
    s3_spark: Any, s3: Any, bucket: str
) -> None:
    spark = s3_spark
    path = f"s3a://{bucket}/tables/events"
    df = spark.range(0, 6000, numPartitions=2).selectExpr(
        "id", "cast(id % 100 as double) as x", "concat('k', cast(id % 37 as string)) as k"
    )
    more = spark.range(6000, 9000, numPartitions=2).selectExpr(
        "id", "cast(id % 100 as double) as x", "concat('k', cast(id % 37 as string)) as k"
    )
    assert qc.write(df, path, columnsToIndex="x,k", cubeSize=500).version == 0
    assert qc.write(more, path, mode="append").version == 1
    everything = df.unionByName(more)
    expected = spark_digest(everything)

    keys = _keys(s3, bucket, "tables/events/")
    assert "tables/events/_delta_log/00000000000000000000.json" in keys
    assert "tables/events/_delta_log/00000000000000000001.json" in keys
    assert not any(".qbeast-conditional-put" in k or ".tmp-" in k for k in keys)

    table = qc.QbeastTable.forPath(spark, path)
    assert table.version() == 1
    scan = table.explainScan()
    assert scan.reader == "qbeast-plugin" and "read by: qbeast-plugin" in str(scan)
    assert all(f.startswith(path + "/") for f in scan.files)
    assert spark_digest(table.toDF()) == expected

    fraction = 0.1
    sample = table.sample(fraction)
    weighted = everything.filter(f"hash(x, k) < {weight_from_fraction(fraction)}")
    assert spark_digest(sample) == spark_digest(weighted)  # exactly the rows below the weight
    assert table.explainScan(fraction=0.01).selected_files < scan.total_files  # pruned

    where = "x < 10"
    assert spark_digest(table.filter(where)) == spark_digest(everything.filter(where))
    assert table.explainScan(where=where).selected_bytes < scan.total_bytes

    result = table.optimize()
    optimized = table.refresh()
    assert optimized.version() == result.version == 2
    assert spark_digest(optimized.toDF()) == expected
    assert spark_digest(optimized.sample(fraction)) == spark_digest(weighted)
    history = optimized.history()
    assert [h["version"] for h in history][:3] == [2, 1, 0]

    # delta-rs reads the same table from S3
    from deltalake import DeltaTable

    endpoint = s3.meta.endpoint_url
    other = DeltaTable(
        f"s3://{bucket}/tables/events",
        storage_options={
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        },
    )
    assert other.version() == 2
    assert row_digest(other.to_pyarrow_table()) == expected

    # vacuum: the files the optimize removed are the only candidates
    doomed = optimized.vacuum(retentionHours=0, dryRun=True, enforceRetentionDuration=False)
    live = {add["path"] for add in optimized._state.adds}
    assert doomed and not set(doomed) & live
    deleted = optimized.vacuum(retentionHours=0, enforceRetentionDuration=False)
    assert sorted(deleted) == sorted(doomed)
    assert spark_digest(qc.QbeastTable.forPath(spark, path).toDF()) == expected


def test_convert_a_parquet_directory_on_s3(s3_spark: Any, s3: Any, bucket: str) -> None:
    spark = s3_spark
    rows = pa.table(
        {"id": pa.array(range(400), pa.int64()), "x": pa.array(range(400), pa.float64())}
    )
    for part in range(2):
        sink = pa.BufferOutputStream()
        pq.write_table(rows.slice(part * 200, 200), sink)
        s3.put_object(
            Bucket=bucket, Key=f"raw/part-{part}.parquet", Body=sink.getvalue().to_pybytes()
        )
    path = f"s3://{bucket}/raw"
    assert qc.convertToQbeast(spark, path, columnsToIndex="x", cubeSize=100) == 0
    table = qc.QbeastTable.forPath(spark, path)
    assert table.explainScan().reader == "qbeast-plugin"
    assert spark_digest(table.toDF()) == row_digest(rows)
    indexed = table.optimize(0)
    assert indexed.version == 1
    assert spark_digest(table.refresh().toDF()) == row_digest(rows)


def test_local_tables_keep_sparks_reader(s3_spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "local")
    qc.write(
        s3_spark.range(0, 100).selectExpr("id", "cast(id as double) as x"),
        path,
        columnsToIndex="x",
        cubeSize=50,
    )
    table = qc.QbeastTable.forPath(s3_spark, path)
    assert table.explainScan().reader == "spark-parquet"
    assert table.toDF().count() == 100


def test_timeline_partitions_on_s3(s3_spark: Any, bucket: str) -> None:
    from qbeast_connect.timeline import Fact, UpdatePeriod, write_partitioned

    spark = s3_spark
    path = f"s3a://{bucket}/daily"
    days = spark.sql(
        "select cast(row_number() over (order by d) as bigint) as v, "
        "d as dt from (select explode(sequence(date'2015-01-01', date'2015-01-10')) as d)"
    )
    result = write_partitioned(days, path, partitionColumn="dt", updatePeriod="daily")
    assert result.version == 0 and result.num_rows == 10
    fact = Fact(spark, "sales", tables={path: [UpdatePeriod.DAILY]}, partitionColumn="dt")
    df = fact.read("2015-01-03T00:00:00Z", "2015-01-06T00:00:00Z")
    assert sorted((r["v"], r["dt"]) for r in df.collect()) == [
        (3, "2015-01-03"),
        (4, "2015-01-04"),
        (5, "2015-01-05"),
    ]


def test_client_environment_has_no_credentials(s3_spark: Any) -> None:
    assert not any(os.environ.get(name) for name in AWS_ENV_VARS)


def test_input_files_list_the_selected_s3_files(s3_spark: Any, bucket: str) -> None:
    spark = s3_spark
    path = f"s3://{bucket}/listed"
    df = spark.range(0, 3000, numPartitions=2).selectExpr("id", "cast(id % 100 as double) as x")
    qc.write(df, path, columnsToIndex="x", cubeSize=300)
    table = qc.QbeastTable.forPath(spark, path)
    scan = table.explainScan()
    assert scan.reader == "qbeast-plugin" and scan.total_files > 2
    assert sorted(table.toDF().inputFiles()) == sorted(scan.files)
    assert all(f.startswith(path + "/") and f.endswith(".parquet") for f in scan.files)
    narrow = table.filter("x < 5")
    assert sorted(narrow.inputFiles()) == sorted(table.explainScan(where="x < 5").files)
    assert 0 < len(narrow.inputFiles()) < scan.total_files
