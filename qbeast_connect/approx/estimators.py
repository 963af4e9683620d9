"""Estimates and confidence intervals from a sample of weights.

A qbeast sample of fraction ``f`` keeps exactly the rows whose weight (Spark's Murmur3
``hash`` of the indexed columns) is below ``W = weight(f)``. The hash spreads the weights
evenly over the 2^32 values independently of the values measured, so each weight is kept
with probability ``p = (W - MIN_WEIGHT) / 2^32`` (:func:`inclusion_probability`). Rows with
equal indexed values (a date, a category, all NULLs) share their weight and are kept or
dropped together: the sample is a Poisson sample of *weights*, each bringing all its rows.
So every variance below is computed from per-weight totals ``y_k`` (one more level of
aggregation in the read's query, see :mod:`qbeast_connect.approx.run`); when every row has a
weight of its own they are the per-row values and the formulas are the usual ones. The rows
whose indexed columns are all NULL share one weight that may hold a large share of a table:
``approx`` reads them in full in its first band (a stratum with ``p = 1``), so every total
below is their part plus ``1 / p`` times the sampled part, and the spread is the sampled
weights' alone.

Per group the sample gives sufficient sums (:class:`Sums`, names in :func:`stat_names`);
with ``y_k`` the weight's row count (``count``), non-null count (``count(x)``) or sum of the
measure (``sum``):

- ``count`` / ``sum``: Horvitz-Thompson ``Σ y_k / p``, variance ``(1 - p) / p² · Σ y_k²``;
- ``avg``: the ratio ``R = Σ S_k / Σ n_k`` of two HT estimates, with the delta-method
  variance ``(1 - p) · Σ (S_k - R n_k)² / (Σ n_k)²``;
- ``count(DISTINCT k)`` when ``k`` are the indexed columns: ``d / p``, variance
  ``(1 - p) / p² · d``;
- ``min`` / ``max``: the value seen, a one-sided bound of the true one.

Without filter nor group the log tells the rows ``N`` an answer covers: ``count(*)`` is then
``N`` and ``count(x)``, ``sum(x)`` are ratio estimators (``N`` times the sampled total per
row, :func:`_ratio`), whose variance leaves out the sample's random size. The interval of a
``sum`` or ``avg`` whose largest per-weight total suggests a heavy tail (:func:`tail_index`)
is widened for the values such a tail hides (:func:`_with_tail`), and its upper (lower) end
grows by the values the log proves the sample missed: the largest (smallest) value of each
file that still holds unread rows, when it exceeds every value read (:func:`_with_unread`).

Intervals are normal (CLT): ``estimate ± z · √variance``, claimed only when the sample can
support one, by one rule for every estimate: at least :data:`MIN_RELIABLE` sampled weights
contribute to it (``y_k ≠ 0``: weights with a row for ``count(*)``, with a non-null value for
``count(x)``, with a non-zero total for ``sum`` and ``avg``), and the interval has a
positive, finite width around a finite estimate. Many rows of a few weights are a few
observations, not many; an interval of zero width (a sample of zeros) or with a NaN end is
never reliable. With ``p = 1`` every row was read and the answer is exact.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
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
    "UnreadExtremes",
    "estimate",
    "inclusion_probability",
    "merge_sums",
    "stat_names",
    "z_value",
]

MIN_RELIABLE = 30
"""Fewest contributing sampled weights for which a normal interval is claimed."""

_WEIGHTS = 2.0**32
#: An avg's residual ``Σ S² - 2 R Σ S n + R² Σ n²`` below this share of ``Σ S²`` is rounding
#: noise of the doubles it is computed in (values far from 0 that barely vary), not spread.
_CANCELLATION = 1e-9

#: A group's sufficient sums: stat name -> value (see :func:`stat_names`).
Sums = dict[str, Any]


def inclusion_probability(fraction: float) -> float:
    """The probability that a weight is in ``sample(fraction)``: the share of weights below
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
    """The sums aggregate number ``i`` needs, beyond the group's ``rows`` (rows read),
    ``null_rows`` (those whose indexed columns are all NULL: one weight, read in full),
    ``keys`` (the other weights read) and ``r2`` (the sum of their rows' squares). The
    ``null_`` sums are the all-NULL rows' part of a total (``null_n``, ``null_t``,
    ``null_d``); every spread (``c2``, ``ss``, ``sn``, ``nn``) and weight count (``k``)
    is over the sampled weights only.

    - ``count(x)``: ``n`` (non-null values), ``k`` (weights with one), ``c2`` (the sum of
      the squares of the non-null counts per weight), ``nr = Σ n_k r_k`` (``r_k`` the
      weight's rows);
    - ``sum(x)``, ``avg(x)``: ``n``; ``s`` the sum in the column's type (the exact answer of
      a full read; None when it overflows); ``t`` the sum in doubles; with ``S_k``, ``n_k``
      a weight's sum (double) and non-null count: ``k`` the weights with ``S_k ≠ 0``,
      ``ss = Σ S_k²``, ``sn = Σ S_k n_k``, ``nn = Σ n_k²``, ``sr = Σ S_k r_k``, ``maxt``
      and ``mint`` the largest and smallest ``S_k``; ``maxv`` and ``minv`` the largest and
      smallest value read (all-NULL rows included);
    - ``min(x)``, ``max(x)``: the value seen; ``count(DISTINCT k)``: ``d`` the keys read.
    """
    if agg.kind == "count":
        if agg.column is None:
            return ()
        return (f"n{i}", f"null_n{i}", f"k{i}", f"c2{i}", f"nr{i}")
    if agg.kind in ("sum", "avg"):
        return (
            f"n{i}",
            f"null_n{i}",
            f"k{i}",
            f"s{i}",
            f"t{i}",
            f"null_t{i}",
            f"ss{i}",
            f"sn{i}",
            f"nn{i}",
            f"sr{i}",
            f"maxt{i}",
            f"mint{i}",
            f"maxv{i}",
            f"minv{i}",
        )
    if agg.kind == "min":
        return (f"min{i}",)
    if agg.kind == "max":
        return (f"max{i}",)
    return (f"d{i}", f"null_d{i}")


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
    """Add the sums of disjoint weight bands group by group, in place.

    Counts and sums add (a weight lies in one band, so its per-weight totals are whole in
    that band and sums of their powers add too); ``min``/``max`` keep the smaller/larger.
    A sum in the column's type that overflowed in one band (None while that band has values)
    stays None.
    """
    for key, sums in more:
        held = into.get(key)
        if held is None:
            into[key] = dict(sums)
            continue
        for name, value in sums.items():
            if name.startswith("s") and name[1:].isdigit() and _overflowed(held, value, sums, name):
                held[name] = None
                continue
            held[name] = _merge_value(name, held.get(name), value)


