"""The pure part of approximate answers: parsing, estimators, intervals, the schedule."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from qbeast_connect.approx import (
    MIN_RELIABLE,
    ApproxResult,
    estimate,
    estimators,
    first_fraction,
    inclusion_probability,
    merge_sums,
    next_fraction,
    parse_aggregates,
    z_value,
)
from qbeast_connect.approx.aggregates import Aggregate
from qbeast_connect.approx.bands import band_weight_sql, covered_fraction
from qbeast_connect.approx.estimators import Sums, stat_names, tail_index
from qbeast_connect.exceptions import InvalidOptionError, QbeastError
from qbeast_connect.model.block import Block, IndexFile
from qbeast_connect.model.weight import weight_from_fraction

Z95 = z_value(0.95)


def test_parse_aggregates_reads_aliases_and_defaults() -> None:
    parsed = parse_aggregates(
        [
            "sum(l_extendedprice) AS revenue",
            "count(*) AS n",
            "avg(x) a",
            "MAX(`odd col`)",
            "count(DISTINCT a, b)",
            "count(y)",
        ]
    )
    assert parsed == (
        Aggregate("sum", ("l_extendedprice",), "revenue"),
        Aggregate("count", (), "n"),
        Aggregate("avg", ("x",), "a"),
        Aggregate("max", ("odd col",), "max(odd col)"),
        Aggregate("count_distinct", ("a", "b"), "count(DISTINCT a, b)"),
        Aggregate("count", ("y",), "count(y)"),
    )


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (["median(x)"], "supports count, sum"),
        (["sum(x + 1)"], "not a column"),
        (["sum(x) AS a", "count(*) AS a"], "used twice"),
        (["sum(x) AS a", "count(*) AS a_low"], "used twice"),
        (["sum(DISTINCT x)"], "only count takes DISTINCT"),
        (["sum(a, b)"], "takes one column"),
        ([], "at least one"),
        (["sum x"], "cannot parse"),
        (["sum(v) AS"], "'AS' must be followed by the result's name"),
        (["count(*) as"], "'AS' must be followed by the result's name"),
    ],
)
def test_parse_aggregates_refuses_what_it_cannot_estimate(texts: list[str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message) as info:
        parse_aggregates(texts)
    assert isinstance(info.value, QbeastError)


def test_group_column_and_alias_collide() -> None:
    with pytest.raises(InvalidOptionError, match="used twice"):
        parse_aggregates("count(*) AS g", ["g"])


def test_inclusion_probability_is_the_share_of_weights_below_the_threshold() -> None:
    assert inclusion_probability(1.0) == 1.0
    for f in (1 / 1024, 0.1, 0.5):
        w = weight_from_fraction(f)
        assert inclusion_probability(f) == (w + 2**31) / 2**32
        assert inclusion_probability(f) == pytest.approx(f, abs=1e-9)


def test_band_filter_is_the_difference_of_two_samples() -> None:
    lo, hi = weight_from_fraction(0.25), weight_from_fraction(0.5)
    assert band_weight_sql(["a", "b c"], 0.25, 0.5) == (
        f"hash(`a`, `b c`) >= {lo} AND hash(`a`, `b c`) < {hi}"
    )
    assert band_weight_sql(["a"], 0.0, 0.5) == f"hash(`a`) < {hi}"
    assert band_weight_sql(["a"], 0.5, 1.0) == f"hash(`a`) >= {hi}"


def _sums(x: np.ndarray, keys: np.ndarray | None = None) -> Sums:
    """The sums Spark computes over sampled values ``x`` whose rows have weights ``keys``
    (each row a weight of its own by default): per weight the totals, then their powers."""
    keys = np.arange(len(x)) if keys is None else keys
    _, index = np.unique(keys, return_inverse=True)
    rows = np.bincount(index).astype(float)
    totals = np.bincount(index, weights=x)
    return {
        "rows": len(x),
        "keys": len(rows),
        "r2": float((rows**2).sum()),
        "n0": len(x),
        "k0": int(np.count_nonzero(totals)),
        "c20": float((rows**2).sum()),
        "s0": float(x.sum()),
        "t0": float(totals.sum()),
        "ss0": float((totals**2).sum()),
        "sn0": float((totals * rows).sum()),
        "nn0": float((rows**2).sum()),
        "nr0": float((rows**2).sum()),
        "sr0": float((totals * rows).sum()),
        "maxt0": float(totals.max()) if len(totals) else None,
        "mint0": float(totals.min()) if len(totals) else None,
        "maxv0": float(x.max()) if len(x) else None,
        "minv0": float(x.min()) if len(x) else None,
    }


def test_estimators_follow_horvitz_thompson() -> None:
    x = np.arange(1, 101, dtype=float)  # 100 sampled values
    sums = _sums(x)
    p = 0.1
    s, q = x.sum(), (x * x).sum()
    total = estimate(Aggregate("sum", ("x",), "t"), 0, sums, p, Z95)
    assert total.value == pytest.approx(s / p)
    half = Z95 * np.sqrt((1 - p) / p**2 * q)
    assert (total.low, total.high) == pytest.approx((s / p - half, s / p + half))
    count = estimate(Aggregate("count", (), "n"), 0, sums, p, Z95)
    assert count.value == pytest.approx(1000)
    assert count.half_width == pytest.approx(Z95 * np.sqrt((1 - p) / p**2 * 100))
    mean = estimate(Aggregate("avg", ("x",), "m"), 0, sums, p, Z95)
    r = s / 100
    var = (1 - p) * ((x - r) ** 2).sum() / 100**2
    assert mean.value == pytest.approx(50.5)
    assert mean.half_width == pytest.approx(Z95 * np.sqrt(var))


def test_a_full_read_is_exact_and_keeps_the_sum_type() -> None:
    sums: Sums = {**_sums(np.array([1.0, 2.0, 3.5])), "s0": Decimal("6.50"), "min1": 1}
    aggs = [Aggregate("sum", ("x",), "t"), Aggregate("min", ("y",), "lo")]
    total = estimate(aggs[0], 0, sums, 1.0, Z95)
    assert (total.value, total.low, total.high, total.reliable) == (
        Decimal("6.50"),
        Decimal("6.50"),
        Decimal("6.50"),
        True,
    )
    assert estimate(aggs[1], 1, sums, 1.0, Z95).reliable


def test_small_groups_get_no_interval() -> None:
    small = _sums(np.arange(1, MIN_RELIABLE, dtype=float))  # 29 values
    for kind in ("sum", "avg", "count"):
        e = estimate(Aggregate(kind, ("x",), "a"), 0, small, 0.1, Z95)
        assert e.value is not None and not e.reliable and e.low is None and e.high is None
    # a sum of mostly zeros: 100 rows but 5 non-zero values
    sparse = _sums(np.array([0.0] * 95 + [1000.0] * 5))
    e = estimate(Aggregate("sum", ("x",), "a"), 0, sparse, 0.1, Z95)
    assert not e.reliable and e.low is None


def test_min_and_max_are_one_sided_bounds() -> None:
    sums: Sums = {"rows": 100, "min0": 3, "max1": 9}
    lo = estimate(Aggregate("min", ("x",), "lo"), 0, sums, 0.1, Z95)
    hi = estimate(Aggregate("max", ("x",), "hi"), 1, sums, 0.1, Z95)
    assert (lo.value, lo.low, lo.high, lo.reliable) == (3, None, 3, False)
    assert (hi.value, hi.low, hi.high, hi.reliable) == (9, 9, None, False)


def test_band_sums_add_up_to_the_sums_of_their_union() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(10, 3, 1000)
    g = rng.integers(0, 3, 1000)
    band = rng.integers(0, 2, 1000)
    held: dict[Any, Sums] = {}
    for b in (0, 1):
        part = [
            ((k,), {**_sums(x[(g == k) & (band == b)]), "min1": x[(g == k) & (band == b)].min()})
            for k in range(3)
        ]
        merge_sums(held, part)
    for k in range(3):
        whole = {**_sums(x[g == k]), "min1": x[g == k].min()}
        assert held[(k,)].keys() == whole.keys()
        for name in whole:
            assert held[(k,)][name] == pytest.approx(whole[name])


def _coverage(kind: str, population: np.ndarray, p: float, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    truth = {"sum": population.sum(), "count": len(population), "avg": population.mean()}[kind]
    agg = Aggregate(kind, ("x",), "a")
    hits = 0
    for _ in range(trials):
        e = estimate(agg, 0, _sums(population[rng.random(len(population)) < p]), p, Z95)
        assert e.reliable
        hits += e.low <= truth <= e.high
    return hits / trials


@pytest.mark.parametrize("kind", ["sum", "count", "avg"])
def test_intervals_cover_the_truth_95_percent_of_the_time(kind: str) -> None:
    """Simulated Bernoulli samples of a skewed population: the 95% intervals cover."""
    population = np.random.default_rng(7).lognormal(3.0, 0.8, 20_000)
    coverage = _coverage(kind, population, 0.02, 400, seed=11)
    assert 0.92 <= coverage <= 0.98, coverage


@pytest.mark.parametrize("kind", ["sum", "count(x)"])
def test_ratio_estimators_with_known_rows_cover_and_are_narrower(kind: str) -> None:
    """Issue #37, bytes per precision: without filter nor group the log tells the rows N, and
    ``sum`` is ``N`` times the sampled mean (a ratio estimator). Over Poisson samples of a
    low-spread measure its 95% intervals still cover, and are several times narrower than
    Horvitz-Thompson's, whose variance is mostly the sample's random size."""
    rng = np.random.default_rng(5)
    population = rng.uniform(900.0, 2100.0, 20_000) * rng.integers(1, 51, 20_000)
    has = rng.random(20_000) < 0.9  # count(x): 10% NULLs
    agg = Aggregate("count", ("x",), "a") if kind == "count(x)" else Aggregate("sum", ("x",), "a")
    truth = has.sum() if kind == "count(x)" else population.sum()
    hits, ratios = 0, []
    for _ in range(400):
        kept = rng.random(20_000) < 0.02
        sums = _sums(population[kept])
        if kind == "count(x)":  # n_k = 1 for a kept row with a value, 0 without
            n = has[kept].astype(float)
            sums.update(n0=int(n.sum()), k0=int(n.sum()), c20=float(n.sum()), nr0=float(n.sum()))
        ratio = estimate(agg, 0, sums, 0.02, Z95, known_rows=20_000)
        plain = estimate(agg, 0, sums, 0.02, Z95)
        assert ratio.reliable and plain.reliable
        hits += ratio.low <= truth <= ratio.high
        ratios.append(plain.half_width / ratio.half_width)
    assert 0.92 <= hits / 400 <= 0.98, hits / 400
    assert np.median(ratios) > 1.8, np.median(ratios)


def test_known_rows_make_count_exact_and_keep_the_all_null_stratum() -> None:
    x = np.arange(1.0, 101.0)
    sums = {**_sums(x), "rows": 150, "null_rows": 50, "null_t0": 500.0, "t0": x.sum() + 500.0}
    n = estimate(Aggregate("count", (), "n"), 0, sums, 0.1, Z95, known_rows=1050)
    assert (n.value, n.low, n.high, n.reliable) == (1050, 1050, 1050, True)
    s = estimate(Aggregate("sum", ("x",), "s"), 0, sums, 0.1, Z95, known_rows=1050)
    # the 50 all-NULL rows are certain; the other 1,000 rows at the sampled mean 50.5
    assert s.value == pytest.approx(500.0 + 1000 * 50.5)
    residual = ((x - 50.5) ** 2).sum()
    assert s.half_width == pytest.approx(Z95 * np.sqrt((1000 / 100) ** 2 * 0.9 * residual))


def test_tail_index_of_the_largest_value_tells_heavy_tails_from_light_ones() -> None:
    rng = np.random.default_rng(1)
    heavy = rng.pareto(1.5, 5000) + 1.0
    alpha = tail_index(heavy.max(), float((heavy**2).sum()), 5000)
    assert 1.0 < alpha < 2.0, alpha
    for light in (rng.exponential(1.0, 5000), rng.uniform(900.0, 2100.0, 20_000)):
        assert tail_index(light.max(), float((light**2).sum()), len(light)) == np.inf
    assert tail_index(0.0, 1.0, 10) == np.inf


def _pareto_coverage(heavy_tails: bool, kind: str) -> tuple[float, float]:
    population = np.random.default_rng(8).pareto(1.5, 50_000) + 1.0
    truth = population.sum() if kind == "sum" else population.mean()
    rng = np.random.default_rng(11)
    hits = reliable = 0
    with pytest.MonkeyPatch.context() as m:
        m.setattr(estimators, "_HEAVY_TAILS", heavy_tails)
        for _ in range(400):
            sample = population[rng.random(len(population)) < 1 / 16]
            e = estimate(Aggregate(kind, ("x",), "a"), 0, _sums(sample), 1 / 16, Z95)
            if e.reliable:
                reliable += 1
                hits += e.low <= truth <= e.high
    return hits / reliable, 1 - reliable / 400


@pytest.mark.parametrize("kind", ["sum", "avg"])
def test_intervals_of_a_heavy_tailed_measure_allow_for_the_values_missed(kind: str) -> None:
    """Issue #37, shape (d): Poisson samples (1/16) of a Pareto(1.5) measure. The normal
    interval covered 85% of the time (a sample that missed the largest values is too low
    and too narrow); widened by the largest value a Pareto tail of the index the sample's
    largest value suggests would have missed, 93-94%, none flagged."""
    before, _ = _pareto_coverage(False, kind)
    after, flagged = _pareto_coverage(True, kind)
    assert before < 0.88, before
    assert after >= 0.92 and flagged == 0.0, (after, flagged)


def test_a_light_tail_keeps_its_normal_interval() -> None:
    x = np.random.default_rng(3).lognormal(3.0, 0.8, 2000)
    for kind in ("sum", "avg"):
        agg = Aggregate(kind, ("x",), "a")
        with pytest.MonkeyPatch.context() as m:
            m.setattr(estimators, "_HEAVY_TAILS", False)
            plain = estimate(agg, 0, _sums(x), 0.05, Z95)
        assert estimate(agg, 0, _sums(x), 0.05, Z95) == plain


def _clustered_coverage(kind: str, p: float, trials: int) -> tuple[float, float]:
    """Coverage and share flagged over Poisson samples of 400 keys of 50 rows each (a date
    index: every row of a key shares its weight and is kept or dropped with it)."""
    rng = np.random.default_rng(3)
    keys = np.repeat(np.arange(400), 50)
    population = rng.lognormal(3.0, 0.8, len(keys)) * rng.lognormal(0.0, 0.5, 400)[keys]
    truth = {"sum": population.sum(), "count": len(population), "avg": population.mean()}[kind]
    agg = Aggregate(kind, (), "a") if kind == "count" else Aggregate(kind, ("x",), "a")
    hits = reliable = 0
    for _ in range(trials):
        kept = (rng.random(400) < p)[keys]
        e = estimate(agg, 0, _sums(population[kept], keys[kept]), p, Z95)
        if e.reliable:
            reliable += 1
            hits += e.low <= truth <= e.high
    return hits / reliable, 1 - reliable / trials


@pytest.mark.parametrize("kind", ["sum", "count", "avg"])
def test_rows_sharing_a_weight_are_one_observation(kind: str) -> None:
    """Issue #37: on a date-like index (50 rows per key) the per-row variance made 95%
    intervals that covered far less often; per-key totals give the right width."""
    coverage, flagged = _clustered_coverage(kind, 0.25, 400)
    assert 0.92 <= coverage <= 0.98 and flagged == 0.0, (coverage, flagged)


def test_many_rows_of_few_weights_get_no_interval() -> None:
    """5,000 sampled rows of 20 keys are 20 observations: flagged, as a small group."""
    x = np.random.default_rng(2).normal(100.0, 10.0, 5000)
    keys = np.arange(5000) % 20
    for kind in ("sum", "avg", "count"):
        e = estimate(Aggregate(kind, ("x",), "a"), 0, _sums(x, keys), 0.1, Z95)
        assert not e.reliable and e.low is None and e.support == 20, kind


def test_an_interval_of_zero_width_or_nan_is_never_reliable() -> None:
    """Issue #37: avg of a measure non-zero in 0.25% of rows got a reliable [0, 0] from a
    sample of zeros, and a NaN measure gave NaN bounds marked reliable."""
    zeros = _sums(np.zeros(400))
    for kind in ("avg", "sum"):
        e = estimate(Aggregate(kind, ("x",), "a"), 0, zeros, 0.1, Z95)
        assert not e.reliable and e.value == 0.0 and e.low is None, kind
    # 1,000 rows, 5 non-zero: avg is as unsupported as sum
    sparse = _sums(np.array([0.0] * 995 + [7.0] * 5))
    for kind in ("avg", "sum"):
        e = estimate(Aggregate(kind, ("x",), "a"), 0, sparse, 0.1, Z95)
        assert not e.reliable and e.support == 5, kind
    # a constant measure: no spread seen, so no interval below a full read
    constant = _sums(np.full(400, 1e20))
    e = estimate(Aggregate("avg", ("x",), "a"), 0, constant, 0.1, Z95)
    assert e.value == pytest.approx(1e20) and not e.reliable
    with_nan = _sums(np.array([1.0] * 100 + [float("nan")]))
    for kind in ("avg", "sum"):
        e = estimate(Aggregate(kind, ("x",), "a"), 0, with_nan, 0.1, Z95)
        assert np.isnan(e.value) and not e.reliable and e.low is None, kind
        full = estimate(Aggregate(kind, ("x",), "a"), 0, with_nan, 1.0, Z95)
        assert np.isnan(full.value) and not full.reliable, kind


def test_an_exact_sum_that_overflows_its_type_is_not_reliable() -> None:
    """A full read whose sum overflowed the column's type (try_sum gave None) answers the
    doubles' sum, flagged; merging keeps the overflow."""
    sums = {**_sums(np.array([9e19, 9e19])), "s0": None}
    e = estimate(Aggregate("sum", ("x",), "a"), 0, sums, 1.0, Z95)
    assert e.value == pytest.approx(1.8e20) and not e.reliable and e.low is None
    held: dict[Any, Sums] = {(): {"n0": 1, "s0": Decimal("1")}}
    merge_sums(held, [((), {"n0": 2, "s0": None})])
    assert held[()]["s0"] is None and held[()]["n0"] == 3
    merge_sums(held, [((), {"n0": 1, "s0": Decimal("2")})])
    assert held[()]["s0"] is None


