"""Local trees and domains: vectorized estimator vs a row-by-row port of spec §5.3."""

from __future__ import annotations

import numpy as np
import pytest

from qbeast_connect.index.cubes import MAX_DEPTH
from qbeast_connect.index.estimation import (
    DomainEstimator,
    existing_index_domains,
    group_cube_size,
    merge_domains,
)
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.weight import MAX_WEIGHT, fraction_from_weight, weight_from_fraction


def reference_tree(
    points: np.ndarray, weights: np.ndarray, gcs: int, existing: dict[CubeId, int] | None = None
) -> dict[str, float]:
    """Row-by-row spec §5.3 (one tree), with the scalar CubeId."""
    existing = existing or {}
    order = sorted(range(len(weights)), key=lambda i: (int(weights[i]), i))
    counters: dict[CubeId, list] = {}  # cube -> [count, last weight, inner, w0]
    for i in order:
        w = int(weights[i])
        for cube in CubeId.containers(points[i].tolist()):
            ctr = counters.get(cube)
            if ctr is None:
                w0 = existing.get(cube)
                inner = w0 is not None and fraction_from_weight(w0) < 1.0
                ctr = counters[cube] = [0, w0 if inner else MAX_WEIGHT, inner, w0]
            count, _, inner, w0 = ctr
            accepts = (w < w0 and count < gcs) if inner else count < gcs
            if accepts:
                ctr[0] += 1
                ctr[1] = w
                break
    nw = {}
    for cube, (count, last, inner, _) in counters.items():
        nw[cube] = fraction_from_weight(last) if inner or count == gcs else gcs / count
    size = {c: float(v[0]) for c, v in counters.items()}
    domains: dict[str, float] = {}
    for depth in range(max(c.depth for c in counters), 0, -1):
        for cube in [c for c in counters if c.depth == depth]:
            parent = cube.parent
            domains[cube.to_string()] = size[cube] / (1.0 - nw[parent])
            size[parent] += size[cube]
    root = CubeId.root(points.shape[1])
    domains[""] = size[root]
    return domains


