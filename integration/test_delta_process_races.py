"""Delta log races between separate processes: commits, put-if-absent and checkpoints.

These tests start several Python processes that race for the same log versions, on local
storage and on a moto S3 server. They take seconds each, so they live here rather than in
``tests/unit``; the single-process logic of the same code stays in ``tests/unit/delta``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage, storage_for
from tests.moto_server import moto_s3_server
from tests.unit.delta.delta_testlib import REPO_ROOT, create_table, read_rows, start_together

pytestmark = pytest.mark.slow

DELTA_TESTS = REPO_ROOT / "tests" / "unit" / "delta"
WORKER = DELTA_TESTS / "delta_commit_worker.py"


# -------------------------------------------------------------------------- local storage


def _reported_commits(procs: list[subprocess.Popen[str]]) -> dict[int, str]:
    """``version -> key`` of the commits the worker processes print (``"<version> <key>"``
    per line), once each: a version reported twice fails the test."""
    committed: dict[int, str] = {}
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        for line in out.strip().splitlines():
            version, key = line.split(" ", 1)
            assert int(version) not in committed, f"version {version} reported twice"
            committed[int(version)] = key
    return committed


def test_two_processes_with_50_blind_appends_each(tmp_path: Path) -> None:
    """§14.15 blind vs blind, at scale: 100 new versions, every file exactly once."""
    path = tmp_path / "t"
    storage = LocalStorage(path)
    create_table(storage, pa.table({"id": pa.array([-1], pa.int64())}))
    per_worker = 50
    go = tmp_path / "go"
    procs = start_together(
        [
            [sys.executable, str(WORKER), str(path), str(w), str(per_worker), str(go)]
            for w in (1, 2)
        ],
        go,
    )
    committed = _reported_commits(procs)
    assert sorted(committed) == list(range(1, 2 * per_worker + 1))
    log = sorted(n for n in os.listdir(path / "_delta_log") if n.endswith(".json"))
    assert log == [f"{v:020d}.json" for v in range(2 * per_worker + 1)]

    snap = read_snapshot(storage)
    assert snap.version == 2 * per_worker
    assert set(committed.values()) < set(snap.files)
    assert len(snap.files) == 2 * per_worker + 1
    ids = sorted(read_rows(storage).column("id").to_pylist())
    expected = sorted([-1] + [w * 1_000_000 + i for w in (1, 2) for i in range(per_worker)])
    assert ids == expected  # every row exactly once

    rebased = [
        v
        for v in range(1, 2 * per_worker + 1)
        if json.loads(storage.read_bytes(f"_delta_log/{v:020d}.json").split(b"\n")[0])[
            "commitInfo"
        ]["readVersion"]
        != v - 1
    ]
    assert rebased, "no commit was rebased: the conflict path was not exercised"

    table = deltalake.DeltaTable(str(path))
    assert table.version() == 2 * per_worker
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == expected
    for version in range(10, 2 * per_worker + 1, 10):
        assert storage.exists(f"_delta_log/{version:020d}.checkpoint.parquet"), version


_RACE_WORKER = textwrap.dedent(
    """
    import sys, time
    from server_plugin.delta.storage import LocalStorage
    root, worker, rounds, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    storage = LocalStorage(root)
    payload = (("worker-" + worker + "|") * 20000).encode()
    while time.time() < start:
        pass
    wins = []
    for r in range(rounds):
        if storage.put_if_absent(f"_delta_log/{r:020d}.json", payload):
            wins.append(r)
    print(",".join(map(str, wins)))
    """
)


_READER_WORKER = textwrap.dedent(
    """
    import os, sys, time
    root, rounds, expected = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    log = os.path.join(root, "_delta_log")
    seen = 0
    deadline = time.time() + 50
    while time.time() < deadline:
        names = [n for n in os.listdir(log) if n.endswith(".json")] if os.path.isdir(log) else []
        for name in names:
            with open(os.path.join(log, name), "rb") as f:
                size = len(f.read())
            if size != expected:
                print(f"partial {name}: {size} bytes")
                sys.exit(1)
            seen += 1
        if len(names) == rounds:
            break
    print(seen)
    """
)


def test_put_if_absent_race_has_exactly_one_winner_and_no_partial_file(tmp_path: Path) -> None:
    """Many processes x many rounds race for the same versions (§14.14)."""
    import time

    workers, rounds = 6, 40
    start = time.time() + 1.0
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER_WORKER, str(tmp_path), str(rounds), str(9 * 20000)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE_WORKER, str(tmp_path), str(w), str(rounds), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for w in range(workers)
    ]
    wins: dict[int, list[int]] = {}
    for w, proc in enumerate(procs):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        wins[w] = [int(x) for x in out.strip().split(",") if x]
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, out + err
    assert int(out.strip()) > 0
    storage = LocalStorage(tmp_path)
    for r in range(rounds):
        winners = [w for w, won in wins.items() if r in won]
        assert len(winners) == 1, f"round {r}: winners {winners}"
        data = storage.read_bytes(f"_delta_log/{r:020d}.json")
        assert data == (f"worker-{winners[0]}|" * 20000).encode()
    assert sorted(os.listdir(tmp_path / "_delta_log")) == [f"{r:020d}.json" for r in range(rounds)]


# ------------------------------------------------------------------------------------- S3


@pytest.fixture(scope="module")
def s3_env() -> Iterator[dict[str, str]]:
    """A moto S3 server for this module, as the environment a server process would have."""
    with moto_s3_server() as url:
        yield {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": "qbeast-test-key",
            "AWS_SECRET_ACCESS_KEY": "qbeast-test-secret",  # moto accepts any credentials
            "AWS_REGION": "us-east-1",
        }


@pytest.fixture
def bucket(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A new empty bucket; this process sees the same S3 environment as the workers."""
    import boto3

    for key, value in s3_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    name = f"qb-{uuid.uuid4().hex[:16]}"
    boto3.client(
        "s3",
        endpoint_url=s3_env["AWS_ENDPOINT_URL"],
        aws_access_key_id=s3_env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=s3_env["AWS_SECRET_ACCESS_KEY"],
        region_name=s3_env["AWS_REGION"],
    ).create_bucket(Bucket=name)
    return name


