"""Spark Connect sessions: to a remote server, or to an embedded local one."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.spark.server import LocalConnectServer, with_persistent_catalog

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

    from qbeast_connect.spark.timeouts import BoundedRetryPolicy

_lock = threading.Lock()
_cache: dict[str, SparkSession] = {}
_embedded: dict[str, LocalConnectServer] = {}
#: the catalog directory each embedded server was started with (None: in memory)
_catalogs: dict[str, str | None] = {}
#: The cache key of the embedded server that runs Delta's engine too.
DELTA_EMBEDDED = "embedded+delta"


def session(
    remote: str | None = None,
    *,
    connect_timeout: float | None = None,
    retry_timeout: float | None = None,
    call_timeout: float | None = None,
    delta: bool = False,
    catalog: str | os.PathLike[str] | None = None,
    sql_extension: bool | None = None,
    **conf: str,
) -> SparkSession:
    """Return a Spark Connect session with the qbeast server plugin available.

    Args:
        remote: an ``sc://host:port`` URL. When None, ``SPARK_REMOTE`` is used if set;
            otherwise an embedded Connect server is started as a child process on a free
            localhost port (it needs Java 17) and stopped when this process exits.
        connect_timeout: seconds to keep trying to reach the server while opening the
            session (default ``QBEAST_CONNECT_TIMEOUT``, else 30).
        retry_timeout: seconds any later call keeps retrying after the server stopped
            answering, before it raises ``ServerUnavailableError`` (default
            ``QBEAST_CONNECT_RETRY_TIMEOUT``, else 60). See ``spark/timeouts.py``.
        call_timeout: the deadline of each call to the server, so that a server that
            accepts a call and never answers it cannot hold the client for ever (default
            ``QBEAST_CONNECT_CALL_TIMEOUT``, else 180). See ``spark/deadlines.py``.
        delta: also run Delta Lake's engine: an embedded server starts with Delta's jars
            (fetched with Maven on first use, see ``spark/delta_jvm.py``) and its SQL
            extension, so ``format("delta")``, ``DESCRIBE HISTORY delta.`path``` and Delta's
            ``DELETE``/``UPDATE``/``MERGE``/``OPTIMIZE``/``VACUUM`` work next to qbeast; it is
            a server of its own, apart from the one ``session()`` starts. A remote server must
            already run Delta's extension (``qbeast-connect server start --delta``).
        catalog: a directory where the embedded server keeps its catalog (a local
            metastore, see :func:`~qbeast_connect.spark.server.persistent_catalog`), so that
            names made with ``CREATE TABLE … USING qbeast`` outlive the server: the next
            ``session(catalog=<the same directory>)`` finds them. None (the default): an
            in-memory catalog, empty at every start. A remote server uses its own catalog.
        sql_extension: run qbeast-connect's SQL extension on the embedded server, which
            hands ``TABLESAMPLE`` and ``DataFrame.sample`` of qbeast tables to the index (the
            rows of ``QbeastTable.sample``, from the files it selects; see
            ``spark/sql_extension.py``): None (the default) when this machine has a Java
            compiler to build it, True always, False never (samples are then Spark's, after
            a read of every file). With a remote server, True checks that it runs it.
        **conf: Spark settings. For an embedded server they are passed at start-up, so
            static settings work too; for a remote server they are set on the session.

    Returns:
        The session. Calling ``session()`` again with the same target returns the same one,
        unless its server stopped answering: then a new session is opened.

    Raises:
        JavaNotFoundError: an embedded server was needed and no Java runtime was found.
        PluginUnavailableError: the server cannot import the qbeast server plugin.
        ServerUnavailableError: the server did not answer within ``connect_timeout``
            (later calls raise it when their server is gone or leaves a call unanswered).
        InvalidOptionError: a timeout is not a positive number of seconds; ``catalog`` given
            with a remote server, or while the embedded server runs with another catalog.
        MissingDependencyError: ``delta=True`` and Delta's jars could not be fetched, or the
            remote server does not run Delta's extension; ``sql_extension=True`` and the
            extension cannot be built, or the remote server does not run it.

    Example:
        >>> import qbeast_connect as qc
        >>> spark = qc.session()  # doctest: +SKIP
    """
    from qbeast_connect.spark import timeouts

    connect_s = timeouts.connect_timeout(connect_timeout)
    retry_s = timeouts.retry_timeout(retry_timeout)
    call_s = timeouts.call_timeout(call_timeout)
    remote = remote or os.environ.get("SPARK_REMOTE")
    target = remote or (DELTA_EMBEDDED if delta else "embedded")
    wanted = _catalog_dir(catalog)
    with _lock:
        running = _embedded.get(target)
        if (
            remote is None
            and wanted is not None
            and running is not None
            and running.is_running()
            and _catalogs.get(target) != wanted
        ):
            raise InvalidOptionError(
                f"the embedded server runs with catalog {_catalogs.get(target)!r}, not "
                f"{wanted!r}: call qc.stop() first to restart it with another one"
            )
        cached = _cache.get(target)
        if cached is not None and not _is_stopped(cached):
            if not _server_gone(cached):
                if delta and remote is not None:
                    _require_delta(cached, remote)
                if sql_extension and remote is not None:
                    _require_sql_extension(cached, remote)
                return cached
            _close_quietly(cached)
        if remote is None:
            server = _embedded.get(target)
            if server is None or not server.is_running():
                server_conf = {k: str(v) for k, v in conf.items()}
                if wanted is not None:
                    server_conf = with_persistent_catalog(server_conf, wanted)
                if delta:
                    from qbeast_connect.spark.delta_jvm import with_delta

                    server_conf = with_delta(server_conf)
                server = LocalConnectServer(conf=server_conf, sql_extension=sql_extension)
                server.start()
                _embedded[target] = server
                _catalogs[target] = wanted
            url, session_conf = server.url, {}
        else:
            if catalog is not None:
                raise InvalidOptionError(
                    "catalog= sets the embedded server's catalog; a remote server keeps its "
                    "own (start it with 'qbeast-connect server start --catalog DIR')"
                )
            url, session_conf = target, conf
        spark, policy = _connect(url, connect_s, call_s)
        try:
            _set_conf(spark, session_conf)
            if delta:
                _require_delta(spark, url)
            if sql_extension:
                _require_sql_extension(spark, url)
            register_plugin(spark)
        except BaseException:
            # the client would otherwise send clean-up calls to the server at exit
            _close_quietly(spark)
            raise
        # the session is up: from now on a lost server is given the operation budget
        policy.connected(retry_s)
        from qbeast_connect.progress import attach

        attach(spark)
        _cache[target] = spark
        return spark


def _catalog_dir(catalog: str | os.PathLike[str] | None) -> str | None:
    return None if catalog is None else str(Path(catalog).expanduser().resolve())


def embedded_server(delta: bool = False) -> LocalConnectServer | None:
    """The embedded server started by :func:`session` (with ``delta``), if any."""
    return _embedded.get(DELTA_EMBEDDED if delta else "embedded")


def _require_delta(spark: SparkSession, url: str) -> None:
    """Raise unless the server of ``spark`` runs Delta's SQL extension."""
    from qbeast_connect.spark.delta_jvm import DELTA_SESSION_CONF

    extension = DELTA_SESSION_CONF["spark.sql.extensions"]
    _require_extension(
        spark,
        extension,
        f"delta=True, but the server at {url} does not run Delta Lake's engine "
        f"(spark.sql.extensions does not name {extension}): start it with "
        "'qbeast-connect server start --delta', or with Delta's jars and the settings "
        + ", ".join(f"{k}={v}" for k, v in DELTA_SESSION_CONF.items()),
    )


