"""Subprocess worker for the concurrency tests: N blind appends to one table.

Usage: python delta_commit_worker.py <table root> <worker id> <commits> <start epoch s>
Prints one line per commit: ``<version> <file key>``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa
from delta_testlib import write_data_file

from server_plugin.delta.committer import commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import latest_version
from server_plugin.delta.storage import LocalStorage
from server_plugin.delta.uris import normalize_path


def main() -> None:
    root, worker, count, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    storage = LocalStorage(root)
    while time.time() < start:
        time.sleep(0.001)
    read_version: int | None = None
    for i in range(count):
        row_id = worker * 1_000_000 + i
        add = write_data_file(storage, pa.table({"id": pa.array([row_id], pa.int64())}))
        if i % 5 == 0:  # a stale read version, like a job that planned a while ago
            read_version = latest_version(storage)
        assert read_version is not None
        version = commit(
            storage,
            [add],
            TransactionReadSet.blind_append(read_version),
            operation="WRITE",
            operation_parameters={"mode": "Append"},
            max_retries=50,
        )
        print(version, normalize_path(add.path), flush=True)


if __name__ == "__main__":
    main()
