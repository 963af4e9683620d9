"""Object-store settings a client gives per session, sent with every plugin call.

``qc.set_storage_options(spark, {...})`` keeps S3 settings (endpoint, region, access key,
secret key, session token, path-style addressing) for one session, in this process only.
Each query that names one of the plugin's data sources carries them as options
(:func:`with_storage_options`); the plugin uses them for the storage it opens during that
call (``server_plugin.delta.storage.scope``), on the driver and on the executors alike,
and the server's environment fills in what they do not give. Nothing is set on the server
session, written into a table or logged by qbeast-connect; ``repr`` of the stored settings
hides secrets.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

from qbeast_connect.exceptions import InvalidOptionError
from server_plugin.delta.storage.scope import STORAGE_OPTION_PREFIX, storage_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession as ClassicSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    SparkSession = ClassicSession | ConnectSession

__all__ = ["set_storage_options", "storage_options", "with_storage_options"]

#: The settings the S3 storage reads (``server_plugin.delta.storage.s3``).
KNOWN_KEYS = frozenset(
    {
        "fs.s3a.endpoint",
        "fs.s3a.endpoint.region",
        "fs.s3a.access.key",
        "fs.s3a.secret.key",
        "fs.s3a.session.token",
        "fs.s3a.path.style.access",
        "fs.s3a.connection.ssl.enabled",
    }
)

_lock = threading.Lock()
_by_session: dict[str, dict[str, str]] = {}

_Builder = TypeVar("_Builder")


def _session_key(spark: SparkSession) -> str:
    return str(getattr(spark, "session_id", id(spark)))


def set_storage_options(spark: SparkSession, options: Mapping[str, str] | None) -> None:
    """Use ``options`` as the object-store settings of every plugin call of ``spark``.

    Args:
        spark: The session.
        options: ``fs.s3a.*`` settings (a ``spark.hadoop.`` prefix is accepted), for example
            ``{"fs.s3a.endpoint": "http://minio:9000", "fs.s3a.access.key": "...",
            "fs.s3a.secret.key": "..."}``; None or empty to go back to the server's own.

    Raises:
        InvalidOptionError: a key is not a storage setting the plugin reads.
    """
    given = dict(options or {})
    settings = storage_settings(given)
    unknown = sorted(
        str(k)
        for k in given
        if str(k).strip().lower().removeprefix("spark.hadoop.") not in KNOWN_KEYS
    )
    if unknown:
        raise InvalidOptionError(
            f"unknown storage settings {unknown}: use {sorted(KNOWN_KEYS)} "
            f"(all start with {STORAGE_OPTION_PREFIX!r})"
        )
    with _lock:
        if settings:
            _by_session[_session_key(spark)] = settings
        else:
            _by_session.pop(_session_key(spark), None)


def storage_options(spark: SparkSession) -> dict[str, str]:
    """The settings set for ``spark`` (empty when none)."""
    with _lock:
        return dict(_by_session.get(_session_key(spark), {}))


def with_storage_options(builder: _Builder, spark: SparkSession) -> _Builder:
    """``builder`` (a ``DataFrameReader`` or ``DataFrameWriter``) with the session's
    storage settings as options."""
    settings = storage_options(spark)
    if not settings:
        return builder
    return builder.options(**settings)  # type: ignore[attr-defined, no-any-return]
