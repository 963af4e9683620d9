"""Crash injection for reliability tests.

A server started with the environment variable ``QBEAST_CRASH_AT=<point>`` kills itself (the
JVM and every Python worker, as a power cut would) when the plugin reaches that point.
Without the variable this does nothing. Points:

* ``after_files``: the data files are written, the commit has not started;
* ``commit_temp_written``: the commit's temporary file exists, the version is not claimed;
* ``after_commit``: the commit is durable, the client has not been answered.

It sits in the Delta layer, the lowest that has a crash point (local storage's
put-if-absent); the plugin's writer imports it from here.
"""

from __future__ import annotations

import contextlib
import os
import signal

from .process_tree import jvm_ancestor

CRASH_ENV = "QBEAST_CRASH_AT"


def crash_point(point: str) -> None:
    """Kill the server if ``QBEAST_CRASH_AT`` names ``point``.

    Python workers run in a process group of pyspark's worker daemon, apart from the JVM,
    so the JVM's group (found among this process's ancestors) is killed first, then ours.
    """
    if os.environ.get(CRASH_ENV) != point:
        return
    own = os.getpgid(0)
    jvm = jvm_ancestor()
    if jvm is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(jvm), signal.SIGKILL)
    os.killpg(own, signal.SIGKILL)