def _overflowed(held: Sums, value: Any, sums: Sums, name: str) -> bool:
    """Whether the exact-type sum ``name`` overflowed in the bands held or in this one."""
    i = name[1:]
    return (held.get(name) is None and bool(held.get(f"n{i}"))) or (
        value is None and bool(sums.get(f"n{i}"))
    )


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
        support: the sampled weights that contribute to it (``inf`` when exact, 0 for
            min/max).
    """

    value: Any
    low: Any
    high: Any
    reliable: bool
    support: float = 0.0

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (None without a two-sided interval)."""
        if self.low is None or self.high is None:
            return None
        return (float(self.high) - float(self.low)) / 2.0


def _interval(value: float, variance: float, z: float, support: float) -> Estimate:
    """The normal interval, claimed only when the sample can support it: enough
    contributing weights, a positive finite width and a finite estimate."""
    if (
        support < MIN_RELIABLE
        or not math.isfinite(value)
        or not math.isfinite(variance)
        or variance <= 0.0
    ):
        return Estimate(value, None, None, False, support)
    half = z * math.sqrt(variance)
    if not math.isfinite(half) or half <= 0.0:
        return Estimate(value, None, None, False, support)
    return Estimate(value, value - half, value + half, True, support)


#: Whether intervals of sums and averages allow for a heavy tail (:func:`_with_tail`).
_HEAVY_TAILS = True