def test_rows_with_all_indexed_columns_null_are_a_stratum_read_in_full() -> None:
    """The all-NULL rows (one weight, read in full by the first band) count once each; the
    sampled rows count 1/p times; the spread is the sampled weights' alone."""
    p = 0.25
    sampled = np.arange(1.0, 401.0)  # 400 sampled rows, one weight each
    sums = _sums(sampled)
    # 600 all-NULL rows of value 2 were read too: they add to the totals, not to the spread
    sums.update(
        rows=1000, null_rows=600, n0=1000, null_n0=600, t0=sums["t0"] + 1200.0, null_t0=1200.0
    )
    count = estimate(Aggregate("count", (), "n"), 0, sums, p, Z95)
    assert count.value == pytest.approx(600 + 400 / p) and count.support == 400
    assert count.half_width == pytest.approx(Z95 * np.sqrt((1 - p) / p**2 * 400))
    total = estimate(Aggregate("sum", ("x",), "s"), 0, sums, p, Z95)
    assert total.value == pytest.approx(1200.0 + sampled.sum() / p)
    assert total.half_width == pytest.approx(Z95 * np.sqrt((1 - p) / p**2 * (sampled**2).sum()))
    mean = estimate(Aggregate("avg", ("x",), "m"), 0, sums, p, Z95)
    rows = 600 + 400 / p
    ratio = (1200.0 + sampled.sum() / p) / rows
    assert mean.value == pytest.approx(ratio)
    var = (1 - p) / p**2 * ((sampled - ratio) ** 2).sum() / rows**2
    assert mean.half_width == pytest.approx(Z95 * np.sqrt(var))


