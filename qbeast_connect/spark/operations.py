"""Table operations over Spark Connect: the jobs of optimize, convert to qbeast, vacuum.

This is transport: it runs plugin commands and rewrite jobs on data it is given (a
session, a location, a snapshot, the rows to rewrite) and returns what they did. Deciding
what to optimize is the API's (:meth:`qbeast_connect.table.QbeastTable.optimize`).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.column_spec import parse_columns_to_index
from qbeast_connect.options import CUBE_SIZE_DEFAULT, parse_write_options
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.rules.time_partitioning import partitioning_of
from qbeast_connect.spark.commits import find_commit
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.formats import COMMAND_FORMAT, WRITE_FORMAT
from qbeast_connect.spark.location import table_location
from qbeast_connect.spark.storage_options import with_storage_options
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession

    from qbeast_connect.model.revision import Revision
    from qbeast_connect.model.snapshot import QbeastSnapshot
    from qbeast_connect.options import WriteOptions
    from qbeast_connect.spark.write import WriteResult


@dataclass(frozen=True)
class OptimizeResult:
    """What an optimize did.

    Attributes:
        version: the committed version (None when there was nothing to rewrite).
        revision_id: the revision optimized (0 = the staging area).
        removed_files: files replaced.
        added_files: files written.
        rows: rows rewritten.
    """

    version: int | None
    revision_id: int
    removed_files: int
    added_files: int
    rows: int


def run_command(spark: SparkSession, command: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run a plugin command and return its decoded result payloads."""
    reader = with_storage_options(spark.read.format(COMMAND_FORMAT), spark)
    reader = reader.option("command", json.dumps(dict(command)))
    with translate_errors():
        rows = reader.load().collect()
    return [json.loads(r["payload"]) for r in rows if r["kind"] == "result"]


def convert_to_qbeast(
    spark: SparkSession,
    path: str,
    columnsToIndex: str,  # noqa: N803 - qbeast-spark names
    cubeSize: int = CUBE_SIZE_DEFAULT,  # noqa: N803
    sourceFormat: str = "parquet",  # noqa: N803
    **properties: str,
) -> int:
    """Make a parquet directory or a Delta table at ``path`` a qbeast table.

    The data files are not rewritten: they become the staging area (revision 0), which is
    read and sampled in full until ``QbeastTable.optimize(0)`` indexes it. Later appends
    are indexed at once. Converting a qbeast table is a no-op.

    Args:
        spark: the session.
        path: the directory.
        columnsToIndex: the columns later writes index (``"a,b"``).
        cubeSize: desired rows per cube.
        sourceFormat: ``parquet`` (a directory of parquet files) or ``delta``.
        **properties: table properties to store.

    Returns:
        The table version after the conversion.

    Raises:
        InvalidOptionError: a partitioned source, unknown columns, mixed file schemas.
        TableNotFoundError: nothing to convert at ``path``.
    """
    parse_columns_to_index(columnsToIndex)
    if isinstance(cubeSize, bool) or not isinstance(cubeSize, int) or cubeSize <= 0:
        raise InvalidOptionError(f"cubeSize must be a positive integer, got {cubeSize!r}")
    if not isinstance(sourceFormat, str) or sourceFormat.lower() not in ("parquet", "delta"):
        raise InvalidOptionError(
            f"sourceFormat must be 'parquet' or 'delta', got {sourceFormat!r}"
        )
    result = run_command(
        spark,
        {
            "command": "convert",
            "path": table_location(spark, path),
            "columnsToIndex": columnsToIndex,
            "cubeSize": cubeSize,
            "sourceFormat": sourceFormat,
            "properties": properties,
        },
    )
    return int(result[0]["version"])


