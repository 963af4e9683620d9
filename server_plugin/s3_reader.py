"""Reading the selected files of a table on an object store without Hadoop's S3 connector.

Spark reads ``s3a://`` paths natively only when the server has Hadoop's S3 connector
(``hadoop-aws``). Without it, the client reads a table's files through the ``qbeast_files``
Python data source below: the files are opened with the plugin's own
:class:`~server_plugin.delta.storage.Storage` (``S3Storage``: boto3, ranged GETs) and
decoded with pyarrow inside the server's Python workers, one read partition per file or
per few small files.

Which reader a read uses is decided by :func:`reader_for` on the client, once per session
and URI scheme (a local path never asks): ``"spark-parquet"`` when Spark can open the
scheme, else ``"qbeast-plugin"``. :class:`qbeast_connect.table.ScanExplanation` reports it.

Server half: :class:`QbeastFilesSource` (``format("qbeast_files")``, plugin-internal).
Client half: :func:`reader_for` and :func:`read_files`.
"""

from __future__ import annotations

import json
import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from qbeast_connect.exceptions import InvalidOptionError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession

FILES_FORMAT = "qbeast_files"
#: The reader names reported in scan explanations.
SPARK_READER = "spark-parquet"
PLUGIN_READER = "qbeast-plugin"
#: Object-store schemes the plugin's own storage can read.
PLUGIN_SCHEMES = frozenset({"s3", "s3a"})
#: Files are packed into read partitions of about this many bytes.
PARTITION_BYTES = 64 * 1024 * 1024
#: Rows per Arrow batch a read task yields.
BATCH_ROWS = 65_536

__all__ = [
    "FILES_FORMAT",
    "PLUGIN_READER",
    "SPARK_READER",
    "QbeastFilesSource",
    "read_files",
    "reader_for",
]


# --------------------------------------------------------------------------- server half


def _pack(files: Sequence[Sequence[Any]], target: int) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    current: list[Any] = []
    used = 0
    for entry in files:
        size = int(entry[1])
        if current and used + size > target:
            out.append(tuple(current))
            current, used = [], 0
        current.append((entry[0], size, dict(entry[2]) if len(entry) > 2 else {}))
        used += size
    if current:
        out.append(tuple(current))
    return out


