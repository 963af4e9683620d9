"""Row order inside a data file and its row-group bounds (qbeast_connect.index.block_order)."""

from __future__ import annotations

import itertools

import numpy as np

from qbeast_connect.index.block_order import (
    MORTON_BITS,
    file_order,
    morton_keys,
    row_group_bounds,
)
from qbeast_connect.index.cubes import point_coords


def _naive_morton(points: np.ndarray, levels: int) -> list[int]:
    d = points.shape[1]
    coords = np.minimum(np.floor(points * 2**levels).astype(np.int64), 2**levels - 1)
    out = []
    for row in coords.tolist():
        key = 0
        for level in range(levels - 1, -1, -1):
            for j in range(d):
                key = (key << 1) | ((row[j] >> level) & 1)
        out.append(key << (MORTON_BITS - levels * d))
    return out


def test_morton_keys_interleave_bits_first_dimension_most_significant() -> None:
    rng = np.random.default_rng(3)
    for d, levels in [(1, 16), (2, 16), (3, 16), (5, 12), (16, 3)]:
        points = rng.uniform(0, 1, (500, d))
        points[0] = 1.0  # the upper bound stays in the last cell
        points[1] = 0.0
        assert morton_keys(points, levels).tolist() == _naive_morton(points, levels), d


def test_morton_order_visits_a_cube_child_by_child() -> None:
    rng = np.random.default_rng(4)
    points = rng.uniform(0, 1, (2000, 3))
    order = np.argsort(morton_keys(points), kind="stable")
    for depth in (1, 2, 3):
        coords = point_coords(points[order], depth)
        cells = [tuple(c) for c in coords.tolist()]
        # every cell of this depth is one contiguous run in Morton order
        runs = [cells[0]] + [b for a, b in itertools.pairwise(cells) if a != b]
        assert len(runs) == len(set(cells)), depth


def test_file_order_sorts_by_group_then_cube_then_morton() -> None:
    rng = np.random.default_rng(5)
    n = 5000
    groups = rng.integers(0, 7, n)
    ranks = rng.integers(0, 40, n)
    keys = morton_keys(rng.uniform(0, 1, (n, 2)))
    order = file_order(groups, ranks, keys)
    assert sorted(order.tolist()) == list(range(n))
    expected = np.lexsort((keys, ranks, groups))
    assert groups[order].tolist() == groups[expected].tolist()
    assert ranks[order].tolist() == ranks[expected].tolist()
    # inside a (group, cube) the keys ascend, up to the finest levels left out of the pack
    packed_bits = (6 * 40 + 39).bit_length()
    coarse = keys >> np.uint64(MORTON_BITS - (64 - packed_bits))
    assert coarse[order].tolist() == coarse[expected].tolist()


def test_row_group_bounds_give_blocks_their_own_row_groups() -> None:
    # full blocks stay apart; small neighbours share; a long block is cut evenly
    assert row_group_bounds([100, 120, 100], 1000, 50) == [100, 120, 100]
    assert row_group_bounds([10, 20, 30, 100, 5, 5], 1000, 50) == [60, 100, 10]
    assert row_group_bounds([2500], 1000, 50) == [834, 833, 833]
    assert row_group_bounds([10, 2500, 0, 70], 1000, 50) == [10, 834, 833, 833, 70]
    assert sum(row_group_bounds([7] * 100, 1000, 50)) == 700
    assert row_group_bounds([], 1000, 50) == []
