"""Per-process cache of table snapshots, kept current by reading only new commits.

A plugin worker process serves many snapshot queries for the same few tables. Instead of
replaying the log (checkpoint + commits) for each, it keeps the latest
:class:`~server_plugin.delta.log_reader.ReplayState` per table location and, on every
query, lists ``_delta_log`` from the cached version (:func:`extend_state`): no new commit
means the cached state is served as is, new commits are replayed on top of it. The listing
happens on every query, so a commit by anyone (this plugin, another client, ``deltalake``)
is seen by the next query; nothing is served on trust.

Each cached state carries a random ``token``. A client that holds the state of a token gets
only the difference to the latest state (:func:`state_since`); a token this process does
not know (another worker, evicted, restarted) gives None and the client gets the full state.

Time travel is served from the cache only when the asked version is exactly a cached one.
The cache is bounded (LRU over tables, a few recent states per table) and thread-safe.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from server_plugin.delta.log_files import LOG_DIR
from server_plugin.delta.log_reader import ReplayState, extend_state, read_state
from server_plugin.delta.storage import Storage

__all__ = ["CachedState", "clear", "latest_state", "state_at", "state_since"]

MAX_TABLES = 16
"""Tables kept per process (least recently used first out)."""

STATES_PER_TABLE = 4
"""Recent states kept per table, so that clients a few versions behind get a difference."""


@dataclass(frozen=True, eq=False)
class CachedState:
    """A table state with the token that names it to clients.

    ``lines`` memoizes the JSON line of each live add (by file key); it is filled while the
    state's rows are encoded and handed on to the next state for the files it shares.
    """

    state: ReplayState
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    lines: dict[str, str] = field(default_factory=dict)


_lock = threading.Lock()
_tables: OrderedDict[str, list[CachedState]] = OrderedDict()


def _key(storage: Storage) -> str:
    return storage.root_uri or storage.root


def _recent(key: str) -> list[CachedState]:
    with _lock:
        states = _tables.get(key)
        if states is None:
            return []
        _tables.move_to_end(key)
        return list(states)


def _remember(key: str, entry: CachedState) -> None:
    with _lock:
        states = [s for s in _tables.get(key, []) if s.token != entry.token]
        # a state older than the newest known one never becomes "latest" again
        if states and states[-1].state.snapshot.version > entry.state.snapshot.version:
            return
        states.append(entry)
        _tables[key] = states[-STATES_PER_TABLE:]
        _tables.move_to_end(key)
        while len(_tables) > MAX_TABLES:
            _tables.popitem(last=False)


def _forget(key: str) -> None:
    with _lock:
        _tables.pop(key, None)


def clear() -> None:
    """Drop every cached state (tests, benchmarks)."""
    with _lock:
        _tables.clear()


def latest_state(storage: Storage) -> CachedState:
    """The latest state of the table, from the cache brought up to date, or a full read.

    Raises:
        TableNotFoundError, CorruptLogError, ...: as :func:`read_state`.
    """
    key = _key(storage)
    recent = _recent(key)
    if recent:
        base = recent[-1]
        extended = extend_state(storage, base.state)
        if extended is base.state:
            return base
        if extended is not None:
            entry = CachedState(extended, lines=_shared_lines(base, extended))
            _remember(key, entry)
            return entry
        _forget(key)  # the log does not continue the cached state
    entry = CachedState(read_state(storage))
    _remember(key, entry)
    return entry


def _shared_lines(base: CachedState, new: ReplayState) -> dict[str, str]:
    old_files = base.state.snapshot.files
    return {
        k: line for k, line in base.lines.items() if new.snapshot.files.get(k) is old_files.get(k)
    }


def state_at(storage: Storage, version: int) -> ReplayState:
    """The state at ``version``: a cached state when one is exactly that version.

    The cached state is used only while the commit file it was read up to is still the same
    file (same size and modification time): a table deleted and written again at the same
    location reuses version numbers.
    """
    for entry in reversed(_recent(_key(storage))):
        if entry.state.snapshot.version == version and _same_log(storage, entry.state):
            return entry.state
    return read_state(storage, version)


def _same_log(storage: Storage, state: ReplayState) -> bool:
    listed = state.commit
    if listed is None:
        return False
    try:
        now = storage.file_info(f"{LOG_DIR}/{listed.name}")
    except FileNotFoundError:
        return False
    return (now.size, now.mtime_ms) == (listed.size, listed.mtime_ms)


def state_since(storage: Storage, token: str) -> CachedState | None:
    """The cached state named by ``token`` (None when this process does not hold it)."""
    for entry in _recent(_key(storage)):
        if entry.token == token:
            return entry
    return None
