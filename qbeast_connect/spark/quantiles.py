"""Quantiles of a column, for the ``quantiles`` transformer's ``columnStats``.

The ``quantiles`` transformer (spec §4.4) maps a value to its position among given
quantiles, so skewed columns spread evenly over the index space; linear transformers
crowd skewed data into a corner of it and grow deep, lopsided trees. The format never
computes quantiles itself: the writer needs ``<col>_quantiles`` in ``columnStats``.
:func:`computeQuantilesForColumn` computes them with one Spark job::

    qs = qc.computeQuantilesForColumn(df, "price")
    qc.write(df, path, columnsToIndex="price:quantiles,day",
             columnStats=json.dumps({"price_quantiles": qs}))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.spark.errors import translate_errors

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["computeQuantilesForColumn"]

_NUMERIC = {"byte", "short", "integer", "long", "float", "double"}
#: Values of a string column looked at, at most (a uniform sample of the column).
STRING_SAMPLE_ROWS = 200_000


def computeQuantilesForColumn(  # noqa: N802 - PySpark-style camelCase API
    df: DataFrame,
    columnName: str,  # noqa: N803
    numberOfQuantiles: int = 50,  # noqa: N803
    relativeError: float = 0.1,  # noqa: N803
) -> list[Any]:
    """Sorted, distinct quantiles of ``columnName`` including its exact min and max.

    Args:
        df: the data to be indexed.
        columnName: a numeric (integral, float, double, decimal) or string column.
        numberOfQuantiles: quantiles to compute (at least 2), evenly spaced in probability.
        relativeError: Spark's ``approxQuantile`` error bound for numeric columns (0 is exact
            and costly); string columns use a uniform sample of at most
            ``STRING_SAMPLE_ROWS`` values.

    Returns:
        Floats for numeric columns, strings for string columns; the first value is the
        column's minimum and the last its maximum.

    Raises:
        InvalidOptionError: unknown column, unsupported type, bad arguments, or no non-null
            value.
    """
    from pyspark.sql import functions as F

    if isinstance(numberOfQuantiles, bool) or not isinstance(numberOfQuantiles, int) \
            or numberOfQuantiles < 2:
        raise InvalidOptionError(
            f"numberOfQuantiles must be an integer >= 2, got {numberOfQuantiles!r}"
        )
    if not 0.0 <= float(relativeError) < 1.0:
        raise InvalidOptionError(f"relativeError must be in [0, 1), got {relativeError!r}")
    fields = {f.name: f for f in df.schema.fields}
    if columnName not in fields:
        raise InvalidOptionError(
            f"computeQuantilesForColumn: no column {columnName!r}; columns: {sorted(fields)}"
        )
    type_name = fields[columnName].dataType.typeName()
    col = F.col(quote_identifier(columnName))
    with translate_errors():
        if type_name in _NUMERIC or type_name == "decimal":
            v = F.col("v")
            # quantiles are finite; the CDF puts NaN and +inf at 1.0 and -inf at 0.0
            values = df.select(col.cast("double").alias("v")).where(
                v.isNotNull() & ~F.isnan(v) & (F.abs(v) != float("inf"))
            )
            bounds = values.agg(F.min("v"), F.max("v"), F.count("v")).first()
            if bounds is None or not bounds[2]:
                raise InvalidOptionError(
                    f"column {columnName!r} has no non-null value to take quantiles of "
                    "(NULL, NaN and infinite values are skipped)"
                )
            probabilities = [i / (numberOfQuantiles - 1) for i in range(numberOfQuantiles)]
            inner = values.approxQuantile("v", probabilities, float(relativeError))
            found = [float(bounds[0]), *(float(v) for v in inner), float(bounds[1])]
        elif type_name == "string":
            values = df.select(col.alias("v")).where(F.col("v").isNotNull())
            bounds = values.agg(F.min("v"), F.max("v"), F.count("v")).first()
            if bounds is None or not bounds[2]:
                raise InvalidOptionError(f"column {columnName!r} has no non-null value")
            fraction = min(1.0, STRING_SAMPLE_ROWS / int(bounds[2]))
            sample = values.sample(fraction=fraction, seed=7) if fraction < 1.0 else values
            ordered = sorted(r[0] for r in sample.collect())
            picks = [
                ordered[round(i * (len(ordered) - 1) / (numberOfQuantiles - 1))]
                for i in range(numberOfQuantiles)
            ] if ordered else []
            found = [bounds[0], *picks, bounds[1]]
        else:
            raise InvalidOptionError(
                f"computeQuantilesForColumn: column {columnName!r} has type {type_name}; "
                "quantiles are computed for numeric and string columns (index dates and "
                "timestamps with the linear transformer, or pass <col>_quantiles yourself)"
            )
    low, high = found[0], found[-1]
    return sorted({v for v in found if low <= v <= high})
