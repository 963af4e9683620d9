"""The write pipeline: plan on the client, compute with Spark, commit in the plugin.

One write (:func:`run_write`, behind :func:`qbeast_connect.write`) runs at most three
Spark jobs and makes one Delta commit:

1. a statistics job (min/max of the indexed columns and row counts per partition, reading
   only the indexed columns);
2. an estimation job (local OTrees per partition -> cube domains, indexed columns only),
   whose small result the client merges into cube max weights and a file layout (weight
   bands, then runs of cubes: :mod:`qbeast_connect.index.layout`);
3. the write job: the plugin's writer assigns each row to its cube, writes one parquet
   file per file group per task (an input of many partitions is first narrowed to one
   task per server core, :mod:`qbeast_connect.spark.write_tasks`), and its driver-side
   commit makes one Delta commit.

An append to the table's latest revision first tries one job: the write job, whose single
task indexes its rows itself (:mod:`qbeast_connect.spark.small_append`); when the task
declines the rows, nothing is committed and jobs 1 to 3 run as above. The commit is read
back only when the result's version or metrics are first read (``WriteResult``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import (
    CommitConflictError,
    InputChangedError,
    InvalidOptionError,
    NotAQbeastTableError,
    TableAlreadyExistsError,
)
from qbeast_connect.index.layout import FileLayout, compaction_top_rows
from qbeast_connect.index.partition_trees import PartitionTree
from qbeast_connect.model.column_spec import ColumnSpec, parse_columns_to_index
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import (
    Revision,
    RevisionPlan,
    empty_table_revision,
    plan_revision,
)
from qbeast_connect.model.revision_merge import plan_into
from qbeast_connect.model.transformation import ColumnStats, QDataType
from qbeast_connect.options import (
    BUFFER_CAPACITY_DEFAULT,
    CUBE_SIZE_DEFAULT,
    WriteMode,
    WriteOptions,
)
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.rules.auto_compact import stored_configuration
from qbeast_connect.rules.column_mapping import check_indexed_columns
from qbeast_connect.rules.columns import (
    check_column_names,
    index_types,
    indexed_specs,
    resolve_specs,
    user_column_stats,
)
from qbeast_connect.rules.schema import append_schema, column_types, nullable_schema_json
from qbeast_connect.rules.table_config import LAST_REVISION_KEY, write_configuration
from qbeast_connect.rules.time_partitioning import TimePartitioning
from qbeast_connect.spark import small_append, time_partitions
from qbeast_connect.spark.commits import find_commit
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.formats import WRITE_FORMAT
from qbeast_connect.spark.location import table_location
from qbeast_connect.spark.snapshot import TableState, check_files_unchanged, load_table_state
from qbeast_connect.spark.storage_options import with_storage_options
from qbeast_connect.spark.write_input import (
    committed_txn_version,
    freeze,
    plan_looks_nondeterministic,
    release,
)
from qbeast_connect.spark.write_stats import known_statistics, read_stats, stats_frame
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan, WriteResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from qbeast_connect.rules.auto_compact import AutoCompaction

__all__ = [
    "CONSOLIDATE_ABOVE_PARTITIONS",
    "ESTIMATION_ROWS_PER_CUBE",
    "ESTIMATION_SAMPLE_ROWS",
    "WriteResult",
    "estimation_fraction",
    "group_by_file",
    "run_write",
]


# --------------------------------------------------------------------------------------
# implementation
# --------------------------------------------------------------------------------------


#: Inputs with more non-empty partitions than this are brought to few write tasks before
#: writing (``_Writer._consolidate``): every task writes one file per file group it holds
#: rows of, which is the fastest write for a few large partitions and too many small files
#: for many partitions.
CONSOLIDATE_ABOVE_PARTITIONS = 4


def group_by_file(
    df: DataFrame,
    revision: Revision,
    weights: Mapping[str, int],
    layout: FileLayout,
    trees: Mapping[str, PartitionTree] | None = None,
    partitioning: TimePartitioning | None = None,
) -> DataFrame:
    """Repartition rows (with their weight column) so that each file group is in one task.

    With ``trees`` (a time-partitioned table, one tree per partition) a file group is a
    group of a partition's own layout, numbered apart from the other partitions'.

    An Arrow UDF computes every row's file group from its weight and indexed columns (only
    those columns travel to Python), one shuffle brings each group to a partition of its
    own (the UDF returns a key that Spark's hash partitioning sends to partition ``group``:
    :func:`~qbeast_connect.spark.tasks.partition_keys`), and the helper column is dropped;
    the writer then writes one file per group.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    from qbeast_connect.index.partition_trees import group_offsets, trees_to_json
    from qbeast_connect.spark.tasks import GROUP_COLUMN, assign_groups, assign_partition_groups

    columns = [F.col(WEIGHT_COLUMN), *[F.col(quote_identifier(n)) for n in revision.column_names]]
    body: Any = assign_groups
    count = max(1, layout.group_count)
    values: dict[str, Any] = {
        "revision": revision.to_json(),
        "cubeWeights": dict(weights),
        "layout": layout.to_json_value(),
    }
    if trees is not None and partitioning is not None:
        body = assign_partition_groups
        values["trees"] = trees_to_json(trees)
        count = group_offsets(trees)[1]
        columns.append(F.col(quote_identifier(partitioning.column)))
    params = json.dumps(values)
    with warnings.catch_warnings():
        # the UDF type is given explicitly: the body's signature has no per-argument hints
        warnings.simplefilter("ignore", UserWarning)
        group = arrow_udf(functools.partial(body, params), "int", ArrowUDFType.SCALAR)
    return (
        # added with select, never withColumn (which replaces a column of the same name);
        # GROUP_COLUMN is in the internal namespace no written column may use
        df.select("*", group(*columns).alias(GROUP_COLUMN))
        .repartition(count, F.col(GROUP_COLUMN))
        .drop(GROUP_COLUMN)
    )