def test_approx_bands_read_the_all_null_rows_once() -> None:
    from qbeast_connect.approx.bands import approx_band_sql

    lo, hi = weight_from_fraction(0.25), weight_from_fraction(0.5)
    nulls = "`a` IS NULL AND `b c` IS NULL"
    assert approx_band_sql(["a", "b c"], 0.0, 0.25) == f"(hash(`a`, `b c`) < {lo}) OR ({nulls})"
    assert approx_band_sql(["a", "b c"], 0.25, 0.5) == (
        f"(hash(`a`, `b c`) >= {lo} AND hash(`a`, `b c`) < {hi}) AND NOT ({nulls})"
    )
    assert approx_band_sql(["a"], 0.0, 1.0) == "TRUE"


def _result(groups: dict[Any, Sums], fraction: float, error: float | None) -> ApproxResult:
    aggs = (Aggregate("sum", ("x",), "t"), Aggregate("max", ("x",), "hi"))
    return ApproxResult(
        aggregates=aggs,
        group_by=("g",),
        groups=groups,
        fraction=fraction,
        bytesRead=10,
        confidence=0.95,
        z=Z95,
        totalBytes=100,
        relativeError=error,
    )


def test_next_fraction_stops_when_every_interval_is_narrow_enough() -> None:
    x = np.full(10_000, 5.0) + np.arange(10_000) % 3
    groups = {("a",): {**_sums(x), "max1": 7.0}}
    wide = _result(groups, 1 / 1024, 0.0001)
    nxt = next_fraction(wide)
    assert nxt is not None and 2 / 1024 <= nxt <= 16 / 1024
    assert np.log2(nxt) == int(np.log2(nxt))  # a power of two
    narrow = _result(groups, 1 / 1024, 0.5)
    assert next_fraction(narrow) is None and narrow.converged()
    assert next_fraction(_result(groups, 1.0, 0.0001)) is None  # everything read: exact
    assert next_fraction(_result(groups, 0.25, None)) is None  # a fixed fraction


