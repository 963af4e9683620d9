"""``ApproxResult``: the answer of :meth:`QbeastTable.approx`, and when reading may stop."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qbeast_connect.approx.aggregates import Aggregate
from qbeast_connect.approx.estimators import (
    MIN_RELIABLE,
    Estimate,
    Sums,
    UnreadExtremes,
    estimate,
    inclusion_probability,
)

__all__ = ["ApproxResult", "Step", "first_fraction", "next_fraction", "rows_needed"]

_MAX_GROWTH = 16.0  # a step reads at most this many times the rows read so far
_SAFETY = 1.1  # read a little more than the variance predicts
#: The squared coefficient of variation (variance / mean²) a first band is sized for before
#: any row is read: that of an exponential distribution, a wide spread for a measure (a
#: uniform one has 1/3). A measure spread wider costs one more band, not a wrong interval.
_PRIOR_CV2 = 1.0


@dataclass(frozen=True, slots=True)
class Step:
    """One read of a weight band ``(from_fraction, to_fraction]``."""

    from_fraction: float
    to_fraction: float
    bytes_read: int
    files_read: int
    rows_read: int


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, "" if v is None else v) for v in key)


@dataclass(frozen=True)
class ApproxResult:
    """Estimates with confidence intervals, per group, from the weight bands read so far.

    ``rows()`` gives one dict per group: the group columns, and for each aggregate alias
    ``a`` the keys ``a`` (the estimate), ``a_low`` and ``a_high`` (the interval; None when
    none is claimed) and ``a_reliable``. ``fraction`` is the sample fraction read (every
    row whose weight is below ``weight(fraction)``), ``bytesRead`` the bytes of the files
    opened for it (a file opened by two steps counts twice).
    """

    aggregates: tuple[Aggregate, ...]
    group_by: tuple[str, ...]
    groups: Mapping[tuple[Any, ...], Sums]
    fraction: float
    bytesRead: int  # noqa: N815 - PySpark-style public name
    confidence: float
    z: float
    steps: tuple[Step, ...] = ()
    totalBytes: int = 0  # noqa: N815
    done: bool = True
    relativeError: float | None = None  # noqa: N815
    #: the exact rows the answer covers, when the log tells it (no filter, no group): then
    #: ``count(*)`` is exact and ``count(x)``/``sum(x)`` are ratio estimators
    knownRows: int | None = None  # noqa: N815
    #: rows of the files that may hold a matching row (from the log): the floor of the
    #: absolute precision of counts near zero (:func:`next_fraction`)
    coveredRows: int | None = None  # noqa: N815
    #: rows per weight (``Σ r_k² / Σ r_k``) measured over every row of the bands read,
    #: matching the filter or not, when none matched: what an unseen weight is taken to
    #: bring (:func:`next_fraction`)
    rowsPerWeight: float | None = None  # noqa: N815
    #: the share of the candidate rows the sample holds, from the log
    #: (:meth:`~qbeast_connect.approx.planner.BandPlanner.sampled_share`): used for the
    #: inclusion probability when known
    sampledShare: float | None = None  # noqa: N815
    #: per measure of a ``sum``/``avg``, its extremes in the files that still hold unread
    #: rows, from the log (:meth:`~qbeast_connect.approx.planner.BandPlanner.unread_extremes`):
    #: they widen the intervals for rows the sample provably missed
    unreadExtremes: Mapping[str, UnreadExtremes] = field(default_factory=dict)  # noqa: N815
    # not an init field: dataclasses.replace gives a fresh cache, never stale estimates
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, init=False)

    @property
    def probability(self) -> float:
        """The chance that any one row was read (1.0 when every row was)."""
        if self.sampledShare is not None and self.fraction < 1.0:
            return self.sampledShare
        return inclusion_probability(self.fraction)

    @property
    def exact(self) -> bool:
        """Whether every row was read, so every value is exact."""
        return self.fraction >= 1.0

    @property
    def rowsRead(self) -> int:  # noqa: N802
        """Rows read that match the filter."""
        return sum(int(s.get("rows") or 0) for s in self.groups.values())

    def estimates(self) -> dict[tuple[Any, ...], list[Estimate]]:
        """Group key -> one :class:`Estimate` per aggregate, groups in key order."""
        cached = self._cache.get("estimates")
        if cached is None:
            p = self.probability
            known = self.knownRows if not self.group_by else None
            cached = {
                key: [
                    estimate(
                        agg,
                        i,
                        self.groups[key],
                        p,
                        self.z,
                        known,
                        self.unreadExtremes.get(agg.columns[0]) if agg.columns else None,
                    )
                    for i, agg in enumerate(self.aggregates)
                ]
                for key in sorted(self.groups, key=_sort_key)
            }
            self._cache["estimates"] = cached
        return dict(cached)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per group: group columns, then ``a``, ``a_low``, ``a_high``,
        ``a_reliable`` per aggregate alias ``a``."""
        out = []
        for key, values in self.estimates().items():
            row: dict[str, Any] = dict(zip(self.group_by, key, strict=True))
            for agg, e in zip(self.aggregates, values, strict=True):
                row[agg.alias] = e.value
                row[agg.alias + "_low"] = e.low
                row[agg.alias + "_high"] = e.high
                row[agg.alias + "_reliable"] = e.reliable
            out.append(row)
        return out

    def toPandas(self) -> Any:  # noqa: N802 - PySpark name
        """The rows as a pandas DataFrame (one row per group)."""
        import pandas as pd

        columns = list(self.group_by)
        for agg in self.aggregates:
            columns += [agg.alias + s for s in ("", "_low", "_high", "_reliable")]
        return pd.DataFrame(self.rows(), columns=columns)

    def converged(self) -> bool:
        """Whether every estimate is within ``relativeError`` (see :func:`next_fraction`)."""
        return self.relativeError is not None and next_fraction(self) is None

    def _repr_html_(self) -> str:
        state = "exact" if self.exact else f"{self.confidence:.0%} intervals"
        share = self.bytesRead / self.totalBytes if self.totalBytes else 0.0
        head = (
            f"<p>sample fraction {self.fraction:.6g} ({state}), {self.bytesRead:,} bytes read"
            f" ({share:.1%} of the table) in {len(self.steps)} step(s)"
            f"{'' if self.done else ', reading on…'}</p>"
        )
        cells = []
        names = list(self.group_by) + [a.alias for a in self.aggregates]
        for key, values in list(self.estimates().items())[:200]:
            row = [html.escape(str(v)) for v in key]
            for e in values:
                row.append(_html_estimate(e))
            cells.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
        header = "".join(f"<th>{html.escape(n)}</th>" for n in names)
        return (
            f'<div class="qbeast-approx">{head}<table><tr>{header}</tr>'
            + "".join(cells)
            + "</table></div>"
        )

    def __repr__(self) -> str:
        return (
            f"ApproxResult(groups={len(self.groups)}, fraction={self.fraction:.6g}, "
            f"bytesRead={self.bytesRead}, exact={self.exact})"
        )