#: Rows the estimation job looks at, at least (it samples larger inputs).
ESTIMATION_SAMPLE_ROWS = 1_000_000
#: Sampled rows per desired cube the estimation keeps, at least.
ESTIMATION_ROWS_PER_CUBE = 2_000


def estimation_fraction(
    total_rows: int, desired_cube_size: int, least_rows: int = ESTIMATION_SAMPLE_ROWS
) -> float:
    """Share of the rows the estimation job reads.

    Cube max weights only need enough rows per cube to be estimated well, so large inputs
    are estimated on a Bernoulli sample that keeps at least ``least_rows`` rows (the
    automatic compaction of a table that is one tree passes 0: rows already indexed, known
    to be in the revision's space) and ``ESTIMATION_ROWS_PER_CUBE`` rows per desired cube;
    the domains are scaled back.
    """
    if total_rows <= 0:
        return 1.0
    wanted = max(least_rows / total_rows, ESTIMATION_ROWS_PER_CUBE / desired_cube_size)
    return min(1.0, wanted)


def _inner_weights(existing: Mapping[CubeId, Any]) -> dict[str, int]:
    """Max weights of the existing inner cubes (leaves behave like new cubes, spec §5.3)."""
    return {str(c): int(s.max_weight) for c, s in existing.items() if s.max_weight < 2**31 - 1}


