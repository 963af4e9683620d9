"""A notebook's first cell: ``qc.session()`` until a qbeast table is read, against the floor.

Every run is a fresh Python process (nothing warm but the OS page cache), timed from its
spawn until it printed its answer; its exit is not timed. Arms, alternated run by run so
that the machine's load falls on all of them alike:

* ``floor``: ``SparkSession.builder.remote("local").getOrCreate()`` and
  ``spark.range(1).collect()``, a plain pyspark Connect start;
* ``ours``: ``import qbeast_connect as qc; spark = qc.session()`` and a read of a small
  qbeast table (``spark.read.format("qbeast").load(p).collect()``): the first usable session
  is one that has read a qbeast table, so the version and plugin checks, the data source
  registration and the first read's Python planning are all in;
* ``ours_no_archive`` (with ``--archive-off-arm``): the same with
  ``QBEAST_CONNECT_CLASS_ARCHIVE=0``, the JVM loading every class itself;
* ``before`` (with ``--before DIR``): the same code run from another checkout ``DIR``
  (e.g. a worktree of the commit before issue 34's changes).

``ours`` also reports when ``qc.session()`` returned. The class archive is made first if
missing (one untimed ``ours`` run; see ``qbeast_connect/spark/class_archive.py``).

Run: ``python -m bench.session_start_bench [runs] [--archive-off-arm] [--before DIR]
[--out file.json]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_FLOOR = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local").getOrCreate()
spark.range(1).collect()
print("DONE", flush=True)
"""

_OURS = """
import sys, time
started = float(sys.argv[2])
import qbeast_connect as qc
spark = qc.session()
print("SESSION", time.time() - started, flush=True)
rows = spark.read.format("qbeast").load(sys.argv[1]).collect()
assert len(rows) == 1000, len(rows)
print("DONE", flush=True)
"""

_MAKE_TABLE = """
import sys
import qbeast_connect as qc
spark = qc.session()
qc.write(spark.range(1000).selectExpr("id", "id * 2 AS v"), sys.argv[1], columnsToIndex="id")
"""


def _env(root: Path = ROOT, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    env.pop("SPARK_REMOTE", None)
    env["QBEAST_CONNECT_PROGRESS"] = "0"
    env.update(extra)
    return env


def _run(code: str, args: list[str], env: dict[str, str]) -> dict[str, float]:
    """Run ``code`` in a fresh interpreter; seconds from spawn to each mark it printed."""
    started = time.time()
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args, str(started)],
        env=env,
        cwd=tempfile.gettempdir(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    marks: dict[str, float] = {}
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("SESSION "):
            marks["session_s"] = float(line.split()[1])
        elif line.startswith("DONE"):
            marks["total_s"] = time.time() - started
    if process.wait() != 0 or "total_s" not in marks:
        raise RuntimeError(f"a bench run failed with exit code {process.returncode}")
    return marks


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(runs: int = 5, archive_arm: bool = False, before: str | None = None) -> dict[str, Any]:
    from qbeast_connect.spark.class_archive import archive_dir

    work = Path(tempfile.mkdtemp(prefix="session-start-bench-"))
    table = str(work / "table")
    had_archive = any(archive_dir().glob("spark-*.jsa"))
    subprocess.run([sys.executable, "-c", _MAKE_TABLE, table], env=_env(), check=True)
    arms: dict[str, tuple[str, list[str], dict[str, str]]] = {
        "floor": (_FLOOR, [], _env()),
        "ours": (_OURS, [table], _env()),
    }
    if archive_arm:
        arms["ours_no_archive"] = (_OURS, [table], _env(QBEAST_CONNECT_CLASS_ARCHIVE="0"))
    if before:
        arms["before"] = (_OURS, [table], _env(Path(before)))
    load_before = _load()
    times: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    for _ in range(runs):
        for name, (code, args, env) in arms.items():
            times[name].append(_run(code, args, env))
            print(name, times[name][-1], file=sys.stderr, flush=True)
    load_after = _load()

    def median(name: str, key: str = "total_s") -> float:
        return round(statistics.median(t[key] for t in times[name]), 2)

    floor = median("floor")
    result: dict[str, Any] = {
        "runs": runs,
        "machine": f"{os.cpu_count()} cores",
        "archive_existed_before": had_archive,
        "load_before": load_before,
        "load_after": load_after,
        "floor_median_s": floor,
        "ours_session_median_s": median("ours", "session_s"),
        "ours_first_read_median_s": median("ours"),
        "ratio_ours_to_floor": round(median("ours") / floor, 2),
        "pair_ratios": [
            round(o["total_s"] / f["total_s"], 2)
            for o, f in zip(times["ours"], times["floor"], strict=True)
        ],
        "runs_s": {
            name: [round(t["total_s"], 2) for t in values] for name, values in times.items()
        },
    }
    for arm in ("ours_no_archive", "before"):
        if arm in arms:
            result[f"{arm}_median_s"] = median(arm)
            result[f"{arm}_session_median_s"] = median(arm, "session_s")
            result[f"ratio_{arm}_to_floor"] = round(median(arm) / floor, 2)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    argv = sys.argv[1:]
    valued: dict[str, str] = {}
    for flag in ("--out", "--before"):
        if flag in argv:
            at = argv.index(flag)
            valued[flag] = argv[at + 1]
            del argv[at : at + 2]
    out = valued.get("--out")
    numbers = [a for a in argv if not a.startswith("--")]
    answer = main(
        int(numbers[0]) if numbers else 5, "--archive-off-arm" in argv, valued.get("--before")
    )
    if out:
        Path(out).write_text(json.dumps(answer, indent=1) + "\n")
