"""Reading back the commit a write just made, by its ``txnId``.

Every plugin write (``qc.write``, ``optimize``, timeline writes) stamps its Delta commit
with a fresh ``commitInfo.txnId`` from its plan. After the Spark job returns, the client
finds that commit among the newest entries of the table's history: one small query, and
the only way the client learns the committed version and what the commit wrote (a job
can succeed and commit nothing, e.g. a write skipped by ``txnAppId``/``txnVersion``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qbeast_connect.spark.snapshot import load_history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession

__all__ = ["SEARCH_DEPTH", "Commit", "find_commit"]

#: How many of the newest commits are searched for a write's ``txnId``.
SEARCH_DEPTH = 20


@dataclass(frozen=True)
class Commit:
    """One commit of the table, as its ``commitInfo`` reports it.

    Attributes:
        version: the committed Delta version.
        read_version: the version the write planned from (``version - 1`` when the
            ``commitInfo`` does not say).
        num_files: files the commit added (``operationMetrics.numFiles``).
        num_rows: rows it wrote (``operationMetrics.numOutputRows``).
        info: the whole ``commitInfo`` (with ``version``).
    """

    version: int
    read_version: int
    num_files: int
    num_rows: int
    info: dict[str, Any]

    @property
    def rebased(self) -> bool:
        """Whether other commits landed between the write's read version and its own."""
        return self.read_version != self.version - 1


def find_commit(spark: SparkSession | ConnectSparkSession, path: str, txn_id: str) -> Commit | None:
    """The commit of the table at ``path`` whose ``txnId`` is ``txn_id``, searched among
    the newest :data:`SEARCH_DEPTH` commits, then in the whole history (a result read
    long after its write); None when there is none (nothing committed)."""
    newest = load_history(spark, path, limit=SEARCH_DEPTH)
    found = _find(newest, txn_id)
    if found is None and len(newest) >= SEARCH_DEPTH:
        found = _find(load_history(spark, path), txn_id)
    return found


def _find(history: list[dict[str, Any]], txn_id: str) -> Commit | None:
    for entry in history:
        if entry.get("txnId") == txn_id:
            metrics = entry.get("operationMetrics") or {}
            version = int(entry["version"])
            return Commit(
                version=version,
                read_version=int(entry.get("readVersion", version - 1)),
                num_files=int(metrics.get("numFiles", 0)),
                num_rows=int(metrics.get("numOutputRows", 0)),
                info=entry,
            )
    return None
