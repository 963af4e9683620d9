"""What a write does with inputs that change between its jobs.

A write runs several Spark jobs over its DataFrame (statistics, estimation, write), and
Spark evaluates the DataFrame's plan again in each. They must all see the same rows: the
revision planned from the statistics job has to cover every row the write job writes.
Two things can break that:

* a non-deterministic plan: ``rand()``, ``uuid()``, ``shuffle()`` draw a new seed each time
  Spark analyses the plan, and ``current_timestamp()`` is a new instant per query;
* a source that changes between the jobs (files added to a directory being read).

The write freezes such inputs with ``localCheckpoint(eager=True)``: the rows are computed
once and kept on the executors, and every job reads those. Freezing costs a full extra pass
and executor storage, so it is done only when needed: up front when the client-side plan
calls a non-deterministic function (:func:`plan_looks_nondeterministic`, no round trip),
and otherwise when a job of the write meets a row outside the revision's space
(:class:`~qbeast_connect.exceptions.InputChangedError`), after which the write is redone
once on the frozen input. (Which column names a write accepts is a core rule:
:mod:`qbeast_connect.rules.columns`.)
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "committed_txn_version",
    "freeze",
    "plan_looks_nondeterministic",
    "release",
]


#: Functions whose value differs between two evaluations of one plan: a new instant per
#: query, or a seed Spark draws when it analyses the plan (the Connect client seeds the
#: ``F.rand()``-style calls itself, so only SQL text and argument-less calls draw one).
_TIME_FUNCTIONS = (
    "current_timestamp|now|current_date|curdate|localtimestamp|current_time|unix_timestamp"
)
_SEEDED_FUNCTIONS = "rand|randn|random|uuid|shuffle|randstr|uniform"
_CHANGING_TEXT = re.compile(
    # SQL text: a time function (SQL allows some without parentheses), an unseeded call
    rf"\b(?:current_timestamp|current_date|localtimestamp|current_time)\b"
    rf"|\b(?:{_TIME_FUNCTIONS})\s*\("
    r"|\b(?:rand|randn|random|uuid)\s*\(\s*\)"
    r"|\b(?:shuffle|randstr|uniform)\s*\(",
    re.IGNORECASE,
)
_CHANGING_CALL = re.compile(
    # DataFrame API: a time function, or a seeded function called without arguments
    rf'function_name: "(?:{_TIME_FUNCTIONS})"|function_name: "(?:{_SEEDED_FUNCTIONS})"\s*}}',
    re.IGNORECASE,
)
_UDF = "common_inline_user_defined_function {"
_DETERMINISTIC_UDF = "deterministic: true"


def plan_looks_nondeterministic(df: DataFrame) -> bool:
    """Whether ``df``'s plan visibly calls something that changes between evaluations.

    Looks at the client-side plan only (no round trip, microseconds): SQL text and
    expression strings calling ``rand()``, ``uuid()``, ``shuffle()``, ``current_timestamp()``,
    ``now()`` and the like, the same functions called without a seed through the
    DataFrame API, and Python UDFs declared non-deterministic. A False answer is no proof:
    a view or table hiding such a call, or a source that changes, is not visible here, and
    writes catch those in their tasks (:class:`InputChangedError`). A True answer may be a
    false alarm (a string literal that looks like a call), which costs one materialisation.
    """
    to_proto = getattr(getattr(df, "_plan", None), "to_proto", None)
    if to_proto is None:
        return False
    text = str(to_proto(df.sparkSession.client))
    if _CHANGING_TEXT.search(text) or _CHANGING_CALL.search(text):
        return True
    return text.count(_UDF) > text.count(_DETERMINISTIC_UDF)


def freeze(df: DataFrame) -> DataFrame:
    """``df`` computed once and kept on the executors (``localCheckpoint(eager=True)``).

    Every later job on the result reads the same rows. The copy lives until
    :func:`release` (or, failing that, until the returned DataFrame is garbage collected).

    The result belongs to ``df``'s session. Pyspark 4.2 gives a checkpoint's result to the
    thread's *active* session instead (``conversion.proto_to_remote_cached_dataframe``), and
    the server keeps the copy in ``df``'s session only. So with two sessions in a process
    (``qc.session()`` next to ``qc.session(delta=True)``), every job on the result ran in the
    other session and failed with ``CONNECT_INVALID_PLAN`` (no DataFrame with that id).
    """
    frozen = df.localCheckpoint(eager=True)
    return _in_session(frozen, df.sparkSession)


def _in_session(frozen: DataFrame, session: Any) -> DataFrame:
    """``frozen`` (a checkpoint's result) as a DataFrame of ``session``, where the server
    keeps its copy. The stray wrapper gives up the relation id, so its ``__del__`` sends no
    call (to the wrong session, or at all)."""
    plan: Any = getattr(frozen, "_plan", None)
    relation_id = getattr(plan, "_relation_id", None)
    if relation_id is None or frozen.sparkSession is session:
        return frozen
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import CachedRemoteRelation

    own = ConnectDataFrame(plan=CachedRemoteRelation(relation_id, session), session=session)
    plan._relation_id = None
    return own


def release(df: DataFrame) -> None:
    """Free the executors' copy of a :func:`freeze` result now, with a call from this thread.

    Left to PySpark, the copy is freed by ``__del__`` of the DataFrame's plan: a server
    call made wherever the garbage collector happens to run, in any thread, possibly in the
    middle of another gRPC call of the same channel, which can deadlock the client (one
    candidate for a suite that once hung waiting on a lock). After this, the plan has
    nothing left for ``__del__`` to send. Best effort: a copy that cannot be freed now is
    freed with the server's session.
    """
    plan: Any = getattr(df, "_plan", None)
    if getattr(plan, "_relation_id", None) is None:
        return
    from pyspark.sql.connect.plan import RemoveRemoteCachedRelation

    client = df.sparkSession.client
    try:
        with contextlib.suppress(Exception):  # the server frees it with the session anyway
            client.execute_command(RemoveRemoteCachedRelation(plan).command(session=client))
    finally:
        plan._relation_id = None


def committed_txn_version(
    spark: SparkSession, path: str, app_id: str | None, version: int | None
) -> int | None:
    """The table's version of ``app_id`` if it already covers ``version``, else None.

    A write with ``txnAppId``/``txnVersion`` that loses its commit to a write holding the
    same application id asks this: when the winner recorded this version (or a later
    one), the two were attempts of one logical write (a retry after a client died, say)
    and this one is a no-op rather than an error.
    """
    if app_id is None or version is None:
        return None
    from qbeast_connect.spark.snapshot import load_table_state

    done = load_table_state(spark, path).txns.get(app_id)
    return done if done is not None and done >= version else None
