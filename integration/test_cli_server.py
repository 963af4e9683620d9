"""``qbeast-connect server start|status|stop``, and ``format("qbeast")`` for a client that
knows nothing about qbeast-connect.

The server is started by the command line exactly as a user would (detached, state file,
log file). The client is a separate Python process that imports only pyspark, builds a plain
``SparkSession.builder.remote(url).getOrCreate()`` and never registers anything: the
``qbeast`` format it uses is the one Spark registered by itself from ``pyspark_qbeast``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from qbeast_connect.spark.server import free_port

pytestmark = pytest.mark.slow

PLAIN_CLIENT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    url, path = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.remote(url).getOrCreate()
    df = spark.range(0, 5000, numPartitions=2).selectExpr(
        "id", "cast(id % 100 as double) as x", "concat('k', cast(id % 7 as string)) as k"
    )
    (
        df.write.format("qbeast")
        .option("columnsToIndex", "x,k")
        .option("columnStats", '{"x_min": 0, "x_max": 100}')
        .mode("append")
        .save(path)
    )
    df.selectExpr("id + 5000 as id", "x", "k").write.format("qbeast").mode("append").save(path)
    table = spark.read.format("qbeast").load(path)
    spark.sql(f"CREATE TABLE cli_events USING qbeast LOCATION '{path}'").collect()
    print(json.dumps({
        "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                          ("qbeast_connect", "server_plugin", "pyspark_qbeast")),
        "columns": table.columns,
        "count": table.count(),
        "filtered": table.where("x < 10 and k = 'k3'").count(),
        "again": table.count(),
        "version0": spark.read.format("qbeast").option("versionAsOf", 0).load(path).count(),
    }))
    """
)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "qbeast_connect.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_server_serves_the_qbeast_format_to_any_client(tmp_path: Path) -> None:
    state = tmp_path / "state"
    port = free_port()
    common = ["--state-dir", str(state)]
    started = _cli(
        "server", "start", "--port", str(port), "--master", "local[2]", *common, cwd=tmp_path
    )
    try:
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip()
        assert url == f"sc://localhost:{port}"
        status = _cli("server", "status", *common, cwd=tmp_path)
        assert status.returncode == 0 and status.stdout.startswith(f"running: {url}")
        assert json.loads((state / "server.json").read_text())["port"] == port
        again = _cli("server", "start", "--port", str(free_port()), *common, cwd=tmp_path)
        assert again.returncode == 2 and again.stderr.startswith("error: a server is already")

        table = str(tmp_path / "events")
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYTHONPATH")}
        client = subprocess.run(
            [sys.executable, "-c", PLAIN_CLIENT, url, table],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert client.returncode == 0, client.stderr[-3000:]
        result = json.loads(client.stdout.strip().splitlines()[-1])
        assert result["modules"] == []  # the client never imported qbeast-connect
        assert result["columns"] == ["id", "x", "k"]
        # x < 10 and k = 'k3': 10 of every 100 ids, and 1 in 7 of those, in each half
        expected = 2 * sum(1 for i in range(5000) if i % 100 < 10 and i % 7 == 3)
        assert (result["count"], result["filtered"], result["again"]) == (10_000, expected, 10_000)
        assert result["version0"] == 5_000
        # the command line finds a table by its name in the server's catalog
        named = _cli("history", "--table", "cli_events", "--remote", url, "--json", cwd=tmp_path)
        assert named.returncode == 0, named.stderr[-3000:]
        assert [e["version"] for e in json.loads(named.stdout)] == [1, 0]
        unknown = _cli("describe", "--table", "no_such_table", "--remote", url, cwd=tmp_path)
        assert unknown.returncode == 2 and "no_such_table" in unknown.stderr, unknown.stderr
        both = _cli("describe", table, "--table", "cli_events", "--remote", url, cwd=tmp_path)
        assert both.returncode == 2 and "exactly one of them" in both.stderr, both.stderr
    finally:
        stopped = _cli("server", "stop", *common, cwd=tmp_path)
    assert stopped.returncode == 0 and stopped.stdout.startswith("stopped the server")
    status = _cli("server", "status", *common, cwd=tmp_path)
    assert status.returncode == 1 and status.stdout.strip() == "not running"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