_APPENDER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, {repo!r})
    sys.path.insert(0, {here!r})
    import pyarrow as pa
    from delta_testlib import write_data_file
    from server_plugin.delta.uris import normalize_path
    from server_plugin.delta.committer import commit
    from server_plugin.delta.conflicts import TransactionReadSet
    from server_plugin.delta.log_reader import latest_version
    from server_plugin.delta.storage import storage_for

    uri, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    storage = storage_for(uri)  # endpoint and credentials from the environment
    storage.check_conditional_put()
    read_version = latest_version(storage)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(count):
        add = write_data_file(
            storage, pa.table({{"id": pa.array([worker * 1000 + i], pa.int64())}})
        )
        version = commit(
            storage,
            [add],
            TransactionReadSet.blind_append(read_version),  # stale on purpose
            operation="WRITE",
            operation_parameters={{"mode": "Append"}},
            max_retries=100,
        )
        print(version, normalize_path(add.path), flush=True)
    """
)


def test_four_processes_ten_commits_each_lose_nothing(
    s3_env: dict[str, str], bucket: str, tmp_path: Path
) -> None:
    """4 processes x 10 blind appends, all starting from version 0: 40 new versions, each
    reported by exactly one writer, every row exactly once, checkpoints at 10..40."""
    uri = f"s3://{bucket}/concurrent"
    storage = storage_for(uri)
    create_table(storage, pa.table({"id": pa.array([-1], pa.int64())}))
    script = tmp_path / "appender.py"
    script.write_text(_APPENDER.format(repo=str(REPO_ROOT), here=str(DELTA_TESTS)))
    workers, per_worker = 4, 10
    env = {**os.environ, **s3_env}
    go = tmp_path / "go"
    procs = start_together(
        [
            [sys.executable, str(script), uri, str(w), str(per_worker), str(go)]
            for w in range(1, workers + 1)
        ],
        go,
        env=env,
    )
    committed = _reported_commits(procs)
    total = workers * per_worker
    assert sorted(committed) == list(range(1, total + 1))
    log = [f.name for f in storage.list_prefix("_delta_log") if f.name.endswith(".json")]
    assert log == [f"{v:020d}.json" for v in range(total + 1)]

    snapshot = read_snapshot(storage)
    assert snapshot.version == total
    assert set(committed.values()) < set(snapshot.files) and len(snapshot.files) == total + 1
    ids = []
    for key in snapshot.files:
        with storage.open_input(key) as source:
            ids += pq.read_table(source).column("id").to_pylist()
    expected = [-1] + [w * 1000 + i for w in range(1, workers + 1) for i in range(per_worker)]
    assert sorted(ids) == sorted(expected)  # no lost and no duplicated commit
    rebased = [
        v
        for v in range(2, total + 1)
        if json.loads(storage.read_bytes(f"_delta_log/{v:020d}.json").split(b"\n")[0])[
            "commitInfo"
        ]["readVersion"]
        != v - 1
    ]
    assert rebased, "no commit lost a race: the conflict path was not exercised"
    for version in range(10, total + 1, 10):
        assert storage.exists(f"_delta_log/{version:020d}.checkpoint.parquet"), version
