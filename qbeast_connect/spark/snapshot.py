"""Fetch a table's log state from the server plugin (one small Spark query).

The latest state of each (session, table location) is kept in a small client cache. The
snapshot query always runs (so a commit by anyone is seen at once), but it names the state
the client holds: the plugin answers with only what changed since that state, or with the
full state when it does not hold it (see ``server_plugin/snapshot_rows.py``).
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import (
    CommitConflictError,
    InvalidOptionError,
    PluginUnavailableError,
    TableNotFoundError,
)
from qbeast_connect.model.block import index_file_from_add
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.rules.column_mapping import check_partition_column_mapped
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.execute import arrow_in_one_call
from qbeast_connect.spark.formats import SNAPSHOT_FORMAT
from qbeast_connect.spark.location import table_location
from qbeast_connect.spark.storage_options import with_storage_options

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
    _qbeast: list[QbeastSnapshot] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

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
        """The qbeast view of this state (revisions, index files, cube statuses).

        Built once per state and then shared (a ``QbeastSnapshot`` is immutable).
        """
        if not self._qbeast:
            check_partition_column_mapped(self.configuration, self.metadata.get("schemaString"))
            self._qbeast.append(
                QbeastSnapshot.from_delta(self.configuration, self.adds, self.version)
            )
        return self._qbeast[0]


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


def check_files_unchanged(
    state: TableState, expected: Mapping[str, Any], operation: str
) -> None:
    """Refuse an operation whose rows were computed from files that changed since: each
    path of ``expected`` (path -> the deletion vector it was read with, or None) must still
    be live in ``state`` with the same vector.

    Raises:
        CommitConflictError: naming the files that are gone or have another vector.
    """
    live = {str(a.get("path")): a.get("deletionVector") for a in state.adds}
    changed = sorted(p for p, v in expected.items() if p not in live or live[p] != v)
    if changed:
        raise CommitConflictError(
            f"{operation}: files it rewrites changed since it read them (version "
            f"{state.version}): {changed[:5]}; re-read the table and retry the operation"
        )


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
    options = {"path": path}
    if version is not None:
        options["versionAsOf"] = str(version)
    if timestamp_ms is not None:
        options["timestampAsOf"] = str(timestamp_ms)
    latest = version is None and timestamp_ms is None
    key = (getattr(spark, "session_id", None) or id(spark), path)
    base = _cached(key) if latest and CACHE_ENABLED else None
    if base is not None:
        options["since"] = base.token
    if not CACHE_ENABLED:
        options["cache"] = "false"
    rows, as_rows = fetch_snapshot_rows(spark, options, as_rows=base is not None and base.as_rows)
    state, token = _decode(path, rows, base)
    if not state.exists and not latest:
        raise TableNotFoundError(f"no Delta table at {path}")
    if latest and CACHE_ENABLED:
        _store(key, None if token is None else _Cached(token, state, as_rows))
    return state


def fetch_snapshot_rows(
    spark: SparkSession | ConnectSparkSession, options: Mapping[str, str], as_rows: bool = False
) -> tuple[list[tuple[str, str]], bool]:
    """The plugin's snapshot rows for ``options``, in one round trip when they are small.

    The plugin answers a ``what=state`` query in its schema (``server_plugin/snapshot_rows.py``),
    so asking for the schema is the whole exchange: Spark analyses the query in its driver
    and runs no job. Each request names a fresh ``nonce``, so no server cache of analysed
    plans can answer it with an older state. A state too large for a schema (or a plugin
    without schema answers) is then read as rows by one query; so is every read when
    ``as_rows`` (the ``since`` token then came from a rows query, whose Python worker is
    the process that holds its state, not the driver's).

    Returns:
        The rows, and whether they were read as rows.
    """
    if not as_rows:
        reader = with_storage_options(spark.read.format(SNAPSHOT_FORMAT), spark).options(**options)
        reader = reader.option("what", "state").option("nonce", _nonce())
        reader = reader.option("stateLimit", str(STATE_LIMIT))
        with translate_errors():
            fields = reader.load().schema.fields
        text = fields[-1].metadata.get(STATE_KEY) if fields else None
        if isinstance(text, str):
            return [(str(kind), str(payload)) for kind, payload in json.loads(text)], False
    rows_reader = with_storage_options(spark.read.format(SNAPSHOT_FORMAT), spark)
    rows_reader = rows_reader.options(**options).schema(_ROW_SCHEMA)
    with translate_errors():
        return _collect_pairs(rows_reader.option("what", "snapshot").load()), True


STATE_KEY = "qbeast.snapshot.rows"
"""The field metadata key the plugin puts a schema answer under (as JSON text)."""

STATE_LIMIT = 16_000_000
"""The most characters of rows the plugin puts in a schema answer (a full state of 10,000
files is about 4.8 million); a larger state comes as rows by a query, which streams it."""

_ROW_SCHEMA = "kind string, payload string"
_nonces = itertools.count()


def _nonce() -> str:
    return f"{os.getpid()}-{next(_nonces)}-{time.time_ns()}"


def _collect_pairs(df: Any) -> list[tuple[str, str]]:
    """The ``(kind, payload)`` rows of ``df`` by one ``ExecutePlan`` call.

    ``DataFrame.collect()`` asks the server for a setting first and ``toArrow()`` asks for
    the schema: each is another round trip. The Arrow table of the Connect DataFrame comes
    without either; other DataFrames are collected.
    """
    table = arrow_in_one_call(df)
    if table is None:
        return [(str(r[0]), str(r[1])) for r in df.collect()]
    return list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))


CACHE_ENABLED = True
"""Whether snapshot reads use the client and server caches (benchmarks turn it off)."""

_MAX_CACHED = 32
_lock = threading.Lock()
_states: OrderedDict[tuple[Any, str], _Cached] = OrderedDict()


@dataclass(frozen=True)
class _Cached:
    token: str
    state: TableState
    as_rows: bool = False


def _cached(key: tuple[Any, str]) -> _Cached | None:
    with _lock:
        found = _states.get(key)
        if found is not None:
            _states.move_to_end(key)
        return found


def _store(key: tuple[Any, str], entry: _Cached | None) -> None:
    with _lock:
        if entry is None:
            _states.pop(key, None)
            return
        _states[key] = entry
        _states.move_to_end(key)
        while len(_states) > _MAX_CACHED:
            _states.popitem(last=False)


def clear_state_cache() -> None:
    """Forget every cached table state (the next read of each table gets a full state)."""
    with _lock:
        _states.clear()


def decode_state_rows(path: str, rows: Iterable[tuple[str, str]]) -> TableState:
    """Decode the ``(kind, payload)`` rows of a full snapshot answer into a state."""
    return _decode(path, rows, None)[0]


def _decode(
    path: str, rows: Iterable[tuple[str, str]], base: _Cached | None
) -> tuple[TableState, str | None]:
    """The state the rows describe, and the server's token for it (None without one).

    When the rows are a difference to ``base`` (a ``delta`` row naming its token), they
    are applied to ``base``'s state; otherwise they are the full state.
    """
    kinds: dict[str, list[str]] = {}
    for kind, payload in rows:
        kinds.setdefault(kind, []).append(payload)
    if "absent" in kinds:
        return TableState(path=path, version=-1), None
    token = kinds["token"][0] if "token" in kinds else None
    txns: dict[str, int] = {}
    for payload in kinds.get("txn", []):
        txn = json.loads(payload)["txn"]
        txns[str(txn["appId"])] = int(txn["version"])
    new_adds = _decode_adds(kinds.get("add", []))
    delta = kinds.get("delta")
    if delta is not None:
        if base is None or delta[0] != base.token:
            raise PluginUnavailableError(
                f"the server plugin answered the snapshot of {path} with a difference to a "
                "state this client does not hold; install the same qbeast-connect version "
                "on the client and in the server plugin"
            )
        return _apply_difference(base.state, kinds, new_adds, txns), token
    state = TableState(
        path=path,
        version=int(kinds["version"][0]),
        protocol=_single(kinds, "protocol") or {},
        metadata=_single(kinds, "metaData") or {},
        adds=tuple(new_adds),
        txns=txns,
    )
    return state, token


def _apply_difference(
    old: TableState,
    kinds: Mapping[str, list[str]],
    new_adds: list[dict[str, Any]],
    txns: dict[str, int],
) -> TableState:
    """``old`` with a difference applied: removed paths dropped, new adds put in.

    Nothing changed gives ``old`` itself, so its qbeast view is not built again; otherwise
    the qbeast view of ``old`` (when built) lends the decoded files that are kept.
    """
    version = int(kinds["version"][0])
    protocol = _single(kinds, "protocol")
    metadata = _single(kinds, "metaData")
    removed = set(kinds.get("remove", []))
    if (
        version == old.version
        and not removed
        and not new_adds
        and protocol is None
        and metadata is None
        and txns == old.txns
    ):
        return old
    adds = {a["path"]: a for a in old.adds if a["path"] not in removed}
    for add in new_adds:
        adds[add["path"]] = add
    state = TableState(
        old.path,
        version,
        protocol or old.protocol,
        metadata or old.metadata,
        tuple(adds.values()),
        txns,
    )
    if old._qbeast:
        decoded = {id(a): f for a, f in zip(old.adds, old._qbeast[0].files, strict=True)}
        files = [decoded.get(id(a)) or index_file_from_add(a) for a in state.adds]
        state._qbeast.append(QbeastSnapshot(state.configuration, tuple(files), version))
    return state


def _single(kinds: Mapping[str, list[str]], kind: str) -> dict[str, Any] | None:
    found = kinds.get(kind)
    if not found:
        return None
    value: dict[str, Any] = json.loads(found[0])[kind]
    return value


def _decode_adds(payloads: list[str]) -> list[dict[str, Any]]:
    """The add actions of ``{"add": ...}`` lines, decoded by one JSON parse of them all."""
    if not payloads:
        return []
    decoded: list[dict[str, Any]] = json.loads("[" + ",".join(payloads) + "]")
    return [d["add"] for d in decoded]


def load_history(
    spark: SparkSession | ConnectSparkSession, path: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """Return the table's commitInfo entries (with ``version``), newest first."""
    if limit is not None:
        limit = check_version_argument(limit, "limit", "the number of commits to list", 1)
    path = table_location(spark, path)
    reader = with_storage_options(spark.read.format(SNAPSHOT_FORMAT), spark)
    reader = reader.option("path", path).option("what", "history")
    if limit is not None:
        reader = reader.option("limit", str(limit))
    with translate_errors():
        rows = reader.load().collect()
    return [json.loads(r["payload"]) for r in rows]
