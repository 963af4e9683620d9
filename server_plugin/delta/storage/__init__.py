"""Table storage: one interface, a local and an S3 implementation, and the factory.

:class:`Storage` (in :mod:`.base`) is the interface every part of the Delta layer uses;
:class:`LocalStorage` (:mod:`.local`) and ``S3Storage`` (:mod:`.s3`) implement it, and
:func:`storage_for` picks the one a table location needs. Only this module knows both
implementations.

Example:
    ```python
    storage = storage_for("/data/my_table")      # or "s3://bucket/my_table"
    created = storage.put_if_absent("_delta_log/00000000000000000000.json", payload)
    ```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.paths import is_relative, qualify

from .base import FileInfo, Storage
from .local import LocalStorage
from .s3 import S3Storage
from .scope import scoped_settings

__all__ = ["FileInfo", "LocalStorage", "S3Storage", "Storage", "storage_for"]


def storage_for(
    uri_or_path: str | os.PathLike[str], options: Mapping[str, str] | None = None
) -> Storage:
    """Return the Storage for a table location.

    Args:
        uri_or_path: A local path, a ``file://`` URI, or an ``s3://``/``s3a://`` URI
            (``s3://bucket/prefix``).
        options: Storage settings for object stores (endpoint, credentials, region; see
            :mod:`server_plugin.delta.storage.s3`); the server's environment variables
            fill in what they do not give. When None, the settings of the plugin call in
            progress (:mod:`.scope`) apply. Ignored for local paths.

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
    if urlsplit(location).scheme.lower() in ("s3", "s3a") and not is_relative(location):
        return S3Storage.from_uri(location, scoped_settings() if options is None else options)
    # one reading of local paths and file: URIs for client and plugin; a relative path is
    # refused here: the caller resolves it first (qbeast_connect.paths, plugin.locations)
    return LocalStorage(qualify(location))
