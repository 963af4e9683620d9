"""Turn a table's Delta log state into ``(kind, payload)`` rows for the client."""

from __future__ import annotations

import json
from collections.abc import Iterator

from qbeast_connect.exceptions import TableNotFoundError
from server_plugin.delta.actions import action_key, action_to_json_line
from server_plugin.delta.log_reader import history, read_snapshot, version_at_timestamp
from server_plugin.delta.storage import storage_for


def snapshot_rows(
    path: str, *, version: int | None = None, timestamp_ms: int | None = None
) -> Iterator[tuple[str, str]]:
    """Yield the snapshot of the table at ``path``: version, protocol, metaData, txns, adds.

    A missing table yields a single ``("absent", "")`` row, so that a writer can create it.
    """
    storage = storage_for(path)
    try:
        if timestamp_ms is not None:
            version = version_at_timestamp(storage, timestamp_ms)
        snap = read_snapshot(storage, version)
    except TableNotFoundError:
        if version is not None:
            raise
        yield ("absent", "")
        return
    yield ("version", str(snap.version))
    for action in snap.state_actions():
        yield (action_key(action), action_to_json_line(action))


def history_rows(path: str, limit: int | None) -> Iterator[tuple[str, str]]:
    """Yield one ``("commitInfo", json)`` row per version, newest first."""
    storage = storage_for(path)
    for entry in history(storage, limit=limit):
        yield ("commitInfo", json.dumps(entry, separators=(",", ":")))
