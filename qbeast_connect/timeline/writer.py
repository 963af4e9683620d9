"""Write, drop and inspect time-partitioned tables through the server plugin.

A time-partitioned table is a plain Delta table partitioned by one string column that
holds canonical time partition strings (see :mod:`~qbeast_connect.timeline.update_period`).
Its partition timelines live in ``metaData.configuration`` and change in the same commit
as its files. One table may hold partitions of several update periods in the same
column (the strings name their period); each (column, period) pair has its own timeline.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from qbeast_connect.exceptions import (
    InvalidOptionError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedProtocolError,
)
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.rules.column_mapping import mapping_mode
from qbeast_connect.rules.schema import nullable_schema_json
from qbeast_connect.rules.time_partitioning import partition_string_sql
from qbeast_connect.spark.commits import find_commit
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.location import table_location
from qbeast_connect.spark.snapshot import TableState, load_table_state
from qbeast_connect.spark.storage_options import with_storage_options
from qbeast_connect.timeline.partition import TimePartition
from qbeast_connect.timeline.plan import (
    TIMELINE_WRITE_FORMAT,
    TimelineOperation,
    TimelineWritePlan,
)
from qbeast_connect.timeline.timeline import (
    PartitionTimeline,
    table_timelines,
    timeline_class,
)
from qbeast_connect.timeline.update_period import UpdatePeriod

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.types import DataType

__all__ = [
    "TimelineWriteResult",
    "canonical_partition_sql",
    "drop_partition",
    "load_timelines",
    "rebuild_timelines",
    "set_timeline_impl",
    "write_partitioned",
]

_MODES = ("append", "overwrite", "errorifexists", "ignore")


@dataclass(frozen=True)
class TimelineWriteResult:
    """What a write, drop or timeline change did.

    Attributes:
        path: the table location.
        version: the committed Delta version; None when nothing was committed.
        skipped: True when nothing was done (``ignore`` mode on an existing table, or a
            drop of a partition the table does not have).
        num_files: data files added.
        num_rows: rows written.
    """

    path: str
    version: int | None
    skipped: bool = False
    num_files: int = 0
    num_rows: int = 0


def canonical_partition_sql(column_sql: str, data_type: DataType, period: UpdatePeriod) -> str:
    """Spark SQL giving the canonical partition string (UTC) of a time column.

    Timestamps are read as instants (independent of the session time zone); dates and
    ``timestamp_ntz`` values as UTC wall-clock times; strings are kept (the server checks
    that they are canonical strings of ``period``).

    Raises:
        InvalidOptionError: the column type is not a timestamp, date or string.
    """
    return partition_string_sql(column_sql, data_type.typeName(), period)


def _resolve_column(names: list[str], column: str) -> str:
    if column in names:
        return column
    matches = [n for n in names if n.lower() == column.lower()]
    if len(matches) == 1:
        return matches[0]
    raise InvalidOptionError(
        f"partition column {column!r} is not in the data; columns are: {', '.join(names)}"
    )


def _partition_column(state: TableState, column: str | None) -> str:
    columns = list(state.metadata.get("partitionColumns") or [])
    if column is None:
        if len(columns) != 1:
            raise InvalidOptionError(
                f"the table at {state.path} is partitioned by {columns}: pass partitionColumn"
            )
        return str(columns[0])
    if column not in columns:
        raise InvalidOptionError(
            f"{column!r} is not a partition column of the table at {state.path}; its "
            f"partition columns are {columns}"
        )
    return column


def _check_append_schema(state: TableState, schema: Any, path: str) -> None:
    from pyspark.sql.types import StructType

    table_string = state.schema_string
    if table_string is None:
        return
    if mapping_mode(state.configuration) != "none":
        raise UnsupportedProtocolError(
            f"the table at {path} uses Delta column mapping, which timeline writes do not "
            "implement yet; append with qbeast_connect.write(...) instead"
        )
    table_schema = StructType.fromJson(json.loads(table_string))
    table_fields = {f.name: f.dataType for f in table_schema.fields}
    data_fields = {f.name: f.dataType for f in schema.fields}
    problems = []
    for name, dtype in data_fields.items():
        if name not in table_fields:
            problems.append(f"column {name!r} is not in the table")
        elif table_fields[name] != dtype:
            problems.append(
                f"{name}: table {table_fields[name].simpleString()}, data {dtype.simpleString()}"
            )
    problems.extend(
        f"column {name!r} is missing from the data"
        for name in table_fields
        if name not in data_fields
    )
    if problems:
        raise SchemaMismatchError(
            f"cannot append to {path}: {'; '.join(problems)}; make the data match the table "
            "schema, or overwrite the table"
        )


def _run(spark: SparkSession, df: DataFrame, plan: TimelineWritePlan) -> TimelineWriteResult:
    with translate_errors():
        writer = with_storage_options(df.write.format(TIMELINE_WRITE_FORMAT), spark)
        writer.option("plan", plan.to_json()).mode("append").save()
    commit = find_commit(spark, plan.table_path, plan.txn_id)
    if commit is not None:
        return TimelineWriteResult(
            path=plan.table_path,
            version=commit.version,
            num_files=commit.num_files,
            num_rows=commit.num_rows,
        )
    return TimelineWriteResult(path=plan.table_path, version=None)


def write_partitioned(
    df: DataFrame,
    path: str,
    *,
    partitionColumn: str,
    updatePeriod: UpdatePeriod | str,
    mode: Literal["append", "overwrite", "errorifexists", "ignore"] = "append",
    timelineImpl: str | None = None,
) -> TimelineWriteResult:
    """Write ``df`` into a Delta table partitioned by the time partitions of ``updatePeriod``.

    Each row goes to the partition of ``updatePeriod`` that contains its time; the
    partition column is stored as the canonical string (``2015-01-29-06`` for hourly).
    The table's timeline for (``partitionColumn``, ``updatePeriod``) is updated in the
    same Delta commit as the data.

    Args:
        df: the rows (a Spark Connect DataFrame).
        path: the table location, as the server sees it (relative: to the server's
            working directory; see ``qbeast_connect.paths``).
        partitionColumn: the time column: a timestamp (an instant, converted to UTC), a
            date or ``timestamp_ntz`` (taken as UTC), or a string holding canonical
            partition strings of ``updatePeriod``.
        updatePeriod: the update period (``UpdatePeriod.HOURLY`` or ``"hourly"``).
        mode: ``append`` (default), ``overwrite`` (replace every file of the table),
            ``errorifexists`` or ``ignore``.
        timelineImpl: ``StoreAll``, ``EndsAndHoles`` (default) or ``Ranges``: the
            timeline implementation for this (column, period); a stored timeline in
            another implementation is migrated.

    Returns:
        A :class:`TimelineWriteResult`.

    Raises:
        InvalidOptionError: bad arguments, a string that is not a canonical partition of
            the period, a null time, or a table partitioned otherwise.
        TableAlreadyExistsError: ``errorifexists`` and a table exists.
        SchemaMismatchError: appending rows whose schema differs from the table's.
        CommitConflictError: a concurrent commit changed the table's metadata.

    Example:
        >>> df = spark.sql("select timestamp'2015-01-29 06:10:00Z' as ts, 1 as v")  # doctest: +SKIP
        >>> write_partitioned(df, "/tmp/hourly", partitionColumn="ts",
        ...                   updatePeriod="hourly")  # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    period = UpdatePeriod.from_name(updatePeriod)
    mode_key = str(mode).strip().lower()
    if mode_key not in _MODES:
        raise InvalidOptionError(f"unknown save mode {mode!r}: use one of {', '.join(_MODES)}")
    impls = {period.value: timeline_class(timelineImpl).impl_name} if timelineImpl else {}
    if not isinstance(path, str) or not path.strip():
        raise InvalidOptionError("the table path must be a non-empty string")
    spark = cast("SparkSession", df.sparkSession)
    path = table_location(spark, path)
    schema = df.schema
    column = _resolve_column([f.name for f in schema.fields], partitionColumn)
    data_type = next(f.dataType for f in schema.fields if f.name == column)
    expression = canonical_partition_sql(quote_identifier(column), data_type, period)
    converted = df.withColumn(column, F.expr(expression))
    state = load_table_state(spark, path)
    schema_string: str | None = None
    if state.exists:
        if mode_key == "errorifexists":
            raise TableAlreadyExistsError(
                f"a table already exists at {path}: use mode 'append' to add rows, "
                "'overwrite' to replace it, or 'ignore' to skip the write"
            )
        if mode_key == "ignore":
            return TimelineWriteResult(path=path, version=None, skipped=True)
        _partition_column(state, column)
        if mode_key == "overwrite":
            schema_string = nullable_schema_json(converted.schema.json())
        else:
            _check_append_schema(state, converted.schema, path)
    else:
        schema_string = nullable_schema_json(converted.schema.json())
    plan = TimelineWritePlan(
        table_path=path,
        operation="write",
        column=column,
        read_version=state.version,
        mode="overwrite" if (mode_key == "overwrite" and state.exists) else "append",
        period=period.value,
        schema_string=schema_string,
        impls=impls,
        txn_id=str(uuid.uuid4()),
    )
    return _run(spark, converted, plan)