class _Writer:
    """One write. ``remove_paths``/``data_change``/``operation`` serve optimize and row changes,
    which index rows like an append and replace their files (``vector_rows``: or mark rows
    of them deleted); ``target`` serves optimize merging revisions (indexes into it);
    ``keep_revision`` (automatic compaction) commits nothing rather than open a revision."""

    def __init__(
        self,
        df: DataFrame,
        path: str,
        mode: WriteMode,
        options: WriteOptions,
        *,
        remove_paths: tuple[str, ...] = (),
        data_change: bool = True,
        operation: str = "WRITE",
        target: Revision | None = None,
        keep_revision: bool = False,
        commit_tags: Mapping[str, str] | None = None,
        operation_parameters: Mapping[str, str] | None = None,
        expected_files: Mapping[str, Any] | None = None,
        vector_rows: Mapping[str, str] | None = None,
        known_rows: Sequence[int] | None = None,
    ) -> None:
        if not isinstance(path, str) or not path.strip():
            raise InvalidOptionError("the table path must be a non-empty string")
        self.df = df
        # one canonical location for every later step: the plan, the commit, the result
        self.path = table_location(df.sparkSession, path)
        self.mode = mode
        self.options = options
        self.remove_paths = remove_paths
        self.data_change = data_change
        self.operation = operation
        self.operation_parameters = operation_parameters
        #: ``remove_paths`` as the caller read them (path -> its deletion vector or None):
        #: a row-level change computed its rows from them, so they must be unchanged
        self.expected_files = expected_files
        self.vector_rows = dict(vector_rows or {})
        self.target = target
        self.keep_revision = keep_revision
        self.commit_tags = commit_tags
        self.known_rows = known_rows  # of each file df reads, when known (a compaction's)
        #: the table's configuration when the write started (empty for a new table)
        self.table_configuration: Mapping[str, str] = {}
        self.input_partitions = 0
        self.specs: tuple[ColumnSpec, ...] = (
            parse_columns_to_index(options.columns_to_index)
            if options.columns_to_index is not None
            else ()
        )
        self.spark = df.sparkSession
        self.timings: dict[str, float] = {}
        #: True once ``df`` is a frozen copy of the input (see ``write_input``).
        self.frozen = False
        #: The time partitioning of the table written (``spark.time_partitions``).
        self.partitioning: TimePartitioning | None = None

    @contextlib.contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start

    def run(self) -> WriteResult:
        try:
            result = self._run()
        finally:
            if self.frozen:  # the copy this write made of its input: freed now, not by GC
                release(self.df)
        if result.timings is self.timings:  # a committed write's result, its details lazy
            return result
        return replace(result, timings=dict(self.timings))

    def _run(self) -> WriteResult:
        # the input's schema (a round trip to analyse the plan) is asked for while the
        # snapshot loads: two round trips at once, not one after the other
        with ThreadPoolExecutor(max_workers=1) as pool:
            analysed = pool.submit(lambda: self.df.schema)
            with self._phase("snapshot"):
                try:
                    state = load_table_state(self.spark, self.path)
                except BaseException:
                    analysed.result()  # an unusable input is reported first, as before
                    raise
            with self._phase("schema"):
                schema: StructType = analysed.result()
        check_column_names(schema.names, self.path)
        self.df, schema, self.partitioning = time_partitions.prepare(
            self.df, schema, state, self.mode, self.options
        )
        schema_json = str(schema.json())
        if state.exists:
            if self.mode == "errorifexists":
                raise TableAlreadyExistsError(
                    f"a table already exists at {self.path}: use mode 'append' to add rows, "
                    "'overwrite' to replace it, or 'ignore' to skip the write"
                )
            if self.mode == "ignore":
                return WriteResult(self.path, None, skipped=True, reason="table exists")
        if self.options.txn_app_id is not None and self.options.txn_version is not None:
            done = state.txns.get(self.options.txn_app_id)
            if done is not None and done >= self.options.txn_version:
                warnings.warn(
                    f"skipping write: txnAppId {self.options.txn_app_id!r} already committed "
                    f"txnVersion {done} >= {self.options.txn_version}",
                    UserWarning,
                    stacklevel=3,
                )
                return WriteResult(
                    self.path,
                    None,
                    skipped=True,
                    reason=f"txn {self.options.txn_app_id}@{done} already committed",
                )
        appending = state.exists and self.mode == "append"
        qsnap = state.qbeast() if state.exists else None
        self.table_configuration = state.configuration if state.exists else {}
        if self.expected_files is not None:
            check_files_unchanged(state, self.expected_files, self.operation)
        if qsnap is not None and self.remove_paths:
            # the tree the rows join is the one left once the files they come from are gone
            gone = set(self.remove_paths)
            kept = tuple(f for f in qsnap.files if f.path not in gone)
            qsnap = type(qsnap)(qsnap.configuration, kept, qsnap.version)
        if appending:
            assert qsnap is not None
            if not qsnap.is_qbeast:
                raise NotAQbeastTableError(
                    f"the Delta table at {self.path} has no qbeast metadata: convert it first "
                    "with qbeast_connect.convertToQbeast(...)"
                )
            latest_revision = qsnap.latest_revision
            if latest_revision is not None and state.schema_string is not None:
                # an indexed column renamed or dropped (Delta column mapping)
                check_indexed_columns(latest_revision.revision_id, latest_revision.column_names,
                                      state.schema_string, self.path)
            schema_string = self._check_append_schema(state, schema_json)
        else:
            schema_string = nullable_schema_json(schema_json)
        types = column_types(schema_json)
        latest = qsnap.latest_revision if (appending and qsnap is not None) else None
        example = "columnsToIndex='x,y' or 'x:linear,name:hashing'"
        specs = indexed_specs(self.specs, latest, example)
        specs = resolve_specs(specs, schema.names)
        user_stats = user_column_stats(self.options.column_stats, specs, types)
        qtypes = index_types(specs, types)
        if self.data_change and not self.frozen and plan_looks_nondeterministic(self.df):
            with self._phase("materialize"):
                self._freeze()
        index = functools.partial(
            self._index, state, qsnap, latest, appending, specs, qtypes, user_stats,
            schema, schema_string,
        )
        try:
            try:
                return index()
            except InputChangedError:
                if self.frozen or not self.data_change:
                    raise
                # a changing source, or a non-determinism the plan did not show: once more,
                # on rows computed once (the failed job committed nothing; files of tasks
                # Spark killed are orphans that vacuum removes)
                with self._phase("materialize"):
                    self._freeze()
                return index()
        except CommitConflictError:
            app, version = self.options.txn_app_id, self.options.txn_version
            done = committed_txn_version(self.spark, self.path, app, version)
            if done is None:
                raise
            # the same txn, committed meanwhile by an earlier attempt of this write
            reason = f"txn {app}@{done} committed by a concurrent write"
            return WriteResult(self.path, None, skipped=True, reason=reason)

    def _freeze(self) -> None:
        with translate_errors():
            self.df = freeze(self.df)
        self.frozen = True

    def _index(
        self,
        state: TableState,
        qsnap: Any,
        latest: Revision | None,
        appending: bool,
        specs: tuple[ColumnSpec, ...],
        index_types: Mapping[str, QDataType],
        user_stats: Mapping[str, ColumnStats],
        schema: StructType,
        schema_string: str,
    ) -> WriteResult:
        if appending and qsnap is not None and self.target is None and small_append.may_use(
            latest, specs, self.options.cube_size, bool(user_stats)
        ):
            assert latest is not None
            fast = self._one_job_append(state, qsnap, latest, schema_string)
            if fast is not None:
                return fast
        # a compaction: files chosen inside latest's space, their rows counted by the log
        known = self.known_rows if self.keep_revision and latest is not None else None
        data_stats: dict[str, ColumnStats] = {}
        if known is not None:
            total, per_partition = known_statistics(known)
        else:
            with self._phase("statistics"):
                stats_df, needs = stats_frame(self.df, specs, index_types, schema, latest)
                with translate_errors():
                    rows = stats_df.collect()
                total, per_partition, data_stats = read_stats(rows, specs, needs, index_types)
        self.input_partitions = len(per_partition)
        now = int(time.time() * 1000)
        rng = random.Random()
        if total == 0 and latest is None:
            return self._empty_create(state, specs, index_types, schema_string)
        if total == 0:
            changed = schema_string != state.schema_string
            return self._commit(state, None, {}, None, None, schema_string if changed else None,
                                new_revision=False, schema_changed=changed)
        plan = RevisionPlan(latest, False) if known is not None and latest else plan_revision(
            self.target or latest,
            specs,
            index_types,
            data_stats,
            user_stats,
            self.options.cube_size,
            self.path,
            now,
            rng,
        )
        if self.target is not None:
            plan = plan_into(plan, self.target)
        if self.keep_revision and plan.is_new:
            reason = "the rows do not fit the latest revision's space"
            return WriteResult(self.path, None, skipped=True, reason=reason)
        revision = plan.revision
        same_revision = latest is not None and not plan.is_new
        existing = qsnap.cube_statuses(revision.revision_id) if (same_revision and qsnap) else {}
        trees = None
        weights: dict[str, int]
        with self._phase("estimation"):
            if self.partitioning is not None:
                # each time partition is a tree of its own (spark.time_partitions)
                statuses = (
                    time_partitions.partition_statuses(
                        state, qsnap, revision.revision_id, self.partitioning.column
                    )
                    if (same_revision and qsnap)
                    else {}
                )
                params, fraction = self._estimation_params(revision, total, per_partition, {})
                trees = time_partitions.estimate_trees(
                    self.df, revision, self.partitioning, params, fraction, statuses
                )
                weights, layout = {}, FileLayout.single()
            else:
                weights, layout = self._estimate(revision, total, per_partition, existing)
        configuration = None
        if plan.is_new or not appending:
            configuration = write_configuration(
                state.configuration if state.exists else {},
                plan.revision,
                plan.staging,
                self.options,
                appending,
            )
        elif appending:  # options such as autoCompact are kept with the table
            configuration = stored_configuration(state.configuration, self.options.table_properties)
        schema_changed = appending and schema_string != state.schema_string
        return self._commit(
            state,
            revision,
            weights,
            layout,
            configuration,
            schema_string if (not appending or configuration is not None or schema_changed)
            else None,
            new_revision=plan.is_new,
            schema_changed=schema_changed,
            partition_trees=trees,
        )

    def _one_job_append(
        self, state: TableState, qsnap: Any, latest: Revision, schema_string: str
    ) -> WriteResult | None:
        """An append in one job: the input coalesced to one partition, whose write task
        computes the cube max weights and layout of its rows itself (see
        :mod:`qbeast_connect.spark.small_append`); None when the task declined the rows
        (nothing was committed) or would (``known_rows`` over its cap: no attempt is made)
        and the append needs the regular jobs."""
        # a compaction's input is known: rows of the latest revision's space
        max_rows = small_append.max_rows_for(self.df, compaction=self.keep_revision)
        if self.known_rows is not None and sum(self.known_rows) > max_rows:
            return None
        if self.partitioning is not None:
            # each partition grows its own tree (spark.time_partitions)
            statuses = time_partitions.partition_statuses(
                state, qsnap, latest.revision_id, self.partitioning.column
            )
            task = small_append.in_task_partition_params(
                statuses, BUFFER_CAPACITY_DEFAULT, ESTIMATION_SAMPLE_ROWS, max_rows,
                compaction=latest.desired_cube_size if self.keep_revision else None,
                top_rows=self._top_rows(latest),
            )
        else:
            existing = qsnap.cube_statuses(latest.revision_id)
            task = small_append.in_task_params(
                existing, BUFFER_CAPACITY_DEFAULT, ESTIMATION_SAMPLE_ROWS, max_rows,
                compaction=latest.desired_cube_size if self.keep_revision else None,
                top_rows=self._top_rows(latest),
            )
        changed = schema_string != state.schema_string
        config = stored_configuration(state.configuration, self.options.table_properties)
        try:
            # the latest revision, its configuration kept: as the regular path does for an
            # append that does not supersede it
            return self._commit(state, latest, {}, None, config,
                                schema_string if (changed or config) else None,
                                new_revision=False, schema_changed=changed, append_task=task)
        except Exception as exc:
            if not small_append.declined(exc):
                raise
            # the failed attempt's time, apart from the write that follows
            self.timings["declined"] = self.timings.pop("write", 0.0)
            return None

    # -- checks ----------------------------------------------------------------------

    def _check_append_schema(self, state: TableState, schema_json: str) -> str:
        table_string = state.schema_string
        if table_string is None:
            return schema_json
        merged = append_schema(table_string, schema_json, self.options.merge_schema, self.path)
        return table_string if merged is None else merged

    # -- jobs --------------------------------------------------------------------------

    def _estimation_params(
        self,
        revision: Revision,
        total: int,
        per_partition: list[int],
        existing: Mapping[CubeId, Any],
    ) -> tuple[dict[str, Any], float]:
        """The estimation job's parameters and the share of the rows it samples."""
        from qbeast_connect.index.estimation import group_cube_size

        buffer = BUFFER_CAPACITY_DEFAULT
        dcs = revision.desired_cube_size
        # a compaction of one tree: a sample of 2,000 rows per cube (a time partition's
        # tree may hold few rows, so time-partitioned tables keep the floor)
        one_tree = self.keep_revision and self.partitioning is None
        least = 0 if one_tree else ESTIMATION_SAMPLE_ROWS
        fraction = estimation_fraction(total, dcs, least)
        sampled = [n * fraction for n in per_partition if n > 0]
        num_trees = sum(max(1, -(-int(n) // buffer)) for n in sampled)
        gcs = group_cube_size(max(1, int(dcs * fraction)), num_trees)
        params = {
            "revision": revision.to_json(),
            "groupCubeSize": gcs,
            "bufferCapacity": buffer,
            "existing": _inner_weights(existing),
        }
        return params, fraction

    def _estimate(
        self,
        revision: Revision,
        total: int,
        per_partition: list[int],
        existing: Mapping[CubeId, Any],
    ) -> tuple[dict[str, int], FileLayout]:
        from qbeast_connect.spark.estimation import estimation_rows
        from qbeast_connect.spark.tasks import DOMAIN_SCHEMA, estimate_domains

        values, fraction = self._estimation_params(revision, total, per_partition, existing)
        task = functools.partial(estimate_domains, json.dumps(values))
        rows = estimation_rows(self.df, revision, fraction, task, DOMAIN_SCHEMA)
        input_domains: dict[str, float] = {}
        scale = 1.0 / fraction
        for row in rows:
            value = float(row["domain"]) * scale
            input_domains[row["cube"]] = input_domains.get(row["cube"], 0.0) + value
        from qbeast_connect.index.append_plan import weights_and_layout

        top = self._top_rows(revision)
        return weights_and_layout(revision, input_domains, existing, total, top_rows=top)

    def _top_rows(self, revision: Revision) -> int | None:
        """Rows that join a tree many times their number (a compaction's, the changed rows
        of a change with vectors) get finer top bands (``layout.compaction_top_rows``)."""
        fine = self.keep_revision or bool(self.vector_rows)
        return compaction_top_rows(revision.desired_cube_size) if fine else None

    # -- metadata and commit -----------------------------------------------------------

    def _empty_create(
        self,
        state: TableState,
        specs: tuple[ColumnSpec, ...],
        index_types: Mapping[str, QDataType],
        schema_string: str,
    ) -> WriteResult:
        revision = empty_table_revision(
            specs,
            {k: v.value for k, v in index_types.items()},
            self.options.cube_size or CUBE_SIZE_DEFAULT,
            self.path,
            int(time.time() * 1000),
        )
        base = state.configuration if state.exists else {}
        config = write_configuration(base, revision, None, self.options, appending=False)
        return self._commit(state, None, {}, None, config, schema_string, new_revision=True,
                            revision_id=0)

    def _commit(
        self,
        state: TableState,
        revision: Revision | None,
        weights: Mapping[str, int],
        layout: FileLayout | None,
        configuration: Mapping[str, str] | None,
        schema_string: str | None,
        *,
        new_revision: bool,
        schema_changed: bool = False,
        revision_id: int | None = None,
        append_task: Mapping[str, Any] | None = None,
        partition_trees: Mapping[str, PartitionTree] | None = None,
    ) -> WriteResult:
        from pyspark.sql import functions as F

        if schema_changed and configuration is None:
            configuration = dict(state.configuration)
        txn_id = str(uuid.uuid4())
        plan = WritePlan(
            table_path=self.path,
            mode="overwrite" if (self.mode == "overwrite" and state.exists) else "append",
            read_version=state.version,
            revision_json=None if revision is None else revision.to_json(),
            cube_weights=weights,
            layout=layout or FileLayout.single(),
            configuration=configuration,
            schema_string=schema_string,
            txn_app_id=self.options.txn_app_id,
            txn_version=self.options.txn_version,
            txn_id=txn_id,
            user_metadata=self.options.user_metadata,
            operation=self.operation,
            operation_parameters=self.operation_parameters,
            data_change=self.data_change,
            remove_paths=self.remove_paths,
            vector_rows=self.vector_rows,
            commit_tags=self.commit_tags,
            hooks=self.options.hooks,
            append_task=append_task,
            partitioning=self.partitioning,
            partition_trees=partition_trees,
        )
        # a one-job small append has one task that sees all the rows
        df = self.df if append_task is None else self.df.coalesce(1)
        if revision is not None:
            columns = [F.col(quote_identifier(n)) for n in revision.column_names]
            df = df.select("*", F.hash(*columns).alias(WEIGHT_COLUMN))
            whole = self.target is not None or self.keep_revision
            if layout is not None and (whole or self.partitioning is not None):
                # a merge of revisions or a compaction rewrites them whole, and a
                # time-partitioned table keeps each partition's file groups apart: one file
                # per group, as optimize
                if self.input_partitions > CONSOLIDATE_ABOVE_PARTITIONS or whole:
                    df = group_by_file(df, revision, weights, layout, plan.partition_trees,
                                       self.partitioning)
            elif self.input_partitions > CONSOLIDATE_ABOVE_PARTITIONS and layout is not None:
                df = self._consolidate(df, revision, weights, layout)
        with self._phase("write"), translate_errors():
            writer = with_storage_options(df.write.format(WRITE_FORMAT), self.spark)
            writer.option("plan", plan.to_json()).mode("append").save()
        # no read-back now: the commit's version and metrics are read on first access
        planned = revision.revision_id if revision is not None else revision_id
        load = functools.partial(self._result, txn_id, planned, new_revision)
        return WriteResult(self.path, None, revision_id=planned, new_revision=new_revision,
                           timings=self.timings, commit_loader=load)

    def _consolidate(
        self, df: DataFrame, revision: Revision, weights: Mapping[str, int], layout: FileLayout
    ) -> DataFrame:
        """An input of many partitions, brought to few write tasks: narrowed to one task
        per server core (:mod:`~qbeast_connect.spark.write_tasks`), or shuffled by file
        group on a server with many cores."""
        from qbeast_connect.spark import write_tasks

        with self._phase("tasks"):
            cores = write_tasks.server_cores(self.spark)
        tasks = write_tasks.narrowed_tasks(self.input_partitions, cores)
        if tasks is None:
            return group_by_file(df, revision, weights, layout)
        return write_tasks.narrow(df, tasks)

    def _result(self, txn_id: str, revision_id: int | None, new_revision: bool) -> dict[str, Any]:
        """The committed details of the write whose commit carries ``txn_id`` (version None
        when nothing was committed), for :class:`WriteResult`'s lazy fields."""
        commit = find_commit(self.spark, self.path, txn_id)
        if commit is None:
            return {"version": None, "revision_id": revision_id, "num_files": 0, "num_rows": 0}
        if revision_id is not None and new_revision and commit.rebased:
            # the commit was rebased over concurrent commits: the server may have renumbered
            # the new revision after theirs
            state = load_table_state(self.spark, self.path, version=commit.version)
            revision_id = int(state.configuration[LAST_REVISION_KEY])
        return {
            "version": commit.version,
            "revision_id": revision_id,
            "num_files": commit.num_files,
            "num_rows": commit.num_rows,
        }


def run_write(
    df: DataFrame,
    path: str,
    mode: WriteMode,
    options: WriteOptions,
    *,
    compact: Callable[[Any, str, Mapping[str, str]], AutoCompaction | None] | None = None,
) -> WriteResult:
    """Run one write of ``df`` to ``path`` with validated ``mode`` and ``options`` (what
    :func:`qbeast_connect.write` and its builder call).

    After an append that was not skipped, ``compact`` (the API's automatic compaction) is
    called with the session, the location and the table configuration with the write's
    table properties over it; what it returns becomes ``WriteResult.compaction``."""
    writer = _Writer(df, path, mode, options)
    result = writer.run()
    if compact is not None and mode == "append" and not result.skipped:
        settings = {**writer.table_configuration, **options.table_properties}
        # set in place: a copy would read the append's commit back now, not on first access
        object.__setattr__(result, "compaction", compact(writer.spark, writer.path, settings))
    return result
