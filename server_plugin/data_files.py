"""What the two writers (``writer``, ``timeline_writer``) do alike with their data files.

A write task reads Arrow batches and writes parquet files; the driver commits them in one
Delta transaction. Until that commit is known to have landed, the files belong to no
table version: whoever fails (a task, or a commit that surely did not land) deletes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from qbeast_connect.exceptions import InvalidOptionError
from server_plugin.delta.committer import CommitOutcomeUnknownError
from server_plugin.delta.storage import Storage

__all__ = ["arrow_batches", "delete_files", "deleted_unless_committed", "task_files"]

_F = TypeVar("_F", covariant=True)


class _DataFile(Protocol):
    @property
    def path(self) -> str: ...


class _TaskMessage(Protocol[_F]):
    @property
    def files(self) -> tuple[_F, ...]: ...


def task_files(messages: Iterable[object], kind: type[_TaskMessage[_F]]) -> list[_F]:
    """The files reported by the tasks' commit messages of class ``kind``, in task order.

    Spark hands the driver None (or another object) for a task that sent no message.
    """
    out: list[_F] = []
    for message in messages:
        if isinstance(message, kind):
            out.extend(message.files)
    return out


def arrow_batches(iterator: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    """The record batches Spark hands an Arrow writer (tables are split into batches)."""
    for item in iterator:
        if isinstance(item, pa.RecordBatch):
            yield item
        elif isinstance(item, pa.Table):
            yield from item.to_batches()
        else:  # pragma: no cover - Spark always sends Arrow to an Arrow writer
            raise InvalidOptionError(f"unexpected batch type {type(item).__name__}")


def delete_files(storage: Storage, paths: Iterable[str]) -> None:
    """Delete data files, best effort (a file that is already gone is no error)."""
    for path in paths:
        with contextlib.suppress(OSError):
            storage.delete(path)


@contextlib.contextmanager
def deleted_unless_committed(storage: Storage, files: Sequence[_DataFile]) -> Iterator[None]:
    """Delete ``files`` when the block fails, unless the failure may hide a landed commit.

    ``files`` is read when the failure happens, so a list a task is still filling works.
    After ``CommitOutcomeUnknownError`` the commit may be in the table: its files stay.
    """
    try:
        yield
    except CommitOutcomeUnknownError:
        raise
    except BaseException:
        delete_files(storage, [f.path for f in files])
        raise
