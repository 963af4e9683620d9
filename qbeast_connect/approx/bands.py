"""The rows of one weight band: the SQL filter online aggregation reads a band with."""

from __future__ import annotations

from collections.abc import Sequence

from qbeast_connect.model.weight import weight_from_fraction
from qbeast_connect.planning.file_planner import sample_weight_sql, validate_fraction
from qbeast_connect.planning.predicate import quote_identifier

__all__ = ["band_weight_sql"]


def band_weight_sql(columns: Sequence[str], from_fraction: float, to_fraction: float) -> str:
    """``hash(cols) >= weight(from) AND hash(cols) < weight(to)``: the rows of
    ``sample(to_fraction)`` that are not in ``sample(from_fraction)``.

    Consecutive bands are disjoint and their union up to ``f`` is exactly ``sample(f)``, so
    sums over bands add up to the sums over the sample. ``from_fraction`` 0 gives the sample
    filter itself.
    """
    upper = sample_weight_sql(columns, to_fraction)
    if from_fraction <= 0.0:
        return upper
    lower = weight_from_fraction(validate_fraction(from_fraction))
    args = ", ".join(quote_identifier(c) for c in columns)
    condition = f"hash({args}) >= {lower}"
    return condition if upper == "TRUE" else f"{condition} AND {upper}"
