"""Paths and URIs of the Delta layer, in one place.

Three kinds of path meet in a table, and this module converts between them:

* a *physical* path: the name of an object relative to the table root, ``/``-separated
  and not percent-encoded. It is what a :class:`~server_plugin.delta.storage.Storage`
  takes, after :func:`check_relative_path` made sure it stays inside the root;
* a *log* path: ``add.path`` / ``remove.path`` as written in a commit, a percent-encoded
  URI reference (:func:`encode_path`), relative to the root or absolute;
* a *replay key*: what replay and conflict checks compare (:func:`normalize_path`), the
  physical path for any file under the root, whichever way the log spelled it.

Table locations themselves (local paths, ``file:`` and ``s3://`` URIs) are read by
:mod:`qbeast_connect.paths`, which this module builds on.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from qbeast_connect.exceptions import UnsafePathError
from qbeast_connect.paths import is_relative

__all__ = ["check_relative_path", "decode_path", "encode_path", "normalize_path"]

_SAFE_SEGMENT_CHARS = "-._~="


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
    if not is_relative(rel_path):  # not absolute (checked above), so it has a scheme
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


def encode_path(relative_path: str) -> str:
    """Percent-encode a physical relative path for ``add.path`` / ``remove.path``.

    Each ``/``-separated segment keeps only ``A-Z a-z 0-9 - . _ ~ =`` and escapes
    everything else (UTF-8, ``%XX``), so the log never holds a raw ``#``, ``?``, ``%``
    or a ``x:`` first segment that URI-joining readers would misinterpret.

    Args:
        relative_path: The object name relative to the table root, ``/``-separated.

    Returns:
        The URI reference to write in the log.

    Example:
        ```python
        encode_path("p=a b%3Ac/part-0.parquet")  # 'p=a%20b%253Ac/part-0.parquet'
        ```
    """
    return "/".join(quote(seg, safe=_SAFE_SEGMENT_CHARS) for seg in relative_path.split("/"))


def decode_path(path: str) -> str:
    """Percent-decode a relative log path into the object name relative to the root."""
    return unquote(path)


def _clean_relative(path: str) -> str:
    return "/".join(seg for seg in path.split("/") if seg not in ("", "."))


def _file_uri_path(uri: str) -> str | None:
    if not uri.lower().startswith("file:"):
        return None
    rest = uri[5:]
    if rest.startswith("//"):
        rest = rest[2:]
        slash = rest.find("/")
        if slash < 0:
            return None
        host, rest = rest[:slash], rest[slash:]
        if host not in ("", "localhost"):
            return None
    return unquote(rest)


def normalize_path(path: str, root_uri: str | None = None) -> str:
    """Return the replay key of a log path: decoded, and relative when under the root.

    An encoded relative path and an absolute URI naming the same object give the same
    key, so replay treats them as one logical file.

    Args:
        path: ``add.path`` or ``remove.path`` as written in the log.
        root_uri: The table root as a URI (``Storage.root_uri``); None to skip resolving
            absolute URIs.

    Returns:
        The percent-decoded path relative to the table root, without empty or ``.``
        segments; or the absolute URI unchanged when it lies outside the root.
    """
    if not is_relative(path):  # an absolute path or a URI
        if root_uri is None:
            return path
        prefix = root_uri.rstrip("/") + "/"
        if path.startswith(prefix):
            return _clean_relative(unquote(path[len(prefix) :]))
        root_local = _file_uri_path(root_uri)
        if root_local is not None:
            local = unquote(path) if path.startswith("/") else _file_uri_path(path)
            root_prefix = root_local.rstrip("/") + "/"
            if local is not None and local.startswith(root_prefix):
                return _clean_relative(local[len(root_prefix) :])
        return path
    return _clean_relative(unquote(path))