def test_next_fraction_reads_on_for_small_groups() -> None:
    groups = {
        ("big",): {**_sums(np.ones(5000)), "max1": 1.0},
        ("small",): {**_sums(np.ones(5)), "max1": 1.0},
    }
    assert next_fraction(_result(groups, 1 / 64, 0.5)) == 1 / 4  # 16 times, the most a step grows
    # from half of the rows on, everything is read
    assert next_fraction(_result(groups, 1 / 16, 0.5)) == 1.0


def test_a_sample_of_no_weight_claims_no_bound_on_the_rows_it_missed() -> None:
    """A filter that matched no sampled row, or only a few weights, says nothing of how many
    rows a weight holds: on an index of 5 categories (shape (g) of bench/approx_shapes.py)
    a first band of 1/256 samples no category at all, and a bound taking one row per weight
    (3.9 · 256 = 1,003 rows, within 0.1² · 200,000 = 2,000) stopped there with an empty
    answer for a query matching every row (the first version of the near-zero rule, caught
    by tests/unit/test_approx_shapes_coverage.py). It reads on."""
    empty: dict[Any, Sums] = {(): {"rows": None, "keys": 0, "r2": None, "null_rows": None}}
    aggs = (Aggregate("count", (), "n"), Aggregate("sum", ("x",), "t"))
    result = dataclasses.replace(_result(empty, 1 / 256, 0.1), aggregates=aggs, group_by=())
    covered = dataclasses.replace(result, coveredRows=200_000)
    assert next_fraction(covered) == 16 / 256  # as for any estimate resting on no weight
    assert next_fraction(dataclasses.replace(covered, groups={}, group_by=("g",))) == 2 / 256
    few = {("c1",): {**_sums(np.ones(40_000), np.zeros(40_000)), "max1": 1.0}}
    assert next_fraction(dataclasses.replace(covered, groups=few)) is not None


