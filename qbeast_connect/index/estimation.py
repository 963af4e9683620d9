"""Local OTrees and cube domains, vectorized (spec §5.3).

Every Spark task feeds its rows (normalized point + weight) to a :class:`DomainEstimator`.
Rows are buffered in arrival order; each time ``buffer_capacity`` rows have accumulated, one
local tree is built from exactly those rows (the reference's heap does the same), and
:meth:`DomainEstimator.finish` builds the last partial tree and returns the cube domains
summed over all trees.

Building a tree (spec §5.3) is done level by level instead of row by row. Rows are sorted by
weight (stable on ties), which is the order the reference pops them from its heap. At depth
``k`` the rows not yet placed are grouped by their depth-``k`` container cube; inside a group
the rows keep weight order, so the rows a cube accepts are exactly the first ones:

* a new cube, or an existing *leaf* cube (existing max weight ``MAX_WEIGHT``), accepts the
  first ``groupCubeSize`` rows that reach it;
* an existing *inner* cube with max weight ``w0`` accepts the first ``groupCubeSize`` rows
  with ``w < w0``. Those rows are a prefix of the group (weight order), so the within-group
  rank is also the rank among eligible rows. Rows with ``w >= w0`` always pass down.

The rows not accepted continue to depth ``k + 1``. This reproduces the row-by-row algorithm
exactly: a row only competes with rows in the same cube, and in the reference a cube
accepts rows in the order they arrive, i.e. weight order.

Depth cap: the reference has no depth limit (identical points go down ``n / gcs`` levels).
Here, rows still unplaced at :data:`~qbeast_connect.index.cubes.MAX_DEPTH` are all accepted
by their depth-``MAX_DEPTH`` cube regardless of its capacity. Only degenerate data (more than
``gcs`` rows sharing one depth-30 cube, e.g. identical points) reaches it; the normalized
weight of such a cube never matters (it has no children).

Domains (bottom-up, deepest level first): ``domain(c) = treeSize(c) / (1 - nw(parent))``,
then ``treeSize(parent) += treeSize(c)``; the root's domain is its tree size (the number of
rows of the tree). ``nw(parent)`` reaches 1.0 only when a full parent's last accepted weight
is ``MAX_WEIGHT`` (the reference then divides by zero and gets Infinity); the denominator is
clamped to :data:`MIN_DENOMINATOR` (one weight step, ``1 / (2**32 - 1)``) instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.cubes import (
    MAX_DEPTH,
    MAX_DIMENSIONS,
    _coords_unchecked,
    check_points,
    cube_strings,
    decode_cube_string,
    unique_cubes,
)

__all__ = [
    "MIN_DENOMINATOR",
    "DomainEstimator",
    "build_tree_levels",
    "existing_index_domains",
    "fraction_array",
    "group_cube_size",
    "merge_domains",
    "tree_domains",
]

MIN_WEIGHT = -(2**31)
MAX_WEIGHT = 2**31 - 1
_WEIGHT_RANGE = 4294967295.0
_WEIGHT_OFFSET = -2147483648.0

#: Smallest ``1 - nw(parent)`` used as a divisor (one weight step).
MIN_DENOMINATOR = 1.0 / _WEIGHT_RANGE


def fraction_array(weights: np.ndarray) -> np.ndarray:
    """Vectorized ``fraction_from_weight``: ``(w - MIN_WEIGHT) / (2**32 - 1)`` (float64)."""
    return (np.asarray(weights).astype(np.float64) - _WEIGHT_OFFSET) / _WEIGHT_RANGE


def group_cube_size(desired_cube_size: int, num_trees: int) -> int:
    """``max(30, desired_cube_size // max(1, num_trees))`` (spec §5.3).

    The reference's divisor is ``max(numPartitions, numElements // bufferCapacity)``.
    """
    return max(30, int(desired_cube_size) // max(1, int(num_trees)))


def merge_domains(domains: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Sum cube domains over several estimators / partitions (missing cubes count 0)."""
    out: dict[str, float] = {}
    for part in domains:
        for cube, dom in part.items():
            out[cube] = out.get(cube, 0.0) + float(dom)
    return out


def existing_index_domains(element_counts: Mapping[str, int], dimensions: int) -> dict[str, float]:
    """Domains of the cubes of an existing index from their element counts (spec §5.4).

    ``treeSize(c) = elementCount(c)``, added bottom-up into the parent when the parent is
    present; top-down the root's domain is its tree size and every cube gets
    ``domain(parent) * treeSize(c) / sum(treeSize of its present siblings)``. A cube whose
    parent is absent gets domain 0 (like the reference). Only cubes of ``element_counts``
    appear in the result.
    """
    s = (dimensions + 5) // 6
    tree_size = {c: float(n) for c, n in element_counts.items()}
    by_depth: dict[int, list[str]] = {}
    for c in element_counts:
        by_depth.setdefault(len(c) // s, []).append(c)
    for depth in sorted(by_depth, reverse=True):
        if depth == 0:
            continue
        for c in by_depth[depth]:
            parent = c[: (depth - 1) * s]
            if parent in tree_size:
                tree_size[parent] += tree_size[c]
    domains: dict[str, float] = {}
    for depth in sorted(by_depth):
        if depth == 0:
            for c in by_depth[0]:
                domains[c] = tree_size[c]
            continue
        sibling_sum: dict[str, float] = {}
        for c in by_depth[depth]:
            parent = c[: (depth - 1) * s]
            sibling_sum[parent] = sibling_sum.get(parent, 0.0) + tree_size[c]
        for c in by_depth[depth]:
            parent = c[: (depth - 1) * s]
            total = sibling_sum[parent]
            parent_domain = domains.get(parent, 0.0)
            domains[c] = parent_domain * tree_size[c] / total if total > 0 else 0.0
    return domains


class _ExistingWeights:
    """Existing cube max weights, looked up per depth by integer coordinates."""

    def __init__(self, dimensions: int, weights: Mapping[Any, int] | None) -> None:
        self.by_depth: dict[int, dict[tuple[int, ...], int]] = {}
        if not weights:
            return
        for cube, w in weights.items():
            if isinstance(cube, str):
                depth, coords = decode_cube_string(cube, dimensions)
            else:
                if int(cube.dimensions) != dimensions:
                    raise InvalidOptionError(
                        f"existing cube {cube} has {cube.dimensions} dimensions, expected "
                        f"{dimensions}"
                    )
                depth, coords = int(cube.depth), tuple(int(c) for c in cube.coords)
            w = int(w)
            if w >= MAX_WEIGHT:
                continue  # existing leaf: behaves like a new cube
            self.by_depth.setdefault(depth, {})[coords] = w

    def inner_weights(self, depth: int, coords: np.ndarray) -> np.ndarray:
        """``w0`` per cube (int64), ``2**31`` for cubes that are not existing inner cubes."""
        out = np.full(coords.shape[0], 2**31, dtype=np.int64)
        table = self.by_depth.get(depth)
        if table:
            for i, row in enumerate(coords.tolist()):
                w = table.get(tuple(row))
                if w is not None:
                    out[i] = w
        return out


class _Level:
    __slots__ = ("coords", "count", "inner", "nw", "parent")

    def __init__(
        self,
        coords: np.ndarray,
        parent: np.ndarray,
        count: np.ndarray,
        nw: np.ndarray,
        inner: np.ndarray,
    ) -> None:
        self.coords = coords  # (m, d) int64 coordinates at this depth
        self.parent = parent  # (m,) index of the parent in the previous level
        self.count = count  # (m,) rows accepted
        self.nw = nw  # (m,) normalized weight
        self.inner = inner  # (m,) existing inner cube


def _group_ranks(gid: np.ndarray, ngroups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable grouping: ``(order, group starts in order, rank of each row within its group)``."""
    order = np.argsort(gid, kind="stable")
    sizes = np.bincount(gid, minlength=ngroups)
    starts = np.zeros(ngroups, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    rank = np.empty(gid.size, dtype=np.int64)
    rank[order] = np.arange(gid.size, dtype=np.int64) - np.repeat(starts, sizes)
    return order, starts, rank


def build_tree_levels(
    points: np.ndarray,
    weights: np.ndarray,
    gcs: int,
    existing: _ExistingWeights | None = None,
    max_depth: int = MAX_DEPTH,
) -> list[_Level]:
    """Build one local tree; return its cubes level by level (index = depth)."""
    n, d = points.shape
    order = np.argsort(weights, kind="stable")
    pts = points[order]
    w = np.asarray(weights, dtype=np.int64)[order]
    levels: list[_Level] = []
    rem = np.arange(n, dtype=np.int64)  # rows (in weight order) not yet placed
    pid = np.zeros(n, dtype=np.int64)  # their parent's index in the previous level
    for depth in range(max_depth + 1):
        if rem.size == 0:
            break
        if depth == 0:
            ngroups = 1
            gid = np.zeros(rem.size, dtype=np.int64)
            coords_groups = np.zeros((1, d), dtype=np.int64)
            parent = np.zeros(1, dtype=np.int64)
        else:
            ck = _coords_unchecked(pts[rem], depth)
            child = np.zeros(rem.size, dtype=np.int64)
            for j in range(d):
                child |= (ck[:, j] & 1) << (d - 1 - j)
            key = (pid << d) | child
            ukeys, first, gid = np.unique(key, return_index=True, return_inverse=True)
            gid = gid.ravel()
            ngroups = ukeys.size
            coords_groups = ck[first]
            parent = ukeys >> d
        wr = w[rem]
        if existing is not None and existing.by_depth.get(depth):
            w0 = existing.inner_weights(depth, coords_groups)
        else:
            w0 = np.full(ngroups, 2**31, dtype=np.int64)
        inner = w0 < 2**31
        grp_order, starts, rank = _group_ranks(gid, ngroups)
        if depth == max_depth:
            accept = np.ones(rem.size, dtype=bool)
        else:
            accept = (rank < gcs) & (wr < w0[gid])
        count = np.bincount(gid[accept], minlength=ngroups)
        # accepted rows are the first `count` of each group in weight order
        last_w = np.where(count > 0, wr[grp_order][starts + np.maximum(count, 1) - 1], w0)
        last_w = np.minimum(last_w, MAX_WEIGHT)
        frac = fraction_array(last_w)
        with np.errstate(divide="ignore"):
            leaf_nw = gcs / count.astype(np.float64)
        nw = np.where(inner | (count >= gcs), frac, leaf_nw)
        levels.append(_Level(coords_groups, parent, count, nw, inner))
        keep = ~accept
        rem = rem[keep]
        pid = gid[keep]
    return levels


def tree_domains(levels: list[_Level]) -> list[np.ndarray]:
    """Domains of every cube of a tree, level by level (spec §5.3 step 3)."""
    tree_size = [lv.count.astype(np.float64) for lv in levels]
    domains: list[np.ndarray] = [np.zeros(0)] * len(levels)
    for depth in range(len(levels) - 1, 0, -1):
        lv = levels[depth]
        parent_nw = levels[depth - 1].nw[lv.parent]
        denom = np.maximum(1.0 - parent_nw, MIN_DENOMINATOR)
        domains[depth] = tree_size[depth] / denom
        tree_size[depth - 1] += np.bincount(
            lv.parent, weights=tree_size[depth], minlength=levels[depth - 1].count.size
        )
    if levels:
        domains[0] = tree_size[0].copy()
    return domains


class DomainEstimator:
    """Cube domains of one partition's rows (spec §5.3), built from local trees.

    Args:
        dimensions: Number of indexed columns ``d`` (1..16).
        group_cube_size: Capacity of a cube of a local tree (see :func:`group_cube_size`).
        buffer_capacity: Rows per local tree (``spark.qbeast.index.cubeDomainsBufferCapacity``).
        existing_max_weights: Max weights of the cubes of the existing index (``CubeId`` or
            cube string keys); only for appends to the same revision.
    """

    def __init__(
        self,
        dimensions: int,
        group_cube_size: int,
        buffer_capacity: int = 100_000,
        existing_max_weights: Mapping[Any, int] | None = None,
    ) -> None:
        if not 1 <= dimensions <= MAX_DIMENSIONS:
            raise InvalidOptionError(f"dimensions must be in [1, {MAX_DIMENSIONS}]")
        if group_cube_size < 1 or buffer_capacity < 1:
            raise InvalidOptionError("group_cube_size and buffer_capacity must be positive")
        self.dimensions = dimensions
        self.group_cube_size = int(group_cube_size)
        self.buffer_capacity = int(buffer_capacity)
        self._existing = _ExistingWeights(dimensions, existing_max_weights)
        self._pending_points: list[np.ndarray] = []
        self._pending_weights: list[np.ndarray] = []
        self._pending_rows = 0
        self._acc_coords: dict[int, list[np.ndarray]] = {}
        self._acc_domains: dict[int, list[np.ndarray]] = {}
        self.trees_built = 0
        self.rows_seen = 0

    def add(self, points: np.ndarray, weights: np.ndarray) -> None:
        """Buffer rows; build a tree every ``buffer_capacity`` rows."""
        pts = check_points(points)
        if pts.shape[1] != self.dimensions:
            raise InvalidOptionError(
                f"points have {pts.shape[1]} dimensions, expected {self.dimensions}"
            )
        wts = np.asarray(weights)
        if wts.shape != (pts.shape[0],):
            raise InvalidOptionError("weights must be a 1-D array with one weight per point")
        if pts.shape[0] == 0:
            return
        self.rows_seen += pts.shape[0]
        self._pending_points.append(pts)
        self._pending_weights.append(wts.astype(np.int64))
        self._pending_rows += pts.shape[0]
        if self._pending_rows >= self.buffer_capacity:
            all_p = np.concatenate(self._pending_points)
            all_w = np.concatenate(self._pending_weights)
            cap = self.buffer_capacity
            full = (all_p.shape[0] // cap) * cap
            for start in range(0, full, cap):
                self._build(all_p[start : start + cap], all_w[start : start + cap])
            self._pending_points = [all_p[full:]] if full < all_p.shape[0] else []
            self._pending_weights = [all_w[full:]] if full < all_w.shape[0] else []
            self._pending_rows = all_p.shape[0] - full

    def _build(self, points: np.ndarray, weights: np.ndarray) -> None:
        levels = build_tree_levels(points, weights, self.group_cube_size, self._existing)
        domains = tree_domains(levels)
        for depth, (lv, dom) in enumerate(zip(levels, domains, strict=True)):
            self._acc_coords.setdefault(depth, []).append(lv.coords)
            self._acc_domains.setdefault(depth, []).append(dom)
        self.trees_built += 1

    def finish(self) -> dict[str, float]:
        """Build the last partial tree; return cube string -> domain summed over all trees."""
        if self._pending_rows:
            self._build(np.concatenate(self._pending_points), np.concatenate(self._pending_weights))
            self._pending_points, self._pending_weights, self._pending_rows = [], [], 0
        out: dict[str, float] = {}
        for depth in sorted(self._acc_coords):
            coords = np.concatenate(self._acc_coords[depth])
            doms = np.concatenate(self._acc_domains[depth])
            uniq, inverse = unique_cubes(coords, depth)
            sums = np.bincount(inverse, weights=doms, minlength=uniq.shape[0])
            names = cube_strings(uniq, depth, self.dimensions)
            out.update(zip(names, sums.tolist(), strict=True))
        return out
