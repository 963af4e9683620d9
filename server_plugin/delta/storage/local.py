"""Table storage on a local POSIX filesystem, with put-if-absent by hard links."""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

from qbeast_connect.exceptions import StorageError, UnsafePathError

from ..faults import crash_point
from ..uris import check_relative_path
from .base import FileInfo, Storage

__all__ = ["LocalStorage"]

_LINK_UNSUPPORTED = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}
_TMP_PREFIX = ".tmp-"
_T = TypeVar("_T")


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

    def _stage(self, rel_path: str, data: bytes) -> tuple[str, str]:
        """Write ``data`` durably beside ``rel_path``; return (final path, temporary path)."""
        final = self._file(rel_path)
        directory = os.path.dirname(final)
        try:
            return final, self._write_temp(directory, data)
        except OSError as exc:
            raise StorageError(f"cannot write a temporary file in {directory}: {exc}") from exc

    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        """Create a file with ``data`` only if it does not exist (temp + fsync + link)."""
        final, tmp = self._stage(rel_path, data)
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
        _fsync_dir(os.path.dirname(final))
        return True

    def put_atomic(self, rel_path: str, data: bytes) -> None:
        """Write a file atomically, replacing any existing one (temp + fsync + replace)."""
        final, tmp = self._stage(rel_path, data)
        try:
            os.replace(tmp, final)
        except OSError as exc:
            _unlink_quietly(tmp)
            raise StorageError(f"cannot replace {final}: {exc}") from exc
        _fsync_dir(os.path.dirname(final))

    def delete(self, rel_path: str) -> None:
        """Delete a file; a missing file is not an error."""
        path = self._file(rel_path)
        with contextlib.suppress(FileNotFoundError):
            _os_call("delete", path, lambda: os.unlink(path), FileNotFoundError)

    def open_output(self, rel_path: str) -> BinaryIO:
        """Open a new file for binary writing, creating parent directories; fails if it exists."""
        path = self._file(rel_path)

        def create() -> BinaryIO:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "xb")

        return _os_call("create", path, create, FileExistsError)

    def open_input(self, rel_path: str) -> BinaryIO:
        """Open a file for binary reading."""
        path = self._file(rel_path)
        return _os_call("open", path, lambda: open(path, "rb"), FileNotFoundError)


def _os_call(action: str, path: str, call: Callable[[], _T], *passing: type[OSError]) -> _T:
    """Run ``call``; an OSError not among ``passing`` becomes "cannot <action> <path>"."""
    try:
        return call()
    except passing:
        raise
    except OSError as exc:
        raise StorageError(f"cannot {action} {path}: {exc}") from exc


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
