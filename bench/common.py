"""Shared helpers for the benchmarks: data sets, timing, machine description."""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import resource
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = Path(os.environ.get("QBEAST_BENCH_DIR", "/tmp/qbeast-bench"))


def machine() -> str:
    """One line describing this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        cpu = model
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    java_line = java.splitlines()[0] if java else "java ?"
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}, {java_line}"


def lineitem(scale_factor: float) -> str:
    """Path of TPC-H lineitem parquet at this scale factor (generated once).

    Generated in a child process, so that DuckDB's memory does not count as the client's.
    """
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from qbeast_connect.demo import generate_lineitem; "
            "print(generate_lineitem(float(sys.argv[1]), sys.argv[2]))",
            str(scale_factor),
            str(BENCH_DIR / "data"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def warm_up(df: Any, columns: str) -> None:
    """Untimed writes before the timed ones: a parquet write of ``df`` and an indexed write of
    a slice of it, so that the JVM's class loading and JIT and the Python workers' imports
    count against no timed workload (they are paid once per server, not per write)."""
    import qbeast_connect as qc

    df.write.mode("overwrite").parquet(fresh_dir("warmup_parquet"))
    # a sample keeps the input's partitions, so every task slot's Python worker warms up
    sample = df.sample(fraction=0.01, seed=1)
    qc.write(sample, fresh_dir("warmup_qbeast"), columnsToIndex=columns, cubeSize=5_000)


def fresh_dir(name: str) -> str:
    """An empty directory under the bench dir."""
    path = BENCH_DIR / "out" / name
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


@contextlib.contextmanager
def timed(results: dict[str, list[float]], key: str) -> Iterator[None]:
    """Append the elapsed wall time of the block to ``results[key]``."""
    start = time.perf_counter()
    yield
    results.setdefault(key, []).append(time.perf_counter() - start)


def peak_rss_mb() -> float:
    """Peak resident memory of this (client) process in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_bytes(path: str) -> int:
    """Bytes of the parquet files under ``path`` (not the log)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        if "_delta_log" in root:
            continue
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".parquet"))
    return total


def median(values: list[float]) -> float:
    """Median of a non-empty list."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# ----------------------------------------------------------------------- session and tables

#: The columns the approx and sample benchmarks index TPC-H lineitem on.
LINEITEM_COLUMNS = "l_shipdate,l_extendedprice,l_partkey"


def out_dir(default: str) -> Path:
    """Where a benchmark keeps its tables: ``QBEAST_BENCH_DIR``, else ``default``."""
    return Path(os.environ.get("QBEAST_BENCH_DIR", default))


def bench_session(ui_port: int = 0, **conf: Any) -> Any:
    """A Spark Connect session without connect or retry deadlines (a benchmark's jobs may
    run for minutes), with Spark's UI on ``ui_port`` when it is not 0."""
    import qbeast_connect as qc

    if ui_port:
        conf = {**conf, "spark.ui.enabled": "true", "spark.ui.port": str(ui_port)}
    return qc.session(None, connect_timeout=None, retry_timeout=None, **conf)


def indexed_copy(
    spark: Any, source: str, path: Path, cube_size: int, columns: str = LINEITEM_COLUMNS
) -> None:
    """Write the parquet data at ``source`` as a qbeast table at ``path`` indexed on
    ``columns``, unless a table is there already (it is then reused as it is)."""
    import qbeast_connect as qc

    if (path / "_delta_log").exists():
        return
    t0 = time.perf_counter()
    qc.write(spark.read.parquet(source), str(path), columnsToIndex=columns, cubeSize=cube_size)
    print(f"write {time.perf_counter() - t0:.1f} s", flush=True)


# ------------------------------------------------------------------- Spark UI REST figures


def _ui_get(port: int, tail: str = "") -> Any:
    import json
    import urllib.request

    base = f"http://localhost:{port}/api/v1/applications"
    if tail:
        with urllib.request.urlopen(base) as r:
            app = json.load(r)[0]["id"]
        base = f"{base}/{app}/{tail}"
    with urllib.request.urlopen(base) as r:
        return json.load(r)


