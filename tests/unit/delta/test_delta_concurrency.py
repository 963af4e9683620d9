"""Concurrent writers in separate processes (real put-if-absent races)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import deltalake
import pyarrow as pa
from delta_testlib import create_table, read_rows, start_together

from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage

WORKER = Path(__file__).resolve().parent / "delta_commit_worker.py"


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
    committed: dict[int, str] = {}
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        for line in out.strip().splitlines():
            version, key = line.split(" ", 1)
            assert int(version) not in committed, f"version {version} reported twice"
            committed[int(version)] = key
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
