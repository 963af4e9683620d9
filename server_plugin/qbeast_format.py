"""The ``qbeast`` data source: ``format("qbeast")`` for any Spark Connect client.

Spark registers it by itself on a server whose Python environment has qbeast-connect
installed (the top-level module ``pyspark_qbeast`` exposes it as ``DefaultSource``, which
Spark's static Python data source lookup finds), and
:func:`qbeast_connect.spark.session.register_plugin` registers it on sessions made by
qbeast-connect as well.

Reading: ``spark.read.format("qbeast").load(path)``, options ``versionAsOf`` and
    ``sampleFraction`` (exactly the rows of ``QbeastTable.sample(f)``, from the files the
    index selects for that sample). ``TABLESAMPLE``/``DataFrame.sample`` reach a Python data
    source only through the server's SQL extension, whose rule adds the options
    ``tableSampleFraction``/``tableSampleSeed`` (``qbeast_connect/spark/sql_extension.py``,
    docs/remote.md).
    The schema is the table's (from the Delta log). Filters Spark pushes (comparisons,
    ``IN``, ``IS [NOT] NULL``, ``NOT``, string prefixes) become the planner's predicate tree
    and :func:`~qbeast_connect.planning.file_planner.plan_files` picks the files, so the scan
    has one partition per selected file (or per few small ones). Every filter is still handed
    back to Spark, which applies it to the rows: pruning never changes an answer. Needs
    ``spark.sql.python.filterPushdown.enabled=true`` on the server, or the read option
    ``filterPushdown=false`` (then every file is read).

Writing: ``df.write.format("qbeast").option(...).mode("append" | "overwrite").save(path)``.
    A one-pass writer: it cannot run the statistics and estimation jobs of
    :func:`qbeast_connect.write`, so it indexes rows with what the table already knows:

    * appending to a qbeast table whose latest revision covers the data: the rows go to the
      revision's existing cubes, with their current max weights (like any append, cubes may
      grow past ``cubeSize``);
    * creating a table, overwriting one, or starting a new revision, when ``columnStats``
      fixes the space of every ``linear`` and ``quantiles`` column: with no cube weights
      known, every row goes to the root cube.

    Both give valid Qbeast tables (every read and sample is exact), but an index with one
    big root cube prunes nothing: write large tables with :func:`qbeast_connect.write`.
    An append to a table with automatic compaction on (``qbeast.autoCompact``) is followed,
    in the same commit call, by the compaction it makes due (:mod:`server_plugin.compaction`).
    Rows outside the revision's space, or a table it cannot index in one pass, are errors
    naming :func:`qbeast_connect.write`.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from qbeast_connect.exceptions import (
    InvalidOptionError,
    NotAQbeastTableError,
    SchemaMismatchError,
    TableNotFoundError,
)
from qbeast_connect.options import parse_bool
from qbeast_connect.rules.column_mapping import mapping_mode
from server_plugin.catalog_tables import (
    catalog_view,
    check_catalog_partitioning,
    check_declared_schema,
    create_location,
    declared_schema,
    is_catalog_create,
    location_unknown_error,
    new_table_error,
    recorded_schema,
    table_write_options,
)
from server_plugin.delta.storage.scope import storage_scope, storage_settings
from server_plugin.format_read import (
    SAMPLE_OPTION,
    QbeastPushdownReader,
    QbeastScanReader,
    qbeast_view,
    read_delta_snapshot,
    sample_columns,
    sample_fraction,
    table_sample,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from qbeast_connect.model.revision import Revision
    from qbeast_connect.model.snapshot import QbeastSnapshot

FORMAT_NAME = "qbeast"

_WRITE_HINT = (
    "use qbeast_connect.write(df, path, ...) instead: it computes the statistics and cube "
    "weights this one-pass writer cannot"
)


def _require_path(options: Mapping[str, str]) -> str:
    path = options.get("path")
    if path is None or str(path).strip() == "":
        raise location_unknown_error()
    from server_plugin.locations import resolve_location

    # relative paths mean the driver JVM's directory, as for Spark's own formats
    return resolve_location(str(path))


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    return default if value is None else parse_bool(key, value)


#: The read option the server's SQL extension turns ``VERSION AS OF n`` on a catalog table
#: into (``QbeastTimeTravelRule``, ``qbeast_connect/spark/jvm``).
SQL_VERSION_OPTION = "qbeastVersionAsOf"


def _optional_int(options: Mapping[str, str], key: str) -> int | None:
    value = options.get(key)
    if value is None or str(value).strip() == "":
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key} must be an integer, got {value!r}") from None
    if number < 0:
        raise InvalidOptionError(f"option {key} must be >= 0, got {number}")
    return number


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------


def _require_space(
    specs: Sequence[Any],
    index_types: Mapping[str, Any],
    user_stats: Mapping[str, Any],
    path: str,
) -> None:
    """Raise unless ``columnStats`` fixes the space of every indexed column that needs it."""
    from qbeast_connect.model.column_spec import transformer_for
    from qbeast_connect.model.transformation import IdentityTransformation

    rng = random.Random(0)
    missing: list[str] = []
    for spec in specs:
        transformer = transformer_for(spec, index_types[spec.name])
        made = transformer.make_transformation(user_stats.get(spec.name), rng)
        if made.is_empty:
            missing.append(f"{spec.name}_quantiles")
        elif isinstance(made, IdentityTransformation) and made.identity_value is None:
            missing.append(f"{spec.name}_min and {spec.name}_max")
    if missing:
        example = ", ".join(
            f'"{s.name}_min": ..., "{s.name}_max": ...'
            for s in specs
            if f"{s.name}_min and {s.name}_max" in missing
        )
        raise InvalidOptionError(
            f"format('qbeast') writes {path} in one pass and cannot compute column statistics, "
            f"so creating a table or a revision needs the indexed space in option columnStats; "
            f"missing: {', '.join(missing)}"
            + (f" (e.g. {{{example}}}, covering all the data)" if example else "")
            + f"; or {_WRITE_HINT}"
        )


def _refuse_time_partitions(partition_by: str | None, snapshot: Any) -> None:
    """``format("qbeast")`` does not write time partitions: say so instead of ignoring
    ``partitionBy`` or writing unpartitioned files into a partitioned table."""
    from qbeast_connect.rules.time_partitioning import partitioning_of

    table = partitioning_of(snapshot.metadata.configuration) if snapshot is not None else None
    if partition_by is not None or table is not None:
        raise InvalidOptionError(
            "format('qbeast') does not write time-partitioned tables"
            + (f" (the table is partitioned by {table.text!r})" if table is not None else "")
            + "; use qbeast_connect.write(df, path, partitionBy='<time column>:<period>', "
            "mode=...)"
        )


def plan_format_write(
    options: Mapping[str, str], schema: StructType, overwrite: bool
) -> tuple[Any, bool]:
    """Decide the write plan of a ``format("qbeast")`` write on the server.

    Returns:
        ``(WritePlan, skip)``; ``skip`` is True when ``txnAppId``/``txnVersion`` were
        already committed (the write then writes and commits nothing).
    """
    from qbeast_connect.model.column_spec import parse_columns_to_index
    from qbeast_connect.model.revision import plan_revision, restart_revisions
    from qbeast_connect.options import parse_write_options
    from qbeast_connect.rules.columns import (
        check_column_names,
        index_types,
        indexed_specs,
        resolve_specs,
        user_column_stats,
    )
    from qbeast_connect.rules.schema import append_schema, column_types, nullable_schema_json
    from qbeast_connect.rules.table_config import write_configuration
    from qbeast_connect.write_plan import WritePlan
    from server_plugin.hooks import parse_hooks

    path = _require_path(options)
    # Spark hands the option keys over lower-cased: the option rules match names
    # case-insensitively and give known ``delta.*`` properties their canonical spelling
    opts = parse_write_options({k: v for k, v in options.items() if not storage_settings({k: v})})
    parse_hooks(opts.hooks)
    schema_json = str(schema.json())
    check_column_names(schema.names, path)
    snapshot = read_delta_snapshot(path, None)
    exists = snapshot is not None
    appending = exists and not overwrite
    _refuse_time_partitions(opts.partition_by, snapshot)
    qsnap = qbeast_view(snapshot) if snapshot is not None else None
    if appending and qsnap is not None and not qsnap.is_qbeast:
        raise NotAQbeastTableError(
            f"the Delta table at {path} has no qbeast metadata: convert it first with "
            "qbeast_connect.convertToQbeast(...)"
        )
    skip = False
    if snapshot is not None and opts.txn_app_id is not None and opts.txn_version is not None:
        done = snapshot.txn_version(opts.txn_app_id)
        skip = done is not None and done >= opts.txn_version
    latest = qsnap.latest_revision if (qsnap is not None and qsnap.is_qbeast) else None
    indexed = (
        latest
        if latest is not None and not latest.is_staging and bool(latest.transformations)
        else None
    )
    types = column_types(schema_json)
    given = parse_columns_to_index(opts.columns_to_index) if opts.columns_to_index else ()
    example = (
        ".option('columnsToIndex', 'x,y') with .option('columnStats', "
        '\'{"x_min": 0, "x_max": 100, "y_min": 0, "y_max": 1}\')'
    )
    specs = indexed_specs(given, latest, example)
    with contextlib.suppress(InvalidOptionError):  # absent names are reported below
        specs = resolve_specs(specs, list(types))
    by_lower = {k.lower(): k for k in types}
    absent = [s.name for s in specs if s.name not in types]
    if absent:
        renamed = [by_lower.get(n.lower()) for n in absent]
        raise SchemaMismatchError(
            f"indexed columns {absent} are not in the data"
            + (f" (the data has {renamed})" if any(renamed) else "")
            + f"; its columns are {list(types)}"
        )
    qtypes = index_types(specs, types)
    user_stats = user_column_stats(opts.column_stats, specs, types)
    now = int(time.time() * 1000)
    rng = random.Random()
    base_config: Mapping[str, str] = snapshot.metadata.configuration if snapshot is not None else {}
    # keep the latest indexed revision on append, and on overwrite unless re-specified
    keep_space = indexed is not None and (appending or not opts.columns_to_index)
    weights: dict[str, int] = {}
    configuration: dict[str, str] | None = None
    if not keep_space:
        _require_space(specs, qtypes, user_stats, path)
    planned = plan_revision(
        indexed if keep_space else (latest if appending else None),
        specs if (opts.columns_to_index or not keep_space) else (),
        types,
        {},
        user_stats,
        opts.cube_size,
        path,
        now,
        rng,
    )
    if keep_space and not appending:
        # an overwrite keeping the indexed space starts the revisions over all the same, as
        # every overwrite does (qc.write's plans its revision 1 from the data)
        planned = restart_revisions(planned.revision, path, now)
    revision = planned.revision
    if not keep_space or planned.is_new:
        # an append's new revision (other cubeSize or columnStats) keeps the old ones; an
        # overwrite keeps none
        configuration = write_configuration(base_config, revision, planned.staging, opts, appending)
    elif appending:
        assert qsnap is not None
        weights = _existing_weights(qsnap, revision)
    if snapshot is None or not appending:
        schema_string: str | None = nullable_schema_json(schema_json)
    else:
        schema_string = append_schema(
            snapshot.metadata.schema_string, schema_json, opts.merge_schema, path
        )
    plan = WritePlan(
        table_path=path,
        mode="overwrite" if (overwrite and exists) else "append",
        read_version=snapshot.version if snapshot is not None else -1,
        revision_json=revision.to_json(),
        cube_weights=weights,
        configuration=configuration,
        schema_string=schema_string,
        txn_app_id=opts.txn_app_id,
        txn_version=opts.txn_version,
        txn_id=str(uuid.uuid4()),
        user_metadata=opts.user_metadata,
        operation="WRITE",
        hooks=opts.hooks,
    )
    return plan, skip


def _existing_weights(qsnap: QbeastSnapshot, revision: Revision) -> dict[str, int]:
    """Cube max weights of the revision as it is."""
    statuses = qsnap.cube_statuses(revision.revision_id)
    return {str(c): int(s.max_weight) for c, s in statuses.items()}


def weighted_batches(
    revision: Revision, path: str, batches: Iterable[Any]
) -> Iterator[pa.RecordBatch]:
    """Add the row weight (Spark ``hash`` of the indexed columns) to every batch, after
    checking that every row lies inside the revision's space."""
    import numpy as np
    import pyarrow as pa

    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import outside_space
    from qbeast_connect.write_plan import WEIGHT_COLUMN

    names = list(revision.column_names)
    for item in batches:
        parts = item.to_batches() if isinstance(item, pa.Table) else [item]
        for batch in parts:
            if batch.num_rows == 0:
                continue
            columns = [batch.column(name) for name in names]
            points = normalize(revision.transformations, columns, names)
            bad = outside_space(revision.transformations, columns, points)
            if bad.any():
                row, dim = (int(x) for x in np.argwhere(bad)[0])
                raise InvalidOptionError(
                    f"column {names[dim]!r} has value {columns[dim][row].as_py()!r}, outside "
                    f"the space of revision {revision.revision_id} of the table at {path} "
                    f"({_space_text(revision.transformations[dim])}); format('qbeast') writes "
                    "into the existing index and cannot widen it: give columnStats covering "
                    f"the data, or {_WRITE_HINT} (its appends create a wider revision)"
                )
            weights = spark_hash_columns(columns)
            yield batch.append_column(WEIGHT_COLUMN, pa.array(weights, type=pa.int32()))