def _random_rows(
    rng: np.random.Generator, n: int, d: int, clustered: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    pts = np.clip(rng.normal(0.3, 0.05, (n, d)), 0, 1) if clustered else rng.random((n, d))
    pts[:3] = [1.0] * d
    w = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    w[5:40] = w[4]  # ties
    return pts, w


@pytest.mark.parametrize(
    "d,n,gcs,clustered",
    [
        (2, 700, 30, False),
        (3, 1500, 40, True),
        (1, 500, 30, False),
        (7, 900, 30, False),
        (2, 50, 100, False),
    ],
)
def test_single_tree_matches_reference(d: int, n: int, gcs: int, clustered: bool) -> None:
    rng = np.random.default_rng(d * 1000 + n)
    pts, w = _random_rows(rng, n, d, clustered)
    est = DomainEstimator(d, gcs, buffer_capacity=10**9)
    est.add(pts[: n // 3], w[: n // 3])
    est.add(pts[n // 3 :], w[n // 3 :])
    got = est.finish()
    want = reference_tree(pts, w, gcs)
    assert got.keys() == want.keys()
    for cube, dom in want.items():
        assert got[cube] == dom, cube
    assert got[""] == n


def test_existing_weights_match_reference() -> None:
    rng = np.random.default_rng(5)
    d, n, gcs = 2, 1200, 30
    pts, w = _random_rows(rng, n, d)
    existing = {
        CubeId.root(d): weight_from_fraction(0.2),
        CubeId.from_string("A", d): weight_from_fraction(0.5),
        CubeId.from_string("w", d): MAX_WEIGHT,  # existing leaf: like a new cube
        CubeId.from_string("Q", d): weight_from_fraction(0.05),  # lower than the root's
        CubeId.from_string("AQ", d): weight_from_fraction(0.9),
    }
    est = DomainEstimator(d, gcs, buffer_capacity=10**9, existing_max_weights=existing)
    est.add(pts, w)
    got = est.finish()
    want = reference_tree(pts, w, gcs, existing)
    assert got == want
    # string keys work too
    est2 = DomainEstimator(
        d,
        gcs,
        buffer_capacity=10**9,
        existing_max_weights={c.to_string(): v for c, v in existing.items()},
    )
    est2.add(pts, w)
    assert est2.finish() == want


def test_existing_inner_cube_with_no_accepted_rows() -> None:
    d = 2
    pts = np.array([[0.1, 0.1], [0.2, 0.2], [0.3, 0.1]])
    w = np.array([10, 20, 30], dtype=np.int32)
    existing = {CubeId.root(d): -100}  # every row has w >= w0: all pass down
    est = DomainEstimator(d, 30, existing_max_weights=existing)
    est.add(pts, w)
    got = est.finish()
    assert got == reference_tree(pts, w, 30, existing)
    assert got[""] == 3.0
    assert got["A"] == 3.0 / (1.0 - fraction_from_weight(-100))


def test_several_trees_sum_and_root_domain_counts_rows() -> None:
    rng = np.random.default_rng(6)
    d, n, gcs, cap = 3, 2600, 30, 1000
    pts, w = _random_rows(rng, n, d)
    est = DomainEstimator(d, gcs, buffer_capacity=cap)
    for start in range(0, n, 333):  # chunk boundaries do not align with trees
        est.add(pts[start : start + 333], w[start : start + 333])
    assert est.trees_built == 2
    got = est.finish()
    assert est.trees_built == 3
    trees = [reference_tree(pts[s : s + cap], w[s : s + cap], gcs) for s in range(0, n, cap)]
    want = merge_domains(trees)
    assert got.keys() == want.keys()
    for cube in want:
        assert got[cube] == pytest.approx(want[cube], rel=1e-12)
    assert got[""] == n
    assert sum(t[""] for t in trees) == n


def test_small_input_only_root() -> None:
    rng = np.random.default_rng(7)
    pts, w = _random_rows(rng, 25, 4)
    est = DomainEstimator(4, 30)
    est.add(pts, w)
    assert est.finish() == {"": 25.0}
    assert DomainEstimator(2, 30).finish() == {}


def test_worked_example_5_10() -> None:
    """2-D, gcs 30: root 30 rows, A 30 (+10 in AA), Q 30 (spec §5.10)."""
    rng = np.random.default_rng(8)

    def weights_between(lo: float, hi: float, k: int) -> list[int]:
        ws = sorted({weight_from_fraction(x) for x in rng.uniform(lo, hi, k * 3)})[: k - 1]
        return [*ws, weight_from_fraction(hi)]

    w_root = weights_between(0.0, 0.3, 30)
    w_a = weights_between(0.3 + 1e-6, 0.7, 30)
    w_aa = weights_between(0.7 + 1e-6, 0.95, 10)
    w_q = weights_between(0.3 + 1e-6, 0.9, 30)
    pts = np.concatenate(
        [
            rng.uniform([0.5, 0.0], [1.0, 0.5], (30, 2)),  # root rows, in g
            rng.uniform([0.0, 0.0], [0.5, 0.5], (30, 2)),  # A
            rng.uniform([0.0, 0.0], [0.25, 0.25], (10, 2)),  # AA
            rng.uniform([0.0, 0.5], [0.5, 1.0], (30, 2)),  # Q
        ]
    )
    w = np.array(w_root + w_a + w_aa + w_q, dtype=np.int32)
    perm = rng.permutation(100)
    est = DomainEstimator(2, group_cube_size(30, 1))
    est.add(pts[perm], w[perm])
    got = est.finish()
    nw_root = fraction_from_weight(w_root[-1])
    nw_a = fraction_from_weight(w_a[-1])
    assert got == {
        "": 100.0,
        "A": 40 / (1 - nw_root),
        "Q": 30 / (1 - nw_root),
        "AA": 10 / (1 - nw_a),
    }
    assert got["A"] == pytest.approx(57.142857, rel=1e-6)
    assert got["Q"] == pytest.approx(42.857143, rel=1e-6)
    assert got["AA"] == pytest.approx(33.333333, rel=1e-6)


def test_group_cube_size_t18() -> None:
    def gcs(dcs: int, parts: int, n: int, buffer: int) -> int:
        return group_cube_size(dcs, max(parts, n // buffer))

    assert gcs(10**6, 1, 10**4, 10**5) == 1_000_000
    assert gcs(10**6, 10, 10**6, 10**5) == 100_000
    assert gcs(10**6, 20, 10**6, 10**5) == 50_000
    assert gcs(10**6, 15, 2 * 10**6, 10**5) == 50_000
    assert gcs(30, 4, 10, 10**5) == 30
    assert group_cube_size(1000, 0) == 1000


def test_depth_cap_identical_points() -> None:
    n, gcs = 40 * 32, 30  # more rows than fit above MAX_DEPTH
    pts = np.full((n, 2), 0.3)
    w = np.arange(n, dtype=np.int32)
    est = DomainEstimator(2, gcs)
    est.add(pts, w)
    got = est.finish()
    depths = {len(c) for c in got}
    assert max(depths) == MAX_DEPTH
    assert len(got) == MAX_DEPTH + 1
    assert got[""] == n
    deepest = next(c for c in got if len(c) == MAX_DEPTH)
    # all remaining rows are kept by the deepest cube: n - 30 * MAX_DEPTH rows
    parent_nw = fraction_from_weight(int(w[gcs * MAX_DEPTH - 1]))
    assert got[deepest] == (n - gcs * MAX_DEPTH) / (1 - parent_nw)


def test_nw_one_guard() -> None:
    pts = np.random.default_rng(9).random((60, 2))
    w = np.full(60, MAX_WEIGHT, dtype=np.int32)  # root full with last weight MAX_WEIGHT
    est = DomainEstimator(2, 30)
    est.add(pts, w)
    got = est.finish()
    assert got[""] == 60
    assert all(np.isfinite(v) for v in got.values())
    assert sum(v for c, v in got.items() if len(c) == 1) == 30 * 4294967295.0


def test_existing_index_domains_t21() -> None:
    got = existing_index_domains({"": 30, "A": 30, "Q": 30, "AA": 5}, 2)
    assert got[""] == 95
    assert got["A"] == pytest.approx(51.15384615, rel=1e-9)
    assert got["Q"] == pytest.approx(43.84615384, rel=1e-9)
    assert got["AA"] == pytest.approx(51.15384615, rel=1e-9)
    # a cube whose parent is absent gets 0 and does not feed its grandparent
    got = existing_index_domains({"": 10, "AQ": 7, "Q": 5}, 2)
    assert got == {"": 15.0, "Q": 15.0, "AQ": 0.0}


def test_merge_domains() -> None:
    assert merge_domains([{"": 1.0, "A": 2.0}, {"": 3.0, "Q": 1.5}, {}]) == {
        "": 4.0,
        "A": 2.0,
        "Q": 1.5,
    }
