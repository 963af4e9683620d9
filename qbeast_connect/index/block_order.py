"""The order of rows inside a data file, and where its parquet row groups end.

A data file holds blocks of several cubes. When the rows of a file are written in cube order
and every block starts a new row group, the min/max statistics of each row group describe
one cube's region only, and Spark's parquet reader skips the row groups of the cubes a
filter misses, inside a file it has to open.

Inside a block, rows follow the Z-order (Morton order) of their normalized point: the order
in which the index itself subdivides a cube into children. A block longer than the row group
bound is cut into consecutive row groups, each of which then covers a compact part of the
cube's box, so skipping continues below the cube.

Small blocks would give tiny row groups (each costs a footer entry and a read): a row group
is only closed at a cube boundary once it holds ``min_rows`` rows, so consecutive small
blocks of neighbouring cubes share a row group.

The order changes neither the rows of a block nor its ``minWeight``: only their position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qbeast_connect.index.cubes import _coords_unchecked

__all__ = ["MORTON_BITS", "file_order", "morton_keys", "row_group_bounds"]

#: Bits of the Morton key (it fits a non-negative int64).
MORTON_BITS = 63
#: Levels of the Morton key by default: a row group of a block is far larger than the
#: cells of 16 levels below the root, so finer levels would not change where it ends.
MORTON_LEVELS = 16


def _spread_table(d: int) -> np.ndarray:
    """``table[b]``: the 8 bits of ``b`` moved to positions ``0, d, 2d, ...``."""
    values = np.arange(256, dtype=np.uint64)
    table = np.zeros(256, dtype=np.uint64)
    for i in range(8):
        table |= ((values >> np.uint64(i)) & np.uint64(1)) << np.uint64(i * d)
    return table


def morton_keys(points: np.ndarray, levels: int | None = None) -> np.ndarray:
    """Z-order key (``uint64``) of every normalized point (an ``(n, d)`` array in ``[0, 1]``).

    The key holds, from its bit ``MORTON_BITS - 1`` down, ``levels`` levels (default
    ``MORTON_LEVELS``, at most ``MORTON_BITS // d``) of
    ``d`` bits each; at every level the bit of the first dimension is the most significant,
    as in the child index of a cube. Points of one cube at depth ``k <= levels`` share the
    key's first ``k * d`` bits, so sorting a cube's rows by this key orders them child by
    child, recursively.
    """
    pts = np.asarray(points, dtype=np.float64)
    n = pts.shape[0]
    d = pts.shape[1] if pts.ndim == 2 else 1
    if n == 0 or d == 0:
        return np.zeros(n, dtype=np.uint64)
    top = MORTON_BITS // d
    levels = min(MORTON_LEVELS if levels is None else max(0, int(levels)), top)
    coords = _coords_unchecked(pts.reshape(n, d), levels).astype(np.uint64)
    table = _spread_table(d)
    key = np.zeros(n, dtype=np.uint64)
    for j in range(d):
        column = coords[:, j]
        for byte in range(-(-levels // 8)):
            part = table[((column >> np.uint64(8 * byte)) & np.uint64(255)).astype(np.intp)]
            key |= part << np.uint64(8 * byte * d + (d - 1 - j))
    return key << np.uint64(MORTON_BITS - levels * d)


def file_order(groups: np.ndarray, cube_rank: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Row order of a flush: by file group, then cube (``cube_rank`` is its CubeId rank),
    then Z-order of the point inside the cube.

    ``keys`` are :func:`morton_keys` of the rows. Group and cube are packed above the key's
    leading levels into one ``uint64`` sort key, so the order costs one sort; the levels
    left out are the finest ones.
    """
    g = np.asarray(groups, dtype=np.int64)
    if g.size == 0:
        return np.zeros(0, dtype=np.intp)
    rank = np.asarray(cube_rank, dtype=np.int64)
    cubes = int(rank.max()) + 1
    outer = g * cubes + rank
    outer_bits = int(outer.max()).bit_length()
    order: np.ndarray = np.argsort(_packed(outer, outer_bits, np.asarray(keys, dtype=np.uint64)))
    return order


def _packed(outer: np.ndarray, outer_bits: int, keys: np.ndarray) -> np.ndarray:
    free = 64 - outer_bits
    high = outer.astype(np.uint64)
    packed: np.ndarray
    if free >= MORTON_BITS:
        packed = (high << np.uint64(MORTON_BITS)) | keys
    else:
        packed = (high << np.uint64(free)) | (keys >> np.uint64(MORTON_BITS - free))
    return packed


def row_group_bounds(block_rows: Sequence[int], max_rows: int, min_rows: int) -> list[int]:
    """Row counts of the row groups of a file whose blocks, in order, have ``block_rows``.

    Every block of ``min_rows`` rows or more starts its own row group(s); smaller blocks
    join the open row group while it holds fewer than ``min_rows`` rows (and stays within
    ``max_rows``). A block longer
    than ``max_rows`` is cut into near-equal parts.
    """
    out: list[int] = []
    open_rows = 0
    for rows in block_rows:
        rows = int(rows)
        if rows <= 0:
            continue
        if open_rows and open_rows < min_rows and rows < min_rows and open_rows + rows <= max_rows:
            open_rows += rows  # small blocks of neighbouring cubes share a row group
            continue
        if open_rows:
            out.append(open_rows)
            open_rows = 0
        parts = -(-rows // max_rows)
        size, extra = divmod(rows, parts)
        pieces = [size + 1] * extra + [size] * (parts - extra)
        out.extend(pieces[:-1])
        open_rows = pieces[-1]
    if open_rows:
        out.append(open_rows)
    return out
