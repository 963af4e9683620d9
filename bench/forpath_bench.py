"""Fixed cost per query: ``QbeastTable.forPath`` + planning on tables of 1k and 10k files.

Usage: python bench/forpath_bench.py [--sizes 100,1000] [--files-per-commit 10] [--rounds 5]

Builds (once, reused from the bench dir) tables of ``commits x files-per-commit`` files with
``bench/log_bench.py``'s builder (checkpoints every 10 commits), then in ONE run and one
Connect session, for each table, medians of ``rounds``:

* ``forPath`` alone and ``forPath`` + planning a 2-column filter (what a query pays before
  Spark reads a byte);
* the same with the client and server snapshot caches off
  (``qbeast_connect.spark.snapshot.CACHE_ENABLED = False``): a full log replay and a full
  transfer per query, as before the caches existed;
* the phases of a full load measured in-process: server replay, row encoding (replay
  included), client decode, qbeast snapshot build; and the same two sides on the cached
  path (an unchanged table);
* a plugin query answering one row, the floor of any snapshot read on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BENCH_DIR, machine, md_table, median


def table_path(commits: int, files_per_commit: int) -> str:
    """A table of ``commits`` appends, built once under the bench dir."""
    from bench.log_bench import build

    path = BENCH_DIR / "out" / f"forpath_{commits}x{files_per_commit}"
    marker = path / "_built"
    if not marker.exists():
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        build(str(path), commits, files_per_commit)
        marker.write_text("ok")
    return str(path)


def phases(path: str, rounds: int) -> dict[str, float]:
    """In-process timings of the parts of a full (uncached) snapshot load."""
    from qbeast_connect.spark.snapshot import _Cached, _decode, decode_state_rows
    from server_plugin.delta.log_reader import read_snapshot
    from server_plugin.delta.storage import storage_for
    from server_plugin.snapshot_rows import snapshot_rows

    out: dict[str, list[float]] = {
        "replay": [],
        "rows": [],
        "decode": [],
        "qbeast": [],
        "cached_rows": [],
        "cached_decode": [],
    }
    for _ in range(rounds):
        t0 = time.perf_counter()
        read_snapshot(storage_for(path))
        out["replay"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rows = list(snapshot_rows(path, use_cache=False))
        out["rows"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        state = decode_state_rows(path, rows)
        out["decode"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        state.qbeast()
        out["qbeast"].append(time.perf_counter() - t0)
    # the cached path: the plugin's cache is warm and the client names the state it holds
    state, token = _decode(path, list(snapshot_rows(path)), None)
    assert token is not None
    state.qbeast()
    for _ in range(rounds):
        t0 = time.perf_counter()
        rows = list(snapshot_rows(path, since=token))
        out["cached_rows"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        again, token2 = _decode(path, rows, _Cached(token, state))
        again.qbeast()
        out["cached_decode"].append(time.perf_counter() - t0)
        state, token = again, str(token2)
    return {k: median(v) for k, v in out.items()}


def floor(spark: Any, rounds: int) -> float:
    """The round trip of a plugin query answering one row: what any snapshot read costs."""
    reader = spark.read.format("qbeast_snapshot").option("probe", "true")
    reader.load().collect()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        reader.load().collect()
        times.append(time.perf_counter() - t0)
    return median(times)


def timed_forpath(spark: Any, path: str, rounds: int, cached: bool) -> dict[str, float]:
    import qbeast_connect as qc
    from qbeast_connect.planning.file_planner import plan_files, stats_by_path
    from qbeast_connect.planning.predicate import from_sql
    from qbeast_connect.spark import snapshot as client_snapshot

    # off: no client state is kept and the plugin replays the log in full for every query,
    # which is what every query paid before the caches existed
    client_snapshot.CACHE_ENABLED = cached
    forpath, planned = [], []
    qc.QbeastTable.forPath(spark, path)  # warm up the workers (and the caches when on)
    for _ in range(rounds):
        t0 = time.perf_counter()
        qc.QbeastTable.forPath(spark, path)
        forpath.append(time.perf_counter() - t0)
    predicate = from_sql("x < 0.1 AND y > 0.5")
    for _ in range(rounds):
        t0 = time.perf_counter()
        table = qc.QbeastTable.forPath(spark, path)
        state = table._state
        plan_files(state.qbeast(), predicate, None, file_stats=stats_by_path(state.adds))
        planned.append(time.perf_counter() - t0)
    client_snapshot.CACHE_ENABLED = True
    return {"forPath": median(forpath), "forPath_plan": median(planned)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000", help="commits per table, comma separated")
    parser.add_argument("--files-per-commit", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    paths = {n: table_path(n, args.files_per_commit) for n in sizes}

    import qbeast_connect as qc

    spark = qc.session()
    report: dict[str, Any] = {"machine": machine(), "rounds": args.rounds, "tables": {}}
    report["probe_roundtrip"] = floor(spark, args.rounds)
    for n, path in paths.items():
        files = n * args.files_per_commit
        report["tables"][files] = {
            "uncached": timed_forpath(spark, path, args.rounds, cached=False),
            "cached": timed_forpath(spark, path, args.rounds, cached=True),
            "phases": phases(path, args.rounds),
        }
    report["probe_roundtrip_end"] = floor(spark, args.rounds)
    qc.stop()
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    rows = []
    for files, r in report["tables"].items():
        u, c = r["uncached"], r["cached"]
        rows.append(
            [
                str(files),
                f"{u['forPath'] * 1000:.0f} ms",
                f"{c['forPath'] * 1000:.0f} ms",
                f"{u['forPath_plan'] * 1000:.0f} ms",
                f"{c['forPath_plan'] * 1000:.0f} ms",
                f"{u['forPath_plan'] / c['forPath_plan']:.1f}x",
            ]
        )
    print(
        md_table(
            ["files", "forPath full", "forPath cached", "+plan full", "+plan cached", "speed-up"],
            rows,
        )
    )
    print(
        f"one-row plugin query (the floor of any snapshot read): "
        f"{report['probe_roundtrip'] * 1000:.0f} ms at the start, "
        f"{report['probe_roundtrip_end'] * 1000:.0f} ms at the end"
    )


if __name__ == "__main__":
    main()
