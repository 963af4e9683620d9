"""Object-store settings sent by a client with one plugin call, in force while it runs.

A client may give S3 settings (endpoint, region, credentials) per session or per table
instead of through the server's environment. They travel as options of the plugin's data
sources, next to the other options of the call, and never into a plan, a table or a log
line. Each entry point of the plugin (a reader's ``read``, a writer's ``write`` and
``commit``, ...) runs inside :func:`storage_scope` with the settings of its own options, and
:func:`~server_plugin.delta.storage.storage_for` uses them for every location it opens
without explicit options. Outside a scope (and for settings a call does not give) the
server's environment applies, as before.

The scope is one value per process, not per thread: the threads a plugin call starts see
it, and a Python worker runs one call at a time. It is always restored when the call ends,
so a reused worker never carries one session's credentials into another's call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping

__all__ = ["STORAGE_OPTION_PREFIX", "scoped_settings", "storage_scope", "storage_settings"]

#: Options whose name starts with this (after an optional ``spark.hadoop.``) are storage
#: settings; :mod:`.s3` lists the ones it reads.
STORAGE_OPTION_PREFIX = "fs.s3a."

_lock = threading.Lock()
_current: dict[str, str] | None = None


def storage_settings(options: Mapping[str, str] | None) -> dict[str, str]:
    """The storage settings among ``options`` (names lower-cased, ``spark.hadoop.`` cut)."""
    found: dict[str, str] = {}
    for key, value in (options or {}).items():
        name = str(key).strip().lower().removeprefix("spark.hadoop.")
        if name.startswith(STORAGE_OPTION_PREFIX) and value is not None:
            found[name] = str(value)
    return found


def scoped_settings() -> dict[str, str] | None:
    """The settings of the plugin call running in this process, if it gave any."""
    with _lock:
        return None if _current is None else dict(_current)


@contextlib.contextmanager
def storage_scope(options: Mapping[str, str] | None) -> Iterator[None]:
    """Run the block with the storage settings found in ``options`` in force."""
    global _current
    settings = storage_settings(options) or None
    with _lock:
        previous, _current = _current, settings
    try:
        yield
    finally:
        with _lock:
            _current = previous
