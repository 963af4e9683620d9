"""Structured Streaming into a qbeast table, each micro-batch appended exactly once.

Spark Connect runs a ``foreachBatch`` function in a Python process of the server's driver,
with the batch bound to a Connect session there. :func:`qbeast_batch_writer` builds such a
function: it appends each batch with :func:`qbeast_connect.write`, carrying
``txnAppId`` = the streaming query's id and ``txnVersion`` = the batch id. A query
restarted from its checkpoint keeps its id and runs again the batch it had not finished;
the qbeast commit of that batch either never happened (then it happens now) or is in the
log with the same pair (then the write is skipped). Either way each batch lands once.

Over Spark Connect the query id is not visible inside ``foreachBatch`` (the batch's
session is the client's, not the query's), but Spark writes it to ``<checkpoint>/metadata``
when the query first starts and keeps it there for every restart from that checkpoint. So
the writer is given the checkpoint location and reads the id from it, through Spark (any
storage the server reads), once per process. :func:`write_stream` passes the same location
to both places.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError, PluginUnavailableError
from qbeast_connect.options import WriteOptions, parse_write_options
from qbeast_connect.paths import spark_literal_path
from qbeast_connect.spark.auto_compact import compact_after_append
from qbeast_connect.spark.write import run_write
from qbeast_connect.write_plan import WriteResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["QbeastBatchWriter", "qbeast_batch_writer", "query_id_of_checkpoint", "write_stream"]

#: The package the ``foreachBatch`` process imports to unpickle the batch writer.
_PACKAGE = "qbeast_connect"

#: Options the batch writer sets itself, per batch.
_RESERVED = ("txnversion", "mode")


def query_id_of_checkpoint(spark: SparkSession, checkpoint_location: str) -> str:
    """The id of the streaming query whose checkpoint is at ``checkpoint_location``.

    Spark stores it as ``{"id": "..."}`` in the checkpoint's ``metadata`` file when the
    query first starts; ``StreamingQuery.id`` is the same value on every restart.

    Raises:
        InvalidOptionError: no readable query id at that location.
    """
    metadata = checkpoint_location.rstrip("/") + "/metadata"
    try:
        lines = [row[0] for row in spark.read.text(spark_literal_path(metadata)).collect()]
    except Exception as error:
        raise InvalidOptionError(
            f"no streaming checkpoint at {checkpoint_location!r} ({metadata} cannot be read: "
            f"{str(error).splitlines()[0] if str(error) else type(error).__name__}); pass "
            "qbeast_batch_writer the checkpointLocation the query is started with"
        ) from None
    try:
        query_id = json.loads("".join(lines))["id"]
    except (ValueError, KeyError, TypeError):
        query_id = None
    if not isinstance(query_id, str) or not query_id:
        raise InvalidOptionError(
            f"{metadata} holds no streaming query id; pass qbeast_batch_writer the "
            "checkpointLocation the query is started with"
        )
    return query_id


def leave_release_to_server(batch_df: DataFrame) -> None:
    """Keep the batch's DataFrame from releasing its server-side cache entry when freed.

    The server caches each batch under an id and drops it itself once the function
    returns. PySpark's finalizer of such a DataFrame sends a release RPC of its own, with
    no deadline, from whatever point the object is freed; in the ``foreachBatch`` worker
    that is between the function's return and its answer to the server. Twice in our
    tests the worker stopped there, after the server had logged the release, and the query
    waited for ever (SPARK-58846 adds the deadline). Clearing the id makes the finalizer
    skip the call; nothing else uses the batch afterwards.
    """
    plan = getattr(batch_df, "_plan", None)
    if type(plan).__name__ == "CachedRemoteRelation" and hasattr(plan, "_relation_id"):
        setattr(plan, "_relation_id", None)  # noqa: B010 - a private attribute of PySpark's


class QbeastBatchWriter:
    """A picklable ``foreachBatch`` function appending each batch to a qbeast table once.

    Build it with :func:`qbeast_batch_writer`. Its state is the table path, the validated
    options and where the application id comes from; the id read from a checkpoint is kept
    for the life of the process that runs the batches.
    """

    def __init__(
        self,
        path: str,
        options: WriteOptions,
        *,
        checkpoint_location: str | None,
        app_id: str | None,
    ) -> None:
        self.path = path
        self.options = options
        self.checkpoint_location = checkpoint_location
        self.app_id = app_id
        self.last_result: WriteResult | None = None

    def application_id(self, spark: SparkSession) -> str:
        """The ``txnAppId`` of every batch: the given one, or the checkpoint's query id."""
        if self.app_id is None:
            assert self.checkpoint_location is not None
            self.app_id = query_id_of_checkpoint(spark, self.checkpoint_location)
        return self.app_id

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        """Append one micro-batch, or skip it when this query already committed it.

        The write's :class:`WriteResult` is kept in ``last_result``.
        """
        try:
            app_id = self.application_id(batch_df.sparkSession)
            options = dataclasses.replace(self.options, txn_app_id=app_id, txn_version=batch_id)
            self.last_result = run_write(
                batch_df, self.path, "append", options, compact=compact_after_append
            )
        finally:
            leave_release_to_server(batch_df)


