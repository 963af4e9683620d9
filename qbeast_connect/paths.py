"""Table locations: how the paths users give are read, in one place.

The client, the server plugin and the command line all turn a user's path into one
*canonical location* with :func:`qualify` before anything else sees it:

* an absolute local path, normalised (``/data/./t/`` -> ``/data/t``);
* a ``file:`` URI (``file:/p``, ``file:///p``, ``file://localhost/p``) -> its absolute path,
  percent-decoded;
* an ``s3://`` / ``s3a://`` URI, kept (scheme in lower case) without trailing slashes;
* a relative path, joined to the *server's* working directory. That is what Spark's own
  writers do (``df.write.parquet("events")`` lands under the working directory of the
  server's driver), and it is the only directory that the server's JVM reads and the
  plugin's Python workers write agree on: the workers run in a per-session temporary
  directory of their own. The working directory must be known to resolve a relative path;
  :func:`qualify` refuses one otherwise.

The canonical location is what the client sends to the server, what the log paths of a
table are joined to (:func:`resolve_table_file`, which refuses any that leaves the table),
and what ``QbeastTable.path`` and ``WriteResult.path`` report.

This module imports no pyspark: the plugin's workers, the client and the CLI share it.
The helpers that look at a local filesystem (:func:`enclosing_table`,
:func:`check_output_file`) run where the filesystem is: the plugin for table locations,
the CLI for files it writes.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote, urlsplit

from qbeast_connect.exceptions import InvalidOptionError, UnsafePathError, UnsupportedInputError

__all__ = [
    "DELTA_LOG",
    "check_output_file",
    "check_spark_readable",
    "enclosing_table",
    "is_local",
    "is_relative",
    "qualify",
    "resolve_table_file",
    "spark_literal_path",
]

#: The directory that makes a directory a Delta table.
DELTA_LOG = "_delta_log"

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_OBJECT_SCHEMES = ("s3", "s3a")


def _check_text(location: object) -> str:
    if not isinstance(location, str):
        raise InvalidOptionError(
            f"a table location must be a string, got {type(location).__name__}"
        )
    if not location.strip():
        raise InvalidOptionError("the table location is empty; pass a path or a URI")
    if "\x00" in location:
        raise InvalidOptionError(f"the table location {location!r} contains a NUL character")
    return location


def _scheme(location: str) -> str | None:
    match = _SCHEME_RE.match(location)
    return match.group(0)[:-1].lower() if match else None


def is_relative(location: str) -> bool:
    """Whether ``location`` is a relative local path (no scheme, no leading ``/``)."""
    return _scheme(location) is None and not location.startswith("/")


def is_local(location: str) -> bool:
    """Whether a canonical location (see :func:`qualify`) is on the local filesystem."""
    return location.startswith("/")


def _normalise_local(path: str) -> str:
    clean = posixpath.normpath(path)
    if clean.startswith("//"):  # normpath keeps a leading '//' (POSIX leaves it open)
        clean = "/" + clean.lstrip("/")
    return clean


def qualify(location: str, working_dir: str | None = None) -> str:
    """Return the canonical form of a table location.

    Args:
        location: What the user gave: a local path (absolute or relative), a ``file:`` URI
            or an ``s3://`` / ``s3a://`` URI.
        working_dir: The absolute directory that relative paths are relative to (the
            server's working directory), or None when it is not known.

    Returns:
        An absolute, normalised local path, or the object-store URI.

    Raises:
        InvalidOptionError: The location is empty or not a string, uses another scheme, is a
            ``file:`` URI naming a remote host or a relative path, or is a relative path and
            ``working_dir`` is unknown.

    Example:
        ```python
        qualify("events", "/home/me")          # '/home/me/events'
        qualify("file:///data/t/")             # '/data/t'
        qualify("s3://bucket/t/")              # 's3://bucket/t'
        ```
    """
    location = _check_text(location)
    scheme = _scheme(location)
    if scheme in _OBJECT_SCHEMES:
        # the bucket and key rules are checked where the store is opened (delta.storage.s3)
        rest = location[len(scheme) + 1 :]
        if not rest.startswith("//") or not rest[2:].split("/", 1)[0]:
            raise InvalidOptionError(
                f"S3 location {location!r} names no bucket; write {scheme}://bucket/path"
            )
        return f"{scheme}:{rest}".rstrip("/")
    if scheme == "file":
        parts = urlsplit(location)
        if parts.netloc not in ("", "localhost"):
            raise InvalidOptionError(
                f"file URI {location!r} names host {parts.netloc!r}; use file:///absolute/path"
            )
        path = unquote(parts.path)
        if not path.startswith("/"):
            raise InvalidOptionError(
                f"file URI {location!r} holds a relative path; use file:///absolute/path"
            )
        return _normalise_local(path)
    if scheme is not None:
        raise InvalidOptionError(
            f"table location {location!r} uses scheme {scheme!r}, which is not supported; "
            "use a local path, a file:// URI or an s3:// (s3a://) URI"
        )
    if location.startswith("/"):
        return _normalise_local(location)
    if working_dir is None or not working_dir.startswith("/"):
        raise InvalidOptionError(
            f"the table location {location!r} is relative, and the server's working "
            "directory it would be relative to is unknown here; pass an absolute path or a "
            "file:///absolute/path URI"
        )
    return _normalise_local(posixpath.join(working_dir, location))


def enclosing_table(path: str) -> str | None:
    """The nearest directory strictly above ``path`` that is a Delta table, if any.

    A directory is a table when it holds a ``_delta_log`` directory. Symbolic links in the
    existing part of ``path`` are resolved first, so a link into a table is seen through.

    Args:
        path: An absolute local path (it need not exist).
    """
    candidates = [os.path.abspath(path)]
    real = os.path.realpath(path)
    if real != candidates[0]:
        candidates.append(real)
    for candidate in candidates:
        current = candidate
        while True:
            parent = os.path.dirname(current)
            if parent == current:
                break
            if os.path.basename(current) == DELTA_LOG or os.path.isdir(
                os.path.join(parent, DELTA_LOG)
            ):
                return parent
            current = parent
    return None


def check_output_file(path: str) -> str:
    """Refuse an output file (a picture, a report) that would land inside a table.

    Args:
        path: The file to write, absolute or relative to this process's directory.

    Returns:
        The absolute path to write.

    Raises:
        InvalidOptionError: The file lies inside a table directory (in its ``_delta_log``
            or among its data files), or is a table directory itself.
    """
    target = os.path.abspath(path)
    if os.path.isdir(os.path.join(target, DELTA_LOG)):
        raise InvalidOptionError(
            f"the output {path!r} is a table directory; write the file somewhere else"
        )
    table = enclosing_table(target)
    if table is not None:
        raise InvalidOptionError(
            f"the output {path!r} lies inside the table at {table}, where it could overwrite "
            "or add to the table's files; write it outside the table directory"
        )
    return target


#: The characters Hadoop's glob syntax gives a meaning (``FileSystem.globStatus``), which
#: Spark applies to every path a file read is given.
_GLOB_CHARACTERS = re.compile(r"([\\{}\[\]*?])")


def spark_literal_path(path: str) -> str:
    """``path`` escaped so that Spark's file readers read exactly it, never a glob.

    Spark expands every path handed to a file read (``spark.read.parquet(p)``,
    ``spark.read.text(p)``) with Hadoop's ``globStatus`` when it holds one of
    ``\\ { } [ ] * ?``: a table in ``t brack[1]`` would match nothing, and a ``?`` lists
    the parent directory, whose other entries may not even parse as paths. A backslash
    before each of them is Hadoop's glob escape: the path then globs to itself alone. Paths
    without those characters are returned unchanged. Every path the client hands Spark to
    read files goes through this function.
    """
    return _GLOB_CHARACTERS.sub(r"\\\1", path)


def check_spark_readable(location: str) -> None:
    """Refuse a table location whose files Spark's file readers cannot open at all.

    A path holding a glob character is globbed even when escaped (see
    :func:`spark_literal_path`), and Hadoop's globber turns every segment of it into a
    ``Path`` of its own, which fails for a segment with a ``:`` (``a:b`` reads as a URI
    scheme). Such a location is refused before a table is created there.

    Raises:
        UnsupportedInputError: the location has a glob character and a segment with ``:``.
    """
    if spark_literal_path(location) == location:
        return
    _scheme_part, sep, rest = location.partition("://")
    body = rest.partition("/")[2] if sep else location  # the key of an object-store URI
    colons = [segment for segment in body.split("/") if ":" in segment]
    if colons:
        raise UnsupportedInputError(
            f"the table location {location!r} holds one of the characters [ ] {{ }} \\ * ? "
            f"and a ':' in {colons[0]!r}: Spark's file reader (Hadoop's glob of the path) "
            "cannot open files under such a path. Choose a location without ':' or without "
            "those characters"
        )


def resolve_table_file(table_path: str, log_path: str) -> str:
    """Resolve a file path from the log against the table root.

    Relative paths are percent-decoded and joined to the root; absolute paths and URIs are
    accepted only when they lie under the root. A ``..`` segment or a location outside the
    table is refused, so a crafted log cannot make a read touch other files.

    Raises:
        UnsafePathError: the path escapes the table location.
    """
    root = table_path.rstrip("/")
    decoded = unquote(log_path)
    if "://" in decoded or decoded.startswith("/"):
        candidate = decoded
        for prefix in ("file://", "file:"):
            if candidate.startswith(prefix) and not root.startswith(prefix):
                candidate = candidate[len(prefix):]
                break
        if not candidate.startswith(root + "/"):
            raise UnsafePathError(
                f"the log names file {log_path!r}, which is outside the table at {table_path}"
            )
        rest = candidate[len(root) + 1 :]
    else:
        rest = decoded
    segments = rest.split("/")
    if any(seg in ("", ".", "..") for seg in segments) or "\\" in rest or "\x00" in rest:
        raise UnsafePathError(
            f"the log names file {log_path!r}, whose path is not a plain path inside the table"
        )
    return root + "/" + rest
