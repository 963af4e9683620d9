"""Table locations on the server: resolving relative paths, and where a table may be created.

* :func:`server_working_dir` is the directory relative paths mean on this server: the
  working directory of the server's JVM (the Spark driver), which is what Spark's own
  readers and writers qualify relative paths against. The plugin's Python workers run in a
  per-session temporary directory, so their own ``os.getcwd()`` must never be used.
* :func:`resolve_location` turns a user's location into the canonical one
  (:func:`qbeast_connect.paths.qualify`) with that directory.
* :func:`check_new_table_location` is run on the driver before the first task of a write
  that creates a table: the location must be empty (or absent) and not inside another
  table, so that a later ``vacuum`` of the new table can never delete files it does not own.
* :func:`remove_created_dirs` undoes the directories a rejected first write created.
"""

from __future__ import annotations

import contextlib
import os
import re

from qbeast_connect.exceptions import CommitConflictError, InvalidOptionError, StorageError
from qbeast_connect.paths import check_spark_readable, enclosing_table, is_relative, qualify
from server_plugin.delta.process_tree import jvm_ancestor
from server_plugin.delta.storage import LocalStorage, Storage, storage_for

#: What our writers create in a table directory before its first commit: data files named
#: by a UUID, with their write's run id before it or not (``run-<12 hex>-<uuid>.parquet``),
#: under ``column=value/`` directories for partitioned tables, and the log's directory with
#: commit temporary files. A failed first write can leave these behind (a task still running
#: when Spark aborts the job, a crash); they never block a retry.
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_LEFTOVER = re.compile(
    rf"^(?:[^/=]+=[^/]*/)*(?:(?:run-[0-9a-f]{{12}}-)?{_UUID}\.parquet)?$|^_delta_log/(?:\.tmp-{_UUID})?$"
)

__all__ = [
    "check_new_table_location",
    "location_exists",
    "prepare_location",
    "remove_created_dirs",
    "resolve_location",
    "server_working_dir",
]


def server_working_dir() -> str | None:
    """The working directory of the server's JVM, or None when it cannot be found.

    Found through ``/proc`` (Linux): the nearest ``java`` process above this Python worker
    is the driver when this runs in driver-side code of a data source (``reader()``,
    ``writer()``, ``commit()``) and, in local mode, in tasks too.
    """
    pid = jvm_ancestor()
    if pid is None:
        return None
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def resolve_location(location: str) -> str:
    """The canonical location of ``location``, relative paths taken from the server's JVM.

    Raises:
        InvalidOptionError: The location cannot be used (see ``qualify``), or it is relative
            and the server's working directory cannot be found.
    """
    working_dir = server_working_dir() if is_relative(location) else None
    return qualify(location, working_dir)


def location_exists(storage: Storage) -> bool:
    """Whether the table root exists as a directory (always False on object stores)."""
    return isinstance(storage, LocalStorage) and os.path.isdir(storage.root)


def check_new_table_location(storage: Storage, *, existing_files: bool = False) -> None:
    """Refuse to create a table where it could mix with files it does not own.

    Args:
        storage: The storage of the new table's root.
        existing_files: Accept files already in the location (``convertToQbeast`` turns a
            parquet directory into a table in place); only the enclosing-table rule holds.

    Raises:
        InvalidOptionError: The location is a file, is not empty, or lies inside the
            directory of another table.
        UnsupportedInputError: Spark could not read files there
            (:func:`qbeast_connect.paths.check_spark_readable`).
        CommitConflictError: A table appeared there since the write was planned.
    """
    where = storage.root_uri
    check_spark_readable(storage.root if isinstance(storage, LocalStorage) else where)
    if isinstance(storage, LocalStorage):
        root = storage.root
        if os.path.lexists(root) and not os.path.isdir(root):
            raise InvalidOptionError(
                f"the table location {root} exists and is not a directory; choose another path"
            )
        outer = enclosing_table(root)
        if outer is not None:
            raise InvalidOptionError(
                f"the table location {root} lies inside the table at {outer}; a table cannot "
                "be created inside another table's directory: choose a path outside it"
            )
        where = root
    if existing_files:
        return
    from server_plugin.delta.log_reader import latest_version

    if latest_version(storage) is not None:
        raise CommitConflictError(
            f"a table was created at {where} after this write was planned (a concurrent "
            "writer); write again, in mode 'append' to add to it"
        )
    try:
        present = [f.name for f in storage.list_files_recursive("")]
        if isinstance(storage, LocalStorage) and os.path.isdir(storage.root):
            for dirpath, dirnames, _files in os.walk(storage.root):
                rel = os.path.relpath(dirpath, storage.root).replace(os.sep, "/")
                present += [("" if rel == "." else rel + "/") + d + "/" for d in dirnames]
    except OSError as exc:
        raise StorageError(f"cannot list the table location {where}: {exc}") from exc
    # what a first write that failed or crashed here left is ours: vacuum removes it later
    present = [name for name in present if not _LEFTOVER.match(name)]
    if present:
        shown = ", ".join(sorted(present)[:3]) + (", ..." if len(present) > 3 else "")
        raise InvalidOptionError(
            f"the table location {where} is not empty ({shown}) and holds no table; a new "
            "table needs an empty or new directory, so that vacuum never deletes files it "
            "does not own. Choose another path, or convert a parquet directory with "
            "convertToQbeast"
        )


def remove_created_dirs(storage: Storage) -> None:
    """Remove the empty directories left under (and including) the root of a failed first
    write. Only directories are removed, and only empty ones; object stores have none."""
    if not isinstance(storage, LocalStorage) or not os.path.isdir(storage.root):
        return
    for dirpath, _dirnames, _files in os.walk(storage.root, topdown=False):
        with contextlib.suppress(OSError):  # not empty, or already gone
            os.rmdir(dirpath)


def prepare_location(location: str, *, new_table: bool) -> bool:
    """Driver-side check before the tasks of a write run; True when the write creates the
    table's root directory (so that a failed write removes it again).

    Args:
        location: The canonical table location.
        new_table: The write creates the table (no table was there when it was planned).

    Raises:
        InvalidOptionError: See :func:`check_new_table_location`.
    """
    if not new_table:
        return False
    storage = storage_for(location)
    existed = location_exists(storage)
    check_new_table_location(storage)
    return isinstance(storage, LocalStorage) and not existed
