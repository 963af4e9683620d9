"""The server's JVM, found from a Python process of the plugin through ``/proc`` (Linux).

Driver-side data source code (``reader()``, ``writer()``, ``commit()``) and, in local
mode, tasks too run in Python processes under the Spark driver's JVM. Both the crash points
(:mod:`server_plugin.delta.faults`) and the server's working directory
(:mod:`server_plugin.locations`) need that JVM's process id.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["ancestors", "jvm_ancestor"]


def ancestors() -> Iterator[int]:
    """The process ids above this process, nearest first (nothing without ``/proc``)."""
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


def jvm_ancestor() -> int | None:
    """The process id of the nearest ``java`` process above this one, or None."""
    return next((pid for pid in ancestors() if _is_java(pid)), None)