def test_a_filter_matching_no_row_stops_once_the_rows_per_weight_are_measured() -> None:
    """Issue #37: with the rows per weight measured over the band's rows (one more query,
    ``rowsPerWeight``), a filter that matched nothing in 1/8 of 600,000 rows of one row per
    weight holds at most 3.9 · 8 = 31 rows, within 0.01² · 600,000 = 60: it stops (it read
    on to the whole table). Weights of 40,000 rows each (5 categories) still read on."""
    empty: dict[Any, Sums] = {(): {"rows": None, "keys": 0, "r2": None, "null_rows": None}}
    aggs = (Aggregate("count", (), "n"), Aggregate("sum", ("x",), "t"))
    base = dataclasses.replace(
        _result(empty, 1 / 8, 0.01), aggregates=aggs, group_by=(), coveredRows=600_000
    )
    assert next_fraction(base) is not None
    measured = dataclasses.replace(base, rowsPerWeight=1.0)
    assert next_fraction(measured) is None
    (only,) = measured.rows()
    assert only["n"] == 0 and only["n_reliable"] is False and only["t"] is None
    assert next_fraction(dataclasses.replace(measured, groups={}, group_by=("g",))) is None
    # at 1/256 the bound (1,003 rows) is not within 60 yet: the step asks for what makes it
    assert next_fraction(dataclasses.replace(measured, fraction=1 / 256)) == 1 / 16
    assert next_fraction(dataclasses.replace(measured, rowsPerWeight=40_000.0)) is not None