def _require_sql_extension(spark: SparkSession, url: str) -> None:
    """Raise unless the server of ``spark`` runs qbeast-connect's SQL extension."""
    from qbeast_connect.spark.sql_extension import EXTENSION_CLASS

    _require_extension(
        spark,
        EXTENSION_CLASS,
        f"sql_extension=True, but the server at {url} does not run qbeast-connect's SQL "
        f"extension (spark.sql.extensions does not name {EXTENSION_CLASS}): start it with "
        "'qbeast-connect server start', or with --jars <the jar 'python -m "
        f"qbeast_connect.spark.sql_extension' prints> --conf spark.sql.extensions="
        f"{EXTENSION_CLASS}",
    )


def _require_extension(spark: SparkSession, extension: str, message: str) -> None:
    """Raise ``MissingDependencyError(message)`` unless the server runs ``extension``."""
    from qbeast_connect.exceptions import MissingDependencyError

    configured = spark.conf.get("spark.sql.extensions", "") or ""
    if extension not in configured.split(","):
        raise MissingDependencyError(message)


def stop(remote: str | None = None, *, delta: bool = False) -> None:
    """Stop the sessions created here and the embedded servers, if any were started.

    Args:
        remote: stop only the session to this ``sc://`` URL (its server keeps running).
        delta: stop only the session of the embedded server that runs Delta's engine
            (``session(delta=True)``), and that server.
    """
    with _lock:
        if remote is not None or delta:
            spark = _cache.pop(remote or DELTA_EMBEDDED, None)
            if spark is not None:
                _stop_once(spark)
            server = _embedded.pop(DELTA_EMBEDDED, None) if delta else None
            if server is not None:
                server.stop()
            return
        for spark in _cache.values():
            _stop_once(spark)
        _cache.clear()
        for server in _embedded.values():
            server.stop()
        _embedded.clear()