def _html_estimate(e: Estimate) -> str:
    if e.value is None:
        return ""
    text = html.escape(f"{e.value:.6g}" if isinstance(e.value, float) else str(e.value))
    if e.reliable and e.half_width is not None and e.half_width > 0:
        return f"{text} ± {e.half_width:.3g}"
    if not e.reliable and e.low is None and e.high is None:
        return f"{text} (too few rows)"
    return text


def _needed_probability(e: Estimate, p: float, target: float) -> float:
    """The inclusion probability at which ``e``'s half-width should reach ``target``."""
    if not e.reliable:
        # too few effective weights: ask for enough of them, assuming they grow with p
        have = max(e.support, 1.0)
        return min(1.0, p * max(2.0, MIN_RELIABLE * 1.5 / have))
    half = e.half_width or 0.0
    if half <= target:
        return p
    if target <= 0.0:
        return 1.0
    # half-width ~ sqrt((1 - p) / p): solve (1 - p') / p' = (target / half)^2 (1 - p) / p
    c = (target / half) ** 2 * (1.0 - p) / p
    return 1.0 / (1.0 + c / (_SAFETY * _SAFETY))


def _rows_per_weight(groups: Mapping[tuple[Any, ...], Sums]) -> float | None:
    """Rows a weight holds, as seen over every group's sampled weights: the size-biased mean
    ``Σ r_k² / Σ r_k``, the rows an unseen weight is taken to bring. None when fewer than
    :data:`MIN_RELIABLE` weights were sampled: a sample of no weight cannot tell a filter
    matching no row from one matching a few weights of many rows each (an index on a
    5-value category), so no bound is claimed."""
    weights = sum(float(s.get("keys") or 0.0) for s in groups.values())
    if weights < MIN_RELIABLE:
        return None
    squares = sum(float(s.get("r2") or 0.0) for s in groups.values())
    rows = sum(float(s.get("rows") or 0) - float(s.get("null_rows") or 0) for s in groups.values())
    return max(1.0, squares / rows)


