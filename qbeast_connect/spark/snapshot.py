"""Fetch a table's log state from the server plugin (one small Spark query)."""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError, TableNotFoundError
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.formats import SNAPSHOT_FORMAT
from qbeast_connect.spark.location import table_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSparkSession


@dataclass(frozen=True)
class TableState:
    """A table's Delta state as the client sees it.

    Attributes:
        path: the table location.
        version: the Delta version, or -1 when no table exists at ``path``.
        protocol: the ``protocol`` action (empty when absent).
        metadata: the ``metaData`` action (empty when absent).
        adds: the live ``add`` actions.
        txns: application id -> last committed ``txn`` version.
    """

    path: str
    version: int
    protocol: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    adds: tuple[Mapping[str, Any], ...] = ()
    txns: Mapping[str, int] = field(default_factory=dict)

    @property
    def exists(self) -> bool:
        """Whether a Delta table exists at the path."""
        return self.version >= 0

    @property
    def configuration(self) -> Mapping[str, str]:
        """The table's ``metaData.configuration``."""
        return self.metadata.get("configuration") or {}

    @property
    def schema_string(self) -> str | None:
        """The table's Delta schema JSON."""
        value = self.metadata.get("schemaString")
        return None if value is None else str(value)

    def qbeast(self) -> QbeastSnapshot:
        """The qbeast view of this state (revisions, index files, cube statuses)."""
        return QbeastSnapshot.from_delta(self.configuration, self.adds, self.version)


def check_version_argument(
    value: object,
    name: str = "versionAsOf",
    hint: str = "QbeastTable.history() lists the table's versions",
    minimum: int = 0,
) -> int:
    """Return ``value`` as a whole number >= ``minimum`` (a table version by default).

    An ``int`` or any integer type such as numpy's is accepted; floats, bools and strings are
    refused rather than truncated.

    Raises:
        InvalidOptionError: naming the argument, the value and ``hint``.
    """
    if not isinstance(value, bool):
        try:
            number = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if number >= minimum:
                return int(number)
    raise InvalidOptionError(f"{name} must be a whole number >= {minimum}, got {value!r}; {hint}")


def load_table_state(
    spark: SparkSession | ConnectSparkSession,
    path: str,
    *,
    version: int | None = None,
    timestamp_ms: int | None = None,
) -> TableState:
    """Read the table state at ``path`` (latest, or at a version or timestamp).

    A missing table gives a state with ``version == -1`` unless a version or timestamp
    was asked for, in which case :class:`TableNotFoundError` is raised. The state's
    ``path`` is the canonical location of ``path`` (:mod:`qbeast_connect.spark.location`).
    """
    if version is not None:
        version = check_version_argument(version)
    if timestamp_ms is not None:
        timestamp_ms = check_version_argument(timestamp_ms, "timestampAsOf", "epoch milliseconds")
    path = table_location(spark, path)
    reader = spark.read.format(SNAPSHOT_FORMAT).option("path", path)
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    if timestamp_ms is not None:
        reader = reader.option("timestampAsOf", str(timestamp_ms))
    with translate_errors():
        rows = reader.load().collect()
    kinds: dict[str, list[str]] = {}
    for row in rows:
        kinds.setdefault(row["kind"], []).append(row["payload"])
    if "absent" in kinds:
        if version is not None or timestamp_ms is not None:
            raise TableNotFoundError(f"no Delta table at {path}")
        return TableState(path=path, version=-1)
    txns: dict[str, int] = {}
    for payload in kinds.get("txn", []):
        txn = json.loads(payload)["txn"]
        txns[str(txn["appId"])] = int(txn["version"])
    return TableState(
        path=path,
        version=int(kinds["version"][0]),
        protocol=json.loads(kinds["protocol"][0])["protocol"],
        metadata=json.loads(kinds["metaData"][0])["metaData"],
        adds=tuple(json.loads(p)["add"] for p in kinds.get("add", [])),
        txns=txns,
    )


def load_history(
    spark: SparkSession | ConnectSparkSession, path: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """Return the table's commitInfo entries (with ``version``), newest first."""
    if limit is not None:
        limit = check_version_argument(limit, "limit", "the number of commits to list", 1)
    path = table_location(spark, path)
    reader = spark.read.format(SNAPSHOT_FORMAT).option("path", path).option("what", "history")
    if limit is not None:
        reader = reader.option("limit", str(limit))
    with translate_errors():
        rows = reader.load().collect()
    return [json.loads(r["payload"]) for r in rows]
