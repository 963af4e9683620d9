"""Stage progress of long Spark jobs (writes, optimizes…) as one updating line on stderr.

Spark Connect servers report the stages of a running job to the client every couple of
seconds; :func:`attach` registers a handler on a session (``qc.session()`` does it) that
prints them as ``stage 3/5: 120/200 tasks``, rewriting the same line, and clears the line
when the job ends. Short jobs finish before the first report and print nothing.

Whether it prints is decided at every report: :func:`set_progress` (``True``/``False``, or
``None`` to go back to the default) wins; otherwise the environment variable
``QBEAST_CONNECT_PROGRESS`` (``0``/``false``/``off`` or ``1``/``true``/``on``); otherwise it
prints only when stderr is a terminal.

Example:
    >>> import qbeast_connect as qc
    >>> qc.set_progress(False)  # quiet, e.g. in scripts that capture stderr
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from typing import IO, Any

__all__ = [
    "ENV_VAR",
    "StageProgress",
    "attach",
    "format_stages",
    "progress_enabled",
    "set_progress",
]

#: Environment variable switching the progress line on (``1``) or off (``0``).
ENV_VAR = "QBEAST_CONNECT_PROGRESS"

_setting: bool | None = None
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def set_progress(enabled: bool | None) -> None:
    """Switch the progress line on or off for every session (None: back to the default).

    The default is the ``QBEAST_CONNECT_PROGRESS`` environment variable when set, else on
    only when stderr is a terminal.
    """
    global _setting
    if enabled is not None and not isinstance(enabled, bool):
        from qbeast_connect.exceptions import InvalidOptionError

        raise InvalidOptionError(f"set_progress takes True, False or None, got {enabled!r}")
    _setting = enabled


def progress_enabled(stream: IO[str] | None = None) -> bool:
    """Whether progress is printed to ``stream`` (stderr by default) right now."""
    if _setting is not None:
        return _setting
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    out = sys.stderr if stream is None else stream
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


def _field(stage: Any, name: str) -> int:
    return int(getattr(stage, name, 0) or 0)


def format_stages(stages: Iterable[Any]) -> str | None:
    """``stage k/n: done/total tasks`` for the stages of one job (None when there are none).

    ``n`` counts the stages reported so far; the stage shown is the first unfinished one
    (the last one once all are done).
    """
    known = sorted(stages, key=lambda s: _field(s, "stage_id"))
    if not known:
        return None
    current = next(
        (i for i, s in enumerate(known) if not getattr(s, "done", False)), len(known) - 1
    )
    stage = known[current]
    return (
        f"stage {current + 1}/{len(known)}: "
        f"{_field(stage, 'num_completed_tasks')}/{_field(stage, 'num_tasks')} tasks"
    )


class StageProgress:
    """A Spark Connect progress handler printing one updating line.

    Spark calls it with keyword arguments ``stages``, ``inflight_tasks``, ``operation_id``
    and ``done`` (the ``ProgressHandler`` protocol of ``pyspark.sql.connect``).

    Args:
        stream: where to print; stderr (looked up at each call) when None.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream
        self._width = 0
        self._last = ""
        self._lock = threading.Lock()

    def _out(self) -> IO[str]:
        return sys.stderr if self.stream is None else self.stream

    def __call__(
        self,
        stages: Iterable[Any] | None = None,
        inflight_tasks: int = 0,
        operation_id: str | None = None,
        done: bool = False,
    ) -> None:
        out = self._out()
        with self._lock:
            if done:
                if self._width:
                    out.write("\r" + " " * self._width + "\r")
                    out.flush()
                    self._width = 0
                self._last = ""
                return
            if not progress_enabled(out):
                return
            line = format_stages(stages or ())
            if line is None or line == self._last:
                return
            self._last = line
            padding = " " * max(0, self._width - len(line))
            out.write("\r" + line + padding)
            out.flush()
            self._width = max(self._width, len(line))


_ATTRIBUTE = "_qbeast_progress_handler"


def attach(spark: Any) -> StageProgress | None:
    """Register the progress line on a Spark Connect session (once per session).

    Returns the handler, or None when the session has no progress handlers (not Connect).
    """
    register = getattr(spark, "registerProgressHandler", None)
    if register is None:
        return None
    handler = getattr(spark, _ATTRIBUTE, None)
    if isinstance(handler, StageProgress):
        return handler
    handler = StageProgress()
    try:
        register(handler)
        setattr(spark, _ATTRIBUTE, handler)
    except Exception:
        return None
    return handler
