"""The columns an ``approx`` call names, checked against the table before any query is built.

Spark would otherwise report an unknown column, or a measure of a type the estimators do
not take, as its own ``AnalysisException`` about the query ``approx`` built (an estimator's
``(d = 0)``), not about what the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qbeast_connect.approx.aggregates import Aggregate
from qbeast_connect.exceptions import InvalidOptionError, UnsupportedInputError

__all__ = ["NUMERIC_TYPES", "check_approx_columns"]

#: Column types (``DataType.typeName()``) ``sum`` and ``avg`` estimate.
NUMERIC_TYPES = frozenset({"byte", "short", "integer", "long", "float", "double"})


def _is_numeric(type_name: str) -> bool:
    return type_name in NUMERIC_TYPES or type_name.startswith("decimal")


def check_approx_columns(
    aggregates: Sequence[Aggregate],
    group_by: Sequence[str],
    column_types: Mapping[str, str],
    path: str,
) -> None:
    """Refuse ``approx`` arguments that name a column the table lacks, or that sum or average
    a column that is not a number.

    Args:
        aggregates: the parsed aggregates.
        group_by: the grouping column names.
        column_types: the table's top-level column name -> ``DataType.typeName()``.
        path: the table location (named in the messages).

    Raises:
        InvalidOptionError: a grouping or aggregated column is not a column of the table
            (names match case-insensitively, as Spark matches them).
        UnsupportedInputError: ``sum`` or ``avg`` of a column that is not numeric.
    """
    by_lower = {name.lower(): name for name in column_types}
    available = ", ".join(sorted(column_types))

    def resolve(name: str, where: str) -> str:
        found = by_lower.get(name.lower())
        if found is None:
            raise InvalidOptionError(
                f"approx() {where} names the column {name!r}, which the table at {path} does "
                f"not have; its columns are: {available}"
            )
        return found

    for name in group_by:
        resolve(name, "groupBy")
    for agg in aggregates:
        for name in agg.columns:
            column = resolve(name, f"aggregate {agg.alias!r}")
            type_name = column_types[column]
            if agg.kind in ("sum", "avg") and not _is_numeric(type_name):
                raise UnsupportedInputError(
                    f"approx() cannot estimate {agg.kind}({column}): {column!r} is a "
                    f"{type_name} column, and sum and avg are estimated for numeric columns "
                    "only (count, min and max take any column: min and max give a date's or a "
                    "time's range); compute it exactly with Spark on table.read() instead"
                )
