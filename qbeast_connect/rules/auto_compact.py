"""Automatic compaction of small appends: the options, the table properties that keep them,
and the choice of the files one compaction rewrites.

Steady small appends (events every hour, micro-batches) each write files of their own.
Every such file holds rows of the root cube (an append's rows whose weights are below the
root's max weight), so every sample and nearly every filter must open all of them, however
well the appends fit the table's revisions. A table written with ``autoCompact=true``
re-indexes them after the appends that make them many: the client write paths
(``qc.write``, ``qc.writer(...).save``, the streaming batch writer) run one compaction as a
commit of its own after such an append (:mod:`qbeast_connect.spark.auto_compact`), and the
``format("qbeast")`` data source's commit does the same in its own process
(``server_plugin.compaction``, capped in rows: ``files_to_compact(max_rows=...)``).

The policy, pure: **size tiers** (as an LSM tree's size-tiered compaction).

* A **run** is the set of files one write put in the table: the plugin's writer names the
  files of a write ``run-<id>-<uuid>.parquet``, ``<id>`` the first 12 hex digits of the
  write's ``txnId`` (:func:`run_id_of`), so a write's files are one run (an append, a
  compaction, the first write). A file of another name (written by an older version, by
  ``format("qbeast")`` or another tool) is a run of its own.
* A run is **eligible** when its files belong to indexed revisions the latest revision
  covers (so its rows are indexed into the latest revision without widening it), or are
  staging files whose statistics prove their rows inside its space, and it holds fewer
  than ``autoCompactMinFileSize`` bytes (bigger runs are never rewritten).
* A run's **tier** is ``floor(log_k(bytes))`` with fan-out ``k = autoCompactMinNumFiles``:
  runs of a tier differ in size by less than ``k`` times.
* A compaction is **due** when a tier holds at least ``k`` eligible runs: the lowest such
  tier's runs are merged into one run (``k`` or more times the smallest of them, so a tier
  up), and when that run completes the next tier's ``k`` runs, those join it (a cascade),
  in one commit with ``dataChange: false``.

Every rewrite of a row moves it at least one tier up, and a table of ``n`` bytes has
``log_k(n)`` tiers, so over ``n`` appends each row is rewritten ``O(log n)`` times (about
``log_k(n / append)`` times: 3.04 per row over 1,000 equal appends at ``k = 4``,
``tests/unit/test_auto_compact.py``), never the whole table at every compaction. At most
``k - 1`` runs per tier stay uncompacted, each a tree of its own whose top every sample
opens. A compaction's run is cut by weight band down to ``cubeSize / 32`` rows
(:func:`qbeast_connect.index.layout.compaction_top_rows`), so a sample of fraction ``f``
opens about ``2 f`` of each merged run, not the whole run. Tables created by this version
store ``qbeast.autoCompact=true``; a table without the property (created before) is not
compacted unless a write sets it.

On a time-partitioned table (``partitionBy``) each partition is a tree of its own, so the
tiers are counted per partition (its directory): a compaction merges the full tiers of
every partition that has one, each partition's rows into its own tree, in one commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.block import IndexFile
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.rules.time_partitioning import PARTITIONING_KEY

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
    "RUN_FILE_PREFIX",
    "AutoCompactSettings",
    "AutoCompaction",
    "Run",
    "auto_compact_properties",
    "covers",
    "created_configuration",
    "eligible_runs",
    "files_to_compact",
    "run_file_name",
    "run_id_of",
    "run_key",
    "runs_to_merge",
    "settings_of",
    "stored_configuration",
    "tier_of",
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

#: Runs below this many bytes are compacted (32 MiB: a quarter of Delta's target file
#: size); bigger runs are never rewritten, so a compaction rewrites at most about
#: ``k x 32 MiB``.
MIN_FILE_SIZE_DEFAULT = 32 * 1024 * 1024
#: The fan-out ``k``: a compaction is due when a size tier holds this many runs
#: (``docs/quickstart.md#automatic-compaction`` gives the measurements behind 4).
MIN_NUM_FILES_DEFAULT = 4

#: ``commitInfo.tags`` key that marks a compaction's commit as automatic.
AUTO_COMMIT_TAG = "qbeast.autoCompaction"
#: The file-name prefix of the files of one write (:func:`run_file_name`).
RUN_FILE_PREFIX = "run-"


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


def created_configuration(configuration: Mapping[str, str]) -> dict[str, str]:
    """The configuration a write that creates a table commits: automatic compaction on
    unless the write's options say otherwise (tables created before keep what they have:
    without the property, :func:`settings_of` reads it as off)."""
    if AUTO_COMPACT_KEY in configuration:
        return dict(configuration)
    return {**configuration, AUTO_COMPACT_KEY: "true"}


def run_id_of(txn_id: str) -> str | None:
    """The run id of the files of the write ``txn_id`` (its first 12 hex digits); None
    when it has fewer."""
    digits = "".join(c for c in txn_id.lower() if c in "0123456789abcdef")
    return digits[:12] if len(digits) >= 12 else None


def run_file_name(run_id: str, unique: str) -> str:
    """The name of a file of the run ``run_id`` (``unique``: the file's own id)."""
    return f"{RUN_FILE_PREFIX}{run_id}-{unique}.parquet"


def run_key(path: str) -> str:
    """The run a file belongs to: ``run-<id>`` for a file named after its write, else the
    file's own path (a run of its own). A run's files stay in one partition
    directory, which the key keeps."""
    directory, _, name = path.rpartition("/")
    if name.startswith(RUN_FILE_PREFIX):
        run_id, dash, _rest = name[len(RUN_FILE_PREFIX) :].partition("-")
        if dash and run_id:
            return f"{directory}/{RUN_FILE_PREFIX}{run_id}" if directory else f"run-{run_id}"
    return path


@dataclass(frozen=True)
class Run:
    """An eligible run: its key (:func:`run_key`), its files, their bytes and the rows a
    read of them returns."""

    key: str
    paths: tuple[str, ...]
    size: int
    rows: int = 0


def tier_of(size: int, fanout: int) -> int:
    """``floor(log_fanout(size))`` in integers (0 below ``fanout`` bytes)."""
    fanout = max(2, fanout)
    tier = 0
    while size >= fanout:
        size //= fanout
        tier += 1
    return tier


def eligible_runs(
    snapshot: QbeastSnapshot,
    settings: AutoCompactSettings,
    file_stats: Mapping[str, Any] | None = None,
) -> list[Run]:
    """The runs a compaction may rewrite (module docstring), by key.

    With ``file_stats`` (each file's Delta statistics by path, logical column names), the
    staging files (revision 0: converted data, or files another Delta writer appended)
    whose statistics prove every row inside the latest revision's space are eligible too:
    the compaction indexes their rows into that revision (:func:`stats_inside_space`)."""
    latest = snapshot.latest_revision
    if latest is None:
        return []
    covered = {
        rid for rid, revision in snapshot.revisions.items() if rid > 0 and covers(latest, revision)
    }

    def staging_fits(f: IndexFile) -> bool:
        return (
            file_stats is not None
            and f.revision_id == 0
            and not latest.is_staging
            and stats_inside_space(latest, file_stats.get(f.path))
        )

    grouped: dict[str, list[IndexFile]] = {}
    excluded: set[str] = set()
    for f in snapshot.files:
        key = run_key(f.path)
        if (f.revision_id in covered and f.blocks) or staging_fits(f):
            grouped.setdefault(key, []).append(f)
        else:
            excluded.add(key)
    runs = []
    for key, files in sorted(grouped.items()):
        size = sum(f.size for f in files)
        if key not in excluded and size < settings.min_file_size:
            rows = sum(f.live_rows for f in files)
            runs.append(Run(key, tuple(f.path for f in files), size, rows))
    return runs


def runs_to_merge(runs: Sequence[Run], fanout: int, max_rows: int | None = None) -> tuple[Run, ...]:
    """The runs one compaction merges: the lowest tier holding ``fanout`` runs, then each
    next tier the merged run completes to ``fanout`` runs; none when no tier is full.

    ``max_rows`` caps the rows merged (a writer that holds them in one task): the cascade
    stops below the cap, and a lowest full tier over it merges nothing."""
    fanout = max(2, fanout)
    cap = max_rows if max_rows is not None else float("inf")
    tiers: dict[int, list[Run]] = {}
    for run in runs:
        tiers.setdefault(tier_of(run.size, fanout), []).append(run)
    full = sorted(t for t, members in tiers.items() if len(members) >= fanout)
    if not full or sum(r.rows for r in tiers[full[0]]) > cap:
        return ()
    tier = full[0]
    chosen = list(tiers[tier])
    size = sum(r.size for r in chosen)
    rows = sum(r.rows for r in chosen)
    while True:
        up = tier_of(size, fanout)
        if up <= tier or len(tiers.get(up, ())) + 1 < fanout:
            break
        if rows + sum(r.rows for r in tiers[up]) > cap:
            break
        chosen.extend(tiers[up])
        size += sum(r.size for r in tiers[up])
        rows += sum(r.rows for r in tiers[up])
        tier = up
    return tuple(chosen)


def files_to_compact(
    snapshot: QbeastSnapshot,
    settings: AutoCompactSettings,
    max_rows: int | None = None,
    file_stats: Mapping[str, Any] | None = None,
) -> Sequence[str]:
    """The files a compaction rewrites now: the files of :func:`runs_to_merge` over the
    eligible runs, when automatic compaction is on; else none.

    Only indexed files whose revision the latest revision covers count (and, with
    ``file_stats``, staging files whose statistics put them inside its space), so the rows
    are indexed into the latest revision and no compaction opens a revision.
    """
    if not settings.enabled:
        return ()
    runs = eligible_runs(snapshot, settings, file_stats)
    partitioned = PARTITIONING_KEY in snapshot.configuration
    chosen = [
        run
        for group in _partition_groups(runs, partitioned)
        for run in runs_to_merge(group, settings.min_num_files, max_rows)
    ]
    return tuple(p for run in chosen for p in run.paths)


def _partition_groups(runs: Sequence[Run], partitioned: bool) -> list[list[Run]]:
    """The runs whose tiers are counted together: all of them, or on a time-partitioned
    table those of each partition directory (a partition is a tree of its own, and runs of
    two partitions merged would stay two runs)."""
    if not partitioned:
        return [list(runs)]
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.key.rpartition("/")[0], []).append(run)
    return [groups[directory] for directory in sorted(groups)]


