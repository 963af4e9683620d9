"""List and replay a Delta log into a snapshot.

Reconstruction (Delta PROTOCOL "Action Reconciliation"):

1. List ``_delta_log`` (from the ``_last_checkpoint`` hint when it parses, falling back
   to a full listing when the hint is stale, missing or wrong).
2. Take the newest *complete* checkpoint at or below the target version; commits from
   there to the target must all exist (without a checkpoint they start at 0). A gap is
   corruption.
3. Replay the checkpoint rows, then each commit in order: the last ``protocol`` and
   ``metaData`` win, the last ``txn`` per ``appId`` wins, ``add`` puts a file in the live
   set (and clears its tombstone), ``remove`` drops it and records a tombstone.
4. Check the protocol (:func:`protocol.check_readable`) before anything else is used.

Files are keyed by their normalized path (percent-decoded, relative to the table root;
see :func:`uris.normalize_path`), which is also the path to give to ``Storage``.

Example:
    ```python
    snapshot = read_snapshot(storage_for("/data/t"))
    for key, add in snapshot.files.items():
        print(key, add.size, add.tags)
    ```
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from qbeast_connect.exceptions import (
    CorruptLogError,
    InvalidOptionError,
    TableNotFoundError,
)

from .actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    FrozenMap,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    decode_commit,
)
from .checkpoint import read_checkpoint
from .deletion_vectors import DeletionVectorDescriptor
from .log_files import (
    LAST_CHECKPOINT_PATH,
    LOG_DIR,
    check_version,
    commit_path,
    parse_log_file_name,
    read_last_checkpoint,
)
from .properties import (
    ENABLE_IN_COMMIT_TIMESTAMPS,
    SET_TRANSACTION_RETENTION,
    get_interval_ms,
)
from .protocol import check_readable, check_type_changes
from .snapshot import DeltaSnapshot
from .storage import FileInfo, Storage
from .uris import normalize_path

__all__ = [
    "CheckpointRef",
    "LogListing",
    "ReplayState",
    "extend_state",
    "history",
    "latest_version",
    "list_log",
    "read_commit",
    "read_snapshot",
    "read_state",
    "replay",
    "version_at_timestamp",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """A complete checkpoint found in the listing.

    Attributes:
        version: Table version the checkpoint describes.
        parts: None for a single file (classic or UUID-named), else the number of parts.
        files: The checkpoint's file(s) (``_delta_log``-relative names), in part order.
        mtime_ms: Newest modification time among the files.
        uuid_named: A UUID-named V2 checkpoint (``N.checkpoint.<uuid>.json|parquet``).
    """

    version: int
    parts: int | None
    files: tuple[FileInfo, ...]
    mtime_ms: int
    uuid_named: bool = False


@dataclass(frozen=True, slots=True)
class LogListing:
    """What a listing of ``_delta_log`` found.

    Attributes:
        commits: Commit files by version.
        checkpoints: Complete checkpoints by version: a classic file is preferred, then
            a UUID-named (V2) one, then a complete multi-part one.
        uuid_checkpoints: Versions with UUID-named (V2) checkpoints.
        complete_from: Lowest version the listing covers (0 for a full listing).
    """

    commits: Mapping[int, FileInfo]
    checkpoints: Mapping[int, CheckpointRef]
    uuid_checkpoints: frozenset[int]
    complete_from: int = 0

    @property
    def latest_version(self) -> int | None:
        """Newest version found (commit or checkpoint), or None."""
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None


@dataclass(frozen=True, slots=True)
class ReplayState:
    """A snapshot together with what is needed to bring it up to date incrementally.

    Attributes:
        snapshot: The snapshot (``txns`` already filtered by retention).
        replay: The replay accumulator it was finished from (unfiltered txns, tombstones,
            last commitInfo). Never mutated once in a ``ReplayState``.
        commit: The listing entry of commit ``snapshot.version`` (None when that version
            only exists as a checkpoint); it identifies the log this state was read from.
    """

    snapshot: DeltaSnapshot
    replay: _Replay
    commit: FileInfo | None


def list_log(storage: Storage, *, from_version: int = 0) -> LogListing:
    """List ``_delta_log`` and classify its files.

    Args:
        storage: The table storage.
        from_version: Skip files of lower versions (a listing hint; 0 = everything).

    Returns:
        The classified listing; unknown files are ignored.
    """
    start_after = f"{from_version - 1:020d}~" if from_version > 0 else None
    commits: dict[int, FileInfo] = {}
    singles: dict[int, FileInfo] = {}
    multis: dict[tuple[int, int], dict[int, FileInfo]] = {}
    uuids: dict[int, FileInfo] = {}
    for info in storage.list_prefix(LOG_DIR, start_after=start_after):
        parsed = parse_log_file_name(info.name)
        if parsed is None:
            continue
        kind, version, part, parts = parsed
        if version < from_version:
            continue
        if kind == "commit":
            commits[version] = info
        elif kind == "checkpoint":
            singles[version] = info
        elif kind == "multipart":
            assert part is not None and parts is not None
            multis.setdefault((version, parts), {})[part] = info
        elif version not in uuids or info.name < uuids[version].name:
            uuids[version] = info  # racing writers: any one of them will do
    checkpoints: dict[int, CheckpointRef] = {}
    for (version, parts), found in sorted(multis.items()):
        if len(found) == parts and version not in checkpoints:
            files = tuple(found[i] for i in range(1, parts + 1))
            checkpoints[version] = CheckpointRef(
                version, parts, files, max(f.mtime_ms for f in files)
            )
    for version, info in uuids.items():
        checkpoints[version] = CheckpointRef(version, None, (info,), info.mtime_ms, True)
    for version, info in singles.items():
        checkpoints[version] = CheckpointRef(version, None, (info,), info.mtime_ms)
    return LogListing(commits, checkpoints, frozenset(uuids), from_version)


def _dv_id(dv: DeletionVectorDescriptor | None) -> str | None:
    return None if dv is None else dv.unique_id


def tombstone_key(path: str, dv: DeletionVectorDescriptor | None) -> str:
    """The key of a tombstone: the normalized path, followed by the deletion vector's id
    when the removed logical file had one (one path may have several tombstones, one per
    vector it had)."""
    return path if dv is None else f"{path}\n{dv.unique_id}"


class _Replay:
    """Mutable accumulator for log replay (oldest action first)."""

    def __init__(self, root_uri: str | None) -> None:
        self.root_uri = root_uri
        self.protocol: Protocol | None = None
        self.metadata: Metadata | None = None
        self.files: dict[str, AddFile] = {}
        self.tombstones: dict[str, RemoveFile] = {}
        self.txns: dict[str, Txn] = {}
        self.domains: dict[str, DomainMetadata] = {}
        self.last_commit_info: CommitInfo | None = None

    def copy(self) -> _Replay:
        """An independent accumulator holding the same state (actions are shared, immutable)."""
        other = _Replay(self.root_uri)
        other.protocol = self.protocol
        other.metadata = self.metadata
        other.files = dict(self.files)
        other.tombstones = dict(self.tombstones)
        other.txns = dict(self.txns)
        other.domains = dict(self.domains)
        other.last_commit_info = self.last_commit_info
        return other

    def apply(self, actions: Iterable[Action]) -> None:
        for action in actions:
            if isinstance(action, AddFile):
                key = normalize_path(action.path, self.root_uri)
                self.files[key] = action
                self.tombstones.pop(tombstone_key(key, action.deletion_vector), None)
            elif isinstance(action, RemoveFile):
                # a logical file is the pair (path, deletion vector): a remove of the pair
                # a later deletion vector replaced leaves the live file alone
                key = normalize_path(action.path, self.root_uri)
                live = self.files.get(key)
                if live is not None and _dv_id(live.deletion_vector) == _dv_id(
                    action.deletion_vector
                ):
                    del self.files[key]
                self.tombstones[tombstone_key(key, action.deletion_vector)] = action
            elif isinstance(action, Metadata):
                self.metadata = action
            elif isinstance(action, Protocol):
                self.protocol = action
            elif isinstance(action, Txn):
                self.txns[action.app_id] = action
            elif isinstance(action, DomainMetadata):
                if action.removed:
                    self.domains.pop(action.domain, None)
                else:
                    self.domains[action.domain] = action
            elif isinstance(action, CommitInfo):
                self.last_commit_info = action


def replay(
    version: int,
    commits: Iterable[Iterable[Action]],
    *,
    root_uri: str | None = None,
    timestamp: int = 0,
    now_ms: int | None = None,
) -> DeltaSnapshot:
    """Fold actions (checkpoint rows first, then commits in order) into a snapshot.

    A pure function: no storage access. Useful for tests and for applying a pending
    commit to a snapshot.

    Args:
        version: The version the result describes.
        commits: Action sequences, oldest first.
        root_uri: Table root URI, to normalize absolute paths (see ``normalize_path``).
        timestamp: Commit time of ``version`` (epoch ms).
        now_ms: Current time, for ``txn`` retention (defaults to the clock).

    Returns:
        The snapshot.

    Raises:
        CorruptLogError: No protocol or no metaData was found.
        UnsupportedProtocolError: The protocol is not readable (see ``check_readable``).
    """
    state = _Replay(root_uri)
    for actions in commits:
        state.apply(actions)
    return _finish(state, version, timestamp, None, now_ms)


def _finish(
    state: _Replay,
    version: int,
    timestamp: int,
    checkpoint_version: int | None,
    now_ms: int | None,
) -> DeltaSnapshot:
    if state.protocol is None:
        raise CorruptLogError(
            f"no protocol action found up to version {version}; the log is incomplete"
        )
    check_readable(state.protocol)
    if state.metadata is None:
        raise CorruptLogError(
            f"no metaData action found up to version {version}; the log is incomplete"
        )
    if state.metadata.invalid is not None:
        raise CorruptLogError(
            f"the metaData action in effect at version {version} is invalid: "
            f"{state.metadata.invalid}"
        )
    check_type_changes(state.metadata)
    txns = state.txns
    retention = get_interval_ms(state.metadata.configuration, SET_TRANSACTION_RETENTION, None)
    if retention is not None:
        cutoff = (now_ms if now_ms is not None else _now_ms()) - retention
        txns = {
            k: t for k, t in txns.items() if t.last_updated is not None and t.last_updated >= cutoff
        }
    if (
        state.last_commit_info is not None
        and state.metadata.configuration.get(ENABLE_IN_COMMIT_TIMESTAMPS, "").lower() == "true"
    ):
        ict = state.last_commit_info.values.get("inCommitTimestamp")
        if isinstance(ict, int) and not isinstance(ict, bool):
            timestamp = ict
    return DeltaSnapshot(
        version=version,
        protocol=state.protocol,
        metadata=state.metadata,
        files=FrozenMap(state.files),
        tombstones=FrozenMap(state.tombstones),
        txns=FrozenMap(txns),
        domain_metadata=FrozenMap(state.domains),
        timestamp=timestamp,
        checkpoint_version=checkpoint_version,
    )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _not_found(storage: Storage) -> TableNotFoundError:
    return TableNotFoundError(
        f"no Delta table at {storage.root}: {LOG_DIR}/ is missing or holds no commits; "
        "check the path or create the table first"
    )


def read_commit(storage: Storage, version: int) -> list[Action]:
    """Read and decode commit ``version``.

    Raises:
        InvalidOptionError: The commit file does not exist (newer than the latest version,
            or removed by log cleanup: "can no longer be rebuilt").
        CorruptLogError: The file cannot be decoded.
    """
    path = commit_path(version)
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError as exc:
        listing = list_log(storage)
        latest = listing.latest_version
        if latest is None or version > latest:
            raise InvalidOptionError(
                f"commit {version} does not exist in {storage.root}/{LOG_DIR}; the latest "
                f"version is {latest}"
            ) from exc
        newer = [v for v in listing.commits if v > version]
        raise _cleaned_up(storage, version, min(newer) if newer else None) from exc
    return decode_commit(data, source=path)


def latest_version(storage: Storage) -> int | None:
    """Return the newest table version from a listing only, or None without a table."""
    hint = read_last_checkpoint(storage)
    if hint is not None:
        partial = list_log(storage, from_version=hint.version)
        if partial.latest_version is not None:
            return partial.latest_version
    return list_log(storage).latest_version


def _plans(listing: LogListing, target: int) -> list[tuple[CheckpointRef | None, list[int]]]:
    """Ways to build ``target``: (checkpoint or None, commits to replay), best first."""
    plans: list[tuple[CheckpointRef | None, list[int]]] = []
    candidates: list[CheckpointRef | None] = [
        cp for v, cp in sorted(listing.checkpoints.items(), reverse=True) if v <= target
    ]
    if listing.complete_from == 0:
        candidates.append(None)
    for cp in candidates:
        start = 0 if cp is None else cp.version + 1
        needed = list(range(start, target + 1))
        if all(v in listing.commits for v in needed):
            plans.append((cp, needed))
    return plans


def _cleaned_up(storage: Storage, version: int, earliest: int | None) -> InvalidOptionError:
    """The one error for a version whose commits log cleanup removed (no checkpoint covers it)."""
    start = "" if earliest is None else f" (the log starts at version {earliest})"
    return InvalidOptionError(
        f"version {version} of {storage.root} can no longer be rebuilt: log cleanup removed "
        f"its commits and no checkpoint covers it{start}; time travel to a newer version"
    )


def _gap_message(listing: LogListing, target: int) -> str:
    below = [v for v in listing.checkpoints if v <= target]
    start = max(below) + 1 if below else 0
    missing = [v for v in range(start, target + 1) if v not in listing.commits]
    shown = ", ".join(str(v) for v in missing[:10]) + (" ..." if len(missing) > 10 else "")
    base = f"checkpoint {max(below)}" if below else "version 0 (no checkpoint found)"
    return (
        f"cannot reconstruct version {target}: commits [{shown}] are missing after {base}; "
        "the log has a gap (files were deleted or not yet visible). Restore the missing "
        "commit files or time travel to a version that can be reconstructed"
    )


def read_snapshot(storage: Storage, version: int | None = None) -> DeltaSnapshot:
    """Reconstruct the table state at ``version`` (default: the latest).

    Args:
        storage: The table storage.
        version: Version to time travel to; None for the latest.

    Returns:
        The snapshot.

    Raises:
        TableNotFoundError: There is no ``_delta_log`` or it holds no commits.
        InvalidOptionError: ``version`` is negative, newer than the latest version or
            older than what the remaining log can reconstruct.
        CorruptLogError: The log has a gap or an unreadable commit or checkpoint.
        UnsupportedProtocolError: The table needs features we cannot read.
    """
    return read_state(storage, version).snapshot


def read_state(storage: Storage, version: int | None = None) -> ReplayState:
    """Like :func:`read_snapshot`, keeping what :func:`extend_state` needs."""
    if version is not None:
        check_version(version)
    hint = read_last_checkpoint(storage)
    if hint is not None and (version is None or hint.version <= version):
        partial = list_log(storage, from_version=hint.version)
        latest = partial.latest_version
        if latest is not None:
            target = latest if version is None else version
            if target <= latest and _plans(partial, target):
                try:
                    return _build(storage, partial, target)
                except CorruptLogError as exc:
                    logger.warning(
                        "cannot build version %s of %s from the checkpoint named by %s (%s); "
                        "listing the whole log",
                        target,
                        storage.root,
                        LAST_CHECKPOINT_PATH,
                        exc,
                    )
    listing = list_log(storage)
    latest = listing.latest_version
    if latest is None:
        raise _not_found(storage)
    target = latest if version is None else version
    if target > latest:
        raise InvalidOptionError(
            f"version {target} does not exist; the latest version of {storage.root} is {latest}"
        )
    return _build(storage, listing, target)


def _build(storage: Storage, listing: LogListing, target: int) -> ReplayState:
    plans = _plans(listing, target)
    if not plans:
        earliest = min(listing.commits) if listing.commits else None
        if (
            earliest is not None
            and target < earliest
            and not any(v <= target for v in listing.checkpoints)
        ):
            # the log's start was cleaned up and no checkpoint covers the target
            raise _cleaned_up(storage, target, earliest)
        raise CorruptLogError(_gap_message(listing, target))

    first_error: CorruptLogError | None = None
    for cp, commit_versions in plans:
        state = _Replay(storage.root_uri)
        try:
            if cp is not None:
                files = [f"{LOG_DIR}/{f.name}" for f in cp.files] if cp.uuid_named else None
                state.apply(read_checkpoint(storage, cp.version, cp.parts, files=files))
            for v in commit_versions:
                info = listing.commits[v]
                data = storage.read_bytes(f"{LOG_DIR}/{info.name}")
                state.apply(decode_commit(data, source=f"{LOG_DIR}/{info.name}"))
        except CorruptLogError as exc:
            if cp is None:
                raise
            logger.warning(
                "checkpoint %s of %s is unusable (%s); trying an older starting point",
                cp.version,
                storage.root,
                exc,
            )
            first_error = first_error or exc
            continue
        if target in listing.commits:
            timestamp = listing.commits[target].mtime_ms
        else:
            timestamp = listing.checkpoints[target].mtime_ms
        checkpoint_version = None if cp is None else cp.version
        snapshot = _finish(state, target, timestamp, checkpoint_version, None)
        return ReplayState(snapshot, state, listing.commits.get(target))
    assert first_error is not None
    raise first_error


def extend_state(storage: Storage, base: ReplayState) -> ReplayState | None:
    """Bring ``base`` up to the latest version by reading only the commits after it.

    One listing of ``_delta_log`` from ``base``'s version tells the latest version; the
    commits after ``base`` are replayed on a copy of ``base``'s accumulator, which gives
    the same state as a full replay (Action Reconciliation is a left fold).

    Returns:
        ``base`` itself when no commit followed it, the new state, or None when the
        listing does not continue ``base`` (its commit file changed or vanished: the
        table was deleted or recreated) or the newer commits cannot all be read (then
        the caller replays the log in full).

    Raises:
        CorruptLogError: A newer commit cannot be decoded.
        UnsupportedProtocolError: A newer commit asks for features we cannot read.
    """
    version = base.snapshot.version
    if base.commit is None:
        return None
    listing = list_log(storage, from_version=version)
    if listing.commits.get(version) != base.commit:
        return None
    latest = listing.latest_version
    if latest is None or latest == version:
        return base
    newer = range(version + 1, latest + 1)
    if not all(v in listing.commits for v in newer):
        return None  # only a checkpoint, or a gap not yet filled: a full read decides
    state = base.replay.copy()
    for v in newer:
        info = listing.commits[v]
        try:
            data = storage.read_bytes(f"{LOG_DIR}/{info.name}")
        except FileNotFoundError:
            return None
        state.apply(decode_commit(data, source=f"{LOG_DIR}/{info.name}"))
    below = [v for v in listing.checkpoints if v <= latest]
    checkpoint = max(below) if below else base.snapshot.checkpoint_version
    timestamp = listing.commits[latest].mtime_ms
    snapshot = _finish(state, latest, timestamp, checkpoint, None)
    return ReplayState(snapshot, state, listing.commits[latest])


def history(storage: Storage, limit: int | None = None) -> list[dict[str, Any]]:
    """Return the ``commitInfo`` of each available commit, newest first.

    Each entry is the commitInfo object plus ``"version"``; ``"timestamp"`` is filled
    from the file modification time when the commitInfo lacks it.

    Args:
        storage: The table storage.
        limit: Maximum number of entries (None = all available commits).

    Raises:
        TableNotFoundError: There is no table.
    """
    listing = list_log(storage)
    if listing.latest_version is None:
        raise _not_found(storage)
    out: list[dict[str, Any]] = []
    for version in sorted(listing.commits, reverse=True):
        if limit is not None and len(out) >= limit:
            break
        info = listing.commits[version]
        try:
            actions = decode_commit(
                storage.read_bytes(f"{LOG_DIR}/{info.name}"), source=f"{LOG_DIR}/{info.name}"
            )
        except FileNotFoundError:
            continue  # removed by a concurrent log cleanup
        entry: dict[str, Any] = {}
        for action in actions:
            if isinstance(action, CommitInfo):
                entry = action.to_dict()
                break
        entry.setdefault("timestamp", info.mtime_ms)
        entry["version"] = version
        out.append(entry)
    return out


def commit_timestamps(storage: Storage) -> dict[int, int]:
    """Return the commit time (epoch ms) of every available commit.

    Times are file modification times made monotonic: a commit is never earlier than
    the previous one (it gets the previous time + 1 ms instead).
    """
    listing = list_log(storage)
    out: dict[int, int] = {}
    previous: int | None = None
    for version in sorted(listing.commits):
        ts = listing.commits[version].mtime_ms
        if previous is not None and ts <= previous:
            ts = previous + 1
        out[version] = ts
        previous = ts
    return out


def version_at_timestamp(storage: Storage, timestamp_ms: int) -> int:
    """Return the newest version committed at or before ``timestamp_ms``.

    Args:
        storage: The table storage.
        timestamp_ms: Epoch milliseconds.

    Returns:
        The version to time travel to.

    Raises:
        TableNotFoundError: There is no table.
        InvalidOptionError: ``timestamp_ms`` is before the earliest available commit.
    """
    times = commit_timestamps(storage)
    if not times:
        raise _not_found(storage)
    candidates = [v for v, ts in times.items() if ts <= timestamp_ms]
    if not candidates:
        earliest = min(times)
        raise InvalidOptionError(
            f"timestamp {timestamp_ms} is before the earliest available commit "
            f"(version {earliest} at {times[earliest]}); use a later timestamp"
        )
    return max(candidates)