def test_a_group_of_very_few_rows_does_not_hold_reading_back() -> None:
    """Issue #37: a group of 2 sampled rows at 1/16 holds at most about 118 rows, within
    0.05² · 1,000,000 = 2,500: its estimates stay flagged, and the big group decides."""
    groups = {
        ("big",): {**_sums(np.full(5000, 10.0) + np.arange(5000) % 7), "max1": 1.0},
        ("tiny",): {**_sums(np.ones(2)), "max1": 1.0},
    }
    before = _result(groups, 1 / 16, 0.05)
    assert next_fraction(before) == 1.0  # the tiny group asked for the whole table
    after = dataclasses.replace(before, coveredRows=1_000_000)
    assert next_fraction(after) is None
    tiny = after.estimates()[("tiny",)][0]
    assert not tiny.reliable and tiny.low is None
    # a count of a group this size is held to 2,500 rows absolute, not to 5% of itself
    counted = dataclasses.replace(after, aggregates=(Aggregate("count", (), "n"),))
    assert next_fraction(counted) is None
    # a table of 20,000 rows: the floor is 50 rows, the tiny group's bound is not within it
    small = dataclasses.replace(before, coveredRows=20_000)
    assert next_fraction(small) is not None


def test_a_small_group_of_enough_weights_is_held_to_the_relative_error() -> None:
    """A group of 120 sampled weights (TPC-H sf 0.1's N/F at 1/32, 0.6% of the rows) is
    within 0.1² of the rows covered, but its estimates are reliable: its sum is held to 10%
    of itself. The first version of the near-zero rule let it stop at a 21% half-width."""
    x = np.random.default_rng(5).uniform(900.0, 2100.0, 120) * np.arange(1, 121) % 50
    groups = {
        ("big",): {**_sums(np.full(19_000, 10.0) + np.arange(19_000) % 7), "max1": 1.0},
        ("N/F",): {**_sums(x + 1.0), "max1": 1.0},
    }
    result = dataclasses.replace(_result(groups, 1 / 32, 0.1), coveredRows=600_000)
    small = result.estimates()[("N/F",)][0]
    assert small.reliable and small.half_width > 0.1 * small.value
    assert next_fraction(result) is not None


