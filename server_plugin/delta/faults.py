"""Crash injection for reliability tests.

A server started with the environment variable ``QBEAST_CRASH_AT=<point>`` kills itself (the
JVM and every Python worker, as a power cut would) when the plugin reaches that point.
Without the variable this does nothing. Points:

* ``after_files``: the data files are written, the commit has not started;
* ``commit_temp_written``: the commit's temporary file exists, the version is not claimed;
* ``after_commit``: the commit is durable, the client has not been answered.

It sits in the Delta layer, the lowest that has a crash point (local storage's
put-if-absent); the plugin's writer and its location checks import it from here.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

CRASH_ENV = "QBEAST_CRASH_AT"


def _ancestors() -> Iterator[int]:
    pid = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return
        yield pid


def _is_java(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            program = handle.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(program) == b"java"


def crash_point(point: str) -> None:
    """Kill the server if ``QBEAST_CRASH_AT`` names ``point``.

    Python workers run in a process group of pyspark's worker daemon, apart from the JVM,
    so the JVM's group (found among this process's ancestors) is killed first, then ours.
    """
    if os.environ.get(CRASH_ENV) != point:
        return
    own = os.getpgid(0)
    for pid in _ancestors():
        if _is_java(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            break
    os.killpg(own, signal.SIGKILL)
