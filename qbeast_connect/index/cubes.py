"""Integer cube coordinates, packed keys and the vectorized cube string codec (spec §2).

A cube at depth ``k`` of a ``d``-dimensional index is represented here by ``k`` and an
integer vector ``coords`` with ``coords[j]`` in ``[0, 2**k)``: the first ``k`` bits of the
binary expansion of the point's coordinate ``j`` (bit of level ``l`` for dimension ``j`` =
``(coords[j] >> (k - 1 - l)) & 1``). This is the same convention as
``qbeast_connect.model.cube_id.CubeId(dimensions, depth, coords)``.

Depth limits:

* :data:`MAX_DEPTH` (30) is the deepest level the domain *estimation* builds (see
  :mod:`qbeast_connect.index.estimation`). Real indexes are far shallower: every level
  multiplies the number of cubes by up to ``2**d`` and each cube holds at least 30 rows.
* :data:`MAX_COORD_DEPTH` (62) is the deepest level for which :func:`point_coords` and the
  assignment can compute coordinates (``2**62`` still fits an ``int64``), so indexes written
  by other writers with cubes deeper than :data:`MAX_DEPTH` can still be assigned to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model.cube_id import cube_string_sort_key

__all__ = [
    "ALPHABET",
    "MAX_COORD_DEPTH",
    "MAX_DEPTH",
    "MAX_DIMENSIONS",
    "check_points",
    "child_indices",
    "cube_id_to_key",
    "cube_keys",
    "cube_sort_key",
    "cube_strings",
    "decode_cube_string",
    "decode_cube_strings",
    "key_to_cube_id",
    "order_bytes",
    "parent_string",
    "point_coords",
    "sorted_cubes",
    "symbols_per_level",
    "unique_cubes",
]

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_ALPHABET_BYTES = np.frombuffer(ALPHABET.encode("ascii"), dtype=np.uint8)
_ALPHABET_INDEX = {ch: i for i, ch in enumerate(ALPHABET)}
_BYTE_TO_INDEX = np.full(256, -1, dtype=np.int64)
_BYTE_TO_INDEX[_ALPHABET_BYTES] = np.arange(64)

#: Deepest level built by the domain estimation (rows that would go deeper stay there).
MAX_DEPTH = 30
#: Deepest level for which integer coordinates can be computed (int64).
MAX_COORD_DEPTH = 62
#: Largest number of dimensions supported by the packed keys.
MAX_DIMENSIONS = 16


def symbols_per_level(dimensions: int) -> int:
    """Symbols of the string codec per level: ``ceil(d / 6)``."""
    return (dimensions + 5) // 6


def check_points(points: np.ndarray, column_names: Sequence[str] | None = None) -> np.ndarray:
    """Validate an ``(n, d)`` float64 array of normalized points (all in ``[0, 1]``)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2:
        raise InvalidOptionError(f"points must be a 2-D array (n, d), got shape {pts.shape}")
    ok = (pts >= 0.0) & (pts <= 1.0)  # NaN fails both comparisons
    if not ok.all():
        bad_row, bad_dim = np.argwhere(~ok)[0]
        value = pts[bad_row, bad_dim]
        name = column_names[bad_dim] if column_names is not None else f"dimension {bad_dim}"
        if np.isnan(value):
            raise InvalidOptionError(f"{name}: NaN cannot be indexed")
        raise InvalidOptionError(
            f"{name}: normalized coordinate {value!r} is outside [0, 1]; the revision does not "
            "cover the data"
        )
    return pts


def _coords_unchecked(points: np.ndarray, depth: int) -> np.ndarray:
    """``min(floor(x * 2**depth), 2**depth - 1)`` for validated points (exact)."""
    if depth == 0:
        return np.zeros(points.shape, dtype=np.int64)
    scale = float(1 << depth)
    c = np.floor(points * scale).astype(np.int64)
    np.minimum(c, (1 << depth) - 1, out=c)
    return c


def point_coords(points: np.ndarray, depth: int) -> np.ndarray:
    """Integer coordinates of the depth-``depth`` container cube of every point.

    Equal to the spec's doubling rule (``x = 2x; bit = x >= 1``): the first ``depth`` bits of
    the binary expansion, i.e. ``min(floor(x * 2**depth), 2**depth - 1)`` (so ``1.0`` gives
    all ones). Multiplying by a power of two is exact, so this is bit-exact. Points outside
    ``[0, 1]`` or NaN raise :class:`InvalidOptionError`. ``depth`` may be at most
    :data:`MAX_COORD_DEPTH`.
    """
    if not 0 <= depth <= MAX_COORD_DEPTH:
        raise InvalidOptionError(f"depth {depth} outside [0, {MAX_COORD_DEPTH}]")
    return _coords_unchecked(check_points(points), depth)


