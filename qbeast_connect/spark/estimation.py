"""The input of a write's estimation job, and the job itself.

Both writers of a qbeast table estimate cube domains the same way: the row weight (Spark's
``hash`` of the indexed columns) and the indexed columns under plain positional names go
to a worker function (``tasks.estimate_domains``, or ``tasks.estimate_partition_domains``
for a time-partitioned table, which also gets the partition column), on a sample of the
rows when the input is large. This module builds that projection once for both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from qbeast_connect.model.revision import Revision
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.write_plan import INTERNAL_PREFIX, WEIGHT_COLUMN

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, Row

__all__ = ["PARTITION_COLUMN", "SAMPLE_SEED", "estimation_rows"]

#: The name the partition column travels under to ``tasks.estimate_partition_domains``.
PARTITION_COLUMN = f"{INTERNAL_PREFIX}Part"

#: The seed of the estimation sample, fixed so that a write's estimate is repeatable.
SAMPLE_SEED = 17


def estimation_rows(
    df: DataFrame,
    revision: Revision,
    fraction: float,
    task: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    schema: str,
    *,
    partition_column: str | None = None,
) -> list[Row]:
    """Run the estimation ``task`` over the rows of ``df`` and collect what it yields.

    Args:
        df: the rows to write.
        revision: the revision they are indexed with.
        fraction: the share of the rows the job samples (1.0: all of them).
        task: the worker function, given Arrow batches of the weight, then the indexed
            columns in the revision's order (``_qbeastC<i>``), then, with
            ``partition_column``, that column as :data:`PARTITION_COLUMN`.
        schema: the DDL schema of what ``task`` yields.
        partition_column: the time partition column, for a time-partitioned table.
    """
    from pyspark.sql import functions as F

    names = list(revision.column_names)
    # plain positional names: mapInArrow resolves its input by name, and a dot or a
    # backtick in a column name would be read as a path
    columns: list[Any] = [
        F.hash(*[F.col(quote_identifier(n)) for n in names]).alias(WEIGHT_COLUMN),
        *[F.col(quote_identifier(n)).alias(f"{INTERNAL_PREFIX}C{i}") for i, n in enumerate(names)],
    ]
    if partition_column is not None:
        columns.append(F.col(quote_identifier(partition_column)).alias(PARTITION_COLUMN))
    projected = df.select(*columns)
    if fraction < 1.0:
        projected = projected.sample(withReplacement=False, fraction=fraction, seed=SAMPLE_SEED)
    with translate_errors():
        return projected.mapInArrow(task, schema).collect()
