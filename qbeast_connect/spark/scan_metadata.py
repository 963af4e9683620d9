"""Spark's per-row file metadata of a parquet scan (``_metadata``), whatever the data's
columns are named."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["file_metadata", "spark_file_key"]


def file_metadata(scan: DataFrame, field: str) -> Any:
    """The Column of ``scan``'s (a Spark file read) metadata ``field``: ``file_path`` (the
    file's name as Spark spells it) or ``row_index`` (the row's position in its file,
    counting every row the file holds). Asked through ``metadataColumn``, so a data column
    named ``_metadata`` does not hide it (``F.col("_metadata.row_index")`` would resolve
    to that column, and fail)."""
    return scan.metadataColumn("_metadata").getField(field)


def spark_file_key(location: str) -> str:
    """A file's location reduced to what Spark's spellings of it share: the path of a URI,
    percent-decoded (Spark gives ``file:/a%20b`` for ``/a b``), or the location itself."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(location)
    return unquote(parsed.path) if parsed.scheme else location
