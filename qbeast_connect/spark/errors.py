"""The one place where Spark errors become qbeast-connect errors.

An error raised inside the server plugin (a Python Data Source running in a Spark
Python worker) reaches the client as a Spark exception whose text embeds the original
message, ``[QBEAST_...] ...``. :func:`translate_errors` finds that code and raises the
matching :class:`~qbeast_connect.exceptions.QbeastError` subclass instead. A lost server
(gRPC ``UNAVAILABLE`` or ``DEADLINE_EXCEEDED`` that escaped the session's bounded retries,
see ``spark/timeouts.py``) becomes :class:`~qbeast_connect.exceptions.ServerUnavailableError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from qbeast_connect.exceptions import QbeastError, ServerUnavailableError, error_from_text

#: gRPC status codes meaning the server could not be reached or did not answer in time
_UNAVAILABLE_CODES = ("UNAVAILABLE", "DEADLINE_EXCEEDED")


@contextmanager
def translate_errors() -> Iterator[None]:
    """Re-raise Spark exceptions that carry a qbeast error code as that error type."""
    try:
        yield
    except QbeastError:
        raise
    except Exception as exc:
        translated = error_from_text(str(exc)) or unavailable_error(exc)
        if translated is None:
            raise
        raise translated from exc


def unavailable_error(exc: BaseException) -> ServerUnavailableError | None:
    """A ServerUnavailableError for a gRPC error saying the server is unreachable, else None.

    The gRPC error is either ``exc`` or one it was raised from (pyspark wraps it in a
    ``SparkConnectGrpcException`` whose text keeps the status code).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = getattr(_status(current), "name", None)
        text = str(current)
        if name in _UNAVAILABLE_CODES or any(f"StatusCode.{c}" in text for c in _UNAVAILABLE_CODES):
            first = text.strip().splitlines()[0][:300] if text.strip() else type(current).__name__
            return ServerUnavailableError(
                f"the Spark Connect server could not be reached ({first}). Check that it is "
                "running and reachable, then call qc.session() again"
            )
        current = current.__cause__ or current.__context__
    return None


def _status(exc: BaseException) -> object:
    """``exc.code()`` of a gRPC error (None for other exceptions)."""
    code = getattr(exc, "code", None)
    if not callable(code):
        return None
    try:
        return code()
    except Exception:  # a ``code`` attribute of some other meaning
        return None