def qbeast_batch_writer(
    path: str,
    *,
    checkpointLocation: str | None = None,  # noqa: N803 - Spark's option name
    txnAppId: str | None = None,  # noqa: N803 - qbeast-spark's option name
    **options: Any,
) -> QbeastBatchWriter:
    """A ``foreachBatch`` function that appends every micro-batch to ``path`` exactly once.

    Each batch is appended with ``txnAppId`` = the query's id and ``txnVersion`` = the batch
    id, so a batch that a restarted query runs again is skipped if its commit had landed.

    Args:
        path: the qbeast table (created by the first batch if absent: then give
            ``columnsToIndex``).
        checkpointLocation: the query's checkpoint location, the same one given to
            ``writeStream``. The application id is the query id Spark keeps there, so it
            survives restarts and changes when the query starts over from a new checkpoint.
        txnAppId: instead of ``checkpointLocation``, an application id of your own. It must
            stay the same across restarts from one checkpoint, and change when the
            checkpoint is replaced (batch ids then start again from 0 and would be skipped).
        **options: the options of :func:`qbeast_connect.write` (``columnsToIndex``,
            ``cubeSize``, ``columnStats``, ``userMetadata``, ``mergeSchema``, ``delta.*``,
            hooks). ``txnVersion`` and ``mode`` are set per batch and cannot be given.

    Returns:
        The function to pass to ``DataStreamWriter.foreachBatch``.

    Raises:
        InvalidOptionError: neither or both of ``checkpointLocation`` and ``txnAppId``, a
            reserved or unknown option, or a bad value (before the query starts).

    Example:
        >>> ckpt = "/data/checkpoints/events"  # doctest: +SKIP
        >>> (stream.writeStream.option("checkpointLocation", ckpt)  # doctest: +SKIP
        ...     .foreachBatch(qc.qbeast_batch_writer("/data/events", checkpointLocation=ckpt,
        ...                                          columnsToIndex="ts,user"))
        ...     .start())
    """
    if not isinstance(path, str) or not path.strip():
        raise InvalidOptionError("the table path must be a non-empty string")
    for given in options:
        if given.lower() in _RESERVED:
            raise InvalidOptionError(
                f"option {given!r} is set by the batch writer (append, txnVersion = the "
                "batch id) and cannot be given"
            )
    if (checkpointLocation is None) == (txnAppId is None):
        raise InvalidOptionError(
            "qbeast_batch_writer needs exactly one of checkpointLocation (the query's own, "
            "whose query id becomes txnAppId) and txnAppId (an id that stays the same "
            "across restarts from one checkpoint)"
        )
    for name, value in (("checkpointLocation", checkpointLocation), ("txnAppId", txnAppId)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidOptionError(f"{name} must be a non-empty string, got {value!r}")
    parsed = parse_write_options(options)
    if parsed.txn_app_id is not None:  # spelled in another case among **options
        raise InvalidOptionError("give txnAppId once, as the keyword argument")
    return QbeastBatchWriter(
        path, parsed, checkpoint_location=checkpointLocation, app_id=txnAppId
    )


def write_stream(
    df: DataFrame,
    path: str,
    *,
    checkpointLocation: str,  # noqa: N803 - Spark's option name
    trigger: Mapping[str, Any] | None = None,
    queryName: str | None = None,  # noqa: N803 - Spark's name
    **options: Any,
) -> StreamingQuery:
    """Start a streaming query appending ``df`` to the qbeast table at ``path`` exactly once.

    The same ``checkpointLocation`` goes to the query and to :func:`qbeast_batch_writer`.
    Restart a stopped or failed query by calling this again with the same location.

    Args:
        df: a streaming DataFrame (``spark.readStream...``).
        path: the qbeast table.
        checkpointLocation: where the query keeps its progress.
        trigger: keyword arguments of ``DataStreamWriter.trigger``, e.g.
            ``{"processingTime": "10 seconds"}`` or ``{"availableNow": True}``.
        queryName: the query's name, if any.
        **options: as for :func:`qbeast_batch_writer`.

    Returns:
        The started ``StreamingQuery``.

    Raises:
        InvalidOptionError: as for :func:`qbeast_batch_writer`.
        PluginUnavailableError: the server's ``foreachBatch`` process cannot import
            qbeast-connect (a stock server that got the plugin as a session artifact).
    """
    func = qbeast_batch_writer(path, checkpointLocation=checkpointLocation, **options)
    writer = df.writeStream.option("checkpointLocation", checkpointLocation).foreachBatch(func)
    if queryName is not None:
        writer = writer.queryName(queryName)
    if trigger:
        writer = writer.trigger(**trigger)
    try:
        return writer.start()
    except Exception as error:
        if f"No module named '{_PACKAGE}'" in str(error):
            raise PluginUnavailableError(
                f"the server's foreachBatch process cannot import {_PACKAGE}: a plugin shipped "
                "to a server as a session artifact reaches Spark's tasks, not that process; "
                "install qbeast-connect in the server's Python environment to stream into "
                "qbeast tables (docs/streaming.md)"
            ) from None
        raise
