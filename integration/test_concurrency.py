"""Concurrent writers in separate client processes, through one server and through two."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.spark.server import LocalConnectServer
from tests.spark.helpers import live_adds, log_actions

# its subprocesses are given up to 15 minutes each (pip installs, several clients): more
# than the suite's 5-minute limit per test (pyproject.toml)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

# 4 clients x 6 appends: 24 commits racing for versions (10 each until round 18, a third of
# the suite's longest files). What the tests prove does not grow with the count; that the
# writes really overlapped is asserted (_check)
APPENDS = 6
ROWS = 7

CLIENT = textwrap.dedent(
    """
    import sys
    import qbeast_connect as qc
    url, path, worker, appends, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    spark = qc.session(remote=url)
    versions = []
    for i in range(appends):
        start = (worker * 1000 + i) * rows
        df = spark.range(start, start + rows, numPartitions=1).selectExpr(
            "id", "cast(id % 50 as double) as x")
        versions.append(qc.write(df, path, mode="append").version)
    print(",".join(str(v) for v in versions))
    """
)


def _create(spark: Any, path: str) -> None:
    stats = json.dumps({"x_min": 0.0, "x_max": 100.0})
    df = spark.range(0, 10).selectExpr("id + 100000000 as id", "cast(id as double) as x")
    # compaction off: every commit is one client's append (the checks count them)
    qc.write(df, path, columnsToIndex="x", cubeSize=1000, columnStats=stats, autoCompact="false")


def _run_clients(urls: list[str], path: str, workers: int) -> list[list[int]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, urls[w % len(urls)], path, str(w), str(APPENDS),
             str(ROWS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
        out.append([int(v) for v in stdout.strip().splitlines()[-1].split(",")])
    return out


def _check(path: str, versions: list[list[int]], workers: int) -> None:
    flat = sorted(v for vs in versions for v in vs)
    assert flat == list(range(1, workers * APPENDS + 1)), "every append got its own version"
    assert max(v for v, _ in log_actions(path)) == workers * APPENDS
    # the clients really raced: some commits were prepared on a snapshot that another
    # client's commit had overtaken by the time they landed
    read = {v: a["commitInfo"].get("readVersion") for v, a in log_actions(path) if "commitInfo" in a}
    assert sorted(read) == list(range(workers * APPENDS + 1)) and read[0] is None
    overtaken = [v for v in range(1, workers * APPENDS + 1) if read[v] < v - 1]
    assert overtaken, "no two appends overlapped: the test proved nothing about concurrency"
    adds = live_adds(path)
    added = [a["add"]["path"] for _, a in log_actions(path) if "add" in a]
    assert len(added) == len(set(added)) == len(adds), "no file lost or duplicated"
    for name in adds:
        assert (Path(path) / name).exists()
    from deltalake import DeltaTable

    table = DeltaTable(path).to_pyarrow_table()
    assert table.num_rows == 10 + workers * APPENDS * ROWS
    assert len(set(table.column("id").to_pylist())) == table.num_rows


def test_four_clients_append_through_one_server(remote_spark: Any, remote_url: str,
                                                tmp_path: Path) -> None:
    path = str(tmp_path / "one")
    _create(remote_spark, path)
    versions = _run_clients([remote_url], path, 4)
    _check(path, versions, 4)


def test_four_clients_append_through_two_servers(remote_spark: Any, remote_url: str,
                                                 tmp_path: Path) -> None:
    path = str(tmp_path / "two")
    _create(remote_spark, path)
    second = LocalConnectServer(master="local[1]").start()
    try:
        versions = _run_clients([remote_url, second.url], path, 4)
    finally:
        second.stop()
    _check(path, versions, 4)
    assert qc.QbeastTable.forPath(remote_spark, path).toDF().count() == 10 + 4 * APPENDS * ROWS


REVISION_CLIENT = textwrap.dedent(
    """
    import sys
    import qbeast_connect as qc
    url, path, worker, appends = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    spark = qc.session(remote=url)
    # every append leaves the latest revision in this worker's own direction
    sign, column = (1, -1, 1, -1)[worker], ("x", "x", "y", "y")[worker]
    results = []
    for i in range(appends):
        start = (worker * 1000 + i) * 10
        shift = sign * 1000.0 * (i + 1)
        dx, dy = (shift, 0.0) if column == "x" else (0.0, shift)
        df = spark.range(start, start + 10, numPartitions=1).selectExpr(
            "id", f"cast(id % 5 as double) + {dx} as x", f"cast(id % 3 as double) + {dy} as y")
        result = qc.write(df, path, mode="append")
        assert result.new_revision, result
        results.append(f"{result.version}:{result.revision_id}")
    print(",".join(results))
    """
)


def test_four_clients_opening_revisions_through_one_server(
    remote_spark: Any, remote_url: str, tmp_path: Path
) -> None:
    """Four services whose appends each leave the space: all commit, the revisions they
    report are the ones in the log, ids stay consecutive and every row is there once."""
    path = str(tmp_path / "revisions")
    stats = json.dumps({"x_min": 0.0, "x_max": 10.0, "y_min": 0.0, "y_max": 10.0})
    df = remote_spark.range(0, 10).selectExpr(
        "id + 100000000 as id", "cast(id as double) as x", "cast(id as double) as y"
    )
    qc.write(df, path, columnsToIndex="x,y", cubeSize=1000, columnStats=stats)
    appends = 1  # one per service keeps the test quick; the spark tests cover rounds
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", REVISION_CLIENT, remote_url, path, str(w), str(appends)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    reported: dict[int, int] = {}
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
        for pair in stdout.strip().splitlines()[-1].split(","):
            version, revision = (int(v) for v in pair.split(":"))
            reported[version] = revision
    assert sorted(reported) == list(range(1, 4 * appends + 1))
    assert [reported[v] for v in sorted(reported)] == list(range(2, 4 * appends + 2))

    config: dict[str, str] = {}
    for _, action in log_actions(path):
        if "metaData" in action:
            config = action["metaData"]["configuration"]
    ids = sorted(int(k.rsplit(".", 1)[1]) for k in config if k.startswith("qbeast.revision."))
    assert ids == list(range(4 * appends + 2)) and config["qbeast.lastRevisionID"] == str(ids[-1])
    for add in live_adds(path).values():
        assert int(add["tags"]["revision"]) in ids

    from deltalake import DeltaTable

    table = DeltaTable(path).to_pyarrow_table()
    assert table.num_rows == 10 + 4 * appends * 10
    assert len(set(table.column("id").to_pylist())) == table.num_rows
    qtable = qc.QbeastTable.forPath(remote_spark, path)
    for condition in ("x > 500", "y < -500", "x < 20 and y < 20"):
        got = sorted(r["id"] for r in qtable.filter(condition).collect())
        want = sorted(
            r["id"]
            for r in remote_spark.read.parquet(*qtable.explainScan().files)
            .filter(condition)
            .collect()
        )
        assert got == want and got, condition
