"""The client side of time-partitioned qbeast writes (``partitionBy="event_time:daily"``).

:func:`prepare` settles the partitioning of a write (the option, or the table's own on
append) and adds the partition column to the rows, computed by Spark from the time column
(:func:`~qbeast_connect.rules.time_partitioning.partition_string_sql`). The server plugin's
writer then keeps each partition's rows in files of their own and commits the partition
timeline with the files (``server_plugin.time_partitions``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.partition_trees import PartitionTree
from qbeast_connect.model.block import IndexFile
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.snapshot import CubeStatus, QbeastSnapshot
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

__all__ = [
    "estimate_trees",
    "partition_files",
    "partition_statuses",
    "partition_trees_of",
    "prepare",
]


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
    # Spark matches names case-insensitively: withColumn below would replace any of them
    clash = [n for n in names if n.lower() == partitioning.column.lower()]
    if clash and (not state.exists or clash != [partitioning.column]):
        raise InvalidOptionError(
            f"the data has a column {clash[0]!r}, the name of the partition "
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


def _files_by_partition(
    adds: Sequence[Mapping[str, Any]], qsnap: QbeastSnapshot, revision_id: int, column: str
) -> dict[str, list[IndexFile]]:
    values = {str(a["path"]): (a.get("partitionValues") or {}).get(column) for a in adds}
    files: dict[str, list[IndexFile]] = {}
    for f in qsnap.files_of(revision_id):
        value = values.get(f.path)
        if value is not None:
            files.setdefault(value, []).append(f)
    return files


def _statuses(
    qsnap: QbeastSnapshot, files: Sequence[IndexFile], revision_id: int
) -> dict[CubeId, CubeStatus]:
    return QbeastSnapshot(qsnap.configuration, tuple(files), qsnap.version).cube_statuses(
        revision_id
    )


def partition_statuses(
    state: TableState, qsnap: QbeastSnapshot, revision_id: int, column: str
) -> dict[str, dict[CubeId, CubeStatus]]:
    """The cube statuses of every partition's own tree in revision ``revision_id``.

    Each partition of a time-partitioned table is a tree of its own: its statuses come
    from the blocks of its files only.
    """
    by_part = _files_by_partition(state.adds, qsnap, revision_id, column)
    return {value: _statuses(qsnap, files, revision_id) for value, files in by_part.items()}


def partition_trees_of(
    adds: Sequence[Mapping[str, Any]],
    qsnap: QbeastSnapshot,
    revision_id: int,
    column: str,
    paths: Collection[str],
) -> dict[str, PartitionTree]:
    """The trees optimize re-indexes the rows of ``paths`` with: for every partition
    holding one of them, the max weights of the partition's cubes (all its files in the
    revision) and a layout of the blocks of its files in ``paths``."""
    from qbeast_connect.index.layout import plan_layout, segments_from_blocks

    dcs = qsnap.revisions[revision_id].desired_cube_size
    trees: dict[str, PartitionTree] = {}
    for value, files in _files_by_partition(adds, qsnap, revision_id, column).items():
        blocks = [b for f in files if f.path in paths for b in f.blocks]
        if not blocks:
            continue
        weights = {
            str(c): int(s.max_weight) for c, s in _statuses(qsnap, files, revision_id).items()
        }
        context = [b for f in files if f.path not in paths for b in f.blocks]
        layout = plan_layout(segments_from_blocks(blocks, context), dcs)
        trees[value] = PartitionTree(weights, layout)
    return trees


def estimate_trees(
    df: DataFrame,
    revision: Revision,
    partitioning: TimePartitioning,
    params: dict[str, Any],
    fraction: float,
    statuses: Mapping[str, Mapping[CubeId, CubeStatus]],
) -> dict[str, PartitionTree]:
    """One tree per partition of the rows of ``df``: the estimation job with local OTrees
    per partition value (``tasks.estimate_partition_domains``), then each partition's cube
    max weights and layout from its domains and its existing blocks (``statuses``).

    Args:
        df: the rows, with the partition column.
        revision: the revision the rows are indexed with.
        partitioning: the table's time partitioning.
        params: the estimation job's parameters (``existing`` is replaced by the inner
            cubes' max weights of every partition).
        fraction: the share of the rows the estimation samples (domains are scaled back).
        statuses: the cube statuses of every existing partition's tree (empty for a new
            revision).
    """
    import functools

    from qbeast_connect.index.append_plan import weights_and_layout
    from qbeast_connect.spark.estimation import estimation_rows
    from qbeast_connect.spark.tasks import PARTITION_DOMAIN_SCHEMA, estimate_partition_domains

    existing = {
        value: {str(c): int(s.max_weight) for c, s in st.items() if s.max_weight < 2**31 - 1}
        for value, st in statuses.items()
    }
    job = json.dumps(dict(params, existing=existing))
    task = functools.partial(estimate_partition_domains, job)
    rows = estimation_rows(
        df, revision, fraction, task, PARTITION_DOMAIN_SCHEMA, partition_column=partitioning.column
    )
    domains: dict[str, dict[str, float]] = {}
    for row in rows:
        part = domains.setdefault(str(row["part"]), {})
        part[row["cube"]] = part.get(row["cube"], 0.0) + float(row["domain"]) / fraction
    trees: dict[str, PartitionTree] = {}
    for value, own in domains.items():
        # the root's domain is the size of the partition's trees: its rows
        rows_in = max(1, round(own.get("", 0.0)))
        weights, layout = weights_and_layout(revision, own, statuses.get(value, {}), rows_in)
        trees[value] = PartitionTree(weights, layout)
    return trees
