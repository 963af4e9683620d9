"""Where a write task's time goes: seconds per phase, recorded on request.

A write task adds the seconds of its phases (waiting for rows, cube assignment, sort,
parquet encoding, ...) to a per-process table. When the environment variable
``QBEAST_WRITE_PROFILE`` names a file (set before the server starts, so its Python workers
inherit it), :func:`finish` appends the task's table to it as one JSON line;
``bench/write_profile.py`` reads them. Without the variable nothing is written: the cost is
a clock read per phase.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator

__all__ = ["add", "finish", "phase", "receiving", "start"]

PROFILE_ENV = "QBEAST_WRITE_PROFILE"

_phases: dict[str, float] = {}
_started = [0.0, 0.0]


def start() -> None:
    """Forget the previous task's phases (a Python worker runs many tasks)."""
    _phases.clear()
    _started[0] = time.perf_counter()
    _started[1] = time.process_time()


def add(name: str, seconds: float) -> None:
    """Add ``seconds`` to phase ``name``."""
    _phases[name] = _phases.get(name, 0.0) + seconds


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the block's wall time to phase ``name`` and the process's CPU seconds (all its
    threads) to ``name.cpu``: on a busy machine the CPU seconds are the steadier figure."""
    begin = time.perf_counter()
    cpu = time.process_time()
    try:
        yield
    finally:
        add(name, time.perf_counter() - begin)
        add(f"{name}.cpu", time.process_time() - cpu)


def receiving(items: Iterator[object]) -> Iterator[object]:
    """``items``, counting the time spent waiting for each to phase ``receive``: the rows
    reaching this Python worker, with whatever the JVM does upstream meanwhile."""
    while True:
        with phase("receive"):
            item = next(items, None)
        if item is None:
            return
        yield item


def finish(rows: int) -> None:
    """Append this task's phases to the profile file, when one is asked for."""
    target = os.environ.get(PROFILE_ENV)
    if not target:
        return
    record = {
        "pid": os.getpid(),
        "rows": rows,
        "task": time.perf_counter() - _started[0],
        "task.cpu": time.process_time() - _started[1],
    }
    record.update({k: round(v, 4) for k, v in _phases.items()})
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
