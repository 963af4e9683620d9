"""Automatic compaction of small appends: the options, the table properties that keep them,
and the choice of the files one compaction rewrites.

Steady small appends (events every hour, micro-batches) each write files of their own.
Every such file holds rows of the root cube (an append's rows whose weights are below the
root's max weight), so every sample and nearly every filter must open all of them, however
well the appends fit the table's revisions. A table written with ``autoCompact=true``
re-indexes them after the appends that make them many: the client write paths
(``qc.write``, ``qc.writer(...).save``, the streaming batch writer) run one compaction as a
commit of its own after such an append (:mod:`qbeast_connect.spark.auto_compact`).

The policy, pure:

* a file is **small** when it is smaller than ``autoCompactMinFileSize`` bytes, belongs to
  an indexed revision, and that revision's space is covered by the latest revision's (so
  its rows can be indexed into the latest revision without widening it);
* a compaction is **due** when at least ``autoCompactMinNumFiles`` small files hold rows of
  the root cube: each of those is opened by every sample;
* a due compaction re-indexes the rows of **every** small file into the latest revision and
  removes them, in one commit with ``dataChange: false``. Big files are never rewritten, so
  one compaction rewrites at most (small files) x ``autoCompactMinFileSize`` bytes.

Time-partitioned tables (``partitionBy``) are not auto-compacted (each partition is a tree
of its own; ``optimize(partition=...)`` compacts one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.snapshot import QbeastSnapshot

__all__ = [
    "AUTO_COMMIT_TAG",
    "AUTO_COMPACT",
    "AUTO_COMPACT_KEY",
    "MIN_FILE_SIZE",
    "MIN_FILE_SIZE_DEFAULT",
    "MIN_FILE_SIZE_KEY",
    "MIN_NUM_FILES",
    "MIN_NUM_FILES_DEFAULT",
    "MIN_NUM_FILES_KEY",
    "OPTION_KEYS",
    "AutoCompactSettings",
    "AutoCompaction",
    "auto_compact_properties",
    "covers",
    "files_to_compact",
    "settings_of",
    "stored_configuration",
]

#: Write options (case-insensitive, as every write option).
AUTO_COMPACT = "autoCompact"
MIN_FILE_SIZE = "autoCompactMinFileSize"
MIN_NUM_FILES = "autoCompactMinNumFiles"

#: The table properties (``metaData.configuration`` keys) the options are kept in.
AUTO_COMPACT_KEY = "qbeast.autoCompact"
MIN_FILE_SIZE_KEY = "qbeast.autoCompact.minFileSize"
MIN_NUM_FILES_KEY = "qbeast.autoCompact.minNumFiles"

#: Option name -> table property.
OPTION_KEYS: Mapping[str, str] = {
    AUTO_COMPACT: AUTO_COMPACT_KEY,
    MIN_FILE_SIZE: MIN_FILE_SIZE_KEY,
    MIN_NUM_FILES: MIN_NUM_FILES_KEY,
}

#: Files below this many bytes are small (32 MiB: a quarter of Delta's target file size).
MIN_FILE_SIZE_DEFAULT = 32 * 1024 * 1024
#: A compaction is due when this many small files hold rows of the root cube.
MIN_NUM_FILES_DEFAULT = 4

#: ``commitInfo.tags`` key that marks a compaction's commit as automatic.
AUTO_COMMIT_TAG = "qbeast.autoCompaction"


@dataclass(frozen=True)
class AutoCompactSettings:
    """A table's automatic compaction settings (see the module docstring)."""

    enabled: bool = False
    min_file_size: int = MIN_FILE_SIZE_DEFAULT
    min_num_files: int = MIN_NUM_FILES_DEFAULT


@dataclass(frozen=True)
class AutoCompaction:
    """What the automatic compaction after an append did (``WriteResult.compaction``).

    Attributes:
        version: the compaction's commit (None when it committed nothing).
        removed_files: small files re-indexed and removed.
        added_files: files written.
        rows: rows rewritten.
        skipped: why no compaction committed (``"conflict"``: a concurrent commit won; the
            append stands and the next append tries again), else None.
    """

    version: int | None
    removed_files: int = 0
    added_files: int = 0
    rows: int = 0
    skipped: str | None = None


