"""The automatic compaction that follows an append (``autoCompact``; the policy is in
:mod:`qbeast_connect.rules.auto_compact`).

:func:`compact_after_append` runs after an append has committed: it reads the table's
latest state, and when a compaction is due it re-indexes the rows of the small files into
the latest revision with optimize's own job (:func:`~qbeast_connect.spark.operations.index_staging`,
the write pipeline with ``dataChange: false`` that removes the files it read), as one
commit of its own, tagged ``qbeast.autoCompaction`` in ``commitInfo.tags``; its files are
named after its ``txnId``, as every write's, so the next compactions see them as one run of
the size tiers. The write is one Spark job, as a small append's
(:mod:`qbeast_connect.spark.small_append`, ``compaction``: its task also takes rows that
fill cubes), and its files are cut by fine weight bands
(:func:`qbeast_connect.index.layout.compaction_top_rows`). Weights are a
hash of the indexed values, so the rows keep theirs and every sample returns the same rows.

The append has landed whatever happens here: a compaction that loses a conflict with a
concurrent commit gives up at once (the next append tries again), and its result says so.
Any other qbeast error of the compaction (a malformed ``qbeast.autoCompact*`` property, a
file vacuumed meanwhile, ...) is also reported in the result, with a warning, instead of
failing the append.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from qbeast_connect.exceptions import CommitConflictError, QbeastError
from qbeast_connect.options import WriteOptions
from qbeast_connect.rules.auto_compact import (
    AUTO_COMMIT_TAG,
    OPTION_KEYS,
    AutoCompaction,
    files_to_compact,
    settings_of,
    staging_file_stats,
)
from qbeast_connect.spark.files import read_table_files, table_file
from qbeast_connect.spark.operations import index_staging
from qbeast_connect.spark.snapshot import load_table_state

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

    from qbeast_connect.model.snapshot import QbeastSnapshot

__all__ = ["compact_after_append"]


def compact_after_append(
    spark: SparkSession, path: str, configuration: Mapping[str, str]
) -> AutoCompaction | None:
    """Compact the small files of the table at ``path`` if its settings ask for it and a
    compaction is due; None when none ran.

    Args:
        spark: the session of the append.
        path: the table's canonical location.
        configuration: the table configuration the append saw, with its options over it
            (so an append that turns ``autoCompact`` on is compacted at once).

    Returns:
        None when no compaction was due; else what it did, or why it committed nothing
        (``skipped``: ``"conflict"``, or ``"failed: <error>"``).
    """
    try:
        return _compact(spark, path, configuration)
    except CommitConflictError:
        return AutoCompaction(None, skipped="conflict")
    except QbeastError as error:
        warnings.warn(
            f"the automatic compaction after an append to {path} failed (the append is "
            f"committed): {error}",
            UserWarning,
            stacklevel=3,
        )
        return AutoCompaction(None, skipped=f"failed: {error}")


def _compact(
    spark: SparkSession, path: str, configuration: Mapping[str, str]
) -> AutoCompaction | None:
    if not settings_of(configuration).enabled:
        return None
    state = load_table_state(spark, path)
    if not state.exists:
        return None
    given = {k: v for k, v in configuration.items() if k in OPTION_KEYS.values()}
    settings = settings_of({**state.configuration, **given})
    snapshot = state.qbeast()
    latest = snapshot.latest_revision
    schema_text: object = state.schema_string or {}
    stats = staging_file_stats(snapshot, state.adds, state.configuration, schema_text)
    paths = list(files_to_compact(snapshot, settings, file_stats=stats))
    if latest is None or not paths or state.schema_string is None:
        return None
    from pyspark.sql.types import StructType

    adds = {str(a.get("path")): a for a in state.adds}
    files = [table_file(adds[p]) for p in paths]
    schema = StructType.fromJson(json.loads(state.schema_string))
    source = read_table_files(spark, state.path, schema, files, state.configuration)
    result = index_staging(
        source,
        state.path,
        latest,
        paths,
        WriteOptions(),
        keep_revision=True,
        commit_tags={AUTO_COMMIT_TAG: "true"},
        known_rows=_known_rows(snapshot, paths),
    )
    if result.version is None:
        return AutoCompaction(None, skipped="the rows do not fit the latest revision's space")
    return AutoCompaction(result.version, result.removed_files, result.added_files, result.rows)


def _known_rows(snapshot: QbeastSnapshot, paths: list[str]) -> tuple[int, ...] | None:
    """The rows of each of ``paths`` by the log (blocks' element counts or ``numRecords``,
    less deleted rows); None when a file's count is not recorded (a staging file without
    statistics): then the write counts them with its statistics job."""
    chosen = set(paths)  # files of the snapshot (files_to_compact chose them there)
    files = [f for f in snapshot.files if f.path in chosen]
    if any(f.num_records is None and f.is_staging for f in files):
        return None
    return tuple(f.live_rows for f in files)