#: The heaviest tail :func:`_with_tail` allows for: a sample whose largest value suggests an
#: index of 1 or less (no finite mean; a Pareto(1.5) sample that read one of its largest
#: values often does) gets the widening of this one, wide but finite.
_LEAST_INDEX = 1.1

#: ``s = 2 / a`` at the largest tail index :func:`tail_index` tells apart from a light tail.
_LIGHT = 1.0  # a = 2: a finite variance


def _partial_zeta(s: float, n: float) -> float:
    """``Σ_{i=1..n} i^-s``: the first 50 terms summed, the rest by its integral."""
    head = min(int(n), 50)
    total = 0.0
    for i in range(1, head + 1):
        total += float(i) ** -s
    if n > head:
        a, b = head + 0.5, n + 0.5
        if abs(s - 1.0) < 1e-12:
            total += math.log(b / a)
        else:
            total += (a ** (1 - s) - b ** (1 - s)) / (s - 1)
    return total


def tail_index(largest: float, squares: float, weights: float) -> float:
    """The tail index ``a`` (alpha) of the per-weight totals a sample's largest one suggests, or
    ``inf`` when it suggests a finite variance.

    Of ``n`` values whose tail is Pareto with index ``a < 2``, the ``i``-th largest is
    about ``(n / i)^(1/a)`` times a scale, so the largest holds the share
    ``1 / Σ_{i≤n} i^(-2/a)`` of their sum of squares, whatever ``n`` (0.28 for ``a = 1.5``).
    A finite variance gives a share below ``1 / Σ_{i≤n} 1/i`` (the ``a = 2`` boundary,
    about ``1 / (ln n + 0.58)``): no tail is claimed. Otherwise ``a`` solves
    ``Σ_{i≤n} i^(-2/a) = squares / largest²``; 1.0 or less is an infinite mean.
    """
    if largest <= 0.0 or squares <= 0.0 or weights < 2:
        return math.inf
    target = squares / (largest * largest)
    if target >= weights or target >= _partial_zeta(_LIGHT, weights):
        return math.inf
    if target <= 1.0:
        return 0.0
    low, high = _LIGHT, 64.0  # s = 2 / a: the sum falls from n at s = 0 towards 1
    for _ in range(50):
        mid = (low + high) / 2.0
        if _partial_zeta(mid, weights) > target:
            low = mid
        else:
            high = mid
    return 2.0 / ((low + high) / 2.0)


def _with_tail(
    e: Estimate, sums: Mapping[str, Any], i: int, scale: float, p: float, z: float
) -> Estimate:
    """``e``'s interval widened for the large values a sample of a heavy-tailed measure
    missed.

    A sum of a measure whose tail is heavy (Pareto with ``a < 2``: infinite variance) is
    skewed at any sample size an approximate answer reads: a sample that missed the largest
    values has a sum too small, and its spread, made of the values it read, too narrow an
    interval; nothing in such a sample is unusual except that its largest per-weight total
    ``M`` holds a large share of the sum of squares (:func:`tail_index`). Under a Pareto tail
    of that index, the largest value the sample missed exceeds ``M · (q (1 - p) / p)^(1/a)``
    with probability ``1 / q``; with ``q = 2 / (1 - confidence)`` (40 at 95%) that is the
    interval's upper end's share of the misses, and the upper end grows by it (the lower
    end by its mirror for a negative tail, from the most negative total). ``scale`` is
    what one weight's total counts in the estimate (1 for a sum, ``1 / N̂`` for an
    average). An index below :data:`_LEAST_INDEX` is taken as that one (flagging those
    estimates instead flagged 12-20% of a Pareto(1.5) measure's, which mostly covered). A
    light tail (finite variance) changes nothing."""
    if not _HEAVY_TAILS or not e.reliable or e.low is None or e.high is None:
        return e
    weights = e.support
    squares = _num(sums.get(f"ss{i}"))
    confidence = 2.0 * NormalDist().cdf(z) - 1.0
    q = 2.0 / (1.0 - confidence) * (1.0 - p) / p
    low, high = float(e.low), float(e.high)
    for largest, sign in ((_num(sums.get(f"maxt{i}")), 1.0), (-_num(sums.get(f"mint{i}")), -1.0)):
        alpha = tail_index(largest, squares, weights)
        if math.isinf(alpha):
            continue
        alpha = max(alpha, _LEAST_INDEX)
        extra = largest * q ** (1.0 / alpha) * scale

        if sign > 0:
            high += extra
        else:
            low -= extra
    return Estimate(e.value, low, high, True, e.support)


