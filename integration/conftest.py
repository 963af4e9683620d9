"""End-to-end tests against a standalone Spark Connect server process.

With ``SPARK_REMOTE`` set, the tests use that server (for example the containerized one);
otherwise they start their own server process on a free localhost port, the same way
``qbeast-connect server start`` does, and stop it at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from qbeast_connect.spark.server import LocalConnectServer
from tests.jvm_options import java_defaults


@pytest.fixture(scope="session")
def remote_url() -> Iterator[str]:
    url = os.environ.get("SPARK_REMOTE")
    if url:
        yield url
        return
    server = LocalConnectServer(master="local[2]").start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def remote_spark(remote_url: str) -> Iterator[Any]:
    import qbeast_connect as qc

    spark = qc.session(remote=remote_url)
    yield spark
    # stop the session while its server still runs: a client talking to a stopped server
    # retries for minutes
    qc.stop(remote=remote_url)


@pytest.fixture(scope="session")
def delta_spark() -> Iterator[Any]:
    """A session of the one embedded server that runs Delta's engine next to the plugin
    (``qc.session(delta=True)``), shared by the tests against Delta's JVM. Its JVM runs with
    Java's defaults, not the suite's options (:mod:`tests.jvm_options` says why)."""
    import qbeast_connect as qc

    with java_defaults():
        session = qc.session(
            delta=True,
            call_timeout=90,
            **{
                "spark.sql.shuffle.partitions": "4",
                # the tests' VACUUM RETAIN 0 HOURS: Delta refuses it by default
                "spark.databricks.delta.retentionDurationCheck.enabled": "false",
                # Delta rebuilds a snapshot's state in 50 tasks by default: minutes on two
                # cores
                "spark.databricks.delta.snapshotPartitions": "2",
            },
        )
    yield session
    qc.stop(delta=True)


@pytest.fixture
def dspark(delta_spark: Any) -> Any:
    """The shared session of the server that runs Delta's engine (:func:`delta_spark`)."""
    return delta_spark