def _rows_upper_bound(sums: Sums | None, p: float, z: float, per_weight: float) -> float:
    """An upper bound, at about the interval's confidence, of the rows a group holds: its
    all-NULL rows (read in full) plus, from its ``k`` sampled weights, the Poisson upper
    limit ``(z/2 + √(k + 1))²`` of the weights sampled, over ``p``, times the rows a weight
    holds (:func:`_rows_per_weight`). For ``k = 0`` at 95% it is ``3.9 / p`` weights."""
    keys = float((sums or {}).get("keys") or 0.0)
    certain = float((sums or {}).get("null_rows") or 0.0)
    return certain + (z / 2.0 + math.sqrt(keys + 1.0)) ** 2 / p * per_weight


def next_fraction(result: ApproxResult) -> float | None:
    """The sample fraction to read next, or None when reading may stop.

    Reading stops when every estimate (min/max aside: they are bounds, not estimates) has a
    reliable interval whose half-width is at most ``relativeError * |estimate|``, or when
    every row has been read. A count (``count(*)``, ``count(x)``, ``count(DISTINCT)``) is
    held to ``relativeError * max(|estimate|, relativeError * N)`` instead, ``N`` the rows
    of the files that may hold a matching row (``coveredRows``, from the log): counts below
    ``relativeError * N`` need an absolute precision of ``relativeError² * N`` rows. And a
    group whose rows' upper bound (:func:`_rows_upper_bound`) is within that absolute
    precision and that rests on fewer than 30 sampled weights (a group matching very few
    rows) holds nothing back: its estimates stay flagged, but reading stops. A group of 30
    weights or more is held to ``relativeError`` as above (its counts with the floor), so a
    small group's ``sum`` still costs what its precision costs. That bound takes an
    unseen weight to hold the rows the query's sampled weights hold
    (:func:`_rows_per_weight`), so it needs at least 30 sampled weights in the query; when
    the query matched no row, the rows per weight of every row the bands read
    (``rowsPerWeight``, measured by one more query over the band's files, at least 30
    weights) stand in, and without them it reads on: a sample of no weight cannot tell no
    row from a few weights of many rows.
    Otherwise the next fraction is the power of two at which the widest interval is
    predicted to be narrow enough (half-widths shrink like ``sqrt((1 - p) / p)``), at most
    16 times the current one and at least twice the power of two it reaches (a band its
    files widened past ``2^-k`` grows to ``2^-(k-1)``, not beyond); a prediction of half
    the rows or more reads them all (exact).
    """
    if result.exact or result.relativeError is None:
        return None
    p = result.probability
    error = result.relativeError
    # the absolute precision of counts near zero: relativeError² of the rows covered
    per_weight = _rows_per_weight(result.groups)
    if per_weight is None:
        per_weight = result.rowsPerWeight
    floor = error * error * result.coveredRows if result.coveredRows else 0.0
    near = floor if per_weight is not None else 0.0  # the near-zero rule needs per_weight
    needed = p
    groups = result.estimates()
    if not groups:  # nothing matched yet: read more to learn whether anything does
        needed = 2.0 * p
        if per_weight is not None and near > 0.0:  # unless no group can hold more than near
            needed = _near_zero_probability(None, p, result.z, per_weight, near)
    for key, values in groups.items():
        sums = result.groups[key]
        few = float(sums.get("keys") or 0.0) < MIN_RELIABLE
        if few and per_weight is not None and near > 0.0:
            bound = _rows_upper_bound(sums, p, result.z, per_weight)
            if bound <= near:
                continue  # a group of very few rows, within the counts' absolute precision
        want = p
        for agg, e in zip(result.aggregates, values, strict=True):
            if agg.is_bound:
                continue
            target = error * abs(float(e.value)) if e.value is not None else 0.0
            if agg.kind in ("count", "count_distinct"):
                target = max(target, error * floor)
            want = max(want, _needed_probability(e, p, target))
        if want > p and few and per_weight is not None and near > 0.0:
            # or read until the group is known to be near zero
            near_zero = _near_zero_probability(sums, p, result.z, per_weight, near)
            want = min(want, near_zero)
        needed = max(needed, want)
    if needed <= p:
        return None
    # growth counts from the power of two the rows read reach: a band that its files widened
    # a little past 2^-k (covered_fraction) grows to 2^-(k-1) at least, not to 2^-(k-2)
    base = 2.0 ** math.floor(math.log2(result.fraction) + 1e-9)
    needed = min(max(needed, 2.0 * base), _MAX_GROWTH * p)
    exponent = math.ceil(math.log2(needed) - 1e-12)
    while 2.0**exponent <= result.fraction:
        exponent += 1
    # from half of the rows on, the rest costs about as much again: read it all, exactly
    return 1.0 if exponent >= -1 else 2.0**exponent


