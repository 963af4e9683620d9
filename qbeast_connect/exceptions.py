"""Every error qbeast-connect raises, with a stable code per class.

Each message starts with ``[CODE]``. The code survives any transport that keeps the
text (a Spark Connect error raised inside the server plugin, a pickled commit message,
a log line), and :func:`error_from_text` rebuilds the same class on the other side.
Classes that correspond to a built-in condition also inherit that built-in, so
``except ValueError`` keeps working for bad arguments.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

__all__ = [
    "CommitConflictError",
    "CommitRetriesExhaustedError",
    "CorruptLogError",
    "DataFileMissingError",
    "InputChangedError",
    "InvalidOptionError",
    "JavaNotFoundError",
    "MetadataFormatError",
    "MissingDependencyError",
    "NotAQbeastTableError",
    "PluginUnavailableError",
    "PluginVersionMismatchError",
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
    "UnsupportedOperationError",
    "UnsupportedProtocolError",
    "error_class_for_code",
    "error_from_text",
]


class QbeastError(Exception):
    """Root of every error raised by qbeast-connect."""

    code: ClassVar[str] = "QBEAST_ERROR"

    def __init_subclass__(cls, code: str | None = None, **kwargs: Any) -> None:
        """Give the subclass its code: ``class XError(QbeastError, code="QBEAST_X")``.

        A subclass declared without ``code`` keeps its base class's code.
        """
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"[{self.code}] {message}")

    def __reduce__(self) -> tuple[type[QbeastError], tuple[str]]:
        return (type(self), (self.message,))


class InvalidOptionError(QbeastError, ValueError, code="QBEAST_INVALID_OPTION"):
    """An option or argument has a value that cannot be used."""


class TableNotFoundError(QbeastError, FileNotFoundError, code="QBEAST_TABLE_NOT_FOUND"):
    """The path holds no Delta table."""


class TableAlreadyExistsError(QbeastError, code="QBEAST_TABLE_EXISTS"):
    """A write in ``errorifexists`` mode found an existing table."""


class NotAQbeastTableError(QbeastError, code="QBEAST_NOT_A_QBEAST_TABLE"):
    """The path holds a Delta table without Qbeast metadata."""


class MetadataFormatError(QbeastError, code="QBEAST_METADATA_FORMAT"):
    """Table metadata (revision JSON, blocks tag, log action) cannot be decoded."""


class CorruptLogError(MetadataFormatError, code="QBEAST_CORRUPT_LOG"):
    """The Delta log is inconsistent: a missing version, an unreadable commit or checkpoint."""


class UnsupportedProtocolError(MetadataFormatError, code="QBEAST_UNSUPPORTED_PROTOCOL"):
    """The table needs a Delta protocol version or table feature we do not implement."""


class IndexedColumnMissingError(QbeastError, code="QBEAST_INDEXED_COLUMN_MISSING"):
    """A column a revision indexes is no longer in the table schema: it was renamed or
    dropped (Delta column mapping). The index cannot be used with the column's new name."""


class RevisionConflictError(QbeastError, code="QBEAST_REVISION_CONFLICT"):
    """The write's indexing (columns, transformers) cannot be reconciled with the table's."""


class SchemaMismatchError(QbeastError, code="QBEAST_SCHEMA_MISMATCH"):
    """The data's schema differs from the table's and schema merging was not requested."""


class CommitConflictError(QbeastError, code="QBEAST_COMMIT_CONFLICT"):
    """A concurrent commit makes this transaction unsafe to retry."""


class CommitRetriesExhaustedError(CommitConflictError, code="QBEAST_COMMIT_RETRIES_EXHAUSTED"):
    """Every retry of a commit lost the race for the next version."""


class PluginUnavailableError(QbeastError, code="QBEAST_PLUGIN_UNAVAILABLE"):
    """The Spark Connect server cannot import the qbeast server plugin."""


class PluginVersionMismatchError(PluginUnavailableError, code="QBEAST_PLUGIN_VERSION_MISMATCH"):
    """The server has a qbeast plugin installed whose version is not the client's."""


class MissingDependencyError(QbeastError, ImportError, code="QBEAST_MISSING_DEPENDENCY"):
    """An optional dependency is not installed; the message names the package or extra."""


class JavaNotFoundError(QbeastError, RuntimeError, code="QBEAST_JAVA_NOT_FOUND"):
    """An embedded Spark Connect server was requested but no Java runtime is available."""


class StorageError(QbeastError, OSError, code="QBEAST_STORAGE"):
    """A storage operation failed (other than a plain missing file)."""


class DataFileMissingError(StorageError, FileNotFoundError, code="QBEAST_DATA_FILE_MISSING"):
    """A data or deletion-vector file the table's log lists is not in storage (deleted or
    vacuumed by hand, or a copy of the table without all its files)."""


class UnsafePathError(QbeastError, ValueError, code="QBEAST_UNSAFE_PATH"):
    """A path escapes the table location or uses a scheme that is not allowed."""


class ServerUnavailableError(QbeastError, ConnectionError, code="QBEAST_SERVER_UNAVAILABLE"):
    """The Spark Connect server could not be reached, or went away during an operation."""


class UnsupportedInputError(QbeastError, ValueError, code="QBEAST_UNSUPPORTED_INPUT"):
    """The input (a value, a column name, a predicate) is valid Spark but cannot be handled."""


class UnsupportedOperationError(QbeastError, code="QBEAST_UNSUPPORTED_OPERATION"):
    """The operation is not available on this table (the message names what to use)."""


class InputChangedError(QbeastError, code="QBEAST_INPUT_CHANGED"):
    """The rows a write job read are not the rows its statistics were computed on.

    Raised by write tasks that meet a row outside the space of the revision planned from
    the statistics job: the input is not deterministic (``rand()``, ``uuid()``,
    ``current_timestamp()``) or its source changed during the write. ``write`` catches it
    and redoes the write once on a materialised copy of the input.
    """


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


class UncoverableRangeError(QbeastError, code="QBEAST_UNCOVERABLE_RANGE"):
    """No set of partitions of a fact's tables covers a time range.

    The message names the uncovered sub-ranges; ``uncovered`` holds them as
    ``TimeRange`` objects where the error was raised (it is not kept when the error is
    rebuilt from its text).
    """

    def __init__(self, message: str, uncovered: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.uncovered = uncovered
