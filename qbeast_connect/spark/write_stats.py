"""The statistics a write starts from: row counts per input partition and the bounds of the
indexed columns.

A write usually computes them with a Spark job (:func:`stats_frame`, read back by
:func:`read_stats`): the bounds decide whether the latest revision's space holds the rows
(spec §4.7), the counts size the estimation's local trees (``groupCubeSize``, spec §5.3). A
compaction knows both before reading a row (:func:`known_statistics`): it chose files
whose rows lie inside the latest revision's space, and the log counts each file's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.transformation import ColumnStats, QDataType
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.rules.schema import column_types

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["known_statistics", "read_stats", "stat_expression", "stats_frame"]


def stat_expression(column: str, qtype: QDataType, spark_type: str) -> str:
    """SQL giving the column's value in the transformation domain (numbers, epoch ms)."""
    quoted = quote_identifier(column)
    if qtype is QDataType.TIMESTAMP:
        return f"unix_millis({quoted})"
    if qtype is QDataType.DATE:
        return f"cast(unix_date({quoted}) as bigint) * 86400000"
    if qtype in (QDataType.DOUBLE, QDataType.FLOAT):
        # NaN and ±infinity have fixed coordinates (model.linear_scale) and stay out of the
        # bounds: Spark's min/max would return them (NaN is its largest double)
        return (
            f"CASE WHEN isnan({quoted}) OR abs({quoted}) = double('Infinity') THEN NULL "
            f"ELSE cast({quoted} as double) END"
        )
    if qtype is QDataType.DECIMAL or spark_type == "float":
        return f"cast({quoted} as double)"
    if spark_type == "boolean":
        return f"cast({quoted} as int)"
    return quoted


def stats_frame(
    df: DataFrame,
    specs: tuple[ColumnSpec, ...],
    index_types: Mapping[str, QDataType],
    schema: StructType,
    latest: Revision | None,
) -> tuple[DataFrame, list[str]]:
    """The statistics aggregation of ``df`` (one row per input partition) and the columns it
    computes bounds for."""
    from pyspark.sql import functions as F

    types = column_types(str(schema.json()))
    aggs = [F.count(F.lit(1)).alias("__n")]
    needs: list[str] = []
    for i, spec in enumerate(specs):
        transformer_type = spec.transformer_type
        if transformer_type is None and latest is not None:
            kept = latest.column_transformers[i].type_name
            transformer_type = None if kept == "empty" else kept
        qtype = index_types[spec.name]
        is_ordered = qtype is not QDataType.STRING
        if transformer_type in (None, "linear") and is_ordered:
            expr = F.expr(stat_expression(spec.name, qtype, types.get(spec.name, "")))
            aggs += [F.min(expr).alias(f"__min{i}"), F.max(expr).alias(f"__max{i}")]
            needs.append(spec.name)
    return df.groupBy(F.spark_partition_id().alias("__p")).agg(*aggs), needs


def read_stats(
    rows: list[Any],
    specs: tuple[ColumnSpec, ...],
    needs: list[str],
    index_types: Mapping[str, QDataType],
) -> tuple[int, list[int], dict[str, ColumnStats]]:
    """``(rows, rows per partition, bounds per column)`` from :func:`stats_frame`'s rows."""
    per_partition = [int(r["__n"]) for r in rows]
    total = sum(per_partition)
    stats: dict[str, ColumnStats] = {}
    for i, spec in enumerate(specs):
        if spec.name not in needs:
            continue
        mins = [r[f"__min{i}"] for r in rows if r[f"__min{i}"] is not None]
        maxs = [r[f"__max{i}"] for r in rows if r[f"__max{i}"] is not None]
        low = min(mins) if mins else None
        high = max(maxs) if maxs else None
        qtype = index_types[spec.name]
        if qtype in (QDataType.DOUBLE, QDataType.DECIMAL, QDataType.FLOAT):
            # finite (see stat_expression); + 0.0 stores -0.0 as 0.0
            low = None if low is None else float(low) + 0.0
            high = None if high is None else float(high) + 0.0
        elif low is not None:
            low, high = int(low), int(high)  # type: ignore[arg-type]
        stats[spec.name] = ColumnStats(min=low, max=high)
    return total, per_partition, stats


def known_statistics(rows_per_file: Sequence[int]) -> tuple[int, list[int]]:
    """``(rows, rows per partition)`` of a compaction's input, from the log's count of each
    file's rows, without a job: each file counted as one partition.

    The job counts Spark's partitions, which pack small files together and split large
    ones; the counts only size the estimation's local trees (``groupCubeSize``, spec §5.3),
    and any size gives a valid index, so the log's per-file count stands in for them."""
    per_file = [int(n) for n in rows_per_file if n > 0]
    return sum(per_file), per_file