def _space_text(transformation: Any) -> str:
    low = getattr(transformation, "min_number", None)
    high = getattr(transformation, "max_number", None)
    if low is not None and high is not None:
        return f"indexed range [{low}, {high}]"
    if hasattr(transformation, "identity_value"):
        return f"single value {transformation.identity_value!r}"
    return type(transformation).__name__


class QbeastFormatWriter(DataSourceArrowWriter):
    """Tasks index and write their rows; the driver makes one Delta commit."""

    def __init__(
        self,
        plan_json: str,
        skip: bool,
        created_root: bool = False,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        # object-store settings of this write, kept out of the plan (which is data, not secret)
        self.storage_options = dict(storage_options or {})
        self.plan_json = plan_json
        self.skip = skip
        # the write creates the table's directory: a failed write removes it again
        self.created_root = created_root

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from qbeast_connect.model.revision import Revision
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.messages import WriteTaskMessage
        from server_plugin.writer import write_task

        if self.skip:
            for _ in iterator:
                pass
            return WriteTaskMessage(files=())
        plan = WritePlan.from_json(self.plan_json)
        assert plan.revision_json is not None
        revision = Revision.from_json(plan.revision_json)
        with storage_scope(self.storage_options):
            return write_task(plan, weighted_batches(revision, plan.table_path, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.writer import commit_write

        if not self.skip:
            plan = WritePlan.from_json(self.plan_json)
            with storage_scope(self.storage_options):
                commit_write(plan, messages)
                if plan.mode == "append" and plan.read_version >= 0:
                    # the client's compaction needs a Spark job, which a data source's
                    # commit cannot start: this one runs here (server_plugin.compaction)
                    from server_plugin.compaction import compact_after_commit

                    compact_after_commit(plan.table_path, self.storage_options)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.writer import abort_write

        with storage_scope(self.storage_options):
            plan = WritePlan.from_json(self.plan_json)
            abort_write(plan, messages, remove_dirs=self.created_root)


def _create_empty_table(options: Mapping[str, str], schema: StructType) -> None:
    """Commit an empty qbeast table (``CREATE TABLE ... USING qbeast OPTIONS (schema ...)``):
    the revision the options fix, no files, as a write of no rows would."""
    from server_plugin.locations import prepare_location
    from server_plugin.writer import abort_write, commit_write, resolve_column_mapping

    plan, _ = plan_format_write(options, schema, overwrite=False)
    plan = resolve_column_mapping(plan)
    created_root = prepare_location(plan.table_path, new_table=True)
    try:
        commit_write(plan, [])
    except BaseException:
        abort_write(plan, [], remove_dirs=created_root)
        raise


# --------------------------------------------------------------------------------------
# the data source
# --------------------------------------------------------------------------------------


class QbeastDataSource(DataSource):
    """``format("qbeast")``: read and write qbeast tables from any Spark Connect client.

    Example:
        >>> spark.read.format("qbeast").load("/data/t").where("x < 10").count()  # doctest: +SKIP
        >>> (df.write.format("qbeast").mode("append").save("/data/t"))  # doctest: +SKIP
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _version(self) -> int | None:
        pinned = getattr(self, "_pinned_version", None)
        if pinned is not None:
            return int(pinned)
        version = _optional_int(self.options, "versionAsOf")
        if version is None:
            # VERSION AS OF on a catalog table, handed over by the server's SQL extension
            # under its own name (Spark refuses the time travel options of such a table)
            version = _optional_int(self.options, SQL_VERSION_OPTION)
        return version

    def schema(self) -> StructType:
        if is_catalog_create(self.options):
            return self._catalog_schema()
        if not str(self.options.get("path") or "").strip():
            # .load() without a path: a wrong call (reads and writes of a catalog table
            # without a recorded location are refused in reader()/writer())
            raise InvalidOptionError(location_unknown_error().message)
        path = _require_path(self.options)
        with storage_scope(self.options):
            snapshot = read_delta_snapshot(path, self._version())
        if snapshot is None:
            raise TableNotFoundError(
                f"no table at {path}: write one first, e.g. with df.write.format('qbeast')"
                ".option('columnsToIndex', ...).option('columnStats', ...).save(path) or "
                "qbeast_connect.write(df, path, columnsToIndex=...)"
            )
        # the schema and the files read come from the same version
        self._pinned_version = snapshot.version
        self._mapping_mode = mapping_mode(snapshot.metadata.configuration)
        return StructType.fromJson(json.loads(snapshot.metadata.schema_string))

    def _catalog_schema(self) -> StructType:
        """``CREATE TABLE ... USING qbeast``: the schema the catalog keeps, with the location
        and the write options recorded in it (``server_plugin.catalog_tables``). A new table
        (no table at the location, columns in the option ``schema``) is created empty."""
        from server_plugin.locations import resolve_location

        path = resolve_location(create_location(self.options))
        recorded = table_write_options(self.options)
        sample_fraction(recorded)  # a sample table's fraction is checked at CREATE
        writes = {k: v for k, v in recorded.items() if k.lower() != SAMPLE_OPTION.lower()}
        declared = declared_schema(self.options)
        with storage_scope(self.options):
            snapshot = read_delta_snapshot(path, None)
            if snapshot is None:
                if declared is None:
                    raise new_table_error(path)
                _create_empty_table({**writes, "path": path}, declared)
                schema = declared
            else:
                schema = StructType.fromJson(json.loads(snapshot.metadata.schema_string))
                check_declared_schema(declared, schema, path)
                from qbeast_connect.options import parse_write_options

                parse_write_options(writes)  # an unknown or malformed option fails the CREATE
        return recorded_schema(schema, path, recorded)

    def reader(self, schema: StructType) -> DataSourceReader:
        options, _ = catalog_view(self.options, schema)
        path = _require_path(options)
        version = self._version()
        mode = getattr(self, "_mapping_mode", None)
        fraction = sample_fraction(options)
        pushed = table_sample(options)
        sample = bernoulli = None
        if mode is None or fraction is not None or pushed is not None:
            # a schema given by the reader: the table's mapping is still needed; a sample
            # needs the indexed columns of the version the files are planned at
            with storage_scope(options):
                snapshot = read_delta_snapshot(path, version)
            if snapshot is None:
                raise TableNotFoundError(f"no table at {path}")
            mode = mapping_mode(snapshot.metadata.configuration)
            qsnap = qbeast_view(snapshot)
            if pushed is not None and qsnap.is_qbeast and qsnap.latest_revision is not None:
                # a TABLESAMPLE of a qbeast table (or of a sample table: a sample of the
                # rows below weight(f) is the rows below weight(f * g))
                fraction = (1.0 if fraction is None else fraction) * pushed[0]
            elif pushed is not None and fraction is None:
                bernoulli = pushed  # no weights to sample by: Spark's kind of sample
            if fraction is not None:
                version = snapshot.version
                sample = (sample_columns(qsnap, path), fraction)
        pushdown = _flag(options, "filterPushdown", True)
        reader = QbeastPushdownReader if pushdown else QbeastScanReader
        return reader(path, version, schema, options, mode, sample, bernoulli)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        from server_plugin.locations import prepare_location

        options, viewed = catalog_view(self.options, schema)
        assert viewed is not None
        check_catalog_partitioning(options)
        if sample_fraction(options) is not None:
            raise InvalidOptionError(
                f"option {SAMPLE_OPTION} reads a sample of a table and cannot write: write to "
                "the table itself (its path, or a catalog table created without "
                f"{SAMPLE_OPTION})"
            )
        storage = storage_settings(options)
        with storage_scope(storage):
            plan, skip = plan_format_write(options, viewed, overwrite)
            if not skip:
                from server_plugin.writer import resolve_column_mapping

                plan = resolve_column_mapping(plan)
            created_root = not skip and prepare_location(
                plan.table_path, new_table=plan.read_version < 0
            )
        return QbeastFormatWriter(plan.to_json(), skip, created_root, storage)


__all__ = [
    "FORMAT_NAME",
    "QbeastDataSource",
    "QbeastFormatWriter",
    "plan_format_write",
    "weighted_batches",
]
