"""Estimated counts and file rollup (spec §5.7)."""

from __future__ import annotations

import heapq
import random

from qbeast_connect.index.rollup import estimated_counts, rollup_groups
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.weight import MAX_WEIGHT


def reference_rollup(counts: dict[str, int], d: int, limit: int) -> dict[str, str]:
    """Priority queue by depth (deepest first), like the reference; returns cube -> group key."""
    groups = {c: (n, [c]) for c, n in counts.items()}
    heap = [(-CubeId.from_string(c, d).depth, i, c) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    tick = len(heap)
    while heap:
        _, _, key = heapq.heappop(heap)
        size, members = groups[key]
        cube = CubeId.from_string(key, d)
        if size < limit and cube.parent is not None:
            parent = cube.parent.to_string()
            if parent in groups:
                psize, pmembers = groups[parent]
                groups[parent] = (psize + size, pmembers + members)
            else:
                groups[parent] = (size, members)
                heapq.heappush(heap, (-cube.parent.depth, tick, parent))
                tick += 1
            del groups[key]
    return {m: key for key, (_, members) in groups.items() for m in members}


def test_worked_example_counts_and_rollup() -> None:
    domains = {"": 100.0, "A": 40 / 0.7, "Q": 30 / 0.7, "AA": 10 / 0.3}
    weights = {"": -858993459, "A": 1401515643, "Q": MAX_WEIGHT, "AA": MAX_WEIGHT}
    counts = estimated_counts(domains, weights, 2)
    assert counts == {"": 30, "A": 30, "Q": 29, "AA": 5}
    assert rollup_groups(counts, 2, 30) == {"": 0, "Q": 0, "A": 1, "AA": 1}


def test_estimated_counts_missing_cubes() -> None:
    # a cube absent from W counts up to MAX_WEIGHT; its parent bound is W[parent]
    counts = estimated_counts({"": 10.0, "g": 8.0, "gA": 4.0}, {"": 0}, 2)
    assert counts["g"] == int((1.0 - (2147483648.0 / 4294967295.0)) * 8.0)
    assert counts["gA"] == 0  # parent g missing: both bounds MAX_WEIGHT
    assert counts[""] == int((2147483648.0 / 4294967295.0) * 10.0)


def test_rollup_random_matches_reference() -> None:
    rng = random.Random(3)
    for d in (1, 2, 3, 7):
        for _ in range(30):
            cubes = {""}
            for _ in range(rng.randint(0, 40)):
                depth = rng.randint(1, 5)
                point = [rng.random() for _ in range(d)]
                cubes.add(CubeId.container(point, depth).to_string())
            counts = {c: rng.randint(0, 60) for c in cubes}
            limit = rng.choice([1, 10, 50, 100, 1000])
            got = rollup_groups(counts, d, limit)
            want = reference_rollup(counts, d, limit)
            assert got.keys() == counts.keys()
            # same partition of the cubes
            by_group: dict[int, set[str]] = {}
            for c, g in got.items():
                by_group.setdefault(g, set()).add(c)
            by_key: dict[str, set[str]] = {}
            for c, k in want.items():
                by_key.setdefault(k, set()).add(c)
            assert sorted(map(sorted, by_group.values())) == sorted(map(sorted, by_key.values()))
            assert sorted(set(got.values())) == list(range(len(by_group)))
            # groups numbered in CubeId order of their key cube
            keys_in_order = sorted(by_key, key=lambda s: CubeId.from_string(s, d))
            assert [got[next(iter(by_key[k]))] for k in keys_in_order] == list(range(len(by_key)))


def test_rollup_limits() -> None:
    counts = {"": 5, "A": 5, "AA": 5, "AAA": 5}
    assert set(rollup_groups(counts, 2, 1).values()) == {0, 1, 2, 3}
    assert rollup_groups(counts, 2, 100) == {"": 0, "A": 0, "AA": 0, "AAA": 0}
    # a group created at a missing parent keeps only its members
    assert rollup_groups({"": 100, "AQ": 3, "Ag": 40}, 2, 30) == {"": 0, "AQ": 0, "Ag": 1}
    got = rollup_groups({"": 100, "AQ": 20, "Ag": 15, "Aw": 40}, 2, 30)
    assert got == {"": 0, "AQ": 1, "Ag": 1, "Aw": 2}
    assert "A" not in got
    assert rollup_groups({}, 2, 10) == {}
