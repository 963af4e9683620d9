"""Row -> cube assignment (spec §5.6), grouping rows into files and block summaries.

:class:`CubeAssigner` walks every row's containers from the root and stops at the first
cube ``c`` with ``c`` not in the cube-weights map ``W`` or ``w <= W[c]``, level by level over
the whole batch: at depth ``k`` only the rows that went past their depth-``k-1`` cube are
looked at, with one ``np.searchsorted`` against the sorted keys of the depth-``k`` cubes.

Keys. A row at depth ``k >= 1`` always has its parent in ``W`` (otherwise it would have
stopped there), so a depth-``k`` cube is keyed by ``parent_label << d | child_index`` where
``parent_label`` is the parent's index in the map (cubes sorted in CubeId order). This fits
an ``int64`` for any ``d <= 16`` and any depth. The cube finally chosen gets a *label*:

* its index ``g`` in the map when it is in ``W``;
* ``len(W) + (parent_label << d) + child_index`` when it is not (a child of a map cube);
* 0 (the root) when ``W`` has no root, in which case every row goes to the root.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.cubes import (
    MAX_COORD_DEPTH,
    MAX_DIMENSIONS,
    _coords_unchecked,
    check_points,
    cube_sort_key,
    cube_strings,
    decode_cube_strings,
    order_bytes,
    unique_cubes,
)

__all__ = [
    "CubeAssigner",
    "block_summaries",
    "cube_labels",
]

MAX_WEIGHT = 2**31 - 1


def _child_index(coords: np.ndarray, d: int) -> np.ndarray:
    child = np.zeros(coords.shape[0], dtype=np.int64)
    for j in range(d):
        child |= (coords[:, j] & 1) << (d - 1 - j)
    return child


def _compact_labels(labels: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``(unique labels sorted, inverse int32)`` of non-negative int64 labels < bound."""
    n = labels.size
    if bound <= max(4 * n, 1 << 16):
        present = np.zeros(bound, dtype=bool)
        present[labels] = True
        uniq = np.flatnonzero(present)
        remap = np.zeros(bound, dtype=np.int32)
        remap[uniq] = np.arange(uniq.size, dtype=np.int32)
        return uniq, remap[labels]
    uniq, inverse = np.unique(labels, return_inverse=True)
    return uniq, inverse.ravel().astype(np.int32)


