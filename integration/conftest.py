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
