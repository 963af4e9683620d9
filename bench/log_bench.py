"""Log scale: snapshot load and planning on a table of many commits and files, commit latency.

Usage: python bench/log_bench.py --commits 1000 --files-per-commit 10

Builds a qbeast table of ``commits`` blind appends of ``files-per-commit`` small parquet
files each (checkpoints every 10 commits, as Delta does), through our committer. Then, side
by side in one run:

* our snapshot load (the plugin's log replay) vs ``deltalake.DeltaTable(path)`` + its add
  actions, on the same log;
* client planning: building the qbeast snapshot and planning a sample and a filter;
* ``QbeastTable.forPath`` through a Connect server (the full round trip a client pays);
* commit latency of one more blind append on the large log.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, machine, md_table, median


def build(path: str, commits: int, files_per_commit: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from qbeast_connect.model.block import Block, encode_blocks
    from qbeast_connect.model.revision import Revision
    from qbeast_connect.model.transformation import (
        LinearTransformation,
        LinearTransformer,
        QDataType,
    )
    from server_plugin.delta.actions import AddFile
    from server_plugin.delta.committer import commit, create_table_actions
    from server_plugin.delta.conflicts import TransactionReadSet
    from server_plugin.delta.file_stats import compute_safe_stats
    from server_plugin.delta.storage import storage_for

    storage = storage_for(path)
    revision = Revision(
        1, 1, path, 1000,
        (LinearTransformer("x", QDataType.DOUBLE), LinearTransformer("y", QDataType.DOUBLE)),
        (LinearTransformation(0.0, 1.0, 0.5, QDataType.DOUBLE),
         LinearTransformation(0.0, 1.0, 0.5, QDataType.DOUBLE)),
    )
    schema = '{"type":"struct","fields":[{"name":"x","type":"double","nullable":true,"metadata":{}},{"name":"y","type":"double","nullable":true,"metadata":{}}]}'
    config = {"qbeast.lastRevisionID": "1", "qbeast.revision.1": revision.to_json()}
    commit(storage, create_table_actions(schema, config),
           TransactionReadSet(read_version=-1, read_whole_table=True, changes_metadata=True,
                              changes_protocol=True),
           operation="CREATE TABLE", operation_parameters={})
    rng = random.Random(1)
    cubes = ["", "A", "Q", "g", "w", "AA", "AQ", "Ag", "Aw", "QA", "Qw", "gA", "wA"]
    latencies = []
    for version in range(1, commits + 1):
        adds = []
        for _ in range(files_per_commit):
            name = f"{uuid.uuid4()}.parquet"
            table = pa.table({"x": [rng.random()], "y": [rng.random()]})
            with storage.open_output(name) as sink:
                pq.write_table(table, sink)
            info = storage.file_info(name)
            blocks = [Block(rng.choice(cubes), -2**31 + rng.randrange(2**31), 2**31 - 1, 1)]
            adds.append(AddFile(name, {}, info.size, info.mtime_ms, True, compute_safe_stats(table),
                                {"revision": "1", "blocks": encode_blocks(blocks)}))
        start = time.perf_counter()
        commit(storage, adds, TransactionReadSet.blind_append(version - 1), operation="WRITE",
               operation_parameters={"mode": "Append"}, is_blind_append=True)
        latencies.append(time.perf_counter() - start)
    return {"commit_latency_s": latencies}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--files-per-commit", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from deltalake import DeltaTable

    from qbeast_connect.model.snapshot import QbeastSnapshot
    from qbeast_connect.planning.file_planner import plan_files, stats_by_path
    from qbeast_connect.planning.predicate import from_sql
    from server_plugin.delta.actions import action_to_json
    from server_plugin.delta.log_reader import read_snapshot
    from server_plugin.delta.storage import storage_for

    path = fresh_dir("big_log")
    t0 = time.perf_counter()
    built = build(path, args.commits, args.files_per_commit)
    build_s = time.perf_counter() - t0
    storage = storage_for(path)
    ours, theirs, planning, snapshot_build = [], [], [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        snap = read_snapshot(storage)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dt = DeltaTable(path)
        n_dl = dt.get_add_actions(flatten=False).num_rows
        theirs.append(time.perf_counter() - t0)
        adds = [action_to_json(a)["add"] for a in snap.files.values()]
        t0 = time.perf_counter()
        qsnap = QbeastSnapshot.from_delta(dict(snap.metadata.configuration), adds, snap.version)
        snapshot_build.append(time.perf_counter() - t0)
        stats = stats_by_path(adds)
        t0 = time.perf_counter()
        plan_files(qsnap, None, 0.1, file_stats=stats)
        plan_files(qsnap, from_sql("x < 0.1 AND y > 0.5"), None, file_stats=stats)
        planning.append(time.perf_counter() - t0)
    assert len(snap.files) == n_dl == args.commits * args.files_per_commit

    import qbeast_connect as qc

    spark = qc.session()
    qc.QbeastTable.forPath(spark, path)  # warm up the plugin
    roundtrip = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        qc.QbeastTable.forPath(spark, path)
        roundtrip.append(time.perf_counter() - t0)
    qc.stop()
    report = {
        "machine": machine(),
        "commits": args.commits,
        "files": len(snap.files),
        "build_s": build_s,
        "snapshot_ours_s": median(ours),
        "snapshot_deltalake_s": median(theirs),
        "client_snapshot_build_s": median(snapshot_build),
        "client_planning_s": median(planning),
        "forPath_roundtrip_s": median(roundtrip),
        "commit_latency_median_ms": 1000 * median(built["commit_latency_s"]),
        "commit_latency_p95_ms": 1000 * sorted(built["commit_latency_s"])[
            int(0.95 * len(built["commit_latency_s"]))],
        "commit_latency_last100_median_ms": 1000 * median(built["commit_latency_s"][-100:]),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    print(md_table(
        ["measure", "value"],
        [
            ["log replay (ours, server side)", f"{report['snapshot_ours_s'] * 1000:.0f} ms"],
            ["deltalake DeltaTable load + add actions", f"{report['snapshot_deltalake_s'] * 1000:.0f} ms"],
            ["ratio ours / deltalake", f"{report['snapshot_ours_s'] / report['snapshot_deltalake_s']:.2f}x"],
            ["client: qbeast snapshot from adds", f"{report['client_snapshot_build_s'] * 1000:.0f} ms"],
            ["client: plan sample + filter", f"{report['client_planning_s'] * 1000:.0f} ms"],
            ["QbeastTable.forPath via Connect", f"{report['forPath_roundtrip_s'] * 1000:.0f} ms"],
            ["commit latency median / p95", f"{report['commit_latency_median_ms']:.1f} / {report['commit_latency_p95_ms']:.1f} ms"],
        ],
    ))


if __name__ == "__main__":
    main()
