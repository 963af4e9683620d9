"""Weight bands: the SQL filter online aggregation reads a band with, and how far the files
opened for a band reach."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from qbeast_connect.model.block import IndexFile
from qbeast_connect.model.weight import MIN_WEIGHT, fraction_from_weight, weight_from_fraction
from qbeast_connect.planning.file_planner import sample_weight_sql, validate_fraction
from qbeast_connect.planning.predicate import quote_identifier

__all__ = ["all_null_sql", "approx_band_sql", "band_weight_sql", "covered_fraction"]


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


def all_null_sql(columns: Sequence[str]) -> str:
    """``a IS NULL AND b IS NULL ...``: the rows whose indexed columns are all NULL.

    They all share one weight (Spark's ``hash`` of NULLs is its seed, 42), so a sample keeps
    or drops them together: on an index with many NULLs that one weight can hold a large
    share of the rows, which no sample of weights can estimate. ``approx`` reads them in
    full in its first band instead (:func:`approx_band_sql`)."""
    return " AND ".join(f"{quote_identifier(c)} IS NULL" for c in columns)


def approx_band_sql(columns: Sequence[str], from_fraction: float, to_fraction: float) -> str:
    """The rows one step of ``approx`` reads: those of :func:`band_weight_sql`, plus in the
    first band (``from_fraction`` 0) every row whose indexed columns are all NULL, which the
    later bands leave out. So the all-NULL rows are read exactly once and in full, whatever
    the fraction, and the other weights are sampled as usual."""
    band = band_weight_sql(columns, from_fraction, to_fraction)
    nulls = all_null_sql(columns)
    if from_fraction <= 0.0:
        return band if band == "TRUE" else f"({band}) OR ({nulls})"
    return f"({band}) AND NOT ({nulls})"


def covered_fraction(
    candidates: Iterable[IndexFile],
    opened: Iterable[IndexFile],
    from_fraction: float,
    to_fraction: float,
) -> float:
    """The largest fraction ``g >= to_fraction`` such that the ``opened`` files hold every
    candidate row of weight in ``[weight(from_fraction), weight(g))``.

    Files are written by weight band, and Spark reads a file whole, so the files opened for
    a small band often hold the rows of a larger one: reading those too costs no byte more.
    A row lives in a block whose ``minWeight <= weight <= maxWeight`` (spec §5.9), so a file
    left unopened can only hold rows of weight at least the ``minWeight`` of its blocks that
    reach ``weight(from_fraction)``; the smallest of those bounds the band.

    Args:
        candidates: the files that may hold rows matching the filter (whatever their weight).
        opened: the files the band's read opens.
        from_fraction: the band's lower end (0 for none).
        to_fraction: the band's upper end as asked.
    """
    if to_fraction >= 1.0:
        return 1.0
    low = weight_from_fraction(from_fraction) if from_fraction > 0.0 else MIN_WEIGHT
    high = weight_from_fraction(to_fraction)
    opened_paths = {f.path for f in opened}
    bound: int | None = None
    for f in candidates:
        if f.path in opened_paths:
            continue
        if not f.blocks:  # a file without blocks may hold any weight
            return to_fraction
        for b in f.blocks:
            if b.max_weight >= low:
                bound = b.min_weight if bound is None else min(bound, b.min_weight)
    if bound is None:
        return 1.0
    if bound <= high:
        return to_fraction
    g = fraction_from_weight(bound)
    while g > to_fraction and weight_from_fraction(g) > bound:
        g = math.nextafter(g, 0.0)
    return max(g, to_fraction)
