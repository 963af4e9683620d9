"""Table storage: the few file operations the Delta log needs, with put-if-absent.

The commit protocol rests on one primitive, :meth:`Storage.put_if_absent`: create a
file only if it does not exist, atomically, with its full content. Every other write is
either an atomic overwrite (:meth:`Storage.put_atomic`, for checkpoints and
``_last_checkpoint``) or a data file that nobody references before the commit
(:meth:`Storage.open_output`).

All paths given to a Storage are *physical* paths relative to the table root, with
``/`` separators and no percent-encoding. :meth:`Storage.resolve` rejects any path that
could escape the root.

Example:
    ```python
    storage = storage_for("/data/my_table")      # or "s3://bucket/my_table"
    created = storage.put_if_absent("_delta_log/00000000000000000000.json", payload)
    ```
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from qbeast_connect.exceptions import InvalidOptionError, StorageError, UnsafePathError
from qbeast_connect.paths import qualify
from server_plugin.faults import crash_point

__all__ = ["FileInfo", "LocalStorage", "Storage", "storage_for"]

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_LINK_UNSUPPORTED = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}
_TMP_PREFIX = ".tmp-"


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


def check_relative_path(rel_path: str, *, allow_empty: bool = False) -> str:
    """Validate a path relative to the table root and return it in canonical form.

    Args:
        rel_path: ``/``-separated path relative to the root.
        allow_empty: Accept ``""`` (the root itself), for directory operations.

    Returns:
        The path without empty or ``.`` segments.

    Raises:
        UnsafePathError: The path is absolute, has a URI scheme, contains ``..`` or a NUL
            character, or uses backslashes.
    """
    if not isinstance(rel_path, str):
        raise UnsafePathError(f"path must be a string, got {type(rel_path).__name__}")
    if "\x00" in rel_path:
        raise UnsafePathError(f"path {rel_path!r} contains a NUL character")
    if "\\" in rel_path:
        raise UnsafePathError(
            f"path {rel_path!r} contains a backslash; use '/' separators relative to the root"
        )
    if rel_path.startswith("/"):
        raise UnsafePathError(
            f"path {rel_path!r} is absolute; pass a path relative to the table root"
        )
    if _SCHEME_RE.match(rel_path):
        raise UnsafePathError(
            f"path {rel_path!r} has a URI scheme; pass a path relative to the table root"
        )
    segments = [seg for seg in rel_path.split("/") if seg not in ("", ".")]
    if ".." in segments:
        raise UnsafePathError(
            f"path {rel_path!r} contains '..' and could escape the table root; "
            "pass a path inside the table"
        )
    if not segments and not allow_empty:
        raise UnsafePathError("path is empty; name a file inside the table root")
    return "/".join(segments)


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


class LocalStorage(Storage):
    """Storage on a local POSIX filesystem.

    ``put_if_absent`` writes ``.tmp-<uuid4>`` in the target's directory, fsyncs it,
    hard-links it to the final name (``FileExistsError`` = someone else won), always
    unlinks the temp file and fsyncs the directory. Filesystems without hard links
    (some FUSE/SMB mounts) are refused loudly rather than risking lost commits.

    Args:
        root: Table root directory (need not exist yet).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.fspath(root))

    def __repr__(self) -> str:
        return f"LocalStorage({self.root!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalStorage) and other.root == self.root

    def __hash__(self) -> int:
        return hash(("LocalStorage", self.root))

    @property
    def root_uri(self) -> str:
        """The table root as a ``file://`` URI."""
        return Path(self.root).as_uri()

    def resolve(self, rel_path: str) -> str:
        """Return the absolute local path of ``rel_path`` (``""`` = the root).

        Raises:
            UnsafePathError: ``rel_path`` escapes the root.
        """
        clean = check_relative_path(rel_path, allow_empty=True)
        full = os.path.normpath(os.path.join(self.root, *clean.split("/"))) if clean else self.root
        if full != self.root and not full.startswith(self.root.rstrip(os.sep) + os.sep):
            raise UnsafePathError(f"path {rel_path!r} resolves outside the table root")
        return full

    def _file(self, rel_path: str) -> str:
        check_relative_path(rel_path)  # a file operation needs a non-empty path
        return self.resolve(rel_path)

    def local_path(self, rel_path: str) -> str:
        """Return the absolute local path of ``rel_path``."""
        return self.resolve(rel_path)

    def read_bytes(self, rel_path: str) -> bytes:
        """Return the content of a file."""
        path = self._file(rel_path)
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise
        except IsADirectoryError as exc:
            raise StorageError(f"{rel_path!r} is a directory, expected a file") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc}") from exc

    def exists(self, rel_path: str) -> bool:
        """Return True if the file exists."""
        return os.path.isfile(self._file(rel_path))

    def file_info(self, rel_path: str) -> FileInfo:
        """Return size and modification time of a file."""
        path = self._file(rel_path)
        st = os.stat(path)
        return FileInfo(rel_path, st.st_size, st.st_mtime_ns // 1_000_000)

    def list_prefix(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """List the files directly inside ``rel_dir``, sorted by name."""
        path = self.resolve(rel_dir)
        out: list[FileInfo] = []
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {path}: {exc}") from exc
        for entry in entries:
            if start_after is not None and entry.name <= start_after:
                continue
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:
                continue  # vanished between listing and stat (e.g. a temp file)
            out.append(FileInfo(entry.name, st.st_size, st.st_mtime_ns // 1_000_000))
        out.sort(key=lambda f: f.name)
        return out

    def list_files_recursive(self, rel_dir: str = "") -> list[FileInfo]:
        """List every file below ``rel_dir`` (symlinked directories are not followed)."""
        base = self.resolve(rel_dir)
        out: list[FileInfo] = []
        for dirpath, _dirnames, filenames in os.walk(base):
            rel = os.path.relpath(dirpath, base)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in filenames:
                try:
                    st = os.stat(os.path.join(dirpath, name), follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out.append(FileInfo(prefix + name, st.st_size, st.st_mtime_ns // 1_000_000))
        out.sort(key=lambda f: f.name)
        return out

    def _write_temp(self, directory: str, data: bytes) -> str:
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f"{_TMP_PREFIX}{uuid.uuid4()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink_quietly(tmp)
            raise
        os.close(fd)
        return tmp

    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        """Create a file with ``data`` only if it does not exist (temp + fsync + link)."""
        final = self._file(rel_path)
        directory = os.path.dirname(final)
        try:
            tmp = self._write_temp(directory, data)
        except OSError as exc:
            raise StorageError(f"cannot write a temporary file in {directory}: {exc}") from exc
        crash_point("commit_temp_written")
        try:
            try:
                os.link(tmp, final)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno in _LINK_UNSUPPORTED:
                    raise StorageError(
                        f"cannot create {final} atomically: the filesystem refused a hard "
                        f"link ({exc.strerror}). Delta commits need an atomic "
                        "create-if-absent; put the table on a filesystem with hard links "
                        "(local disk, NFS) or on an object store with conditional writes"
                    ) from exc
                raise StorageError(f"cannot create {final}: {exc}") from exc
        finally:
            _unlink_quietly(tmp)
        _fsync_dir(directory)
        return True

    def put_atomic(self, rel_path: str, data: bytes) -> None:
        """Write a file atomically, replacing any existing one (temp + fsync + replace)."""
        final = self._file(rel_path)
        directory = os.path.dirname(final)
        try:
            tmp = self._write_temp(directory, data)
        except OSError as exc:
            raise StorageError(f"cannot write a temporary file in {directory}: {exc}") from exc
        try:
            os.replace(tmp, final)
        except OSError as exc:
            _unlink_quietly(tmp)
            raise StorageError(f"cannot replace {final}: {exc}") from exc
        _fsync_dir(directory)

    def delete(self, rel_path: str) -> None:
        """Delete a file; a missing file is not an error."""
        path = self._file(rel_path)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {exc}") from exc

    def open_output(self, rel_path: str) -> BinaryIO:
        """Open a new file for binary writing, creating parent directories; fails if it exists."""
        path = self._file(rel_path)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "xb")
        except FileExistsError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {exc}") from exc

    def open_input(self, rel_path: str) -> BinaryIO:
        """Open a file for binary reading."""
        path = self._file(rel_path)
        try:
            return open(path, "rb")
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot open {path}: {exc}") from exc


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as exc:
        raise StorageError(f"cannot open directory {directory} to fsync it: {exc}") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF):
            raise StorageError(f"cannot fsync directory {directory}: {exc}") from exc
    finally:
        os.close(fd)


def storage_for(
    uri_or_path: str | os.PathLike[str], options: Mapping[str, str] | None = None
) -> Storage:
    """Return the Storage for a table location.

    Args:
        uri_or_path: A local path, a ``file://`` URI, or an ``s3://``/``s3a://`` URI
            (``s3://bucket/prefix``).
        options: Storage settings for object stores (endpoint, credentials, region; see
            :mod:`server_plugin.delta.s3_storage`); the server's environment variables
            fill in what they do not give. Ignored for local paths.

    Returns:
        A LocalStorage or an S3Storage rooted at the location.

    Raises:
        InvalidOptionError: The location uses an unsupported scheme, a ``file://`` URI
            names a remote host, an ``s3://`` URI is malformed, or the path is relative
            (resolve it first with ``server_plugin.locations.resolve_location``).
        MissingDependencyError: An ``s3://`` location without ``boto3`` installed.
    """
    location = os.fspath(uri_or_path)
    if not location:
        raise InvalidOptionError("table location is empty; pass a path or a file:// URI")
    if urlsplit(location).scheme.lower() in ("s3", "s3a") and _SCHEME_RE.match(location):
        from .s3_storage import S3Storage

        return S3Storage.from_uri(location, options)
    # one reading of local paths and file: URIs for client and plugin; a relative path is
    # refused here: the caller resolves it first (qbeast_connect.paths, plugin.locations)
    return LocalStorage(qualify(location))
