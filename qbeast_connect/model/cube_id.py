"""Cube identifiers of the OTree: a node of the 2**d-ary tree over [0, 1]**d (spec §2).

A :class:`CubeId` at depth ``k`` holds, per dimension ``j``, the integer prefix
``coords[j]`` in ``[0, 2**k)``: the ``k`` bits chosen for that dimension from the root down,
level 0 as the most significant bit. The bit of level ``l`` for dimension ``j`` is
``(coords[j] >> (k - 1 - l)) & 1``; bit 1 means the upper half of the parent's range.

The persisted form is the string codec of spec §2.3 (:meth:`CubeId.to_string`,
:meth:`CubeId.from_string`), e.g. ``"wQg"`` in 2-D.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError

__all__ = ["ALPHABET", "CubeId", "cube_string_sort_key", "symbols_per_level"]

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
"""The 64 symbols of the cube id string codec, index 0 to 63."""

_SYMBOL_INDEX: dict[str, int] = {ch: i for i, ch in enumerate(ALPHABET)}


def symbols_per_level(dimensions: int) -> int:
    """Return the number of string symbols per tree level: ``ceil(dimensions / 6)``."""
    return (dimensions + 5) // 6


def cube_string_sort_key(cube_string: str) -> tuple[int, ...]:
    """Return the sort key of a cube id string: its symbols' alphabet indices (spec §2.4).

    Sorting strings by this key gives the cube order, which raw string order does not.

    Raises:
        MetadataFormatError: A character is outside the alphabet.
    """
    try:
        return tuple(_SYMBOL_INDEX[ch] for ch in cube_string)
    except KeyError as err:
        raise MetadataFormatError(
            f"cube id {cube_string!r} holds {err.args[0]!r}, which is not in the cube id alphabet"
        ) from None


def _check_point(point: Sequence[float]) -> None:
    if len(point) == 0:
        raise InvalidOptionError("a point needs at least one coordinate")
    for x in point:
        if not 0.0 <= x <= 1.0:  # also rejects NaN
            raise InvalidOptionError(
                f"point {tuple(point)!r} has coordinate {x!r} outside [0, 1]; "
                "cube containers only exist for normalized points"
            )


@dataclass(frozen=True, slots=True, repr=False)
class CubeId:
    """A cube of the OTree.

    Equality and hashing use ``(dimensions, depth, coords)``. Ordering is the Qbeast total
    order (spec §2.4): per-level child indices compared lexicographically, a cube before its
    descendants. Comparing cubes of different dimensions raises.

    Attributes:
        dimensions: Number of indexed columns ``d`` (≥ 1).
        depth: Depth in the tree (0 for the root).
        coords: Per dimension, the integer prefix in ``[0, 2**depth)``.
    """

    dimensions: int
    depth: int
    coords: tuple[int, ...]

    def __post_init__(self) -> None:
        """Check the invariants."""
        if self.dimensions < 1:
            raise InvalidOptionError(f"a cube needs at least 1 dimension, got {self.dimensions}")
        if self.depth < 0:
            raise InvalidOptionError(f"cube depth must be ≥ 0, got {self.depth}")
        if not isinstance(self.coords, tuple) or any(type(c) is not int for c in self.coords):
            object.__setattr__(self, "coords", tuple(int(c) for c in self.coords))
        if len(self.coords) != self.dimensions:
            raise InvalidOptionError(
                f"a {self.dimensions}-D cube needs {self.dimensions} coordinates, "
                f"got {len(self.coords)}"
            )
        limit = 1 << self.depth
        for c in self.coords:
            if not 0 <= c < limit:
                raise InvalidOptionError(
                    f"cube coordinate {c} is outside [0, 2**{self.depth}) for depth {self.depth}"
                )

    # ---- construction -----------------------------------------------------------------------

    @classmethod
    def root(cls, dimensions: int) -> CubeId:
        """Return the root cube of a ``dimensions``-D tree."""
        return cls(dimensions, 0, (0,) * dimensions)

    @classmethod
    def from_string(cls, s: str, dimensions: int) -> CubeId:
        """Decode a cube id string (spec §2.3).

        ``depth = len(s) // ceil(d/6)``; extra trailing characters are ignored, and so are the
        unused bits of a level's last symbol (in 2-D ``"B"`` decodes like ``"A"``).

        Args:
            s: The cube id string; ``""`` is the root.
            dimensions: Number of dimensions ``d``.

        Returns:
            The cube.

        Raises:
            MetadataFormatError: A used character is outside the alphabet.
        """
        if dimensions < 1:
            raise InvalidOptionError(f"a cube needs at least 1 dimension, got {dimensions}")
        per_level = symbols_per_level(dimensions)
        depth = len(s) // per_level
        coords = [0] * dimensions
        pos = 0
        for _ in range(depth):
            for chunk in range(per_level):
                ch = s[pos]
                pos += 1
                sym = _SYMBOL_INDEX.get(ch)
                if sym is None:
                    raise MetadataFormatError(
                        f"cube id {s!r} holds {ch!r}, which is not in the cube id alphabet "
                        f"{ALPHABET!r}"
                    )
                base = chunk * 6
                for i in range(6):
                    dim = base + i
                    if dim >= dimensions:
                        break
                    coords[dim] = (coords[dim] << 1) | ((sym >> (5 - i)) & 1)
        return cls(dimensions, depth, tuple(coords))

    @classmethod
    def container(cls, point: Sequence[float], depth: int) -> CubeId:
        """Return the cube of depth ``depth`` that contains ``point`` (spec §2.2).

        Per level and dimension: ``x = 2*x; bit = x >= 1; if bit: x -= 1``. This is exact in
        binary floating point, so 1.0 always takes the upper half.

        Args:
            point: Normalized coordinates in [0, 1], one per dimension.
            depth: The depth of the wanted cube (≥ 0).

        Returns:
            The container cube.

        Raises:
            InvalidOptionError: A coordinate is outside [0, 1] (or NaN) or depth < 0.
        """
        _check_point(point)
        if depth < 0:
            raise InvalidOptionError(f"cube depth must be ≥ 0, got {depth}")
        coords = []
        for x in point:
            x = float(x)
            c = 0
            for _ in range(depth):
                x *= 2.0
                if x >= 1.0:
                    c = (c << 1) | 1
                    x -= 1.0
                else:
                    c <<= 1
            coords.append(c)
        return cls(len(point), depth, tuple(coords))

    @classmethod
    def containers(cls, point: Sequence[float]) -> Iterator[CubeId]:
        """Yield the cubes containing ``point``: the root, then depth 1, 2, … (never ends).

        Raises:
            InvalidOptionError: A coordinate is outside [0, 1] (or NaN).
        """
        _check_point(point)
        d = len(point)
        xs = [float(x) for x in point]
        coords = [0] * d
        depth = 0
        while True:
            yield cls(d, depth, tuple(coords))
            depth += 1
            for j in range(d):
                x = xs[j] * 2.0
                if x >= 1.0:
                    coords[j] = (coords[j] << 1) | 1
                    x -= 1.0
                else:
                    coords[j] <<= 1
                xs[j] = x

    # ---- string codec ------------------------------------------------------------------------

    def to_string(self) -> str:
        """Return the canonical cube id string (``""`` for the root)."""
        return "".join([ALPHABET[sym] for sym in self.sort_key()])

    def __str__(self) -> str:
        """Return the canonical cube id string."""
        return self.to_string()

    def __repr__(self) -> str:
        """Return e.g. ``CubeId('wQg', dimensions=2)``."""
        return f"CubeId({self.to_string()!r}, dimensions={self.dimensions})"

    # ---- tree navigation ---------------------------------------------------------------------

    @property
    def is_root(self) -> bool:
        """Whether this is the root cube."""
        return self.depth == 0

    @property
    def parent(self) -> CubeId | None:
        """The parent cube (drop the last level); ``None`` for the root."""
        if self.depth == 0:
            return None
        return CubeId(self.dimensions, self.depth - 1, tuple(c >> 1 for c in self.coords))

    @property
    def child_index(self) -> int:
        """Index among siblings, ``Σ_j bit_j << (d-1-j)`` of the last level (0 for the root)."""
        if self.depth == 0:
            return 0
        d = self.dimensions
        index = 0
        for j, c in enumerate(self.coords):
            index |= (c & 1) << (d - 1 - j)
        return index

    def child(self, index: int) -> CubeId:
        """Return the child with the given child index (dimension 0 is the most significant).

        Raises:
            InvalidOptionError: ``index`` is outside ``[0, 2**d)``.
        """
        d = self.dimensions
        if not 0 <= index < (1 << d):
            raise InvalidOptionError(f"child index {index} is outside [0, 2**{d})")
        return CubeId(
            d,
            self.depth + 1,
            tuple((c << 1) | ((index >> (d - 1 - j)) & 1) for j, c in enumerate(self.coords)),
        )

    def children(self) -> tuple[CubeId, ...]:
        """Return the ``2**d`` children in child-index order (``A, Q, g, w`` in 2-D)."""
        return tuple(self.child(i) for i in range(1 << self.dimensions))

    def first_child(self) -> CubeId:
        """Return the child with all bits 0."""
        return CubeId(self.dimensions, self.depth + 1, tuple(c << 1 for c in self.coords))

    def next_sibling(self) -> CubeId | None:
        """Return the sibling with the next child index; ``None`` for the last one and the root."""
        if self.depth == 0:
            return None
        index = self.child_index + 1
        d = self.dimensions
        if index >= (1 << d):
            return None
        return CubeId(
            d,
            self.depth,
            tuple((c & ~1) | ((index >> (d - 1 - j)) & 1) for j, c in enumerate(self.coords)),
        )

    def is_ancestor_of(self, other: CubeId) -> bool:
        """Whether ``self`` is ``other`` or one of its ancestors."""
        if other.dimensions != self.dimensions or other.depth < self.depth:
            return False
        shift = other.depth - self.depth
        return all((o >> shift) == s for o, s in zip(other.coords, self.coords, strict=True))

    # ---- geometry ----------------------------------------------------------------------------

    def bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Return ``(from, to)``: the lower and upper corner of the cube's range.

        ``from_j = coords[j] * 2**-depth`` and ``to_j = from_j + 2**-depth`` (exact).
        """
        side = math.ldexp(1.0, -self.depth)
        lower = tuple(math.ldexp(float(c), -self.depth) for c in self.coords)
        return lower, tuple(x + side for x in lower)

    def contains(self, point: Sequence[float]) -> bool:
        """Whether the point lies in the cube: ``from <= p < to``, or ``p == to == 1.0``."""
        if len(point) != self.dimensions:
            raise InvalidOptionError(
                f"point {tuple(point)!r} has {len(point)} coordinates; the cube has "
                f"{self.dimensions} dimensions"
            )
        lower, upper = self.bounds()
        return all(f <= p < t or p == t == 1.0 for p, f, t in zip(point, lower, upper, strict=True))

    # ---- ordering ----------------------------------------------------------------------------

    def sort_key(self) -> tuple[int, ...]:
        """Return the alphabet indices of the canonical string (the spec §2.4 order key)."""
        d = self.dimensions
        coords = self.coords
        chunks = [coords[base : base + 6] for base in range(0, d, 6)]
        key: list[int] = []
        for shift in range(self.depth - 1, -1, -1):
            for chunk in chunks:
                sym = 0
                for c in chunk:
                    sym = (sym << 1) | ((c >> shift) & 1)
                key.append(sym << (6 - len(chunk)))
        return tuple(key)

    def _check_comparable(self, other: Any) -> bool:
        if not isinstance(other, CubeId):
            return False
        if other.dimensions != self.dimensions:
            raise InvalidOptionError(
                f"cannot order a {self.dimensions}-D cube against a {other.dimensions}-D cube"
            )
        return True

    def __lt__(self, other: object) -> bool:
        """Order by the spec §2.4 total order."""
        if not self._check_comparable(other):
            return NotImplemented
        assert isinstance(other, CubeId)
        return self.sort_key() < other.sort_key()

    def __le__(self, other: object) -> bool:
        """Order by the spec §2.4 total order."""
        if not self._check_comparable(other):
            return NotImplemented
        assert isinstance(other, CubeId)
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: object) -> bool:
        """Order by the spec §2.4 total order."""
        if not self._check_comparable(other):
            return NotImplemented
        assert isinstance(other, CubeId)
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: object) -> bool:
        """Order by the spec §2.4 total order."""
        if not self._check_comparable(other):
            return NotImplemented
        assert isinstance(other, CubeId)
        return self.sort_key() >= other.sort_key()