def test_next_fraction_asks_for_weights_not_rows() -> None:
    """3,000 sampled rows of 15 dates are 15 observations: the next band asks for about 3
    times as many weights (45 = 1.5 x 30), not for 2 times the rows it already has."""
    x = np.random.default_rng(4).normal(100.0, 10.0, 3000)
    groups = {("a",): {**_sums(x, np.arange(3000) % 15), "max1": 1.0}}
    result = _result(groups, 1 / 64, 0.5)
    assert not result.estimates()[("a",)][0].reliable
    assert next_fraction(result) == 1 / 16  # 3 x 1/64, rounded up to a power of two


def test_first_fraction_reads_a_few_thousand_rows() -> None:
    assert first_fraction(1000) == 1.0
    assert first_fraction(6_000_000) == 2.0**-11
    assert 4096 / 2 <= first_fraction(6_000_000) * 6_000_000 <= 4096


def test_result_rows_pandas_and_html() -> None:
    groups = {
        ("b",): {**_sums(np.ones(100)), "max1": 1.0},
        ("a",): {**_sums(np.full(10, 2.0)), "max1": 2.0},
    }
    result = _result(groups, 0.5, None)
    rows = result.rows()
    assert [r["g"] for r in rows] == ["a", "b"]
    keys = ["g", "t", "t_low", "t_high", "t_reliable", "hi", "hi_low", "hi_high", "hi_reliable"]
    assert list(rows[1]) == keys
    assert rows[1]["t"] == pytest.approx(200.0) and rows[1]["t_reliable"]
    assert rows[0]["t_low"] is None and not rows[0]["t_reliable"]
    frame = result.toPandas()
    assert list(frame["g"]) == ["a", "b"] and frame.shape == (2, 9)
    page = result._repr_html_()
    assert "too few rows" in page and "±" in page and "10 bytes read" in page


def test_confidence_must_be_a_probability() -> None:
    with pytest.raises(InvalidOptionError, match="confidence"):
        z_value(1.0)
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert stat_names(Aggregate("count", (), "n"), 0) == ()


def _file(path: str, *bands: tuple[float, float]) -> IndexFile:
    blocks = [Block("", weight_from_fraction(lo), weight_from_fraction(hi), 10) for lo, hi in bands]
    return IndexFile(path, 100, 0, 1, tuple(blocks))


