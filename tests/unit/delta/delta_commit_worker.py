"""Subprocess worker for the concurrency tests: N blind appends to one table.

Usage: python delta_commit_worker.py <table root> <worker id> <commits> <go file>
Prints ``ready`` once imported, waits for the go file (so that every worker starts
committing at the same moment), then one line per commit: ``<version> <file key>``.
"""

from __future__ import annotations

import os
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
    root, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    storage = LocalStorage(root)
    print("ready", flush=True)
    while not os.path.exists(go):
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