@dataclass(frozen=True, slots=True)
class UnreadExtremes:
    """What the log tells of a measure's values in the rows a sample did not read: per file
    that may still hold such rows, the largest and smallest value of the measure (Delta's
    ``maxValues``/``minValues``), each list sorted, with running sums
    (:meth:`of`).

    A file whose largest value exceeds every value the sample read holds a row the sample
    missed (had it been read, a value read would be that large): the truth includes it, the
    estimate does not. A sample of a heavy-tailed measure that missed its largest values
    looks light-tailed and narrow, and only the log can tell.
    """

    maxima: tuple[float, ...]
    minima: tuple[float, ...]
    _max_sums: tuple[float, ...]
    _min_sums: tuple[float, ...]

    @classmethod
    def of(cls, ranges: Iterable[tuple[float, float]]) -> UnreadExtremes:
        """From each unread file's ``(smallest, largest)`` value (``(inf, -inf)``: a file
        whose values are all NULL)."""
        spans = list(ranges)
        maxima = sorted(hi for _, hi in spans if math.isfinite(hi))
        minima = sorted(lo for lo, _ in spans if math.isfinite(lo))
        return cls(tuple(maxima), tuple(minima), _running(maxima), _running(minima))

    def above(self, value: float) -> float:
        """The sum of the files' largest values that exceed ``value``."""
        start = bisect.bisect_right(self.maxima, value)
        return self._max_sums[-1] - self._max_sums[start] if self.maxima else 0.0

    def below(self, value: float) -> float:
        """The sum of the files' smallest values below ``value``."""
        return self._min_sums[bisect.bisect_left(self.minima, value)] if self.minima else 0.0


def _running(values: Sequence[float]) -> tuple[float, ...]:
    """``(0, v0, v0 + v1, ...)``."""
    out = [0.0]
    for v in values:
        out.append(out[-1] + v)
    return tuple(out)


def _with_unread(
    e: Estimate, sums: Mapping[str, Any], i: int, scale: float, unread: UnreadExtremes | None
) -> Estimate:
    """``e``'s interval grown by the rows the log proves the sample missed
    (:class:`UnreadExtremes`): its upper end by the positive largest values of unread files
    above every value read (``maxv``), its lower end by the negative smallest values below
    every value read (``minv``), each times ``scale`` (1 for a sum, ``1 / N̂`` for an
    average). Given that such a row was missed, the estimate is short of the truth by about
    its value (the other rows' estimate is unbiased for the rest), so the end it moves is
    the one the truth lies beyond. The rows may not match the filter or the group: the
    widening is then larger than needed, never smaller. (A Pareto(1.5) measure's sums were
    covered 66% of the time without it, the misses all low; ``bench/approx_shapes.py``.)"""
    if unread is None or not e.reliable or e.low is None or e.high is None:
        return e
    seen_max, seen_min = sums.get(f"maxv{i}"), sums.get(f"minv{i}")
    top = max(0.0, -math.inf if seen_max is None else float(seen_max))
    bottom = min(0.0, math.inf if seen_min is None else float(seen_min))
    if math.isnan(top) or math.isnan(bottom):
        return e
    low = float(e.low) + unread.below(bottom) * scale
    high = float(e.high) + unread.above(top) * scale
    return Estimate(e.value, low, high, True, e.support)


