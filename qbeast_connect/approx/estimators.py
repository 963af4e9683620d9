"""Estimates and confidence intervals from a sample of rows selected by weight.

A qbeast sample of fraction ``f`` keeps exactly the rows whose weight (Spark's Murmur3
``hash`` of the indexed columns) is below ``W = weight(f)``. The hash spreads rows evenly
over the 2^32 weights independently of the values measured, so each row is kept with
probability ``p = (W - MIN_WEIGHT) / 2^32`` (:func:`inclusion_probability`) and the sample is
a Bernoulli(p) sample of the rows (docs/approx.md says when this fails: rows with equal
indexed values share their weight and are kept or dropped together).

Per group the sample gives sufficient sums (:class:`Sums`); from them:

- ``count``: Horvitz-Thompson ``n / p``, variance estimate ``(1 - p) / p^2 * n``;
- ``sum``: ``S / p``, variance estimate ``(1 - p) / p^2 * Q`` with ``Q`` the sum of squares;
- ``avg``: the ratio ``S / n`` of two HT estimates, with the delta-method variance
  ``(1 - p) * (Q - 2 R S + R^2 n) / n^2``;
- ``count(DISTINCT k)`` when ``k`` are the indexed columns (all rows of a key share a weight,
  so keys are sampled like rows): ``d / p``, variance ``(1 - p) / p^2 * d``;
- ``min`` / ``max``: the value seen, a one-sided bound of the true one.

Intervals are normal (CLT): ``estimate ± z * sqrt(variance)``. An estimate from fewer than
:data:`MIN_RELIABLE` contributing rows (non-null, and for sums non-zero) is flagged not
reliable and carries no interval. With ``p = 1`` every row was read and the answer is exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from statistics import NormalDist
from typing import Any

from qbeast_connect.approx.aggregates import Aggregate
from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.weight import MIN_WEIGHT, weight_from_fraction

__all__ = [
    "MIN_RELIABLE",
    "Estimate",
    "Sums",
    "estimate",
    "inclusion_probability",
    "merge_sums",
    "stat_names",
    "z_value",
]

MIN_RELIABLE = 30
"""Fewest contributing sampled rows for which a normal interval is claimed."""

_WEIGHTS = 2.0**32

#: A group's sufficient sums: stat name -> value (see :func:`stat_names`).
Sums = dict[str, Any]


def inclusion_probability(fraction: float) -> float:
    """The probability that a row is in ``sample(fraction)``: the share of weights below
    ``weight(fraction)`` (exactly 1 for ``fraction >= 1``, where no row is filtered)."""
    if fraction >= 1.0:
        return 1.0
    return (weight_from_fraction(fraction) - MIN_WEIGHT) / _WEIGHTS


def z_value(confidence: object) -> float:
    """The two-sided normal quantile of a confidence level in (0, 1).

    Raises:
        InvalidOptionError: not a number strictly between 0 and 1.
    """
    if isinstance(confidence, bool) or not isinstance(confidence, int | float | Decimal):
        raise InvalidOptionError(f"confidence must be a number in (0, 1), got {confidence!r}")
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise InvalidOptionError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}")
    return NormalDist().inv_cdf((1.0 + c) / 2.0)


def stat_names(agg: Aggregate, i: int) -> tuple[str, ...]:
    """The sums aggregate number ``i`` needs (beyond the group's row count ``rows``)."""
    if agg.kind == "count":
        return () if agg.column is None else (f"n{i}",)
    if agg.kind in ("sum", "avg"):
        return (f"n{i}", f"nz{i}", f"s{i}", f"q{i}")
    if agg.kind == "min":
        return (f"min{i}",)
    if agg.kind == "max":
        return (f"max{i}",)
    return (f"d{i}",)


def _merge_value(name: str, a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if name.startswith("min"):
        return min(a, b)
    if name.startswith("max"):
        return max(a, b)
    return a + b


def merge_sums(into: dict[Any, Sums], more: Iterable[tuple[Any, Sums]]) -> None:
    """Add the sums of disjoint row sets (weight bands) group by group, in place.

    Counts and sums add; ``min``/``max`` keep the smaller/larger. Distinct counts add too:
    they are only kept for the indexed columns, whose equal keys share a weight and so fall
    into one band.
    """
    for key, sums in more:
        held = into.get(key)
        if held is None:
            into[key] = dict(sums)
            continue
        for name, value in sums.items():
            held[name] = _merge_value(name, held.get(name), value)


@dataclass(frozen=True, slots=True)
class Estimate:
    """One aggregate of one group.

    Attributes:
        value: the estimate (for min/max the value seen; exact when every row was read).
        low: lower end of the interval (None: none claimed).
        high: upper end of the interval (None: none claimed).
        reliable: whether ``[low, high]`` is a confidence interval at the level asked (or
            the exact value). min/max are never reliable below a full read: their one bound
            is certain, the other unknown.
    """

    value: Any
    low: Any
    high: Any
    reliable: bool

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (None without a two-sided interval)."""
        if self.low is None or self.high is None:
            return None
        return (float(self.high) - float(self.low)) / 2.0


def _interval(value: float, variance: float, z: float, count: int) -> Estimate:
    if count < MIN_RELIABLE:
        return Estimate(value, None, None, False)
    half = z * math.sqrt(max(variance, 0.0))
    return Estimate(value, value - half, value + half, True)


def _num(value: Any) -> float:
    return 0.0 if value is None else float(value)


def estimate(agg: Aggregate, i: int, sums: Mapping[str, Any], p: float, z: float) -> Estimate:
    """The estimate and interval of aggregate number ``i`` from a group's sums.

    Args:
        agg: the aggregate.
        i: its position (names its sums, see :func:`stat_names`).
        sums: the group's sums; ``rows`` is its sampled row count.
        p: the inclusion probability of the rows read (1: every row).
        z: the normal quantile of the confidence level.
    """
    exact = p >= 1.0
    if agg.kind == "min" or agg.kind == "max":
        seen = sums.get(f"{agg.kind}{i}")
        if exact:
            return Estimate(seen, seen, seen, True)
        if agg.kind == "min":  # the true minimum is at most the one seen
            return Estimate(seen, None, seen, False)
        return Estimate(seen, seen, None, False)
    if agg.kind == "count" or agg.kind == "count_distinct":
        name = "rows" if agg.kind == "count" and agg.column is None else stat_names(agg, i)[0]
        n = int(sums.get(name) or 0)
        if exact:
            return Estimate(n, n, n, True)
        return _interval(n / p, (1.0 - p) / (p * p) * n, z, n)
    n = int(sums.get(f"n{i}") or 0)
    s = sums.get(f"s{i}")
    q = _num(sums.get(f"q{i}"))
    if agg.kind == "sum":
        if exact:
            return Estimate(s, s, s, True)
        if n == 0:  # Spark's sum of no values is NULL; a sample with none says little
            return Estimate(None, None, None, False)
        nonzero = int(sums.get(f"nz{i}") or 0)
        return _interval(_num(s) / p, (1.0 - p) / (p * p) * q, z, nonzero)
    # avg: the ratio estimator S / n
    if n == 0:
        return Estimate(None, None, None, exact)
    ratio = _num(s) / n
    if exact:
        return Estimate(ratio, ratio, ratio, True)
    residual = q - 2.0 * ratio * _num(s) + ratio * ratio * n
    return _interval(ratio, (1.0 - p) * residual / (n * n), z, n)