def _bool_text(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text
    raise InvalidOptionError(
        f"option {name} must be true or false, got {value!r}: write autoCompact='true' to "
        "compact a table's small appends automatically, or 'false' to stop"
    )


def _positive_text(name: str, value: object, example: str) -> str:
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or number <= 0:
        raise InvalidOptionError(
            f"option {name} must be a positive integer, got {value!r}; e.g. {example}"
        )
    return str(number)


def auto_compact_properties(values: Mapping[str, object]) -> dict[str, str]:
    """The table properties of the auto-compaction options given to a write.

    Args:
        values: option name (canonical spelling) -> value, only the options given.

    Raises:
        InvalidOptionError: a value that is not a boolean (``autoCompact``) or a positive
            integer (the two thresholds).
    """
    out: dict[str, str] = {}
    for name, value in values.items():
        if name == AUTO_COMPACT:
            out[AUTO_COMPACT_KEY] = _bool_text(name, value)
        elif name == MIN_FILE_SIZE:
            out[MIN_FILE_SIZE_KEY] = _positive_text(name, value, "33554432 (32 MiB, bytes)")
        elif name == MIN_NUM_FILES:
            out[MIN_NUM_FILES_KEY] = _positive_text(name, value, "4")
    return out


def stored_configuration(
    table: Mapping[str, str], properties: Mapping[str, str]
) -> dict[str, str] | None:
    """The configuration an append that keeps the table's configuration commits instead,
    so that the ``autoCompact*`` options it was given are kept with the table; None when
    the table holds them already (or none was given)."""
    given = {k: v for k, v in properties.items() if k in OPTION_KEYS.values()}
    if all(table.get(k) == v for k, v in given.items()):
        return None
    return {**table, **given}


def settings_of(configuration: Mapping[str, str]) -> AutoCompactSettings:
    """The settings kept in a table configuration (write options already overlaid).

    Raises:
        InvalidOptionError: a property holds a malformed value (written by another tool).
    """
    enabled = configuration.get(AUTO_COMPACT_KEY)
    size = configuration.get(MIN_FILE_SIZE_KEY)
    count = configuration.get(MIN_NUM_FILES_KEY)
    props = auto_compact_properties(
        {
            name: value
            for name, value in (
                (AUTO_COMPACT, enabled),
                (MIN_FILE_SIZE, size),
                (MIN_NUM_FILES, count),
            )
            if value is not None
        }
    )
    return AutoCompactSettings(
        enabled=props.get(AUTO_COMPACT_KEY) == "true",
        min_file_size=int(props.get(MIN_FILE_SIZE_KEY, MIN_FILE_SIZE_DEFAULT)),
        min_num_files=int(props.get(MIN_NUM_FILES_KEY, MIN_NUM_FILES_DEFAULT)),
    )


def covers(latest: Revision, other: Revision) -> bool:
    """Whether every row of ``other`` lies in ``latest``'s space: the same columns with the
    same transformers, and no transformation of ``other`` reaching beyond ``latest``'s."""
    if other.is_staging or latest.is_staging:
        return False
    if other.columns_to_index != latest.columns_to_index:
        return False
    mine, theirs = latest.transformations, other.transformations
    if len(mine) != len(theirs) or not mine:
        return False
    return not any(m.is_superseded_by(t) for m, t in zip(mine, theirs, strict=True))


def files_to_compact(
    snapshot: QbeastSnapshot, settings: AutoCompactSettings
) -> Sequence[str]:
    """The files a compaction rewrites now: every small file, when at least
    ``min_num_files`` of them hold rows of the root cube; else none.

    Only indexed files whose revision the latest revision covers count, so the rows are
    indexed into the latest revision and no compaction opens a revision.
    """
    latest = snapshot.latest_revision
    if not settings.enabled or latest is None:
        return ()
    revisions = snapshot.revisions
    covered = {
        rid for rid, revision in revisions.items() if rid > 0 and covers(latest, revision)
    }
    small = [
        f
        for f in snapshot.files
        if f.revision_id in covered and f.size < settings.min_file_size and f.blocks
    ]
    with_root = sum(1 for f in small if any(b.cube_id == "" for b in f.blocks))
    if with_root < settings.min_num_files or len(small) < 2:
        return ()
    return tuple(f.path for f in small)
