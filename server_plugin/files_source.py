"""The ``qbeast_files`` data source: given files of a table, read by the plugin.

Spark reads ``s3a://`` paths natively only when the server has Hadoop's S3 connector
(``hadoop-aws``). Without it, the client reads a table's files through this source: the
files are opened with the plugin's own :class:`~server_plugin.delta.storage.Storage`
(``S3Storage``: boto3, ranged GETs) and decoded with pyarrow inside the server's Python
workers by :class:`~server_plugin.parquet_reader.ParquetFilesReader`, one read partition
per file or per few small files.

The client half (which reader a read uses, and the query naming this source) is
:mod:`qbeast_connect.spark.files`.
"""

from __future__ import annotations

import json

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from qbeast_connect.exceptions import InvalidOptionError
from server_plugin.delta.storage.scope import storage_settings
from server_plugin.parquet_reader import ParquetFilesReader

FILES_FORMAT = "qbeast_files"

__all__ = ["FILES_FORMAT", "QbeastFilesSource"]


class QbeastFilesSource(DataSource):
    """Reads given files of a table with the plugin's storage (plugin-internal format).

    Options: ``path`` (the table root) and ``files``: a JSON list of
    ``[path relative to the root, size]``, ``[path, size, {partition column: value}]`` or
    ``[path, size, values, deletionVector]`` (the ``add``'s deletion vector: its rows are
    left out).
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
            isinstance(f, list) and len(f) in (2, 3, 4) and isinstance(f[0], str) for f in files
        ):
            raise InvalidOptionError(
                "option files must be a JSON list of [path, size(, values(, deletionVector))]"
            )
        return ParquetFilesReader(
            str(root),
            schema,
            [(f[0], int(f[1])) for f in files],
            {f[0]: dict(f[2]) for f in files if len(f) > 2 and f[2]},
            storage_settings(self.options),
            {f[0]: dict(f[3]) for f in files if len(f) > 3 and f[3]},
        )