def test_a_band_read_reaches_as_far_as_the_files_it_opens() -> None:
    top = _file("top", (0.0, 1 / 64))  # rows of weight fraction [0, 1/64)
    second = _file("second", (1 / 64, 1 / 32))
    rest = _file("rest", (1 / 32, 1.0))
    files = [top, second, rest]
    # asked for 1/1024, the top file holds every row up to 1/64: read up to there
    reach = covered_fraction(files, [top], 0.0, 1 / 1024)
    assert weight_from_fraction(reach) <= weight_from_fraction(1 / 64)
    assert reach == pytest.approx(1 / 64, abs=1e-9)
    # (the top file's block reaches weight(1/64) itself, so the band from 1/64 opens it too)
    reach = covered_fraction(files, [top, second], 1 / 64, 1 / 40)
    assert reach == pytest.approx(1 / 32, abs=1e-9)
    # the unopened file's rows start below the asked end: no widening
    assert covered_fraction(files, [top], 0.0, 1 / 32) == 1 / 32
    # every candidate opened: the whole table
    assert covered_fraction(files, files, 0.0, 0.001) == 1.0
    # files already read (all below the band) do not limit it
    assert covered_fraction(files, [rest], 0.04, 0.1) == 1.0
    # a candidate without blocks may hold any weight
    bare = IndexFile("bare", 1, 0, 1, ())
    assert covered_fraction([top, bare], [top], 0.0, 0.001) == 0.001


def test_plan_of_a_weight_band_drops_only_files_below_it() -> None:
    """On the qbeast-spark reference log: the root blocks' max weights are weight(0.0625) and
    weight(0.125), so the band from 0.13 skips the two root files and keeps every file
    holding deeper cubes (the band from 0.1 keeps the root file whose block reaches 0.125);
    the band's files and the sample below it together are the larger sample's files."""
    from qbeast_connect.model import QbeastSnapshot
    from qbeast_connect.planning.file_planner import plan_files
    from tests.unit.planning._helpers import fixture_log

    configuration, adds = fixture_log()
    snapshot = QbeastSnapshot.from_delta(configuration, adds, 1)
    band = plan_files(snapshot, None, 0.5, from_fraction=0.13)
    below = plan_files(snapshot, None, 0.13)
    whole = plan_files(snapshot, None, 0.5)
    roots = {p for p in whole.paths if p[:4] in ("155c", "ab01")}
    assert len(roots) == 2
    assert set(band.paths) == set(whole.paths) - roots
    assert set(band.paths) | set(below.paths) == set(whole.paths)
    assert band.weight_range == (weight_from_fraction(0.13), weight_from_fraction(0.5))
    from_01 = plan_files(snapshot, None, 0.5, from_fraction=0.1)
    assert {p[:4] for p in set(whole.paths) - set(from_01.paths)} == {"ab01"}


def test_files_holding_values_beyond_every_value_read_widen_the_interval() -> None:
    """Issue #37, shape (d): the log proves which large values a sample missed. A file that
    still holds unread rows and whose largest value exceeds every value read holds a row the
    sample did not read; the truth includes it and the estimate does not, so the upper end
    grows by it (the lower end by a negative file minimum below every value read); files
    within the values read change nothing. An average moves by the value over its rows."""
    x = np.random.default_rng(4).lognormal(3.0, 0.8, 2000)
    sums = _sums(x)
    unread = estimators.UnreadExtremes.of(
        [(1.0, float(x.max()) - 1.0), (2.0, 5_000.0), (-300.0, 7_000.0), (np.inf, -np.inf)]
    )
    for kind, scale in (("sum", 1.0), ("avg", 1.0 / (len(x) / 0.05))):
        agg = Aggregate(kind, ("x",), "a")
        plain = estimate(agg, 0, sums, 0.05, Z95)
        wide = estimate(agg, 0, sums, 0.05, Z95, unread=unread)
        assert (wide.value, wide.reliable) == (plain.value, True)
        assert wide.high == pytest.approx(plain.high + 12_000.0 * scale)
        assert wide.low == pytest.approx(plain.low - 300.0 * scale)
    # a value read above every file's largest: nothing missed is known
    within = estimators.UnreadExtremes.of([(1.0, 10.0), (0.5, float(x.max()))])
    agg = Aggregate("sum", ("x",), "a")
    assert estimate(agg, 0, sums, 0.05, Z95, unread=within) == estimate(agg, 0, sums, 0.05, Z95)
    # counts and exact answers are what they were
    full = estimate(agg, 0, sums, 1.0, Z95, unread=unread)
    assert full.low == full.high == full.value
    count = Aggregate("count", (), "n")
    assert estimate(count, 0, sums, 0.05, Z95, unread=unread) == estimate(count, 0, sums, 0.05, Z95)
