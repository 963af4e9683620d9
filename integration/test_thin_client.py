"""The thin client, proven: qbeast-connect on ``pyspark-client`` with no JVM and no Spark jars.

A fresh virtual environment gets ``pyspark-client`` (the pure-Python Connect client) and the
client dependencies from PyPI, and qbeast-connect itself with ``--no-deps`` (so the full
``pyspark`` is never installed). A script then runs write, append, sample, filter, optimize
and metrics against the integration server from a process without ``java`` on ``PATH`` and
without ``JAVA_HOME``; an audit hook records any attempt of that process to open or list
anything under the table location (the client only passes the path string to the server).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

# its subprocesses are given up to 15 minutes each (pip installs, several clients): more
# than the suite's 5-minute limit per test (pyproject.toml)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[1]
# the ``client`` extra: what docs/remote.md tells thin clients to install
CLIENT_PACKAGES = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]["client"]

SCRIPT = textwrap.dedent(
    """
    import json, os, shutil, sys

    url, table = sys.argv[1], sys.argv[2]
    touched = []

    def audit(event, args):
        if event in ("open", "os.listdir", "os.scandir", "os.mkdir", "os.remove",
                     "os.rename", "shutil.rmtree", "os.chdir"):
            target = args[0] if args else None
            if isinstance(target, bytes):
                target = target.decode(errors="replace")
            if isinstance(target, (str, os.PathLike)) and os.fspath(target).startswith(table):
                touched.append((event, os.fspath(target)))

    sys.addaudithook(audit)

    import pyspark
    import qbeast_connect as qc
    from pyspark.sql import functions as F
    from qbeast_connect.planning.file_planner import sample_weight_sql

    spark = qc.session(url)
    df = spark.range(0, 20_000, numPartitions=4).select(
        "id",
        (F.col("id") % 1000 / 10.0).alias("x"),
        F.concat(F.lit("k"), (F.col("id") % 37).cast("string")).alias("k"),
    )
    first = qc.write(df, table, columnsToIndex="x,k", cubeSize=1_000)
    more = df.select((F.col("id") + 20_000).alias("id"), "x", "k")
    second = qc.write(more, table, mode="append")
    t = qc.QbeastTable.forPath(spark, table)
    columns = t.indexedColumns()
    result = {
        "java": shutil.which("java"),
        "java_home": os.environ.get("JAVA_HOME"),
        "pyspark_jars": os.path.isdir(os.path.join(os.path.dirname(pyspark.__file__), "jars")),
        "versions": [first.version, second.version],
        "total": t.toDF().count(),
        "sample": t.sample(0.2).count(),
        "sample_full_scan": t.toDF().where(sample_weight_sql(columns, 0.2)).count(),
        "filtered": t.filter("x < 5").count(),
        "format_filtered": spark.read.format("qbeast").load(table).where("x < 5").count(),
    }
    optimized = t.optimize()
    metrics = t.refresh().getIndexMetrics()
    result.update({
        "optimized_rows": optimized.rows,
        "metrics_rows": metrics.element_count,
        "metrics_cubes": metrics.cube_count,
        "after_optimize": t.refresh().toDF().count(),
        "touched": touched,
    })
    print(json.dumps(result))
    """
)


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(  # type: ignore[call-overload]
        argv, capture_output=True, text=True, **kwargs
    )
    assert result.returncode == 0, f"{argv}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    return result


def _without_java(env: dict[str, str]) -> dict[str, str]:
    clean = {
        k: v
        for k, v in env.items()
        if k
        not in (
            "JAVA_HOME",
            "SPARK_HOME",
            "PYTHONPATH",
            "SPARK_REMOTE",
            "SPARK_CONNECT_MODE_ENABLED",
            "VIRTUAL_ENV",
        )
    }
    dirs = [
        d
        for d in env.get("PATH", "").split(os.pathsep)
        if d and not os.path.exists(os.path.join(d, "java"))
    ]
    clean["PATH"] = os.pathsep.join(dirs)
    return clean


def test_thin_client_without_a_jvm(remote_url: str, tmp_path: Path) -> None:
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable: the thin client venv cannot be built")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    # pip's own cache (the user's, as for any install): the wheels the suite's install just
    # fetched (pyarrow, numpy, pandas) are not downloaded a second time
    pip_env = {**_without_java(dict(os.environ)), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    _run([python, "-m", "pip", "install", "-q", *CLIENT_PACKAGES], env=pip_env, timeout=900)
    _run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)],
        env=pip_env,
        timeout=600,
    )
    installed = _run([python, "-m", "pip", "list", "--format=json"], env=pip_env).stdout
    names = {p["name"].lower() for p in json.loads(installed)}
    assert "pyspark-client" in names and "qbeast-connect" in names
    assert "pyspark" not in names and "py4j" not in names  # no full pyspark, no JVM bridge

    workdir = tmp_path / "client"
    workdir.mkdir()
    # a script file, not ``python -c``: pyspark-client 4.2 takes a ``-c`` main module for a
    # doctest run and exits looking for a Spark installation
    script = workdir / "client.py"
    script.write_text(SCRIPT)
    table = str(tmp_path / "table")
    run = _run(
        [python, str(script), remote_url, table],
        cwd=workdir,
        env=_without_java(dict(os.environ)),
        timeout=900,
    )
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert (result["java"], result["java_home"], result["pyspark_jars"]) == (None, None, False)
    assert result["versions"] == [0, 1]
    assert result["total"] == 40_000
    assert result["filtered"] == result["format_filtered"] == 2_000  # 50 of every 1000 ids
    assert result["sample"] == result["sample_full_scan"]
    assert 0.1 * 40_000 < result["sample"] < 0.3 * 40_000
    assert result["optimized_rows"] == 40_000 == result["after_optimize"]
    assert result["metrics_rows"] == 40_000 and result["metrics_cubes"] > 1
    assert result["touched"] == []  # the client never opened anything of the table
