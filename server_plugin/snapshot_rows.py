"""Turn a table's Delta log state into ``(kind, payload)`` rows for the client.

A latest-version read is served from :mod:`server_plugin.snapshot_cache`. Its rows start
with ``("version", v)`` and ``("token", t)``; then either the full state (protocol,
metaData, txns, adds) or, when the client sent the token of a state this process holds
(``since``), only the difference: ``("delta", since)``, protocol and metaData when they
changed, every txn, ``("remove", path)`` for each add of the old state that is gone or
replaced (``path`` exactly as the client received it) and the new adds.

The same rows can also be answered as the schema of the query (:func:`state_schema`): Spark
asks a Python Data Source for its schema in the driver while it analyses the query, so a
client that only asks for the schema gets the state without a Spark job and without a
Python worker task.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from qbeast_connect.exceptions import TableNotFoundError
from server_plugin import snapshot_cache
from server_plugin.delta.actions import AddFile, action_key, action_to_json_line
from server_plugin.delta.log_reader import history, read_snapshot, version_at_timestamp
from server_plugin.delta.storage import Storage, storage_for

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def snapshot_rows(
    path: str,
    *,
    version: int | None = None,
    timestamp_ms: int | None = None,
    since: str | None = None,
    use_cache: bool = True,
) -> Iterator[tuple[str, str]]:
    """Yield the snapshot of the table at ``path``: version, protocol, metaData, txns, adds.

    A missing table yields a single ``("absent", "")`` row, so that a writer can create it.
    ``since`` is the token of a state the client holds (see the module docstring);
    ``use_cache=False`` replays the log in full and sends the full state.
    """
    storage = storage_for(path)
    try:
        if timestamp_ms is not None:
            version = version_at_timestamp(storage, timestamp_ms)
        if not use_cache:
            snap = read_snapshot(storage, version)
        elif version is not None:
            snap = snapshot_cache.state_at(storage, version).snapshot
        else:
            yield from _latest_rows(storage, since)
            return
    except TableNotFoundError:
        if version is not None:
            raise
        yield ("absent", "")
        return
    yield ("version", str(snap.version))
    for action in snap.state_actions():
        yield (action_key(action), action_to_json_line(action))


#: The field metadata key of :func:`state_schema` that holds the rows, as JSON text.
STATE_KEY = "qbeast.snapshot.rows"

#: The most characters of row text a schema answer carries unless the client names its own
#: limit. A larger state is better streamed as rows by a query.
STATE_SCHEMA_LIMIT = 16_000_000


def state_schema(rows: Iterable[tuple[str, str]], limit: int = STATE_SCHEMA_LIMIT) -> StructType:
    """The rows as the schema ``kind string, payload string``, carried by ``payload``'s metadata.

    When the rows exceed ``limit`` characters the metadata is left out: the client then
    reads them as rows with a query.
    """
    from pyspark.sql.types import StringType, StructField, StructType

    out: list[list[str]] = []
    size = 0
    metadata: dict[str, str] = {}
    for kind, payload in rows:
        size += len(kind) + len(payload) + 8
        if size > limit:
            break
        out.append([kind, payload])
    else:
        metadata[STATE_KEY] = json.dumps(out, separators=(",", ":"))
    return StructType(
        [StructField("kind", StringType()), StructField("payload", StringType(), True, metadata)]
    )


def _latest_rows(storage: Storage, since: str | None) -> Iterator[tuple[str, str]]:
    entry = snapshot_cache.latest_state(storage)
    snap = entry.state.snapshot
    base = None if since is None else snapshot_cache.state_since(storage, since)
    yield ("version", str(snap.version))
    yield ("token", entry.token)
    if base is None or base.state.snapshot.version > snap.version:
        yield ("protocol", action_to_json_line(snap.protocol))
        yield ("metaData", action_to_json_line(snap.metadata))
        for txn in snap.txns.values():
            yield ("txn", action_to_json_line(txn))
        yield from _add_rows(entry, entry.state.replay.files)
        return
    old = base.state.snapshot
    yield ("delta", base.token)
    if old.protocol != snap.protocol:
        yield ("protocol", action_to_json_line(snap.protocol))
    if old.metadata is not snap.metadata and old.metadata != snap.metadata:
        yield ("metaData", action_to_json_line(snap.metadata))
    for txn in snap.txns.values():
        yield ("txn", action_to_json_line(txn))
    if base is not entry:
        yield from _changes(entry, base)


def _changes(
    entry: snapshot_cache.CachedState, base: snapshot_cache.CachedState
) -> Iterator[tuple[str, str]]:
    # the replay dicts hold the same files as the snapshots, as plain (fast) dicts
    old_files = base.state.replay.files
    new_files = entry.state.replay.files
    changed: dict[str, AddFile] = {}
    for key, add in old_files.items():
        now = new_files.get(key)
        if now is None or (now is not add and now != add):
            yield ("remove", add.path)
    for key, add in new_files.items():
        before = old_files.get(key)
        if before is None or (before is not add and before != add):
            changed[key] = add
    yield from _add_rows(entry, changed)


def _add_rows(
    entry: snapshot_cache.CachedState, files: Mapping[str, AddFile]
) -> Iterator[tuple[str, str]]:
    lines = entry.lines
    for key, add in files.items():
        line = lines.get(key)
        if line is None:
            line = action_to_json_line(add)
            lines[key] = line
        yield ("add", line)


def history_rows(path: str, limit: int | None) -> Iterator[tuple[str, str]]:
    """Yield one ``("commitInfo", json)`` row per version, newest first."""
    storage = storage_for(path)
    for entry in history(storage, limit=limit):
        yield ("commitInfo", json.dumps(entry, separators=(",", ":")))
