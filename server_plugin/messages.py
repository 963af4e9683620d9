"""Picklable messages sent from write tasks to the driver-side commit."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import WriterCommitMessage


@dataclass(frozen=True)
class WrittenFile:
    """One data file a task wrote, with everything its Delta ``add`` action needs.

    Attributes:
        path: file name relative to the table root.
        size: bytes on storage.
        modification_time: epoch milliseconds.
        stats: Delta statistics JSON (None when the bounds cannot be expressed).
        tags: qbeast tags (``revision`` and ``blocks``); None for unindexed files.
        num_records: rows in the file.
        partition_values: the file's ``partitionValues`` (time-partitioned tables), or
            None.
    """

    path: str
    size: int
    modification_time: int
    stats: str | None
    tags: dict[str, str] | None
    num_records: int
    partition_values: dict[str, str | None] | None = None


@dataclass(frozen=True)
class WriteTaskMessage(WriterCommitMessage):
    """What one write task reports: the files it wrote (possibly none)."""

    files: tuple[WrittenFile, ...]
