"""The one interface of table storage: the few file operations the Delta log needs.

The commit protocol rests on one primitive, :meth:`Storage.put_if_absent`: create a
file only if it does not exist, atomically, with its full content. Every other write is
either an atomic overwrite (:meth:`Storage.put_atomic`, for checkpoints and
``_last_checkpoint``) or a data file that nobody references before the commit
(:meth:`Storage.open_output`).

All paths given to a Storage are *physical* paths relative to the table root, with
``/`` separators and no percent-encoding (see :mod:`server_plugin.delta.uris`). Every
implementation checks them with :func:`~server_plugin.delta.uris.check_relative_path`,
so no path can escape the root.

Implementations: :mod:`.local` (a POSIX filesystem) and :mod:`.s3` (S3 and compatible
stores); :func:`server_plugin.delta.storage.storage_for` picks one for a location.
"""

from __future__ import annotations

import io
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import BinaryIO

from qbeast_connect.exceptions import StorageError

__all__ = ["FileInfo", "Storage"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file.

    Attributes:
        name: Path relative to the listed directory (``/``-separated).
        size: Size in bytes.
        mtime_ms: Modification time, epoch milliseconds.
    """

    name: str
    size: int
    mtime_ms: int


class Storage(ABC):
    """File operations relative to a table root.

    Implementations must make :meth:`put_if_absent` atomic (no partial file ever
    visible, exactly one creator wins) and :meth:`put_atomic` all-or-nothing.
    Missing files raise the built-in ``FileNotFoundError``; other failures raise
    ``StorageError``.

    Attributes:
        root: The table root (a local path for local storage).
    """

    root: str

    @property
    @abstractmethod
    def root_uri(self) -> str:
        """The table root as a URI (``file:///...`` for local storage)."""

    @abstractmethod
    def resolve(self, rel_path: str) -> str:
        """Return the full path or URI of ``rel_path``.

        Raises:
            UnsafePathError: ``rel_path`` escapes the root (``..``, absolute, a scheme).
        """

    @abstractmethod
    def read_bytes(self, rel_path: str) -> bytes:
        """Return the content of a file.

        Raises:
            FileNotFoundError: The file does not exist.
        """

    @abstractmethod
    def exists(self, rel_path: str) -> bool:
        """Return True if the file exists."""

    @abstractmethod
    def file_info(self, rel_path: str) -> FileInfo:
        """Return size and modification time of a file (``name`` = ``rel_path``).

        Raises:
            FileNotFoundError: The file does not exist.
        """

    @abstractmethod
    def list_prefix(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """List the files directly inside ``rel_dir`` (not recursive), sorted by name.

        Args:
            rel_dir: Directory relative to the root (``""`` = the root).
            start_after: Only return names greater than this one (a listing hint; an
                implementation may ignore it and return more).

        Returns:
            Files with names relative to ``rel_dir``; ``[]`` when the directory is missing.
        """

    @abstractmethod
    def list_files_recursive(self, rel_dir: str = "") -> list[FileInfo]:
        """List every file below ``rel_dir``, with names relative to ``rel_dir``."""

    @abstractmethod
    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        """Create a file with ``data`` only if it does not exist, atomically.

        Returns:
            True when this call created the file; False when it already existed.

        Raises:
            StorageError: The storage cannot create files exclusively and atomically, or
                the write failed. After an error the file may or may not exist; callers
                must read it back to learn the outcome.
        """

    @abstractmethod
    def put_atomic(self, rel_path: str, data: bytes) -> None:
        """Write a file, replacing any existing one, so readers see old or new, never partial."""

    @abstractmethod
    def delete(self, rel_path: str) -> None:
        """Delete a file; a missing file is not an error."""

    @abstractmethod
    def open_output(self, rel_path: str) -> BinaryIO:
        """Open a new file for writing (binary); fails if it exists.

        Meant for data files, which nobody references until the commit lands.
        """

    def open_input(self, rel_path: str) -> BinaryIO:
        """Open a file for binary reading (seekable: parquet readers jump to the footer).

        Raises:
            FileNotFoundError: The file does not exist.
        """
        return io.BytesIO(self.read_bytes(rel_path))

    def local_path(self, rel_path: str) -> str:
        """Return a local filesystem path for ``rel_path``.

        Raises:
            StorageError: This storage is not on the local filesystem.
        """
        raise StorageError(
            f"{type(self).__name__} has no local paths; use open_input() to read files "
            "and open_output() to write them"
        )
