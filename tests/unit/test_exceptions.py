"""The error classes' codes and bases are a wire contract: pin every one of them."""

from __future__ import annotations

import pickle

import pytest

import qbeast_connect.exceptions as exc
from qbeast_connect.exceptions import QbeastError, error_class_for_code, error_from_text

# class name -> (code, direct bases); errors cross the server boundary by code
_CONTRACT: dict[str, tuple[str, tuple[str, ...]]] = {
    "QbeastError": ("QBEAST_ERROR", ("Exception",)),
    "InvalidOptionError": ("QBEAST_INVALID_OPTION", ("QbeastError", "ValueError")),
    "TableNotFoundError": ("QBEAST_TABLE_NOT_FOUND", ("QbeastError", "FileNotFoundError")),
    "TableAlreadyExistsError": ("QBEAST_TABLE_EXISTS", ("QbeastError",)),
    "NotAQbeastTableError": ("QBEAST_NOT_A_QBEAST_TABLE", ("QbeastError",)),
    "MetadataFormatError": ("QBEAST_METADATA_FORMAT", ("QbeastError",)),
    "CorruptLogError": ("QBEAST_CORRUPT_LOG", ("MetadataFormatError",)),
    "UnsupportedProtocolError": ("QBEAST_UNSUPPORTED_PROTOCOL", ("MetadataFormatError",)),
    "RevisionConflictError": ("QBEAST_REVISION_CONFLICT", ("QbeastError",)),
    "SchemaMismatchError": ("QBEAST_SCHEMA_MISMATCH", ("QbeastError",)),
    "CommitConflictError": ("QBEAST_COMMIT_CONFLICT", ("QbeastError",)),
    "CommitRetriesExhaustedError": ("QBEAST_COMMIT_RETRIES_EXHAUSTED", ("CommitConflictError",)),
    "PluginUnavailableError": ("QBEAST_PLUGIN_UNAVAILABLE", ("QbeastError",)),
    "PluginVersionMismatchError": (
        "QBEAST_PLUGIN_VERSION_MISMATCH",
        ("PluginUnavailableError",),
    ),
    "MissingDependencyError": ("QBEAST_MISSING_DEPENDENCY", ("QbeastError", "ImportError")),
    "JavaNotFoundError": ("QBEAST_JAVA_NOT_FOUND", ("QbeastError", "RuntimeError")),
    "StorageError": ("QBEAST_STORAGE", ("QbeastError", "OSError")),
    "DataFileMissingError": ("QBEAST_DATA_FILE_MISSING", ("StorageError", "FileNotFoundError")),
    "UnsafePathError": ("QBEAST_UNSAFE_PATH", ("QbeastError", "ValueError")),
    "ServerUnavailableError": ("QBEAST_SERVER_UNAVAILABLE", ("QbeastError", "ConnectionError")),
    "UnsupportedInputError": ("QBEAST_UNSUPPORTED_INPUT", ("QbeastError", "ValueError")),
    "UnsupportedOperationError": ("QBEAST_UNSUPPORTED_OPERATION", ("QbeastError",)),
    "InputChangedError": ("QBEAST_INPUT_CHANGED", ("QbeastError",)),
    "UncoverableRangeError": ("QBEAST_UNCOVERABLE_RANGE", ("QbeastError",)),
}


def test_every_error_class_keeps_its_code_and_bases() -> None:
    exported = {n for n in exc.__all__ if isinstance(getattr(exc, n), type)}
    assert exported == set(_CONTRACT)
    for name, (code, bases) in _CONTRACT.items():
        cls = getattr(exc, name)
        assert cls.code == code, name
        assert tuple(b.__name__ for b in cls.__bases__) == bases, name
        assert str(cls("boom")) == f"[{code}] boom"


@pytest.mark.parametrize("name", sorted(_CONTRACT))
def test_error_rebuilt_from_text_and_pickle_is_the_same_class(name: str) -> None:
    cls = getattr(exc, name)
    error = cls("the table moved")
    rebuilt = error_from_text(f"py4j said: {error}\nTraceback ...")
    assert type(rebuilt) is cls
    assert rebuilt is not None and rebuilt.message == "the table moved"
    assert error_class_for_code(cls.code) is cls
    unpickled = pickle.loads(pickle.dumps(error))
    assert type(unpickled) is cls and str(unpickled) == str(error)


def test_subclass_without_code_keeps_its_base_code() -> None:
    class LocalError(exc.StorageError):
        pass

    class CodedError(exc.StorageError, code="QBEAST_TEST_LOCAL"):
        pass

    assert LocalError.code == "QBEAST_STORAGE"
    assert str(LocalError("x")) == "[QBEAST_STORAGE] x"
    assert CodedError.code == "QBEAST_TEST_LOCAL"
    assert isinstance(CodedError("x"), OSError)
    # a code that nothing declares maps back to the root class
    assert error_class_for_code("QBEAST_NO_SUCH_CODE") is QbeastError
