"""Every error qbeast-connect raises, with a stable code per class.

Each message starts with ``[CODE]``. The code survives any transport that keeps the
text (a Spark Connect error raised inside the server plugin, a pickled commit message,
a log line), and :func:`error_from_text` rebuilds the same class on the other side.
Classes that correspond to a built-in condition also inherit that built-in, so
``except ValueError`` keeps working for bad arguments.
"""

from __future__ import annotations

import re
from typing import ClassVar

__all__ = [
    "CommitConflictError",
    "CommitRetriesExhaustedError",
    "CorruptLogError",
    "InputChangedError",
    "InvalidOptionError",
    "JavaNotFoundError",
    "MetadataFormatError",
    "MissingDependencyError",
    "NotAQbeastTableError",
    "PluginUnavailableError",
    "QbeastError",
    "RevisionConflictError",
    "SchemaMismatchError",
    "ServerUnavailableError",
    "StorageError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UncoverableRangeError",
    "UnsafePathError",
    "UnsupportedInputError",
    "UnsupportedProtocolError",
    "error_class_for_code",
    "error_from_text",
]


class QbeastError(Exception):
    """Root of every error raised by qbeast-connect."""

    code: ClassVar[str] = "QBEAST_ERROR"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"[{self.code}] {message}")

    def __reduce__(self) -> tuple[type[QbeastError], tuple[str]]:
        return (type(self), (self.message,))


class InvalidOptionError(QbeastError, ValueError):
    """An option or argument has a value that cannot be used."""

    code = "QBEAST_INVALID_OPTION"


class TableNotFoundError(QbeastError, FileNotFoundError):
    """The path holds no Delta table."""

    code = "QBEAST_TABLE_NOT_FOUND"


class TableAlreadyExistsError(QbeastError):
    """A write in ``errorifexists`` mode found an existing table."""

    code = "QBEAST_TABLE_EXISTS"


class NotAQbeastTableError(QbeastError):
    """The path holds a Delta table without Qbeast metadata."""

    code = "QBEAST_NOT_A_QBEAST_TABLE"


class MetadataFormatError(QbeastError):
    """Table metadata (revision JSON, blocks tag, log action) cannot be decoded."""

    code = "QBEAST_METADATA_FORMAT"


class CorruptLogError(MetadataFormatError):
    """The Delta log is inconsistent: a missing version, an unreadable commit or checkpoint."""

    code = "QBEAST_CORRUPT_LOG"


class UnsupportedProtocolError(MetadataFormatError):
    """The table needs a Delta protocol version or table feature we do not implement."""

    code = "QBEAST_UNSUPPORTED_PROTOCOL"


class RevisionConflictError(QbeastError):
    """The write's indexing (columns, transformers) cannot be reconciled with the table's."""

    code = "QBEAST_REVISION_CONFLICT"


class SchemaMismatchError(QbeastError):
    """The data's schema differs from the table's and schema merging was not requested."""

    code = "QBEAST_SCHEMA_MISMATCH"


class CommitConflictError(QbeastError):
    """A concurrent commit makes this transaction unsafe to retry."""

    code = "QBEAST_COMMIT_CONFLICT"


class CommitRetriesExhaustedError(CommitConflictError):
    """Every retry of a commit lost the race for the next version."""

    code = "QBEAST_COMMIT_RETRIES_EXHAUSTED"


class PluginUnavailableError(QbeastError):
    """The Spark Connect server cannot import the qbeast server plugin."""

    code = "QBEAST_PLUGIN_UNAVAILABLE"


class MissingDependencyError(QbeastError, ImportError):
    """An optional dependency is not installed; the message names the package or extra."""

    code = "QBEAST_MISSING_DEPENDENCY"


class JavaNotFoundError(QbeastError, RuntimeError):
    """An embedded Spark Connect server was requested but no Java runtime is available."""

    code = "QBEAST_JAVA_NOT_FOUND"


class StorageError(QbeastError, OSError):
    """A storage operation failed (other than a plain missing file)."""

    code = "QBEAST_STORAGE"


class UnsafePathError(QbeastError, ValueError):
    """A path escapes the table location or uses a scheme that is not allowed."""

    code = "QBEAST_UNSAFE_PATH"


class ServerUnavailableError(QbeastError, ConnectionError):
    """The Spark Connect server could not be reached, or went away during an operation."""

    code = "QBEAST_SERVER_UNAVAILABLE"


class UnsupportedInputError(QbeastError, ValueError):
    """The input (a value, a column name, a predicate) is valid Spark but cannot be handled."""

    code = "QBEAST_UNSUPPORTED_INPUT"


class InputChangedError(QbeastError):
    """The rows a write job read are not the rows its statistics were computed on.

    Raised by write tasks that meet a row outside the space of the revision planned from
    the statistics job: the input is not deterministic (``rand()``, ``uuid()``,
    ``current_timestamp()``) or its source changed during the write. ``write`` catches it
    and redoes the write once on a materialised copy of the input.
    """

    code = "QBEAST_INPUT_CHANGED"


def _all_subclasses(cls: type[QbeastError]) -> list[type[QbeastError]]:
    out: list[type[QbeastError]] = [cls]
    for sub in cls.__subclasses__():
        out.extend(_all_subclasses(sub))
    return out


def error_class_for_code(code: str) -> type[QbeastError]:
    """Return the error class whose ``code`` is ``code`` (``QbeastError`` when unknown)."""
    for cls in _all_subclasses(QbeastError):
        if cls.code == code:
            return cls
    return QbeastError


_CODE_RE = re.compile(r"\[(QBEAST_[A-Z_]+)\] ?(.*)", re.DOTALL)


def error_from_text(text: str) -> QbeastError | None:
    """Rebuild the QbeastError whose ``[CODE] message`` appears in ``text``, if any.

    Only the first coded message is used, and the message stops at the end of its line,
    so a Python traceback that follows it in a Spark error text is not copied in.
    """
    match = _CODE_RE.search(text)
    if match is None:
        return None
    cls = error_class_for_code(match.group(1))
    message = match.group(2).split("\n", 1)[0].strip()
    return cls(message)


class UncoverableRangeError(QbeastError):
    """No set of partitions of a fact's tables covers a time range.

    The message names the uncovered sub-ranges; ``uncovered`` holds them as
    ``TimeRange`` objects where the error was raised (it is not kept when the error is
    rebuilt from its text).
    """

    code = "QBEAST_UNCOVERABLE_RANGE"

    def __init__(self, message: str, uncovered: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.uncovered = uncovered