def _near_zero_probability(
    sums: Sums | None, p: float, z: float, per_weight: float, floor: float
) -> float:
    """The inclusion probability at which a group's rows' upper bound should fall within
    ``floor`` (rows) if its sampled weights grow in proportion to ``p`` (1.0: never)."""
    bound = _rows_upper_bound(sums, p, z, per_weight)
    certain = float((sums or {}).get("null_rows") or 0.0)
    expected = float((sums or {}).get("keys") or 0.0) / p * per_weight
    if bound <= floor:
        return p
    if certain + expected >= floor:
        return 1.0  # too many rows to be within the floor, however many are read
    return min(1.0, p * (bound - certain) / (floor - certain))


def first_fraction(total_rows: int, rows: int = 4096) -> float:
    """The power of two at which about ``rows`` of ``total_rows`` are read (at most 1)."""
    if total_rows <= rows:
        return 1.0
    return float(2.0 ** max(-30, math.floor(math.log2(rows / total_rows))))


def rows_needed(
    aggregates: Sequence[Aggregate],
    relative_error: float,
    z: float,
    prior_cv2: float = _PRIOR_CV2,
    known_rows: bool = False,
) -> int:
    """Sampled rows with which every estimate should meet ``relative_error``, from no data.

    A count's relative half-width is about ``z / √n``; a sum's or an average's about
    ``z · √((1 + cv²) / n)`` (``cv`` the measure's coefficient of variation, taken as
    ``prior_cv2``). So ``n = (1 + cv²) · (z / relative_error)²`` for the widest of them; 0
    when every aggregate is a bound (min/max), which no number of rows narrows. With
    ``known_rows`` (the log tells the rows the answer covers: ratio estimators) a sum needs
    ``cv² · (z / relative_error)²`` and ``count(*)`` none. Sizes the first band of an
    online aggregation; the bands after it follow the spread the bands read measured.
    """
    factor = 0.0
    for agg in aggregates:
        if agg.is_bound:
            continue
        if agg.kind in ("count", "count_distinct"):
            need = 0.0 if known_rows and agg.kind == "count" and agg.column is None else 1.0
        elif known_rows and agg.kind == "sum":
            need = prior_cv2
        else:
            need = 1.0 + prior_cv2
        factor = max(factor, need)
    return math.ceil(factor * (z / relative_error) ** 2)
