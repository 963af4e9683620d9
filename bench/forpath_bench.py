"""Fixed cost per query: ``QbeastTable.forPath`` + planning on tables of 1k and 10k files.

Usage: python bench/forpath_bench.py [--sizes 100,1000] [--files-per-commit 10] [--rounds 20]

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
* a plugin query answering one row, the floor of any snapshot read on this machine;
* the round-trip floors (``--breakdown``, on by default): a trivial Connect query
  (``spark.range(1)``), ``select 1``, a ``spark.conf.get``, an analysis-only round trip
  (``df.schema``), the plugin's one-row query and its analysis-only probe; then, per table,
  ``forPath`` and ``forPath`` + ``explainScan`` as they are (the snapshot answered in the
  schema of an analysed query) side by side with the previous path (a rows query through a
  Spark job, collected with ``collect()``), medians of ``rounds`` in the same run; and the
  Python invocations each path causes in the server (traced by a copy of the snapshot
  source that logs each call to a file).
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
from qbeast_connect.spark.execute import arrow_in_one_call


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


def _median_ms(action: Any, rounds: int) -> float:
    action()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        action()
        times.append(time.perf_counter() - t0)
    return median(times) * 1000


def round_trip_floors(spark: Any, rounds: int) -> dict[str, float]:
    """Milliseconds of the cheapest Connect calls: what no snapshot read can go below."""
    count = iter(range(10**9))

    def probe() -> Any:
        return spark.read.format("qbeast_snapshot").option("probe", "true")

    return {
        "conf.get": _median_ms(lambda: spark.conf.get("spark.sql.session.timeZone"), rounds),
        "range(1).schema (analysis only)": _median_ms(lambda: spark.range(1).schema, rounds),
        "range(1) ExecutePlan (Arrow)": _median_ms(
            lambda: arrow_in_one_call(spark.range(1)), rounds
        ),
        "range(1).collect()": _median_ms(lambda: spark.range(1).collect(), rounds),
        "sql('select 1').collect()": _median_ms(lambda: spark.sql("select 1").collect(), rounds),
        "plugin one-row query, collect()": _median_ms(lambda: probe().load().collect(), rounds),
        "plugin analysis only (schema)": _median_ms(
            lambda: probe().option("nonce", str(next(count))).load().schema, rounds
        ),
    }


def legacy_forpath(spark: Any, path: str) -> Any:
    """``forPath`` as before schema answers: a rows query (a Spark job) and ``collect()``.

    It keeps its own cached state and token (as the previous client did), so the plugin
    answers it with a difference too.
    """
    import qbeast_connect as qc
    from qbeast_connect.spark import snapshot as client_snapshot

    key = ("legacy", path)
    base = client_snapshot._cached(key)
    reader = spark.read.format("qbeast_snapshot").option("path", path)
    if base is not None:
        reader = reader.option("since", base.token)
    rows = reader.load().collect()
    state, token = client_snapshot._decode(path, ((r[0], r[1]) for r in rows), base)
    client_snapshot._store(key, None if token is None else client_snapshot._Cached(token, state))
    return qc.QbeastTable(spark, path, state)


def breakdown(spark: Any, path: str, rounds: int) -> dict[str, float]:
    """Milliseconds of forPath and forPath + explainScan, before and after, same run."""
    import qbeast_connect as qc

    where = "x < 0.1 AND y > 0.5"
    now = qc.QbeastTable.forPath
    return {
        "forPath before": _median_ms(lambda: legacy_forpath(spark, path), rounds),
        "forPath after": _median_ms(lambda: now(spark, path), rounds),
        "forPath+plan before": _median_ms(
            lambda: legacy_forpath(spark, path).explainScan(where), rounds
        ),
        "forPath+plan after": _median_ms(lambda: now(spark, path).explainScan(where), rounds),
    }


TRACE_FILE = BENCH_DIR / "forpath_trace.log"


def python_invocations(spark: Any, path: str) -> dict[str, list[str]]:
    """The server's Python calls for one snapshot read, by path: ``name@process`` in order.

    A copy of the snapshot source defined in this script (so Spark receives it by value)
    logs every call it gets; each process is named by the order it first appears in.
    """
    from server_plugin.datasource import QbeastSnapshotSource, _SnapshotReader

    trace = str(TRACE_FILE)

    def log(event: str) -> None:
        import os as _os

        with open(trace, "a") as out:
            out.write(f"{_os.getpid()} {event}\n")

    class TracedReader(_SnapshotReader):
        def partitions(self) -> Any:
            log("reader.partitions")
            return super().partitions()

        def read(self, partition: Any) -> Any:
            log("reader.read")
            yield from super().read(partition)

    class TracedSource(QbeastSnapshotSource):
        format_name = "qbeast_snapshot_traced"

        def schema(self) -> Any:
            log("DataSource.schema")
            return super().schema()

        def reader(self, schema: Any) -> Any:
            log("DataSource.reader")
            return TracedReader(self.options)

    spark.dataSource.register(TracedSource)
    found: dict[str, list[str]] = {}
    for name, what in (("before (rows query)", "snapshot"), ("after (schema)", "state")):
        TRACE_FILE.write_text("")
        reader = spark.read.format("qbeast_snapshot_traced").option("path", path)
        reader = reader.option("what", what).option("nonce", str(time.time_ns()))
        if what == "state":
            reader.load().schema  # noqa: B018 - the analysis is the read
        else:
            reader.load().collect()
        pids: dict[str, int] = {}
        events = []
        for line in TRACE_FILE.read_text().splitlines():
            pid, event = line.split(" ", 1)
            events.append(f"{event}@p{pids.setdefault(pid, len(pids) + 1)}")
        found[name] = events
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000", help="commits per table, comma separated")
    parser.add_argument("--files-per-commit", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--breakdown-only",
        action="store_true",
        help="only the round-trip floors, the before/after breakdown and the Python calls",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    paths = {n: table_path(n, args.files_per_commit) for n in sizes}

    import qbeast_connect as qc

    spark = qc.session()
    report: dict[str, Any] = {"machine": machine(), "rounds": args.rounds, "tables": {}}
    report["floors_ms"] = round_trip_floors(spark, args.rounds)
    report["breakdown_ms"] = {}
    for n, path in paths.items():
        report["breakdown_ms"][n * args.files_per_commit] = breakdown(spark, path, args.rounds)
    report["python_invocations"] = python_invocations(spark, paths[sizes[0]])
    report["floors_ms_end"] = round_trip_floors(spark, args.rounds)
    print_breakdown(report)
    if args.breakdown_only:
        qc.stop()
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2))
        return
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


def print_breakdown(report: dict[str, Any]) -> None:
    start, end = report["floors_ms"], report["floors_ms_end"]
    print(
        md_table(
            ["round trip (floor)", "ms, start", "ms, end"],
            [[k, f"{v:.1f}", f"{end[k]:.1f}"] for k, v in start.items()],
        )
    )
    rows = []
    for files, b in report["breakdown_ms"].items():
        rows.append(
            [
                str(files),
                f"{b['forPath before']:.0f}",
                f"{b['forPath after']:.0f}",
                f"{b['forPath+plan before']:.0f}",
                f"{b['forPath+plan after']:.0f}",
                f"{b['forPath+plan before'] / b['forPath+plan after']:.1f}x",
            ]
        )
    print(
        md_table(
            ["files", "forPath before", "forPath after", "+plan before", "+plan after", "ratio"],
            rows,
        )
    )
    for name, events in report["python_invocations"].items():
        print(f"Python calls, {name}: {', '.join(events) or 'none'}")


if __name__ == "__main__":
    main()