def ui_stages(port: int) -> list[dict[str, Any]]:
    """The completed stages of the session's application (Spark UI on ``port``)."""
    return list(_ui_get(port, "stages?status=complete"))


def completed_stages(port: int) -> set[tuple[int, int]]:
    """The (stage, attempt) ids completed so far; empty when there is no UI (port 0)."""
    return {(s["stageId"], s["attemptId"]) for s in ui_stages(port)} if port else set()


def stage_tasks(port: int, before: set[tuple[int, int]]) -> dict[str, Any]:
    """Tasks of the stages completed since ``before``: the largest stage's task figures."""
    new = [s for s in ui_stages(port) if (s["stageId"], s["attemptId"]) not in before]
    if not new:
        return {}
    scan = max(new, key=lambda s: s["numTasks"])
    tasks = _ui_get(port, f"stages/{scan['stageId']}/{scan['attemptId']}/taskList?length=10000")
    times = sorted(t["duration"] / 1000 for t in tasks if "duration" in t)
    return {
        "stages": len(new),
        "tasks": scan["numTasks"],
        "task_median_s": median(times) if times else None,
        "task_max_s": times[-1] if times else None,
        "input_mb": round(scan["inputBytes"] / 1e6, 1),
        "input_rows": scan["inputRecords"],
    }


def executor_cpu_ms(port: int, before: set[tuple[int, int]]) -> float:
    """Executor CPU time (ms) of the stages completed since ``before``."""
    new = [s for s in ui_stages(port) if (s["stageId"], s["attemptId"]) not in before]
    return float(sum(s["executorCpuTime"] for s in new)) / 1e6


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages, rounded for a report."""
    return [round(x, 2) for x in os.getloadavg()]


def save_report(report: dict[str, Any], out: str | None) -> None:
    """Write ``report`` as JSON to ``out`` (when given) and print it."""
    import json

    text = json.dumps(report, indent=2, default=str)
    if out:
        Path(out).write_text(text)
    print(text)


def optimized(table: Any) -> tuple[Any, float]:
    """``table.optimize()`` timed: the refreshed table and the seconds the optimize took
    (the refresh not counted)."""
    t0 = time.perf_counter()
    table.optimize()
    seconds = time.perf_counter() - t0
    return table.refresh(), seconds


def lineitem_totals(df: Any) -> tuple[Any, ...]:
    """``count(*)``, ``sum(l_extendedprice)``, ``sum(l_quantity)`` of a lineitem frame: an
    aggregate that reads every row of two columns."""
    from pyspark.sql import functions as F

    row = df.agg(F.count("*"), F.sum("l_extendedprice"), F.sum("l_quantity")).collect()[0]
    return tuple(row)


# ------------------------------------------------------- hourly appends (issues 20 and 35)
# bench.timeseries_append_bench and bench.default_compaction_bench: the events of an hour,
# the reads measured on the appended tables, and one timed append.

#: Session settings of the hourly-append benchmarks (their filters name UTC times).
UTC_SESSION: dict[str, Any] = {"spark.sql.session.timeZone": "UTC"}

START = 1_704_067_200  # 2024-01-01 00:00:00 UTC
USERS = 100_000


def hour_frame(spark: Any, hour: int, rows: int) -> Any:
    """The events of one hour: deterministic, so the plan needs no freezing."""
    base = START + hour * 3600
    return spark.range(rows).selectExpr(
        f"timestamp_seconds({base} + pmod(hash(id, {hour}, 1), 3600)) AS event_time",
        f"pmod(hash(id, {hour}, 2), {USERS}) AS user_id",
        f"sha2(cast(id * 1000 + {hour} AS string), 256) AS payload",
    )


def all_frame(spark: Any, hours: int, rows: int) -> Any:
    """Every hour's events in one DataFrame (the same rows as the appends)."""
    frame = spark.range(hours * rows).selectExpr(
        f"id % {rows} AS id", f"cast(id DIV {rows} AS int) AS hour"
    )
    return frame.selectExpr(
        f"timestamp_seconds({START} + hour * 3600 + pmod(hash(id, hour, 1), 3600)) AS event_time",
        f"pmod(hash(id, hour, 2), {USERS}) AS user_id",
        "sha2(cast(id * 1000 + hour AS string), 256) AS payload",
    )


