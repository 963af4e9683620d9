"""Spark Connect sessions: to a remote server, or to an embedded local one."""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from typing import TYPE_CHECKING

from qbeast_connect.exceptions import PluginUnavailableError, QbeastError
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.server import LocalConnectServer

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

_lock = threading.Lock()
_cache: dict[str, SparkSession] = {}
_embedded: dict[str, LocalConnectServer] = {}

#: Format names of the server plugin's data sources.
SNAPSHOT_FORMAT = "qbeast_snapshot"
WRITE_FORMAT = "qbeast_write"
COMMAND_FORMAT = "qbeast_command"
#: The public data source: ``spark.read.format("qbeast")`` / ``df.write.format("qbeast")``.
QBEAST_FORMAT = "qbeast"


def session(remote: str | None = None, **conf: str) -> SparkSession:
    """Return a Spark Connect session with the qbeast server plugin available.

    Args:
        remote: an ``sc://host:port`` URL. When None, ``SPARK_REMOTE`` is used if set;
            otherwise an embedded Connect server is started as a child process on a free
            localhost port (it needs Java 17) and stopped when this process exits.
        **conf: Spark settings. For an embedded server they are passed at start-up, so
            static settings work too; for a remote server they are set on the session.

    Returns:
        The session. Calling ``session()`` again with the same target returns the same one.

    Raises:
        JavaNotFoundError: an embedded server was needed and no Java runtime was found.
        PluginUnavailableError: the server cannot import the qbeast server plugin.

    Example:
        >>> import qbeast_connect as qc
        >>> spark = qc.session()  # doctest: +SKIP
    """
    target = remote or os.environ.get("SPARK_REMOTE") or "embedded"
    with _lock:
        cached = _cache.get(target)
        if cached is not None and not _is_stopped(cached):
            return cached
        if target == "embedded":
            server = _embedded.get(target)
            if server is None or not server.is_running():
                server = LocalConnectServer(conf={k: str(v) for k, v in conf.items()}).start()
                _embedded[target] = server
            spark = _connect(server.url, {})
        else:
            spark = _connect(target, conf)
        register_plugin(spark)
        from qbeast_connect.progress import attach

        attach(spark)
        _cache[target] = spark
        return spark


def embedded_server() -> LocalConnectServer | None:
    """The embedded server started by :func:`session`, if any."""
    return _embedded.get("embedded")


def stop(remote: str | None = None) -> None:
    """Stop the sessions created here and the embedded server, if one was started.

    Args:
        remote: stop only the session to this ``sc://`` URL (its server keeps running).
    """
    with _lock:
        if remote is not None:
            spark = _cache.pop(remote, None)
            if spark is not None:
                with contextlib.suppress(Exception):  # best effort on shutdown
                    spark.stop()
            return
        for spark in _cache.values():
            with contextlib.suppress(Exception):  # best effort on shutdown
                spark.stop()
        _cache.clear()
        for server in _embedded.values():
            server.stop()
        _embedded.clear()


def _is_stopped(spark: SparkSession) -> bool:
    return bool(getattr(spark, "is_stopped", False))


def _connect(url: str, conf: dict[str, str]) -> SparkSession:
    from pyspark.sql.connect.session import SparkSession

    # pyspark.sql.functions (used by us and by users' code) dispatches to the Connect
    # implementation only in Connect mode, which pyspark's own builder switches on like this.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    builder = SparkSession.builder.remote(url)
    with warnings.catch_warnings():
        # Connect warns for every non-SQL setting it cannot change at run time.
        warnings.simplefilter("ignore", UserWarning)
        spark = builder.create()
        for key, value in conf.items():
            spark.conf.set(key, str(value))
    return spark


def _disable_plan_cache(spark: SparkSession) -> None:
    """Turn off the session's plan cache, which makes Spark 4.2 reuse a stale filter
    pushdown of ``format("qbeast")`` (see ``DEFAULT_SERVER_CONF``)."""
    import contextlib

    from qbeast_connect.spark.server import PLAN_CACHE_CONF

    # a server without the setting has no such cache
    with contextlib.suppress(Exception):
        spark.conf.set(PLAN_CACHE_CONF, "false")


def register_plugin(spark: SparkSession) -> None:
    """Register the plugin's data sources on ``spark`` and check the server can run them.

    Raises:
        PluginUnavailableError: the server's Python workers cannot import ``server_plugin``.
    """
    from server_plugin.datasource import (
        QbeastCommandSource,
        QbeastSnapshotSource,
        QbeastWriteSource,
    )
    from server_plugin.qbeast_format import QbeastDataSource
    from server_plugin.timeline_writer import QbeastTimelineWriteSource

    spark.dataSource.register(QbeastSnapshotSource)
    spark.dataSource.register(QbeastWriteSource)
    spark.dataSource.register(QbeastCommandSource)
    spark.dataSource.register(QbeastTimelineWriteSource)
    # also found by Spark itself (module pyspark_qbeast) when the server has the package
    spark.dataSource.register(QbeastDataSource)
    _disable_plan_cache(spark)
    try:
        with translate_errors():
            rows = spark.read.format(SNAPSHOT_FORMAT).option("probe", "true").load().collect()
    except QbeastError:
        raise
    except Exception as exc:
        raise PluginUnavailableError(
            "the Spark Connect server cannot run the qbeast server plugin: install "
            "'qbeast-connect' in the Python environment of the server's workers "
            f"(spark.pyspark.python) and restart it. Server said: {str(exc).splitlines()[0]}"
        ) from exc
    if not rows or rows[0]["kind"] != "plugin":
        raise PluginUnavailableError(f"unexpected answer from the server plugin probe: {rows!r}")