def vacuum(
    spark: SparkSession,
    path: str,
    retentionHours: float = 168,  # noqa: N803
    dryRun: bool = False,  # noqa: N803
    enforceRetentionDuration: bool = True,  # noqa: N803
) -> list[str]:
    """Delete unreferenced files older than the retention; return their paths."""
    if (
        isinstance(retentionHours, bool)
        or not isinstance(retentionHours, int | float)
        or not math.isfinite(retentionHours)
        or retentionHours < 0
    ):
        raise InvalidOptionError(
            f"retentionHours must be a finite number of hours >= 0, got {retentionHours!r}; "
            "e.g. vacuum(168) keeps one week of removed files"
        )
    for name, flag in (("dryRun", dryRun), ("enforceRetentionDuration", enforceRetentionDuration)):
        if not isinstance(flag, bool):
            raise InvalidOptionError(f"{name} must be True or False, got {flag!r}")
    result = run_command(
        spark,
        {
            "command": "vacuum",
            "path": path,
            "retentionHours": retentionHours,
            "dryRun": dryRun,
            "enforceRetentionDuration": enforceRetentionDuration,
        },
    )
    return list(result[0]["files"])


def check_optimize_arguments(
    revisionID: object,  # noqa: N803
    fraction: object,
    files: object,
    options: object,
) -> None:
    """Refuse bad :meth:`QbeastTable.optimize` arguments before anything asks Spark.

    Raises:
        InvalidOptionError: an argument has the wrong type or range.
    """
    if (
        isinstance(fraction, bool)
        or not isinstance(fraction, int | float)
        or not 0.0 < fraction <= 1.0  # also false for NaN
    ):
        raise InvalidOptionError(f"fraction must be a number in (0, 1], got {fraction!r}")
    if revisionID is not None and (isinstance(revisionID, bool) or not isinstance(revisionID, int)):
        raise InvalidOptionError(
            f"revisionID must be a revision id (an int, 0 for the staging area), got {revisionID!r}"
        )
    if options is not None and not isinstance(options, Mapping):
        raise InvalidOptionError(
            f"options must be a mapping such as {{'userMetadata': 'nightly'}}, got {options!r}"
        )
    if isinstance(files, str):
        raise InvalidOptionError(
            f"files must be a list of file paths, got the string {files!r}; wrap it in a list"
        )


