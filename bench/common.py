"""Shared helpers for the benchmarks: data sets, timing, machine description."""

from __future__ import annotations

import contextlib
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
