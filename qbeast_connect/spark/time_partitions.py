"""The client side of time-partitioned qbeast writes (``partitionBy="event_time:daily"``).

:func:`prepare` settles the partitioning of a write (the option, or the table's own on
append) and adds the partition column to the rows, computed by Spark from the time column
(:func:`~qbeast_connect.rules.time_partitioning.partition_string_sql`). The server plugin's
writer then keeps each partition's rows in files of their own and commits the partition
timeline with the files (``server_plugin.time_partitions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.options import WriteMode, WriteOptions
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.rules.time_partitioning import (
    TimePartitioning,
    parse_partition_by,
    partition_string_sql,
    partitioning_of,
)
from qbeast_connect.spark.snapshot import TableState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["prepare"]


def _requested(options: WriteOptions, names: list[str]) -> TimePartitioning | None:
    if options.partition_by is None:
        return None
    column, period = parse_partition_by(options.partition_by)
    if column not in names:
        matches = [n for n in names if n.lower() == column.lower()]
        if len(matches) != 1:
            raise InvalidOptionError(
                f"partitionBy names {column!r}, which is not a column of the data; its "
                f"columns are: {', '.join(names)}"
            )
        column = matches[0]
    return TimePartitioning.of(column, period)


def settle(
    state: TableState, mode: WriteMode, options: WriteOptions, names: list[str]
) -> TimePartitioning | None:
    """The time partitioning of a write of rows with columns ``names``.

    An append keeps the table's (``partitionBy`` may repeat it, not change it); a new
    table or an overwrite takes the option's, and an overwrite without the option keeps
    the table's.

    Raises:
        InvalidOptionError: ``partitionBy`` is malformed, names no column, or differs from
            the partitioning of the table appended to.
    """
    table = partitioning_of(state.configuration) if state.exists else None
    requested = _requested(options, [n for n in names if table is None or n != table.column])
    if state.exists and mode == "append":
        if requested is not None and requested != table:
            now = "not time-partitioned" if table is None else f"partitioned by {table.text!r}"
            raise InvalidOptionError(
                f"cannot append with partitionBy={requested.text!r}: the table at {state.path} "
                f"is {now}; drop the option, or overwrite the table to change its partitions"
            )
        if table is None and requested is None:
            return None
        if table is None:
            return requested
        return table
    if requested is None and state.exists and mode == "overwrite":
        return table
    return requested


def prepare(
    df: DataFrame,
    schema: StructType,
    state: TableState,
    mode: WriteMode,
    options: WriteOptions,
) -> tuple[DataFrame, StructType, TimePartitioning | None]:
    """The rows to write (with the partition column), their schema and the partitioning.

    The partition column is computed from the time column; rows read back from the table
    (optimize) carry it already and get the same value again.

    Raises:
        InvalidOptionError: see :func:`settle`; the time column is not a timestamp, date or
            string; the data of a new table already has a column of the partition
            column's name.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    names = list(schema.names)
    partitioning = settle(state, mode, options, names)
    if partitioning is None:
        return df, schema, None
    if partitioning.column in names and not state.exists:
        raise InvalidOptionError(
            f"the data has a column {partitioning.column!r}, the name of the partition "
            f"column partitionBy={partitioning.text!r} adds; rename or drop it"
        )
    if partitioning.time_column not in names:
        raise InvalidOptionError(
            f"the data has no time column {partitioning.time_column!r}, which the table's "
            f"partitions ({partitioning.text!r}) are computed from"
        )
    field = schema[partitioning.time_column]
    expression = partition_string_sql(
        quote_identifier(field.name), field.dataType.typeName(), partitioning.period
    )
    out = df.withColumn(partitioning.column, F.expr(expression))
    column = StructField(partitioning.column, StringType(), True)
    fields = [column if f.name == partitioning.column else f for f in schema.fields]
    if partitioning.column not in names:
        fields.append(column)
    return out, StructType(fields), partitioning


def partition_files(state: TableState, partition: object) -> list[str]:
    """The log paths of the live files of one time partition of the table.

    Raises:
        InvalidOptionError: the table is not time-partitioned, or ``partition`` is not a
            canonical partition string of its period.
    """
    partitioning = partitioning_of(state.configuration)
    if partitioning is None:
        raise InvalidOptionError(
            f"the table at {state.path} has no time partitions: write it with "
            "qbeast_connect.write(..., partitionBy='<time column>:<period>')"
        )
    value = partitioning.period.format(partitioning.period.parse(str(partition)))
    return [
        str(a["path"])
        for a in state.adds
        if (a.get("partitionValues") or {}).get(partitioning.column) == value
    ]