def child_indices(coords_at_depth: np.ndarray) -> np.ndarray:
    """Child index of every cube within its parent: ``sum_j bit_j << (d - 1 - j)`` (int64)."""
    c = np.asarray(coords_at_depth, dtype=np.int64)
    d = c.shape[1]
    out = np.zeros(c.shape[0], dtype=np.int64)
    for j in range(d):
        out |= (c[:, j] & 1) << (d - 1 - j)
    return out


def _interleave_int64(c: np.ndarray, depth: int, levels: range) -> np.ndarray:
    d = c.shape[1]
    key = np.zeros(c.shape[0], dtype=np.int64)
    for lvl in levels:
        shift = depth - 1 - lvl
        for j in range(d):
            key = (key << 1) | ((c[:, j] >> shift) & 1)
    return key


def cube_keys(coords_at_depth: np.ndarray, depth: int) -> np.ndarray:
    """Packed key of every cube of depth ``depth`` (one row of ``coords`` per cube).

    The key is the concatenation of the cube's levels, each level being its ``d`` bits with
    dimension 0 most significant (the child index), first level most significant. Within a
    depth, keys order cubes like the CubeId total order. When ``d * depth <= 62`` the result
    is ``int64``; otherwise it is an ``object`` array of Python ints (exact for any ``d`` and
    depth, slower: meant for sets of cubes, not rows).
    """
    c = np.asarray(coords_at_depth, dtype=np.int64)
    if c.ndim != 2:
        raise ValueError("coords must be (n, d)")
    d = c.shape[1]
    if d * depth <= 62:
        return _interleave_int64(c, depth, range(depth))
    per = max(1, 62 // d)  # levels per int64 part
    out = np.zeros(c.shape[0], dtype=object)
    for start in range(0, depth, per):
        stop = min(depth, start + per)
        part = _interleave_int64(c, depth, range(start, stop))
        out = (out << ((stop - start) * d)) + part.astype(object)
    return out


def unique_cubes(coords_at_depth: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct cubes of one depth: ``(unique coords (m, d), inverse (n,) int64)``.

    Uses a packed int64 key when ``d * depth <= 62`` and a lexicographic sort of the
    coordinate columns otherwise (both much faster than ``np.unique(axis=0)``). The unique
    cubes come in an unspecified but deterministic order.
    """
    c = np.asarray(coords_at_depth, dtype=np.int64)
    n, d = c.shape
    if n == 0:
        return c[:0], np.zeros(0, dtype=np.int64)
    if d * depth <= 62:
        key = np.zeros(n, dtype=np.int64)
        for j in range(d):
            key |= c[:, j] << (j * depth)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return c[first], inverse.ravel().astype(np.int64)
    order = np.lexsort(c.T[::-1])
    sc = c[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (sc[1:] != sc[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    return sc[new], inverse


def _key_to_coords(key: int, depth: int, d: int) -> tuple[int, ...]:
    coords = [0] * d
    for lvl in range(depth):
        shift = (depth - 1 - lvl) * d
        for j in range(d):
            bit = (key >> (shift + d - 1 - j)) & 1
            coords[j] = (coords[j] << 1) | bit
    return tuple(coords)


def _coords_to_key(coords: Sequence[int], depth: int) -> int:
    key = 0
    for lvl in range(depth):
        shift = depth - 1 - lvl
        for cj in coords:
            key = (key << 1) | ((int(cj) >> shift) & 1)
    return key


def key_to_cube_id(key: Any, depth: int, dimensions: int) -> Any:
    """The ``CubeId`` of a packed key (see :func:`cube_keys`)."""
    from qbeast_connect.model.cube_id import CubeId

    return CubeId(dimensions, depth, _key_to_coords(int(key), depth, dimensions))


def cube_id_to_key(cube: Any) -> int:
    """Packed key (Python int, equal to :func:`cube_keys`'s value) of a ``CubeId``."""
    return _coords_to_key(tuple(cube.coords), int(cube.depth))


def _level_symbols(c: np.ndarray, shift: int | np.ndarray, chunk: int, d: int) -> np.ndarray:
    """Alphabet indices of symbol ``chunk`` of one level (spec §2.3): bit ``shift`` of the
    coordinates of dimensions ``6 * chunk`` onwards (at most 6), the first one highest."""
    sym = np.zeros(c.shape[0], dtype=np.int64)
    base = chunk * 6
    for i in range(min(6, d - base)):
        sym |= ((c[:, base + i] >> shift) & 1) << (5 - i)
    return sym


def cube_strings(coords_at_depth: np.ndarray, depth: int, dimensions: int) -> list[str]:
    """Vectorized string codec (spec §2.3) of cubes given as integer coordinates."""
    c = np.asarray(coords_at_depth, dtype=np.int64)
    n = c.shape[0]
    if depth == 0 or n == 0:
        return [""] * n
    d = dimensions
    s = symbols_per_level(d)
    length = depth * s
    chars = np.empty((n, length), dtype=np.uint8)
    for lvl in range(depth):
        shift = depth - 1 - lvl
        for chunk in range(s):
            chars[:, lvl * s + chunk] = _ALPHABET_BYTES[_level_symbols(c, shift, chunk, d)]
    fixed = np.ascontiguousarray(chars).view(f"S{length}").ravel()
    names: list[str] = fixed.astype(f"U{length}").tolist()
    return names


def decode_cube_string(text: str, dimensions: int) -> tuple[int, tuple[int, ...]]:
    """``(depth, coords)`` of a cube string (spec §2.3 decoding rules)."""
    d = dimensions
    s = symbols_per_level(d)
    depth = len(text) // s
    coords = [0] * d
    for lvl in range(depth):
        for chunk in range(s):
            ch = text[lvl * s + chunk]
            try:
                sym = _ALPHABET_INDEX[ch]
            except KeyError:
                raise MetadataFormatError(f"invalid character {ch!r} in cube id {text!r}") from None
            for i in range(6):
                j = chunk * 6 + i
                if j >= d:
                    break
                coords[j] = (coords[j] << 1) | ((sym >> (5 - i)) & 1)
        # dimensions beyond the symbols of this level cannot happen: s covers all d
    return depth, tuple(coords)


def decode_cube_strings(texts: Sequence[str], dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized :func:`decode_cube_string`: ``(depths int64 (m,), coords int64 (m, d))``."""
    d = dimensions
    s = symbols_per_level(d)
    m = len(texts)
    depths = np.asarray([len(t) // s for t in texts], dtype=np.int64)
    coords = np.zeros((m, d), dtype=np.int64)
    if m == 0 or int(depths.max()) == 0:
        return depths, coords
    width = int(depths.max()) * s
    try:
        raw = np.array([t[: (len(t) // s) * s] for t in texts], dtype=f"S{width}")
    except UnicodeEncodeError:
        for t in texts:
            decode_cube_string(t, d)  # raises with the offending character
        raise
    sym_bytes = raw.view(np.uint8).reshape(m, width)
    idx = _BYTE_TO_INDEX[sym_bytes]
    used = np.arange(width)[None, :] < (depths * s)[:, None]
    bad = used & (idx < 0)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        decode_cube_string(texts[row], d)  # raises MetadataFormatError
    idx = np.where(used, idx, 0)
    for lvl in range(int(depths.max())):
        active = depths > lvl
        for chunk in range(s):
            sym = idx[:, lvl * s + chunk]
            for i in range(6):
                j = chunk * 6 + i
                if j >= d:
                    break
                bit = (sym >> (5 - i)) & 1
                coords[:, j] = np.where(active, (coords[:, j] << 1) | bit, coords[:, j])
    return depths, coords


def order_bytes(depths: np.ndarray, coords: np.ndarray, dimensions: int) -> np.ndarray:
    """Byte strings (numpy ``S``) whose order is the CubeId order of the given cubes.

    Each symbol is stored as ``alphabet index + 1`` and shorter cubes are zero padded, so
    ``np.argsort`` / ``np.searchsorted`` on the result sort cubes in pre-order (a cube before
    its descendants). The bytes of a parent are a prefix of its children's.
    """
    d = dimensions
    s = symbols_per_level(d)
    depths = np.asarray(depths, dtype=np.int64)
    c = np.asarray(coords, dtype=np.int64)
    m = depths.size
    width = max(1, int(depths.max()) * s if m else 1)
    out = np.zeros((m, width), dtype=np.uint8)
    for lvl in range(int(depths.max()) if m else 0):
        active = depths > lvl
        shift = np.where(active, depths - 1 - lvl, 0)
        for chunk in range(s):
            sym = _level_symbols(c, shift, chunk, d)
            out[:, lvl * s + chunk] = np.where(active, sym + 1, 0)
    return np.ascontiguousarray(out).view(f"S{width}").ravel()


def parent_string(text: str, dimensions: int) -> str | None:
    """String of the parent cube (``None`` for the root)."""
    if text == "":
        return None
    s = symbols_per_level(dimensions)
    depth = len(text) // s
    return text[: (depth - 1) * s]


#: Sort key implementing the CubeId total order on canonical cube strings.
cube_sort_key = cube_string_sort_key


def sorted_cubes(texts: Iterable[str]) -> list[str]:
    """Cube strings in CubeId order (pre-order DFS)."""
    return sorted(texts, key=cube_sort_key)