def _num(value: Any) -> float:
    return 0.0 if value is None else float(value)


def _finite_exact(value: Any) -> Estimate:
    """The exact answer of a full read: reliable unless it is NaN or infinite."""
    ok = value is not None and math.isfinite(float(value))
    return Estimate(value, value, value, ok, math.inf if ok else 0.0)


def estimate(
    agg: Aggregate,
    i: int,
    sums: Mapping[str, Any],
    p: float,
    z: float,
    known_rows: int | None = None,
    unread: UnreadExtremes | None = None,
) -> Estimate:
    """The estimate and interval of aggregate number ``i`` from a group's sums.

    Args:
        agg: the aggregate.
        i: its position (names its sums, see :func:`stat_names`).
        sums: the group's sums; ``rows`` is its sampled row count.
        p: the inclusion probability of the weights read (1: every row).
        z: the normal quantile of the confidence level.
        known_rows: the exact number of rows the group holds, when the log tells it (a
            query without filter nor group): ``count(*)`` is then that number, and
            ``count(x)`` and ``sum(x)`` are ratio estimators (:func:`_ratio`), whose
            variance leaves out the sample's random size.
        unread: for ``sum`` and ``avg``, the measure's extremes in the files holding rows
            not read (:func:`_with_unread`); None when the log does not tell them.
    """
    exact = p >= 1.0
    spread = (1.0 - p) / (p * p) if p > 0.0 else math.inf
    if agg.kind == "min" or agg.kind == "max":
        seen = sums.get(f"{agg.kind}{i}")
        if exact:
            return Estimate(seen, seen, seen, True, math.inf)
        if agg.kind == "min":  # the true minimum is at most the one seen
            return Estimate(seen, None, seen, False)
        return Estimate(seen, seen, None, False)
    if agg.kind == "count_distinct":
        d = int(sums.get(f"d{i}") or 0)
        if exact:
            return Estimate(d, d, d, True, math.inf)
        certain = _num(sums.get(f"null_d{i}"))
        return _interval(_ht(d, certain, p), spread * (d - certain), z, d - certain)
    if agg.kind == "count":
        names = ("rows", "keys", "r2") if agg.column is None else (f"n{i}", f"k{i}", f"c2{i}")
        n = int(sums.get(names[0]) or 0)
        if exact:
            return Estimate(n, n, n, True, math.inf)
        if known_rows is not None and agg.column is None:
            return Estimate(known_rows, known_rows, known_rows, True, math.inf)
        certain = _num(sums.get("null_rows" if agg.column is None else f"null_n{i}"))
        keys = _num(sums.get(names[1]))
        if known_rows is not None:
            fit = _ratio(n, certain, _num(sums.get(names[2])), _num(sums.get(f"nr{i}")), sums)
            if fit is not None:
                return _ratio_interval(fit, known_rows, sums, p, z, keys)
        return _interval(_ht(n, certain, p), spread * _num(sums.get(names[2])), z, keys)
    n = int(sums.get(f"n{i}") or 0)
    total = _num(sums.get(f"t{i}"))
    squares = _num(sums.get(f"ss{i}"))
    support = _num(sums.get(f"k{i}"))
    value = _ht(total, _num(sums.get(f"null_t{i}")), p)
    if agg.kind == "sum":
        if n == 0:  # Spark's sum of no values is NULL; a sample with none says little
            return Estimate(None, None, None, exact)
        if exact:
            s = sums.get(f"s{i}")  # None: the column's type overflowed; the doubles' sum
            return _finite_exact(s) if s is not None else Estimate(total, None, None, False)
        if known_rows is not None:
            certain = _num(sums.get(f"null_t{i}"))
            fit = _ratio(total, certain, squares, _num(sums.get(f"sr{i}")), sums)
            if fit is not None:
                e = _ratio_interval(fit, known_rows, sums, p, z, support)
                return _with_unread(_with_tail(e, sums, i, 1.0, p, z), sums, i, 1.0, unread)
        e = _interval(value, spread * squares, z, support)
        return _with_unread(_with_tail(e, sums, i, 1.0, p, z), sums, i, 1.0, unread)
    # avg: the ratio R = Ŝ / N̂ of the estimates of the sum and of the non-null count
    if n == 0:
        return Estimate(None, None, None, exact)
    if exact:
        return _finite_exact(total / n)
    rows = _ht(n, _num(sums.get(f"null_n{i}")), p)
    ratio = value / rows
    residual = (
        squares - 2.0 * ratio * _num(sums.get(f"sn{i}")) + ratio * ratio * _num(sums.get(f"nn{i}"))
    )
    if residual <= _CANCELLATION * squares:
        residual = 0.0  # no spread the doubles can tell from rounding: no interval
    e = _interval(ratio, spread * residual / (rows * rows), z, support)
    e = _with_tail(e, sums, i, 1.0 / rows, p, z)
    return _with_unread(e, sums, i, 1.0 / rows, unread)