class CubeAssigner:
    """Assign rows to cubes given the cube max weights of a write (spec §5.6).

    Args:
        dimensions: Number of indexed columns ``d`` (1..16).
        cube_weights: Cube string -> max weight (``W``). Leaves have ``MAX_WEIGHT``. Cubes
            whose parent is missing from the map are unreachable and ignored.
    """

    def __init__(self, dimensions: int, cube_weights: Mapping[str, int]) -> None:
        if not 1 <= dimensions <= MAX_DIMENSIONS:
            raise InvalidOptionError(f"dimensions must be in [1, {MAX_DIMENSIONS}]")
        d = dimensions
        self.dimensions = d
        names = list(cube_weights)
        depths, coords = decode_cube_strings(names, d)
        max_depth = int(depths.max()) if depths.size else 0
        if max_depth >= MAX_COORD_DEPTH:
            raise InvalidOptionError(
                f"cube weights reach depth {max_depth}; at most {MAX_COORD_DEPTH - 1} supported"
            )
        # labels = positions in CubeId order
        ob = order_bytes(depths, coords, d)
        order = np.argsort(ob, kind="stable")
        ob = ob[order]
        self.depths = depths[order]
        self.coords = coords[order]
        self.weights = np.asarray(
            [int(cube_weights[names[i]]) for i in order.tolist()], dtype=np.int64
        ).reshape(len(names))
        # canonical strings (a non-canonical key such as "B" in 2-D is reported as "A")
        self.cube_strings: list[str] = [""] * len(names)
        for k in np.unique(self.depths).tolist():
            sel = np.flatnonzero(self.depths == k)
            for i, text in zip(
                sel.tolist(), cube_strings(self.coords[sel], int(k), d), strict=True
            ):
                self.cube_strings[i] = text
        self.has_root = bool(len(names)) and int(self.depths[0]) == 0
        # parent label of every cube (-1: root or parent missing -> unreachable)
        parent_label = np.full(len(names), -1, dtype=np.int64)
        deep = np.flatnonzero(self.depths > 0)
        if deep.size:
            pob = order_bytes(self.depths[deep] - 1, self.coords[deep] >> 1, d)
            pos = np.searchsorted(ob, pob)
            posc = np.minimum(pos, len(names) - 1)
            found = ob[posc] == pob
            parent_label[deep[found]] = posc[found]
        child = np.zeros(len(names), dtype=np.int64)
        for j in range(d):
            child |= (self.coords[:, j] & 1) << (d - 1 - j)
        # per depth k >= 1: sorted keys (parent_label << d | child) and the cube labels
        self._keys: list[np.ndarray] = []
        self._labels: list[np.ndarray] = []
        for k in range(max_depth + 1):
            sel = np.flatnonzero((self.depths == k) & (parent_label >= 0))
            keys = (parent_label[sel] << d) | child[sel]
            o = np.argsort(keys, kind="stable")
            self._keys.append(keys[o])
            self._labels.append(sel[o])
        self.label_bound = len(names) + ((len(names) + 1) << d)

    # ---- core walk ------------------------------------------------------------------------

    def _walk(
        self, points: np.ndarray, weights: np.ndarray, want_coords: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        pts = check_points(points)
        n, d = pts.shape
        if d != self.dimensions:
            raise InvalidOptionError(f"points have {d} dimensions, expected {self.dimensions}")
        w = np.asarray(weights)
        if w.shape != (n,):
            raise InvalidOptionError("weights must be a 1-D array with one weight per point")
        labels = np.zeros(n, dtype=np.int64)
        depth = np.zeros(n, dtype=np.int8)
        coords = np.zeros((n, d), dtype=np.int64) if want_coords else None
        if not self.has_root or n == 0:
            return labels, depth, coords
        nw_map = len(self.cube_strings)
        active = np.flatnonzero(w > self.weights[0])  # label 0 is the root
        plabel = np.zeros(active.size, dtype=np.int64)
        k = 0
        while active.size:
            k += 1
            ck = _coords_unchecked(pts[active], k)
            child = _child_index(ck, d)
            key = (plabel << d) | child
            keys_k = self._keys[k] if k < len(self._keys) else np.zeros(0, dtype=np.int64)
            if keys_k.size:
                pos = np.searchsorted(keys_k, key)
                posc = np.minimum(pos, keys_k.size - 1)
                found = keys_k[posc] == key
                lab_found = self._labels[k][posc]
                go_down = found & (w[active] > self.weights[lab_found])
            else:
                found = np.zeros(active.size, dtype=bool)
                lab_found = np.zeros(active.size, dtype=np.int64)
                go_down = found
            stop = ~go_down
            rows = active[stop]
            labels[rows] = np.where(
                found[stop], lab_found[stop], nw_map + (plabel[stop] << d) + child[stop]
            )
            depth[rows] = k
            if coords is not None:
                coords[rows] = ck[stop]
            active = active[go_down]
            plabel = lab_found[go_down]
        return labels, depth, coords

    def assign(self, points: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cube of every row: ``(depth int8 (n,), coords at that depth int64 (n, d))``."""
        _, depth, coords = self._walk(points, weights, want_coords=True)
        assert coords is not None
        return depth, coords

    def assign_labels(
        self, points: np.ndarray, weights: np.ndarray
    ) -> tuple[list[str], np.ndarray]:
        """Cube of every row as ``(unique cube strings, index into them per row (int32))``.

        Faster than :meth:`assign` + :func:`cube_labels`: labels are computed during the walk
        and only the distinct cubes are turned into strings. Strings are in CubeId order.
        """
        labels, _, _ = self._walk(points, weights, want_coords=False)
        uniq, inverse = _compact_labels(labels, self.label_bound)
        names = self._label_strings(uniq)
        order = sorted(range(len(names)), key=lambda i: cube_sort_key(names[i]))
        if order != list(range(len(names))):
            remap = np.empty(len(names), dtype=np.int32)
            remap[np.asarray(order, dtype=np.int64)] = np.arange(len(names), dtype=np.int32)
            inverse = remap[inverse]
            names = [names[i] for i in order]
        return names, inverse

    def _label_strings(self, labels: np.ndarray) -> list[str]:
        """Cube strings of distinct labels (vectorized for cubes outside the map)."""
        if not self.has_root:
            return [""] * labels.size
        nw_map = len(self.cube_strings)
        out: list[str] = [""] * labels.size
        in_map = labels < nw_map
        for i in np.flatnonzero(in_map).tolist():
            out[i] = self.cube_strings[int(labels[i])]
        outside = np.flatnonzero(~in_map)
        if outside.size:
            d = self.dimensions
            rest = labels[outside] - nw_map
            parent = rest >> d
            child = rest & ((1 << d) - 1)
            bits = np.stack([(child >> (d - 1 - j)) & 1 for j in range(d)], axis=1)
            coords = (self.coords[parent] << 1) | bits
            depth = self.depths[parent] + 1
            for k in np.unique(depth).tolist():
                sel = np.flatnonzero(depth == k)
                for i, name in zip(
                    outside[sel].tolist(), cube_strings(coords[sel], int(k), d), strict=True
                ):
                    out[i] = name
        return out

    def cube_labels(self, assigned: tuple[np.ndarray, np.ndarray]) -> tuple[list[str], np.ndarray]:
        """:func:`cube_labels` of an :meth:`assign` result with this assigner's dimensions."""
        return cube_labels(assigned, self.dimensions)


def cube_labels(
    assigned: tuple[np.ndarray, np.ndarray] | np.ndarray,
    dimensions_or_coords: int | np.ndarray,
    dimensions: int | None = None,
) -> tuple[list[str], np.ndarray]:
    """Distinct cubes of assigned rows: ``(cube strings in CubeId order, inverse int32)``.

    Call as ``cube_labels((depth, coords), d)`` with the tuple :meth:`CubeAssigner.assign`
    returns, or as ``cube_labels(depth, coords, d)``. Works per distinct depth: cubes of one
    depth are deduplicated (packed key, or a lexicographic sort when ``d * depth > 62``) and
    only the distinct cubes are encoded. :meth:`CubeAssigner.assign_labels` gives the same
    result faster.
    """
    if dimensions is None:
        if not isinstance(assigned, tuple) or not isinstance(
            dimensions_or_coords, int | np.integer
        ):
            raise TypeError(
                "cube_labels((depth, coords), dimensions) or cube_labels(depth, coords, dimensions)"
            )
        depth_arr, coords_arr = assigned
        d = int(dimensions_or_coords)
    else:
        depth_arr, coords_arr = np.asarray(assigned), np.asarray(dimensions_or_coords)
        d = int(dimensions)
    depth_arr = np.asarray(depth_arr)
    coords_arr = np.asarray(coords_arr, dtype=np.int64)
    n = depth_arr.size
    names: list[str] = []
    inverse = np.empty(n, dtype=np.int64)
    for k in np.unique(depth_arr).tolist():
        rows = np.flatnonzero(depth_arr == k)
        uniq_coords, inv = unique_cubes(coords_arr[rows], int(k))
        inverse[rows] = len(names) + inv
        names.extend(cube_strings(uniq_coords, int(k), d))
    order = sorted(range(len(names)), key=lambda i: cube_sort_key(names[i]))
    remap = np.empty(len(names), dtype=np.int32)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(names), dtype=np.int32)
    return [names[i] for i in order], remap[inverse] if n else np.zeros(0, dtype=np.int32)


def block_summaries(
    group_per_row: np.ndarray, cube_index_per_row: np.ndarray, weights: np.ndarray
) -> list[tuple[int, int, int, int]]:
    """``(group, cube_index, min_weight, count)`` of every (group, cube) pair with rows.

    Sorted by group then cube index.
    """
    g = np.asarray(group_per_row, dtype=np.int64)
    c = np.asarray(cube_index_per_row, dtype=np.int64)
    w = np.asarray(weights, dtype=np.int64)
    if g.size == 0:
        return []
    ncubes = int(c.max()) + 1
    key = g * ncubes + c
    bound = (int(g.max()) + 1) * ncubes
    if bound <= max(4 * g.size, 1 << 20):
        counts = np.bincount(key, minlength=bound)
        present = np.flatnonzero(counts)
        mins = np.full(bound, MAX_WEIGHT, dtype=np.int64)
        np.minimum.at(mins, key, w)
        return [
            (int(k // ncubes), int(k % ncubes), int(mins[k]), int(counts[k]))
            for k in present.tolist()
        ]
    order = np.lexsort((w, key))
    ks = key[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    counts_s = np.diff(np.r_[starts, ks.size])
    mins_s = w[order][starts]
    return [
        (int(k // ncubes), int(k % ncubes), int(m), int(cnt))
        for k, m, cnt in zip(ks[starts].tolist(), mins_s.tolist(), counts_s.tolist(), strict=True)
    ]