def rewrite_files(
    spark: SparkSession,
    source: DataFrame,
    table_path: str,
    read_version: int,
    snapshot: QbeastSnapshot,
    revision_id: int,
    paths: list[str],
    opts: WriteOptions,
    adds: Sequence[Mapping[str, Any]] = (),
    *,
    change: tuple[str, Mapping[str, str]] | None = None,
) -> OptimizeResult:
    """Re-assign the rows of ``paths`` (read as ``source``) with the revision's current cube
    max weights and write them laid out by weight band and cube (one shuffle), in one commit.

    Like qbeast-spark's, the commit is a Delta ``WRITE`` in mode ``Append`` whose file
    actions all have ``dataChange: false`` (spec §1.6); there is no ``OPTIMIZE`` operation.

    With ``change`` (operation, operation parameters), ``source`` is the rows of ``paths``
    that a row-level change keeps (a ``DELETE``'s survivors): the commit is that operation,
    with ``dataChange: true``, ``opts``' ``txnAppId``/``txnVersion``, and ``rows`` counts
    the rows written. Each row keeps its weight and goes back to its cube (or a descendant,
    if its cube filled since), and the files keep their weight bands, as optimize's do."""
    from pyspark.sql import functions as F

    from qbeast_connect.index.layout import FileLayout, plan_layout, segments_from_blocks
    from qbeast_connect.spark.time_partitions import partition_trees_of
    from qbeast_connect.spark.write import group_by_file

    if not paths:
        return OptimizeResult(None, revision_id, 0, 0, 0)
    revision = snapshot.revisions[revision_id]
    statuses = snapshot.cube_statuses(revision_id)
    weights = {str(c): int(s.max_weight) for c, s in statuses.items()}
    wanted = set(paths)
    files = snapshot.files_of(revision_id)
    blocks = [b for f in files if f.path in wanted for b in f.blocks]
    rows = sum(b.element_count for b in blocks)
    # the weight bands of the whole revision: the rows rewritten keep the band edges of the
    # files they join, so a sample reads the same share of them as of the files kept
    revision_rows = sum(b.element_count for f in files for b in f.blocks)
    context = [b for f in files if f.path not in wanted for b in f.blocks]
    segments = segments_from_blocks(blocks, context)
    layout = plan_layout(segments, revision.desired_cube_size, revision_rows)
    partitioning = partitioning_of(snapshot.configuration)
    trees = None
    if partitioning is not None:
        # every partition is re-indexed with its own tree (spark.time_partitions)
        trees = partition_trees_of(adds, snapshot, revision_id, partitioning.column, wanted)
        weights, layout = {}, FileLayout.single()
    names = list(revision.column_names)
    weighted = source.select(
        "*", F.hash(*[F.col(quote_identifier(n)) for n in names]).alias(WEIGHT_COLUMN)
    )
    grouped = group_by_file(weighted, revision, weights, layout, trees, partitioning)
    plan = WritePlan(
        table_path=table_path,
        mode="append",
        read_version=read_version,
        revision_json=revision.to_json(),
        cube_weights=weights,
        layout=layout,
        txn_id=str(uuid.uuid4()),
        user_metadata=opts.user_metadata,
        data_change=change is not None,
        remove_paths=tuple(paths),
        hooks=opts.hooks,
        partitioning=partitioning,
        partition_trees=trees,
    )
    if change is not None:
        operation, parameters = change
        plan = replace(
            plan,
            operation=operation,
            operation_parameters=parameters,
            txn_app_id=opts.txn_app_id,
            txn_version=opts.txn_version,
        )
    with translate_errors():
        writer = with_storage_options(grouped.write.format(WRITE_FORMAT), spark)
        writer.option("plan", plan.to_json()).mode("append").save()
    commit = find_commit(spark, table_path, plan.txn_id)
    if commit is None:
        return OptimizeResult(None, revision_id, len(paths), 0, rows)
    written = rows if change is None else commit.num_rows
    return OptimizeResult(commit.version, revision_id, len(paths), commit.num_files, written)


def index_staging(
    source: DataFrame,
    table_path: str,
    latest: Revision,
    paths: list[str],
    opts: WriteOptions,
    target: Revision | None = None,
    *,
    keep_revision: bool = False,
    commit_tags: Mapping[str, str] | None = None,
    known_rows: Sequence[int] | None = None,
) -> OptimizeResult:
    """Index staging files (read as ``source``) like an append (``latest``'s columns and
    cube size) and replace them, in one commit. With ``target`` (a new revision), index
    the rows of ``paths`` into that revision instead (optimize merging revisions). With
    ``keep_revision`` (automatic compaction: files of revisions ``latest`` covers), the
    rows join ``latest``'s tree and nothing is committed if they would need a new
    revision; ``commit_tags`` go to ``commitInfo.tags``; ``known_rows``, the rows of
    each of ``paths`` when the log tells them, stand for the statistics job."""
    from qbeast_connect.spark.write import _Writer

    raw: dict[str, Any] = {
        "columnsToIndex": ",".join(latest.column_names),
        "cubeSize": latest.desired_cube_size,
    }
    if opts.user_metadata is not None:
        raw["userMetadata"] = opts.user_metadata
    for key, value in opts.hooks.items():
        raw[f"qbeastPreCommitHook.{key}"] = value
    result: WriteResult = _Writer(
        source,
        table_path,
        "append",
        parse_write_options(raw),
        remove_paths=tuple(paths),
        data_change=False,
        target=target,
        keep_revision=keep_revision,
        commit_tags=commit_tags,
        known_rows=known_rows,
    ).run()
    if result.skipped:
        return OptimizeResult(None, latest.revision_id, 0, 0, 0)
    return OptimizeResult(
        result.version, result.revision_id or 0, len(paths), result.num_files, result.num_rows
    )
