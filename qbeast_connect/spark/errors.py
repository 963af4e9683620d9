"""The one place where Spark errors become qbeast-connect errors.

An error raised inside the server plugin (a Python Data Source running in a Spark
Python worker) reaches the client as a Spark exception whose text embeds the original
message, ``[QBEAST_...] ...``. :func:`translate_errors` finds that code and raises the
matching :class:`~qbeast_connect.exceptions.QbeastError` subclass instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from qbeast_connect.exceptions import QbeastError, error_from_text


@contextmanager
def translate_errors() -> Iterator[None]:
    """Re-raise Spark exceptions that carry a qbeast error code as that error type."""
    try:
        yield
    except QbeastError:
        raise
    except Exception as exc:
        translated = error_from_text(str(exc))
        if translated is None:
            raise
        raise translated from exc