def _command(
    spark: SparkSession,
    state: TableState,
    operation: TimelineOperation,
    column: str,
    **fields: Any,
) -> TimelineWriteResult:
    plan = TimelineWritePlan(
        table_path=state.path,
        operation=operation,
        column=column,
        read_version=state.version,
        txn_id=str(uuid.uuid4()),
        **fields,
    )
    return _run(spark, spark.range(0), plan)


def _existing(spark: SparkSession, path: str) -> TableState:
    state = load_table_state(spark, path)
    if not state.exists:
        raise TableNotFoundError(f"no Delta table at {path}")
    return state


def drop_partition(
    spark: SparkSession,
    path: str,
    partition: TimePartition | str,
    *,
    partitionColumn: str | None = None,
) -> TimelineWriteResult:
    """Remove every file of ``partition`` and drop it from its timeline, in one commit.

    Args:
        spark: the session.
        path: the table location.
        partition: a :class:`TimePartition` or its canonical string (``2015-02-10``).
        partitionColumn: needed only when the table has several partition columns.

    Returns:
        The result; ``skipped`` when the table has no such partition (nothing committed).

    Raises:
        TableNotFoundError: no table at ``path``.
        InvalidOptionError: ``partition`` is not a canonical partition string.
    """
    part = partition if isinstance(partition, TimePartition) else TimePartition.parse(partition)
    state = _existing(spark, path)
    column = _partition_column(state, partitionColumn)
    value = str(part)
    in_files = any((a.get("partitionValues") or {}).get(column) == value for a in state.adds)
    timelines = table_timelines(
        state.configuration, [column], (a.get("partitionValues") or {} for a in state.adds)
    )
    timeline = timelines.get((column, part.period))
    if not in_files and (timeline is None or not timeline.exists(part)):
        return TimelineWriteResult(path=path, version=None, skipped=True)
    return _command(spark, state, "drop", column, drop_partitions=(value,))