def _ht(total: float, certain: float, p: float) -> float:
    """The Horvitz-Thompson estimate of a total: the all-NULL rows' part ``certain`` (read
    in full) plus the sampled part ``total - certain`` weighted by ``1 / p``."""
    return certain + (total - certain) / p


#: ``(certain, per_row, sampled_rows, residual)`` of a ratio estimator (:func:`_ratio`).
_Ratio = tuple[float, float, float, float]


def _ratio(
    total: float, certain: float, squares: float, cross: float, sums: Mapping[str, Any]
) -> _Ratio | None:
    """A total estimated as the known rows times its sampled per-row rate.

    When the log tells how many rows ``N`` the answer covers (no filter, no group), a total
    ``Y = c + Σ y_k / p`` (``c`` the all-NULL stratum's part, read in full) is better
    estimated as ``c + (N - c_rows) · B`` with ``B = Σ y_k / Σ r_k`` the sampled weights'
    total per row: the ratio estimator with the rows as auxiliary variable. Its variance,
    ``((N - c_rows) / Σ r_k)² · (1 - p) · Σ (y_k - B r_k)²`` (delta method), leaves out
    the randomness of how many rows the sample holds, which is most of a Horvitz-Thompson
    sum's variance for a measure of low spread (``1 + cv²`` becomes ``cv²``).

    Args:
        total: ``Σ y`` over the rows read (sampled and all-NULL).
        certain: the all-NULL rows' part of it.
        squares: ``Σ y_k²`` over the sampled weights.
        cross: ``Σ y_k r_k`` over the sampled weights.
        sums: the group's sums (``rows``, ``null_rows``, ``r2``).

    Returns:
        ``(certain, B, Σ r_k, Σ (y_k - B r_k)²)``, or None when no sampled row was read.
    """
    rows = _num(sums.get("rows")) - _num(sums.get("null_rows"))
    if rows <= 0.0:
        return None
    rate = (total - certain) / rows
    residual = squares - 2.0 * rate * cross + rate * rate * _num(sums.get("r2"))
    if residual <= _CANCELLATION * squares:
        residual = 0.0  # no spread the doubles can tell from rounding: no interval
    return certain, rate, rows, residual


def _ratio_interval(
    fit: _Ratio, known_rows: int, sums: Mapping[str, Any], p: float, z: float, support: float
) -> Estimate:
    """The estimate and normal interval of a ratio estimator (:func:`_ratio`) of a total over
    ``known_rows`` rows, of which the all-NULL ones (``null_rows``) were read in full."""
    certain, rate, rows, residual = fit
    stratum = max(float(known_rows) - _num(sums.get("null_rows")), 0.0)
    value = certain + stratum * rate
    variance = (stratum / rows) ** 2 * (1.0 - p) * residual
    return _interval(value, variance, z, support)
