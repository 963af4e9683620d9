"""``QbeastTable``: read, sample, filter and inspect a qbeast table from a Connect client.

A ``QbeastTable`` is a snapshot value: it holds the table state at one version, fetched
through the server plugin in one small query. Reads plan the files to open on the client
with the index (and Delta statistics) and return an ordinary DataFrame over exactly those
files, so ``DataFrame.inputFiles()`` shows what the index selected.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import (
    InvalidOptionError,
    NotAQbeastTableError,
    TableNotFoundError,
)
from qbeast_connect.model.block import IndexFile
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.optimize import merge_revisions, run_optimize
from qbeast_connect.paths import resolve_table_file
from qbeast_connect.planning.file_planner import (
    ScanPlan,
    plan_files,
    rows_inside_band,
    stats_by_path,
    validate_fraction,
)
from qbeast_connect.planning.predicate import Predicate, from_sql
from qbeast_connect.spark.balance import balanced_column
from qbeast_connect.spark.columns import from_column, session_time_zone
from qbeast_connect.spark.files import (
    SPARK_READER,
    answer_input_files,
    read_table_files,
    reader_for,
    table_file,
)
from qbeast_connect.spark.operations import OptimizeResult, check_optimize_arguments
from qbeast_connect.spark.snapshot import (
    TableState,
    check_version_argument,
    load_history,
    load_table_state,
)
from qbeast_connect.spark.time_partitions import partition_files

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.types import StructType

    from qbeast_connect.approx import ApproxResult
    from qbeast_connect.merge import QbeastMergeBuilder
    from qbeast_connect.metrics import IndexMetrics
    from qbeast_connect.row_changes import RowChangeResult


@dataclass(frozen=True)
class ScanExplanation:
    """What a read will open, compared with the whole table.

    Attributes:
        plan: the file plan (selected files, per-revision details).
        files: absolute paths of the files to read.
        reader: what opens them: ``"spark-parquet"`` (Spark's parquet reader) or
            ``"qbeast-plugin"`` (the plugin reads them with pyarrow, for object stores the
            server's Spark cannot open; see :mod:`qbeast_connect.spark.files`).
    """

    plan: ScanPlan
    files: tuple[str, ...]
    reader: str = "spark-parquet"

    @property
    def selected_files(self) -> int:
        """Files the read opens."""
        return len(self.plan.files)

    @property
    def total_files(self) -> int:
        """Files in the table."""
        return self.plan.total_files

    @property
    def selected_bytes(self) -> int:
        """Bytes of the files the read opens."""
        return self.plan.selected_bytes

    @property
    def total_bytes(self) -> int:
        """Bytes of all files in the table."""
        return self.plan.total_bytes

    @property
    def selected_rows(self) -> int:
        """Rows stored in the selected files (from their statistics or blocks)."""
        return sum(f.live_rows for f in self.plan.files)

    def __str__(self) -> str:
        share = self.selected_bytes / self.total_bytes if self.total_bytes else 0.0
        lines = [
            f"files: {self.selected_files} of {self.total_files}, bytes: "
            f"{self.selected_bytes:,} of {self.total_bytes:,} ({share:.1%})",
            f"skipped by the qbeast index: {self.plan.skipped_by_index}, "
            f"by Delta statistics: {self.plan.skipped_by_stats}",
            f"read by: {self.reader}",
        ]
        for rev in self.plan.per_revision:
            how = "index" if rev.indexed else "full"
            cubes = "" if rev.selected_cubes is None else f", cubes {rev.selected_cubes}"
            lines.append(
                f"  revision {rev.revision_id} ({how}): {rev.selected_files} of "
                f"{rev.total_files} files{cubes}"
            )
            if rev.revision_id == 0 and rev.selected_files:
                lines.append(
                    "    outside the index (no qbeast tags: staged, or written by Delta's own "
                    "DML/OPTIMIZE): read whole; optimize(0) indexes them"
                )
        return "\n".join(lines)


class QbeastTable:
    """A qbeast (or plain Delta) table at one version.

    Create it with :meth:`forPath`; it never changes afterwards (:meth:`refresh` returns a
    new one).

    Example:
        >>> t = QbeastTable.forPath(spark, "/data/events")  # doctest: +SKIP
        >>> t.sample(0.01).count()  # doctest: +SKIP
    """

    def __init__(self, spark: SparkSession, path: str, state: TableState) -> None:
        self._spark = spark
        self._path = path
        self._state = state
        self._qbeast = state.qbeast()
        #: the name ``merge`` conditions call the table by (:meth:`alias`)
        self._alias: str | None = None

    # -- construction ----------------------------------------------------------------

    @classmethod
    def forPath(  # noqa: N802 - PySpark naming
        cls,
        spark: SparkSession,
        path: str,
        *,
        versionAsOf: int | None = None,  # noqa: N803
    ) -> QbeastTable:
        """Load the table at ``path`` (latest version, or ``versionAsOf``).

        Raises:
            TableNotFoundError: no Delta table at ``path``.
        """
        state = load_table_state(spark, path, version=versionAsOf)
        if not state.exists:
            raise TableNotFoundError(
                f"no table at {state.path}: write one with qbeast_connect.write(df, path, ...)"
            )
        return cls(spark, state.path, state)

    @classmethod
    def forName(  # noqa: N802 - DeltaTable's name
        cls,
        spark: SparkSession,
        tableOrViewName: str,  # noqa: N803
        *,
        versionAsOf: int | None = None,  # noqa: N803
    ) -> QbeastTable:
        """Load the table the server's catalog names ``tableOrViewName`` (created with
        ``CREATE TABLE name USING qbeast LOCATION '<path>'``, or a Delta table).

        Raises:
            TableNotFoundError: no such table in the catalog, or one without a location.
        """
        from qbeast_connect.spark.location import catalog_table_location

        location = catalog_table_location(spark, tableOrViewName)
        return cls.forPath(spark, location, versionAsOf=versionAsOf)

    def refresh(self) -> QbeastTable:
        """Return this table at its latest version."""
        return QbeastTable.forPath(self._spark, self._path)

    # -- basic information -----------------------------------------------------------

    @property
    def path(self) -> str:
        """The table location, canonical: relative paths resolved (see ``qbeast_connect.paths``)."""
        return self._path

    def version(self) -> int:
        """The Delta version this object describes."""
        return self._state.version

    @property
    def schema(self) -> StructType:
        """The table schema."""
        from pyspark.sql.types import StructType

        text = self._state.schema_string
        if text is None:
            raise TableNotFoundError(f"the table at {self._path} has no schema")
        return StructType.fromJson(json.loads(text))

    @property
    def snapshot(self) -> QbeastSnapshot:
        """The qbeast view of the log: revisions, index files, cube statuses."""
        return self._qbeast

    def properties(self) -> Mapping[str, str]:
        """Table properties (``metaData.configuration`` without the revision entries)."""
        return self._qbeast.table_properties()

    def _require_qbeast(self) -> None:
        if not self._qbeast.is_qbeast:
            raise NotAQbeastTableError(
                f"the table at {self._path} has no qbeast metadata: convert it with "
                "qbeast_connect.convertToQbeast(...)"
            )

    def revisionIDs(self) -> list[int]:  # noqa: N802
        """Ids of every revision of the table, ascending."""
        self._require_qbeast()
        return sorted(self._qbeast.revisions)

    def allRevisionIDs(self) -> list[int]:  # noqa: N802 - qbeast-spark name
        """Same as :meth:`revisionIDs` (qbeast-spark's name)."""
        return self.revisionIDs()

    def lastRevisionID(self) -> int:  # noqa: N802
        """Id of the latest revision."""
        self._require_qbeast()
        return self._qbeast.last_revision_id

    def latestRevisionID(self) -> int:  # noqa: N802 - qbeast-spark name
        """Same as :meth:`lastRevisionID` (qbeast-spark's name)."""
        return self.lastRevisionID()

    def revision(self, revisionID: int | None = None) -> Revision:  # noqa: N803
        """The revision with this id (default: the latest)."""
        self._require_qbeast()
        rid = self._qbeast.last_revision_id if revisionID is None else revisionID
        found = self._qbeast.revisions.get(rid)
        if found is None:
            raise InvalidOptionError(
                f"revision {rid} does not exist; revisions are {self.revisionIDs()}"
            )
        return found

    @property
    def latestRevision(self) -> Revision:  # noqa: N802
        """The latest revision."""
        return self.revision()

    def allRevisions(self) -> list[Revision]:  # noqa: N802
        """Every revision, by id."""
        return [self.revision(r) for r in self.revisionIDs()]

    def indexedColumns(self, revisionID: int | None = None) -> list[str]:  # noqa: N802, N803
        """Indexed column names of a revision (default: the latest)."""
        return list(self.revision(revisionID).column_names)

    def cubeSize(self, revisionID: int | None = None) -> int:  # noqa: N802, N803
        """Desired cube size (rows) of a revision (default: the latest)."""
        return self.revision(revisionID).desired_cube_size

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The table's commits (``commitInfo`` with ``version``), newest first."""
        return load_history(self._spark, self._path, limit)

    def getIndexMetrics(self, revisionID: int | None = None) -> IndexMetrics:  # noqa: N802, N803
        """Index metrics of a revision (default: the latest); see :class:`IndexMetrics`."""
        from qbeast_connect.metrics import compute_index_metrics

        revision = self.revision(revisionID)
        return compute_index_metrics(self._qbeast, revision.revision_id, self._file_stats)

    # -- pictures and notebooks --------------------------------------------------------

    def plot(
        self,
        revisionID: int | None = None,  # noqa: N803
        fraction: float | None = None,
        where: Column | str | None = None,
        path: str | None = None,
        color_by: str = "max_weight",
    ) -> Any:
        """Draw the OTree of a revision (default: the latest) with matplotlib.

        With ``fraction`` and/or ``where``, the cubes a :meth:`read` with those arguments
        would open are outlined in red. Needs matplotlib (``pip install
        'qbeast-connect[viz]'``). See :func:`qbeast_connect.viz.plot_index`.

        Args:
            revisionID: the revision to draw.
            fraction: a sample fraction in (0, 1] to highlight.
            where: a filter (SQL string or Column) to highlight.
            path: also save the picture there as PNG.
            color_by: ``"max_weight"`` or ``"element_count"``.

        Returns:
            The matplotlib ``Figure`` (notebooks display it).
        """
        from qbeast_connect.viz import plot_index, selected_cubes_for

        revision = self.revision(revisionID)
        selected = None
        if fraction is not None or where is not None:
            selected = selected_cubes_for(
                self._qbeast,
                revision.revision_id,
                self._predicate(where),
                fraction,
                schema=self._state.schema_string or {},
                time_zone=session_time_zone(self._spark),
            )
        return plot_index(
            self._qbeast,
            revision.revision_id,
            selected_cubes=selected,
            color_by=color_by,  # type: ignore[arg-type]
            path=path,
        )

    def summary(self) -> dict[str, object]:
        """Path, version, revisions, indexed columns, cube size, files and bytes."""
        files = self._qbeast.files
        out: dict[str, object] = {"path": self._path, "version": self._state.version}
        if self._qbeast.is_qbeast:
            latest = self.latestRevision
            out["revisions"] = self.revisionIDs()
            out["indexed columns"] = latest.columns_to_index or ", ".join(latest.column_names)
            out["cube size"] = f"{latest.desired_cube_size:,}"
        else:
            out["revisions"] = "none (not a qbeast table)"
        out["files"] = len(files)
        out["staging files"] = sum(1 for f in files if f.is_staging)
        out["bytes"] = f"{sum(f.size for f in files):,}"
        out["rows"] = f"{sum(f.live_rows for f in files):,}"
        return out

    def _repr_html_(self) -> str:
        """A summary table for notebooks."""
        from qbeast_connect.viz import table_html

        return table_html(self.summary(), title="QbeastTable")

    def __repr__(self) -> str:
        return f"QbeastTable(path={self._path!r}, version={self._state.version})"

    # -- maintenance -----------------------------------------------------------------

    def optimize(
        self,
        revisionID: int | None = None,  # noqa: N803
        fraction: float = 1.0,
        files: Sequence[str] | None = None,
        options: Mapping[str, str] | None = None,
        mergeRevisions: bool | Sequence[int] = False,  # noqa: N803
        *,
        partition: str | None = None,
    ) -> OptimizeResult:
        """Rewrite files so that they follow the index, in one commit.

        For an indexed revision (default: the latest) the rows of its files are assigned
        again with the revision's current cube max weights (rows appended above a cube's
        weight move down to its children) and written in files of about ``cubeSize`` rows,
        by weight band and then by runs of neighbouring cubes (see
        :mod:`qbeast_connect.index.layout`); the old files are removed. ``optimize(0)`` indexes
        the staging area (files without qbeast tags) into the latest revision, like an
        append. Every row is kept exactly; ``dataChange`` is false on all file actions.

        Args:
            revisionID: the revision to optimize; 0 for the staging area.
            fraction: optimize only files holding blocks whose lowest weight is within this
                sample fraction (the top of the tree); for the staging area, the oldest
                files up to this share of its bytes.
            files: optimize exactly these files (relative paths from the log) instead.
            options: ``userMetadata`` and ``qbeastPreCommitHook.*`` options.
            mergeRevisions: ``True`` (every indexed revision holding files) or a list of
                revision ids: re-index the rows of those revisions into one new revision
                whose space is the union of theirs, and remove their files, in one commit
                (:mod:`qbeast_connect.model.revision_merge`). Fewer than two revisions
                holding files is a no-op. Not combined with the other arguments.
            partition: for a time-partitioned table (``partitionBy``), optimize exactly the
                files of this partition (its canonical string, e.g. ``2024-01-02``); the
                rewritten rows stay in it.

        Returns:
            An :class:`OptimizeResult`. Like ``DeltaTable``'s operations, optimize acts on
            the latest version of the table, whatever version this object describes, so
            calls on one object compose (``optimize(1)`` then ``optimize(2)``) and see
            commits made through other objects or processes. The object itself is not
            changed: use :meth:`refresh` to read the new version.
        """
        check_optimize_arguments(revisionID, fraction, files, options)
        if mergeRevisions is not False:
            if revisionID is not None or files is not None or fraction != 1.0 or partition:
                raise InvalidOptionError(
                    "optimize(mergeRevisions=...) merges whole revisions: give it without "
                    "revisionID, fraction, files or partition"
                )
            return merge_revisions(self.refresh(), mergeRevisions, options)
        table = self.refresh()
        if partition is not None:
            if files is not None:
                raise InvalidOptionError("give files or partition to optimize, not both")
            files = partition_files(table._state, partition)
        return run_optimize(table, revisionID, fraction, files, options)

    def vacuum(
        self,
        retentionHours: float = 168,  # noqa: N803
        dryRun: bool = False,  # noqa: N803
        enforceRetentionDuration: bool = True,  # noqa: N803
    ) -> list[str]:
        """Delete files no longer referenced by the table and older than the retention.

        A file the table references, or that a version within the retention still
        references, is never deleted; neither is a file younger than the retention (it may
        belong to a write that has not committed yet).

        Args:
            retentionHours: keep files removed less than this many hours ago.
            dryRun: only list what would be deleted.
            enforceRetentionDuration: refuse a retention shorter than the table's
                ``delta.deletedFileRetentionDuration`` (one week by default).

        Returns:
            Paths (relative to the table root) deleted, or that would be deleted.
        """
        from qbeast_connect.spark.operations import vacuum

        return vacuum(self._spark, self._path, retentionHours, dryRun, enforceRetentionDuration)

    # -- reading ---------------------------------------------------------------------

    def delete(
        self, condition: Column | str | None = None, options: Mapping[str, str] | None = None
    ) -> RowChangeResult:
        """Delete the rows ``condition`` (SQL text, a Column; None: all) is TRUE for, in one
        ``DELETE`` commit that keeps the index (``DeltaTable.delete``; how:
        :mod:`qbeast_connect.row_changes`). ``options``: write options (``userMetadata``,
        ``txnAppId``/``txnVersion``). Runs on the latest version. The result's ``version``
        is None when no row matched. Raises ``UnsupportedOperationError`` on a partitioned
        table, ``CommitConflictError`` when a file it rewrites changed meanwhile.
        """
        from qbeast_connect.row_changes import delete_rows

        return delete_rows(self.refresh(), condition, options)

    def update(
        self,
        condition: Column | str | None = None,
        set: Mapping[str, Column | str] | None = None,
        options: Mapping[str, str] | None = None,
    ) -> RowChangeResult:
        """Set columns of the rows ``condition`` is TRUE for (``DeltaTable.update``): ``set``
        maps a column to SQL text or a Column of the old values, cast to the column's type;
        rows whose indexed values change are placed as appended rows are. Errors as
        :meth:`delete`, and ``InvalidOptionError`` for no ``set`` or an unknown column.
        """
        from qbeast_connect.row_changes import update_rows

        return update_rows(self.refresh(), condition, set or {}, options)

    def alias(self, name: str) -> QbeastTable:
        """This table, called ``name`` in :meth:`merge` conditions and values
        (``DeltaTable.alias``)."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidOptionError(f"an alias must be a non-empty name, not {name!r}")
        aliased = QbeastTable(self._spark, self._path, self._state)
        aliased._alias = name
        return aliased

    def merge(self, source: DataFrame, condition: Column | str) -> QbeastMergeBuilder:
        """Start a MERGE of ``source`` into the table (``DeltaTable.merge``), keeping the
        index: ``table.alias("t").merge(updates.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()``. The target is
        called by :meth:`alias` (``target`` by default), the source by its DataFrame alias
        (``source`` by default). See :mod:`qbeast_connect.merge`."""
        from qbeast_connect.merge import QbeastMergeBuilder

        latest = self.refresh()
        return QbeastMergeBuilder(latest, self._alias, source, condition)

    def _candidate_paths(self, where: Column | str | None) -> list[str]:
        """The files a read with this filter opens (all files when None)."""
        return list(self._explain(where, None).plan.paths)

    def toDF(self) -> DataFrame:  # noqa: N802
        """Every row of the table (all revisions and the staging area)."""
        return self.read()

    def sample(self, fraction: float) -> DataFrame:
        """A deterministic sample: exactly the rows whose weight is below ``weight(fraction)``.

        Raises:
            InvalidOptionError: ``fraction`` is not in (0, 1].
        """
        return self.read(fraction=fraction)

    def filter(self, condition: Column | str) -> DataFrame:
        """Rows matching ``condition`` (a Column or a SQL string), reading only the files
        the index and the file statistics cannot rule out."""
        return self.read(where=condition)

    where = filter

    def read(
        self,
        where: Column | str | None = None,
        fraction: float | None = None,
        versionAsOf: int | None = None,  # noqa: N803
    ) -> DataFrame:
        """Rows matching ``where`` in a sample ``fraction`` of the table at ``versionAsOf``.

        Args:
            where: a filter (Column or SQL string); predicates on indexed columns prune cubes,
                any column prunes files by their statistics, and the whole condition is
                applied to the rows read.
            fraction: sample fraction in (0, 1].
            versionAsOf: read an older version of the table.

        Returns:
            An ordinary DataFrame; ``inputFiles()`` lists only the selected files.
        """
        table = self._at(versionAsOf)
        explanation = table._explain(where, fraction)
        return table._dataframe(explanation, where, fraction)

    def approx(
        self,
        aggregates: str | Sequence[str],
        where: Column | str | None = None,
        groupBy: str | Sequence[str] | None = None,  # noqa: N803
        relativeError: float | None = None,  # noqa: N803
        confidence: float = 0.95,
        fraction: float | None = None,
        progress: Callable[[ApproxResult], object] | None = None,
    ) -> ApproxResult:
        """Approximate aggregates with confidence intervals, from a sample of the rows.

        With ``relativeError`` the weight bands are read in increasing order (online
        aggregation) until every estimate's interval is within that share of it; with
        ``fraction`` that one sample is read. See docs/approx.md for the estimators.

        Args:
            aggregates: e.g. ``["sum(l_extendedprice) AS revenue", "count(*) AS n"]``;
                ``count``, ``sum``, ``avg``, ``min``/``max`` (bounds seen) and
                ``count(DISTINCT <the indexed columns>)``.
            where: a filter (Column or SQL string).
            groupBy: grouping column names.
            relativeError: the interval half-width to reach, as a share of the estimate
                (of ``max(|estimate|, relativeError * rows covered)`` for counts).
            confidence: the intervals' confidence level.
            fraction: the sample fraction to read instead.
            progress: called with the partial :class:`ApproxResult` after every band.

        Returns:
            An :class:`~qbeast_connect.approx.ApproxResult` (``rows()``, ``fraction``,
            ``bytesRead``, ``toPandas()``).
        """
        from pyspark.sql import functions as F

        from qbeast_connect.approx.bands import all_null_sql, approx_band_sql
        from qbeast_connect.approx.planner import Band, BandPlanner
        from qbeast_connect.approx.run import run_approx

        self._check_approx_input(aggregates, where, groupBy)
        columns = self._sample_columns()
        reader = self._reader()

        def read(band: Band, condition: Column | str | None) -> DataFrame:
            paths = tuple(self._absolute(p) for p in band.plan.paths)
            explanation = ScanExplanation(band.plan, paths, reader)
            return self._dataframe(
                explanation,
                condition,
                band.to_fraction,
                from_fraction=band.from_fraction,
                weight_sql=approx_band_sql(columns, band.from_fraction, band.to_fraction),
            )

        def read_band(band: Band) -> DataFrame:
            return read(band, where)

        def read_all(band: Band) -> DataFrame:  # the band's rows, matching the filter or not
            return read(band, None)

        nulls = F.expr(all_null_sql(columns))
        if where is not None:
            nulls = (F.expr(where) if isinstance(where, str) else where) & nulls
        return run_approx(
            BandPlanner(
                self._planner(where),
                self._planner(nulls),
                weighted_revisions=frozenset(
                    rid
                    for rid, revision in self._qbeast.revisions.items()
                    if list(revision.column_names) == list(columns)
                ),
                file_stats=self._file_stats,
            ),
            read_band,
            aggregates,
            group_by=groupBy,
            relative_error=relativeError,
            confidence=confidence,
            fraction=fraction,
            progress=progress,
            indexed_columns=columns,
            total_bytes=sum(f.size for f in self._qbeast.files),
            filtered=where is not None,
            read_all=read_all,
        )

    def _check_approx_input(
        self,
        aggregates: str | Sequence[str],
        where: Column | str | None,
        group_by: str | Sequence[str] | None,
    ) -> None:
        """Refuse, before any query is built, ``approx`` arguments naming columns the table
        lacks, measures of types it cannot estimate, or a ``where`` text Spark cannot apply
        to the table (:mod:`qbeast_connect.approx.inputs`)."""
        from pyspark.errors import AnalysisException

        from qbeast_connect.approx.aggregates import parse_aggregates
        from qbeast_connect.approx.inputs import check_approx_columns
        from qbeast_connect.rules.schema import column_types

        groups = (group_by,) if isinstance(group_by, str) else tuple(group_by or ())
        if all(isinstance(g, str) for g in groups):  # else run_approx names the mistake
            check_approx_columns(
                parse_aggregates(aggregates, groups),
                groups,
                column_types(str(self.schema.json())),
                self._path,
            )
        if isinstance(where, str):
            # analysed over no rows with the table's schema: one round trip, no file read
            empty = self._spark.createDataFrame([], self.schema)
            try:
                empty.where(where).schema  # noqa: B018 - analysis resolves the columns
            except AnalysisException as exc:
                said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise InvalidOptionError(
                    f"approx() where={where!r} cannot be applied to the table at "
                    f"{self._path} (columns: {', '.join(self.schema.names)}): {said}"
                ) from None

    def explainScan(  # noqa: N802
        self,
        where: Column | str | None = None,
        fraction: float | None = None,
        versionAsOf: int | None = None,  # noqa: N803
    ) -> ScanExplanation:
        """What a :meth:`read` with these arguments would open: files and bytes vs the table."""
        return self._at(versionAsOf)._explain(where, fraction)

    def _at(self, version: int | None) -> QbeastTable:
        if version is not None:
            version = check_version_argument(version)
        if version is None or version == self._state.version:
            return self
        return QbeastTable.forPath(self._spark, self._path, versionAsOf=version)

    def _predicate(self, where: Column | str | None) -> Predicate | None:
        if where is None:
            return None
        if isinstance(where, str):
            return from_sql(where)
        return from_column(where)

    def _explain(
        self,
        where: Column | str | None,
        fraction: float | None,
        from_fraction: float | None = None,
    ) -> ScanExplanation:
        if fraction is not None:
            fraction = validate_fraction(fraction)
        plan = self._planner(where)(fraction, from_fraction)
        return ScanExplanation(plan, tuple(self._absolute(p) for p in plan.paths), self._reader())

    def _planner(
        self, where: Column | str | None
    ) -> Callable[[float | None, float | None], ScanPlan]:
        """The file planner for reads with this filter: ``(fraction, from_fraction) -> plan``.
        The filter, the files' statistics and the session time zone are bound once."""
        predicate = self._predicate(where)
        schema: object = self._state.schema_string or {}
        file_stats = self._file_stats
        time_zone = None if predicate is None else session_time_zone(self._spark)

        def plan(fraction: float | None, from_fraction: float | None) -> ScanPlan:
            return plan_files(
                self._qbeast,
                predicate,
                fraction,
                file_stats=file_stats,
                schema=schema,
                time_zone=time_zone,
                from_fraction=from_fraction,
            )

        return plan

    @functools.cached_property
    def _file_stats(self) -> dict[str, Any]:
        """Each file's Delta statistics by path, parsed once per table object (it never
        changes): the planners of one ``approx`` call, and every later read, share them."""
        schema: object = self._state.schema_string or {}
        return stats_by_path(self._state.adds, self._state.configuration, schema)

    def _reader(self) -> str:
        return reader_for(self._spark, self._path)

    def _read_files(self, paths: Sequence[str]) -> DataFrame:
        """A DataFrame over these log paths of the table, with the reader of :meth:`_reader`."""
        adds = {str(a.get("path")): a for a in self._state.adds}
        files = [table_file(adds.get(p, {"path": p})) for p in paths]
        return read_table_files(
            self._spark, self._path, self.schema, files, self._state.configuration
        )

    def _absolute(self, path: str) -> str:
        """The location of a file named by the log, refusing any that leaves the table."""
        return resolve_table_file(self._path, path)

    def _sample_columns(self) -> Sequence[str]:
        if self._qbeast.is_qbeast:
            return self.indexedColumns()
        raise NotAQbeastTableError(
            f"the table at {self._path} has no qbeast metadata, so it has no row weights to "
            "sample by: convert it with qbeast_connect.convertToQbeast(...) first"
        )

    def _rows_inside_band(
        self, files: Sequence[IndexFile], from_fraction: float, fraction: float
    ) -> bool:
        """Whether the weight filter of the band ``[from_fraction, fraction)`` would keep
        every row of ``files`` (:func:`rows_inside_band`), judged only for files of
        revisions that hash the columns the filter hashes."""
        if fraction >= 1.0 and from_fraction <= 0.0:
            return True
        columns = list(self._sample_columns())
        revisions = self._qbeast.revisions
        for f in files:
            revision = revisions.get(f.revision_id)
            if revision is None or list(revision.column_names) != columns:
                return False
        return rows_inside_band(files, from_fraction, fraction)

    def _dataframe(
        self,
        explanation: ScanExplanation,
        where: Column | str | None,
        fraction: float | None,
        from_fraction: float = 0.0,
        weight_sql: str | None = None,
    ) -> DataFrame:
        """The rows of the explained files that match ``where`` in the weight band
        ``[from_fraction, fraction)``; ``weight_sql`` replaces the band's filter (approx's
        bands, which also read or leave out the all-NULL rows) whenever a filter is needed."""
        from pyspark.sql import functions as F

        schema = self.schema
        if explanation.files:
            df = self._read_files(explanation.plan.paths)
        else:
            df = self._spark.createDataFrame([], schema)
        if fraction is not None and (
            (weight_sql is not None and from_fraction > 0.0)
            or not self._rows_inside_band(explanation.plan.files, from_fraction, fraction)
        ):
            from qbeast_connect.approx.bands import band_weight_sql

            columns = self._sample_columns()
            band = weight_sql or band_weight_sql(columns, from_fraction, fraction)
            df = df.filter(F.expr(band))
        if where is not None:
            df = df.filter(F.expr(where) if isinstance(where, str) else balanced_column(where))
        if explanation.files and explanation.reader != SPARK_READER:
            answer_input_files(df, explanation.files)
        return df
