"""Crash injection for reliability tests.

A server started with the environment variable ``QBEAST_CRASH_AT=<point>`` kills its whole
process group (the JVM and every Python worker, as a power cut would) when the plugin reaches
that point. Without the variable this does nothing. Points:

* ``after_files``: the data files are written, the commit has not started;
* ``commit_temp_written``: the commit's temporary file exists, the version is not claimed;
* ``after_commit``: the commit is durable, the client has not been answered.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "QBEAST_CRASH_AT"


def crash_point(point: str) -> None:
    """Kill the server's process group if ``QBEAST_CRASH_AT`` names ``point``."""
    if os.environ.get(CRASH_ENV) == point:
        os.killpg(os.getpgid(0), signal.SIGKILL)