def set_timeline_impl(
    spark: SparkSession,
    path: str,
    *,
    updatePeriod: UpdatePeriod | str,
    impl: str,
    partitionColumn: str | None = None,
) -> TimelineWriteResult:
    """Choose the timeline implementation of (column, period) and migrate the stored one.

    The stored timeline is converted in memory (no file listing) and committed with the
    new ``impl`` key in one commit.
    """
    period = UpdatePeriod.from_name(updatePeriod)
    name = timeline_class(impl).impl_name
    state = _existing(spark, path)
    column = _partition_column(state, partitionColumn)
    return _command(spark, state, "sync", column, impls={period.value: name})


def rebuild_timelines(
    spark: SparkSession,
    path: str,
    *,
    partitionColumn: str | None = None,
) -> TimelineWriteResult:
    """Recompute the column's timelines from the table's files and store them (present=true).

    This is the Lens "load timelines from all partitions" step; it is also done by the
    next write whenever the present flag is absent or false.
    """
    state = _existing(spark, path)
    column = _partition_column(state, partitionColumn)
    return _command(spark, state, "sync", column, rebuild=True)


def load_timelines(
    spark: SparkSession, path: str
) -> dict[tuple[str, UpdatePeriod], PartitionTimeline]:
    """The timelines of the table at ``path``, keyed by (partition column, update period).

    One metadata load (the table's snapshot through the server plugin). Stored timelines
    are decoded; when a column's present flag is absent or false they are rebuilt in
    memory from the ``partitionValues`` of the table's files (not stored: see
    :func:`rebuild_timelines`). Partition columns that hold no time partition strings get
    no timeline.

    Raises:
        TableNotFoundError: no table at ``path``.
    """
    state = _existing(spark, path)
    return timelines_of_state(state)


def timelines_of_state(state: TableState) -> dict[tuple[str, UpdatePeriod], PartitionTimeline]:
    """The timelines of an already loaded table state (see :func:`load_timelines`)."""
    columns = [str(c) for c in state.metadata.get("partitionColumns") or []]
    values: list[Mapping[str, str | None]] = [a.get("partitionValues") or {} for a in state.adds]
    return table_timelines(state.configuration, columns, values)
