"""qbeast-connect: Qbeast tables for Spark Connect clients."""

from __future__ import annotations

from qbeast_connect.approx import ApproxResult
from qbeast_connect.exceptions import (
    CommitConflictError,
    CommitRetriesExhaustedError,
    CorruptLogError,
    DataFileMissingError,
    InvalidOptionError,
    JavaNotFoundError,
    MetadataFormatError,
    MissingDependencyError,
    NotAQbeastTableError,
    PluginUnavailableError,
    QbeastError,
    RevisionConflictError,
    SchemaMismatchError,
    ServerUnavailableError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsafePathError,
    UnsupportedInputError,
    UnsupportedOperationError,
    UnsupportedProtocolError,
)
from qbeast_connect.merge import MergeResult, QbeastMergeBuilder
from qbeast_connect.progress import set_progress
from qbeast_connect.row_changes import RowChangeResult
from qbeast_connect.spark.operations import OptimizeResult
from qbeast_connect.spark.operations import convert_to_qbeast as convertToQbeast
from qbeast_connect.spark.quantiles import computeQuantilesForColumn
from qbeast_connect.spark.session import session, stop
from qbeast_connect.spark.storage_options import set_storage_options
from qbeast_connect.streaming import qbeast_batch_writer, write_stream
from qbeast_connect.table import QbeastTable, ScanExplanation
from qbeast_connect.writer_api import DataFrameQbeastWriter, WriteResult, write, writer

__version__ = "0.1.0"

__all__ = [
    "ApproxResult",
    "CommitConflictError",
    "CommitRetriesExhaustedError",
    "CorruptLogError",
    "DataFileMissingError",
    "DataFrameQbeastWriter",
    "InvalidOptionError",
    "JavaNotFoundError",
    "MergeResult",
    "MetadataFormatError",
    "MissingDependencyError",
    "NotAQbeastTableError",
    "OptimizeResult",
    "PluginUnavailableError",
    "QbeastError",
    "QbeastMergeBuilder",
    "QbeastTable",
    "RevisionConflictError",
    "RowChangeResult",
    "ScanExplanation",
    "SchemaMismatchError",
    "ServerUnavailableError",
    "StorageError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsafePathError",
    "UnsupportedInputError",
    "UnsupportedOperationError",
    "UnsupportedProtocolError",
    "WriteResult",
    "__version__",
    "computeQuantilesForColumn",
    "convertToQbeast",
    "qbeast_batch_writer",
    "session",
    "set_progress",
    "set_storage_options",
    "stop",
    "write",
    "write_stream",
    "writer",
]