def _conform(
    batch: pa.RecordBatch, target: pa.Schema, partition_values: Mapping[str, str | None]
) -> pa.RecordBatch:
    """The batch with exactly the ``target`` columns and types.

    A column missing from the file takes its partition value (cast from the log's string),
    or nulls.
    """
    import pyarrow as pa

    lowered = {name.lower(): i for i, name in reversed(list(enumerate(batch.schema.names)))}
    partitions = {k.lower(): v for k, v in partition_values.items()}
    arrays = []
    for field in target:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            index = lowered.get(field.name.lower(), -1)
        if index >= 0:
            column = batch.column(index)
            arrays.append(column if column.type.equals(field.type) else column.cast(field.type))
        elif partitions.get(field.name.lower()) is not None:
            value = partitions[field.name.lower()]
            arrays.append(pa.array([value] * batch.num_rows, pa.string()).cast(field.type))
        else:
            arrays.append(pa.nulls(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


class _FilesReader(DataSourceReader):
    """Reads listed files of one table through the plugin's storage (small, picklable)."""

    def __init__(self, root: str, files: list[Any], schema: StructType) -> None:
        self.root = root
        self.files = files
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(group) for group in _pack(self.files, PARTITION_BYTES)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import to_arrow_schema

        from server_plugin.delta.storage import storage_for

        storage = storage_for(self.root)
        target = to_arrow_schema(self.schema, timezone="UTC")
        wanted = {name.lower() for name in target.names}
        for rel_path, _size, partition_values in partition.value or ():
            with storage.open_input(rel_path) as source:
                parquet = pq.ParquetFile(source)
                columns = [n for n in parquet.schema_arrow.names if n.lower() in wanted]
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
                    yield _conform(batch, target, partition_values)


class QbeastFilesSource(DataSource):
    """Reads given files of a table with the plugin's storage (plugin-internal format).

    Options: ``path`` (the table root) and ``files``: a JSON list of
    ``[path relative to the root, size]`` or ``[path, size, {partition column: value}]``.
    The schema must be given with ``.schema(...)``. Each path is checked to stay inside
    the root by the storage layer, as for any other plugin access.
    """

    @classmethod
    def name(cls) -> str:
        return FILES_FORMAT

    def schema(self) -> StructType:
        raise InvalidOptionError(
            "format 'qbeast_files' is internal to qbeast-connect and needs .schema(...)"
        )

    def reader(self, schema: StructType) -> DataSourceReader:
        root = self.options.get("path")
        text = self.options.get("files")
        if not root or text is None:
            raise InvalidOptionError("format 'qbeast_files' needs the options path and files")
        try:
            files = json.loads(text)
        except ValueError as exc:
            raise InvalidOptionError(f"option files is not JSON: {exc}") from None
        if not isinstance(files, list) or not all(
            isinstance(f, list) and len(f) in (2, 3) and isinstance(f[0], str) for f in files
        ):
            raise InvalidOptionError("option files must be a JSON list of [path, size(, values)]")
        return _FilesReader(str(root), files, schema)


# --------------------------------------------------------------------------- client half

_known: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_registered: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()

_NO_CONNECTOR = (
    "No FileSystem for scheme",
    "S3AFileSystem not found",
    "ClassNotFoundException",
    "UnsupportedFileSystemException",
)


def _scheme(path: str) -> str | None:
    head, sep, _ = path.partition("://")
    return head.lower() if sep and head.isalnum() else None


def reader_for(spark: SparkSession, table_path: str) -> str:
    """``"spark-parquet"`` or ``"qbeast-plugin"``: how reads of this table open files.

    Local and other paths always use Spark's parquet reader. For ``s3://``/``s3a://``
    tables the session asks Spark once per scheme whether it can open such paths (it can
    when the server has Hadoop's S3 connector); when it cannot, the plugin reads.
    """
    scheme = _scheme(table_path)
    if scheme not in PLUGIN_SCHEMES:
        return SPARK_READER
    with _lock:
        cached = _known.setdefault(spark, {}).get(scheme)
    if cached is not None:
        return cached
    bucket = table_path.split("://", 1)[1].split("/", 1)[0]
    probe = f"{scheme}://{bucket}/_qbeast_reader_probe_{uuid.uuid4().hex}"
    choice = SPARK_READER
    try:
        spark.read.parquet(probe).schema  # noqa: B018 - analysis opens the filesystem
    except Exception as exc:  # only the message tells what is missing
        if any(marker in str(exc) for marker in _NO_CONNECTOR):
            choice = PLUGIN_READER
    with _lock:
        _known.setdefault(spark, {})[scheme] = choice
    return choice


def read_files(
    spark: SparkSession,
    table_path: str,
    schema: StructType,
    files: Sequence[tuple[str, int]] | Sequence[tuple[str, int, Mapping[str, str | None]]],
) -> DataFrame:
    """A DataFrame over ``files`` of the table read by the plugin (``qbeast_files``).

    Args:
        spark: The session.
        table_path: The table root.
        schema: The table schema.
        files: ``(path relative to the root, size)`` per file, optionally with the file's
            partition values.
    """
    with _lock:
        fresh = spark not in _registered
        if fresh:
            _registered.add(spark)
    if fresh:
        spark.dataSource.register(QbeastFilesSource)
    payload = [[str(f[0]), int(f[1]), *([dict(f[2])] if len(f) > 2 else [])] for f in files]
    return (
        spark.read.format(FILES_FORMAT)
        .schema(schema)
        .option("path", table_path)
        .option("files", json.dumps(payload, separators=(",", ":")))
        .load()
    )