def reads(hours: int) -> dict[str, dict[str, Any]]:
    """The three reads: where/fraction arguments of ``explainScan``."""
    mid = datetime.datetime.fromtimestamp(START + (hours // 2) * 3600, datetime.UTC)
    end = mid + datetime.timedelta(hours=1)
    hour_filter = (
        f"event_time >= TIMESTAMP '{mid:%Y-%m-%d %H:%M:%S}' "
        f"AND event_time < TIMESTAMP '{end:%Y-%m-%d %H:%M:%S}'"
    )
    return {
        "sample(0.01)": {"fraction": 0.01},
        "user_id 1%": {"where": f"user_id < {USERS // 100}"},
        "1 hour": {"where": hour_filter},
    }


def measure(spark: Any, path: str, hours: int) -> dict[str, Any]:
    """Revisions, files and the bytes each read selects."""
    import qbeast_connect as qc

    table = qc.QbeastTable.forPath(spark, path)
    files = table.snapshot.files
    out: dict[str, Any] = {
        "revisions": len([r for r in table.revisionIDs() if r > 0]),
        "revisions_with_files": len({f.revision_id for f in files}),
        "files": len(files),
        "bytes": sum(f.size for f in files),
        "rows": table.toDF().count(),
        "reads": {},
    }
    for name, args in reads(hours).items():
        scan = table.explainScan(**args)
        row: dict[str, Any] = {
            "files": scan.selected_files,
            "bytes": scan.selected_bytes,
            "share": round(scan.selected_bytes / scan.total_bytes, 4),
        }
        if "where" in args:
            row["rows"] = table.filter(args["where"]).count()
        out["reads"][name] = row
    return out


def compare(appended: dict[str, Any], once: dict[str, Any]) -> dict[str, Any]:
    """Ratios of the appended table's bytes to the one-write table's, per read."""
    return {
        name: {
            "bytes_ratio": round(row["bytes"] / max(1, once["reads"][name]["bytes"]), 3),
            "same_rows": row.get("rows") == once["reads"][name].get("rows"),
        }
        for name, row in appended["reads"].items()
    }


def against_one_write(
    spark: Any, hours: int, rows: int, cube_size: int, paths: dict[str, str], scratch: str
) -> dict[str, Any]:
    """The reads of the appended tables ``paths`` (``{"default": ..., "off": ...}``) and of
    the same rows written at once (to ``fresh_dir(scratch)``): ``once``, each name's
    :func:`measure` and ``<name>_vs_once`` (:func:`compare`)."""
    import qbeast_connect as qc

    once_path = fresh_dir(scratch)
    qc.write(
        all_frame(spark, hours, rows),
        once_path,
        columnsToIndex="event_time,user_id",
        cubeSize=cube_size,
        autoCompact="false",
    )
    once = measure(spark, once_path, hours)
    out: dict[str, Any] = {"once": once}
    for name, path in paths.items():
        out[name] = measure(spark, path, hours)
        out[f"{name}_vs_once"] = compare(out[name], once)
    return out


def timed_append(
    spark: Any, path: str, hour: int, rows: int, compactions: list[dict[str, Any]],
    mode: str = "append", **options: Any,
) -> float:
    """Append the events of ``hour`` to ``path`` with ``options`` and return its seconds
    (its automatic compaction included); a compaction that ran is added to ``compactions``."""
    import qbeast_connect as qc

    started = time.perf_counter()
    result = qc.write(hour_frame(spark, hour, rows), path, mode=mode, **options)
    seconds = time.perf_counter() - started
    done = result.compaction
    if done is not None:
        compactions.append(
            {
                "after_append": hour + 1,
                "removed_files": done.removed_files,
                "added_files": done.added_files,
                "rows": done.rows,
                "skipped": done.skipped,
            }
        )
    return seconds
