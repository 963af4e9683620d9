"""Row -> cube assignment vs the scalar descent rule, plus grouping and block summaries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.assignment import CubeAssigner, block_summaries, cube_labels
from qbeast_connect.index.cubes import cube_strings, point_coords
from qbeast_connect.index.estimation import DomainEstimator
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.weight import MAX_WEIGHT, weight_from_normalized


def reference_assign(point: list[float], w: int, weights: dict[str, int]) -> str:
    for cube in CubeId.containers(point):
        s = cube.to_string()
        if s not in weights or w <= weights[s]:
            return s
    raise AssertionError("unreachable")


def weights_from_domains(domains: dict[str, float], dcs: int, d: int) -> dict[str, int]:
    """Spec §5.5, scalar."""
    nw: dict[str, float] = {}
    s = (d + 5) // 6
    for cube in sorted(domains, key=len):
        depth = len(cube) // s
        if depth > 0:
            parent = cube[: (depth - 1) * s]
            if parent not in nw or nw[parent] >= 1.0:
                continue
            pw = nw[parent]
        else:
            pw = 0.0
        dom = domains[cube]
        nw[cube] = 1.0 if dom <= dcs else pw + dcs / math.floor(dom)
    return {c: weight_from_normalized(v) for c, v in nw.items()}


def _realistic(
    d: int, n: int, dcs: int, seed: int
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    rng = np.random.default_rng(seed)
    pts = rng.random((n, d)) ** 2
    pts[:4] = 1.0
    pts[4:8] = 0.0
    w = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    w[8] = MAX_WEIGHT
    w[9] = -(2**31)
    est = DomainEstimator(d, dcs)
    est.add(pts, w)
    return pts, w, weights_from_domains(est.finish(), dcs, d)


def check_invariants(
    pts: np.ndarray, w: np.ndarray, weights: dict[str, int], names: list[str], inverse: np.ndarray
) -> None:
    d = pts.shape[1]
    for i in range(pts.shape[0]):
        cube = CubeId.from_string(names[inverse[i]], d)
        assert cube.contains(pts[i].tolist())
        s = cube.to_string()
        if s in weights:
            assert w[i] <= weights[s]
        anc = cube.parent
        while anc is not None:
            a = anc.to_string()
            assert a in weights and weights[a] < w[i]
            anc = anc.parent


@pytest.mark.parametrize("d,n,dcs", [(2, 4000, 100), (3, 5000, 200), (1, 2000, 50), (7, 3000, 100)])
def test_assign_matches_scalar_on_realistic_weights(d: int, n: int, dcs: int) -> None:
    pts, w, weights = _realistic(d, n, dcs, seed=d)
    assert len(weights) > 5
    assigner = CubeAssigner(d, weights)
    depth, coords = assigner.assign(pts, w)
    names_from_coords = [cube_strings(coords[i : i + 1], int(depth[i]), d)[0] for i in range(n)]
    want = [reference_assign(pts[i].tolist(), int(w[i]), weights) for i in range(n)]
    assert names_from_coords == want
    names, inverse = assigner.assign_labels(pts, w)
    assert inverse.dtype == np.int32
    assert [names[i] for i in inverse] == want
    assert names == sorted(set(want), key=lambda s: CubeId.from_string(s, d))
    names2, inverse2 = cube_labels(depth, coords, d)
    assert names2 == names and inverse2.tolist() == inverse.tolist()
    names3, inverse3 = cube_labels(assigner.assign(pts, w), d)
    assert names3 == names and inverse3.tolist() == inverse.tolist()
    names4, inverse4 = assigner.cube_labels((depth, coords))
    assert names4 == names and inverse4.dtype == np.int32
    check_invariants(pts, w, weights, names, inverse)


def test_assign_arbitrary_maps() -> None:
    """Any map, even non-monotone weights and unreachable cubes, follows the descent rule."""
    rng = np.random.default_rng(11)
    d = 2
    pts = rng.random((3000, d))
    w = rng.integers(-(2**31), 2**31, 3000, dtype=np.int64).astype(np.int32)
    cubes = {""}
    for depth in range(1, 5):
        coords = point_coords(rng.random((40, d)), depth)
        cubes.update(cube_strings(coords, depth, d))
    cubes.update({"wwwwwQ", "AAAAAAAAAA"})  # deep cubes with missing ancestors: unreachable
    for trial in range(4):
        weights = {c: int(rng.integers(-(2**31), 2**31)) for c in cubes}
        if trial == 1:
            weights = {c: (MAX_WEIGHT if len(c) == 4 else v) for c, v in weights.items()}
        assigner = CubeAssigner(d, weights)
        names, inverse = assigner.assign_labels(pts, w)
        want = [reference_assign(pts[i].tolist(), int(w[i]), weights) for i in range(len(w))]
        assert [names[i] for i in inverse] == want


def test_assign_edge_cases() -> None:
    pts = np.array([[0.2, 0.9], [1.0, 1.0]])
    w = np.array([5, -5], dtype=np.int32)
    # no root in the map: everything in the root
    assert CubeAssigner(2, {}).assign_labels(pts, w)[0] == [""]
    assert CubeAssigner(2, {"A": 3}).assign_labels(pts, w)[1].tolist() == [0, 0]
    # root only, weights straddling it
    names, inv = CubeAssigner(2, {"": 0}).assign_labels(pts, w)
    assert [names[i] for i in inv] == ["Q", ""]
    depth, coords = CubeAssigner(2, {"": 0}).assign(pts, w)
    assert depth.tolist() == [1, 0] and coords.tolist() == [[0, 1], [0, 0]]
    # w == W[c] stays (non-strict)
    names, inv = CubeAssigner(2, {"": 5, "Q": 6}).assign_labels(pts, w)
    assert [names[i] for i in inv] == ["", ""]
    with pytest.raises(InvalidOptionError):
        CubeAssigner(2, {"": 0}).assign_labels(
            np.array([[0.5, 1.5]]), np.array([1], dtype=np.int32)
        )
    with pytest.raises(InvalidOptionError):
        CubeAssigner(2, {"": 0}).assign_labels(
            np.array([[0.5, np.nan]]), np.array([1], dtype=np.int32)
        )
    empty = CubeAssigner(2, {"": 0}).assign_labels(np.zeros((0, 2)), np.zeros(0, dtype=np.int32))
    assert empty[1].size == 0


def test_deep_chain_16_dims() -> None:
    """d = 16: keys stay int64 at any depth (parent label << d | child)."""
    d = 16
    rng = np.random.default_rng(12)
    pts = np.clip(rng.normal(0.5, 0.001, (500, d)), 0, 1)
    chain = [c.to_string() for c in list(_take(CubeId.containers(pts[0].tolist()), 12))]
    weights = {c: -(2**31) + k for k, c in enumerate(chain)}
    w = rng.integers(-(2**31), 2**31, 500, dtype=np.int64).astype(np.int32)
    w[:50] = -(2**31) + 20  # above all chain weights
    names, inv = CubeAssigner(d, weights).assign_labels(pts, w)
    want = [reference_assign(pts[i].tolist(), int(w[i]), weights) for i in range(500)]
    assert [names[i] for i in inv] == want
    assert max(len(n) for n in names) >= 3 * 3


def _take(it, k):
    for _ in range(k):
        yield next(it)


def test_block_summaries() -> None:
    rng = np.random.default_rng(13)
    n = 5000
    groups = rng.integers(0, 4, n)
    cubes = rng.integers(0, 9, n)
    w = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    got = block_summaries(groups, cubes, w)
    want = []
    for g in range(4):
        for c in range(9):
            m = (groups == g) & (cubes == c)
            if m.any():
                want.append((g, c, int(w[m].min()), int(m.sum())))
    assert got == want
    assert sum(x[3] for x in got) == n
    # sparse path: huge group numbers
    got2 = block_summaries(groups * 10**7, cubes, w)
    assert [(g // 10**7, c, mn, k) for g, c, mn, k in got2] == want
    assert block_summaries(np.zeros(0), np.zeros(0), np.zeros(0)) == []