def _stop_once(spark: SparkSession) -> None:
    """Stop a session; its release call gets one attempt, not a retry budget."""
    from qbeast_connect.spark.timeouts import retry_policy_of

    policy = retry_policy_of(spark)
    if policy is not None:
        policy.give_up()
    with contextlib.suppress(Exception):  # best effort on shutdown
        spark.stop()


def _is_stopped(spark: SparkSession) -> bool:
    return bool(getattr(spark, "is_stopped", False))


def _server_gone(spark: SparkSession) -> bool:
    """Whether a call of ``spark`` ran out of retries: its server is taken for gone."""
    from qbeast_connect.spark.timeouts import retry_policy_of

    policy = retry_policy_of(spark)
    return policy is not None and policy.gave_up


def _close_quietly(spark: SparkSession) -> None:
    """Stop a session whose server is gone (its calls then fail without retrying)."""
    with contextlib.suppress(Exception):  # best effort: the server may be gone
        spark.stop()
    for key, cached in list(_cache.items()):
        if cached is spark:
            del _cache[key]


def _connect(
    url: str, connect_s: float, call_s: float | None = None
) -> tuple[SparkSession, BoundedRetryPolicy]:
    """A session to ``url`` whose calls are retried within ``connect_s`` seconds (until
    ``policy.connected``) and each have a deadline of ``call_s`` seconds (None: none)."""
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    from qbeast_connect.spark.deadlines import CallDeadlines
    from qbeast_connect.spark.timeouts import CHANNEL_OPTIONS, BoundedRetryPolicy

    # pyspark.sql.functions (used by us and by users' code) dispatches to the Connect
    # implementation only in Connect mode, which pyspark's own builder switches on like this.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    channel = DefaultChannelBuilder(url, list(CHANNEL_OPTIONS))
    if call_s is not None:
        channel.add_interceptor(CallDeadlines(call_s))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        spark = SparkSession.builder.channelBuilder(channel).create()
    # no call has reached the server yet: bound every retry from the first one on
    policy = BoundedRetryPolicy(url, connect_s, call_s)
    spark.client.set_retry_policies([policy])
    if channel.session_id is not None:
        # a session this client joined (;session_id= in the URL) belongs to another
        # client: closing ours (qc.stop(), a refused plugin, a lost server) must only close
        # the connection, never release the session on the server under its owner
        spark.release_session_on_close = False
    # The client cleans up on the server when the process exits (an exit hook registered
    # when it was created). Hooks run newest first, so this one runs before it: clean-up
    # calls then get one attempt each, and a server that died meanwhile cannot hold the
    # exit for a whole retry budget.
    atexit.register(policy.give_up)
    return spark, policy


def _set_conf(spark: SparkSession, conf: dict[str, str]) -> None:
    with warnings.catch_warnings():
        # Connect warns for every non-SQL setting it cannot change at run time.
        warnings.simplefilter("ignore", UserWarning)
        for key, value in conf.items():
            spark.conf.set(key, str(value))


def register_plugin(spark: SparkSession) -> None:
    """Make the plugin available on ``spark`` and register its data sources.

    A server without the plugin gets the client's own, shipped as a session artifact; see
    ``spark/plugin_setup.py``.

    Raises:
        PluginVersionMismatchError: the server has another version of the plugin installed.
        PluginUnavailableError: the server's Python workers cannot run the plugin.
    """
    from qbeast_connect.spark.plugin_setup import ensure_plugin, set_session_conf
    from server_plugin.datasource import (
        QbeastCommandSource,
        QbeastSnapshotSource,
        QbeastWriteSource,
    )
    from server_plugin.qbeast_format import QbeastDataSource
    from server_plugin.timeline_writer import QbeastTimelineWriteSource

    set_session_conf(spark)
    ensure_plugin(spark)
    spark.dataSource.register(QbeastSnapshotSource)
    spark.dataSource.register(QbeastWriteSource)
    spark.dataSource.register(QbeastCommandSource)
    spark.dataSource.register(QbeastTimelineWriteSource)
    # also found by Spark itself (module pyspark_qbeast) when the server has the package
    spark.dataSource.register(QbeastDataSource)