def staging_file_stats(
    snapshot: QbeastSnapshot,
    adds: Sequence[Mapping[str, Any]],
    configuration: Mapping[str, str],
    schema: object,
) -> dict[str, Any] | None:
    """The ``file_stats`` :func:`files_to_compact` needs: the staging files' statistics only
    (``stats_by_path``), None when the table has none, so an append's compaction check
    parses no statistics of indexed files."""
    from qbeast_connect.planning.file_planner import stats_by_path

    staging = {f.path for f in snapshot.files if f.revision_id == 0}
    if not staging:
        return None
    return stats_by_path([a for a in adds if a.get("path") in staging], configuration, schema)


def stats_inside_space(latest: Revision, raw_stats: object) -> bool:
    """Whether a file's Delta statistics prove every row inside ``latest``'s space: each
    indexed column hashed (every value has a place), or linear with its minimum and maximum
    inside the column's range (dates and timestamps in epoch milliseconds, as the index
    normalizes them; a column of NULLs only fits too). False whenever the statistics do
    not tell: a column without them, of another transformation, a NaN."""
    from qbeast_connect.model.transformation import HashTransformation, LinearTransformation
    from qbeast_connect.planning.file_planner import numeric_range, parse_stats

    stats = parse_stats(raw_stats)
    if stats is None:
        return False
    for name, transformation in zip(latest.column_names, latest.transformations, strict=True):
        if isinstance(transformation, HashTransformation):
            continue
        if not isinstance(transformation, LinearTransformation):
            return False
        found = numeric_range(stats, name) or _time_range_ms(stats, name)
        if found is None:
            return False
        low, high = found
        if low > high:  # every value NULL
            continue
        if low < transformation.min_number or high > transformation.max_number:
            return False
    return True


def _time_range_ms(stats: Mapping[str, Any], column: str) -> tuple[float, float] | None:
    """A date or timestamp column's range in epoch milliseconds (as the index normalizes
    them) from its statistics; None when they are not such text."""
    from qbeast_connect.planning.file_planner import stats_value, time_stat_micros

    low = time_stat_micros(stats_value(stats.get("minValues"), column))
    high = time_stat_micros(stats_value(stats.get("maxValues"), column))
    if low is None or high is None:
        return None
    # instants are floored to the millisecond in the statistics, as in the index
    return (float(low[0] // 1000), float(high[0] // 1000))
