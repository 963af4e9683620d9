"""Query spaces: where in a revision's normalized space [0, 1]^d a predicate's rows can be.

:func:`query_space` maps a predicate through one revision's transformations (spec §6.3 steps
3 and 4) into :data:`ALL_SPACE`, :data:`EMPTY_SPACE` or a union of :class:`Box` es. The result is
conservative: every row of that revision for which the predicate is TRUE lies in the space.

Per indexed dimension, from the conjunctions of the predicate's DNF:

* ordered transformations (linear, quantiles, histogram) bound the interval with the
  transformed literals; strict and non-strict comparisons are treated alike, several bounds
  intersect, ``IN`` gives ``[min, max]`` of its transformed values and ``IS NULL`` the
  transformed null value. Out-of-range literals are clamped to [0, 1] (empty when the
  interval falls outside).
* hash transformations use only equality: ``=``, ``IN`` and ``IS NULL`` give a set of hashed
  points; range predicates leave the dimension unrestricted (the reference puts hashed range
  bounds into the box, which can skip matching cubes — spec §6.3 "reference bug").
* identity and empty transformations never restrict.

Literals that the column type cannot compare reliably leave the dimension unrestricted:
strings against numbers, numbers against dates, a hashed DOUBLE outside [1e-3, 1e7) (the
JVM's ``Double.toString`` may differ there), hashed FLOAT/DECIMAL/DATE/TIMESTAMP columns,
NaN on hashed columns, and string bounds of string-ordered columns holding characters
≥ U+D800 (Java orders UTF-16 units, Spark orders code points).

NaN and ±infinity on ordered numeric dimensions map to their fixed places
(:mod:`qbeast_connect.model.linear_scale`: ``-inf`` at 0.0, ``+inf`` and NaN at 1.0, Spark's
order ``-inf < finite < +inf < NaN``). On DOUBLE/FLOAT linear dimensions, which may hold
them, range bounds are kept inside [0, 1] so that ``x > 1e300`` still reaches the rows at
1.0; an equality with a finite literal outside the revision's range stays empty (every
finite value of a revision lies inside its range). A zero literal covers the coordinates of
both ``0.0`` and ``-0.0``, which Spark compares as equal.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.transformation import (
    CDFNumericQuantilesTransformation,
    CDFStringQuantilesTransformation,
    HashTransformation,
    LinearTransformation,
    QDataType,
    StringHistogramTransformation,
    Transformation,
    Transformer,
)
from qbeast_connect.planning.coercion import nan_excluded_columns
from qbeast_connect.planning.predicate import (
    Comparison,
    FalseLiteral,
    InList,
    IsNull,
    Predicate,
    parse_date_literal,
    parse_timestamp_literal,
    to_dnf,
)

__all__ = [
    "ALL_SPACE",
    "EMPTY_SPACE",
    "EPSILON",
    "AllSpace",
    "Box",
    "Boxes",
    "EmptySpace",
    "QuerySpace",
    "column_value",
    "query_space",
]

EPSILON = 1.1103e-16
"""Tolerance added to a box's upper bound in the box ∩ cube test (as the reference)."""

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


# ---------------------------------------------------------------------------------------------
# spaces
# ---------------------------------------------------------------------------------------------


def _dim_intersects(f: float, t: float, cf: float, ct: float) -> bool:
    """The reference's interval test: ``[f, t]`` (``t`` already widened) against ``[cf, ct)``."""
    return (f <= cf < t) or (cf <= f < ct) or (f == 1.0 and ct == 1.0)


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box of normalized space, one entry per indexed dimension.

    Attributes:
        from_: Lower bounds; ``None`` = unbounded (0.0). Always within [0, 1].
        to: Upper bounds; ``None`` = unbounded (1.0). Always within [0, 1].
        points: Per dimension, ``None`` or the sorted hashed points of an equality / IN /
            IS NULL on a hash dimension; then ``from_``/``to`` hold their min and max.
    """

    from_: tuple[float | None, ...]
    to: tuple[float | None, ...]
    points: tuple[tuple[float, ...] | None, ...] = ()

    def __post_init__(self) -> None:
        """Check the dimensions agree and fill ``points`` when omitted."""
        object.__setattr__(self, "from_", tuple(self.from_))
        object.__setattr__(self, "to", tuple(self.to))
        if not self.points:
            object.__setattr__(self, "points", (None,) * len(self.from_))
        else:
            object.__setattr__(
                self, "points", tuple(None if p is None else tuple(p) for p in self.points)
            )
        if not len(self.from_) == len(self.to) == len(self.points) >= 1:
            raise InvalidOptionError(
                f"a box needs the same number (≥ 1) of lower bounds, upper bounds and point "
                f"sets, got {len(self.from_)}, {len(self.to)} and {len(self.points)}"
            )

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return len(self.from_)

    def intersects_cube(self, cube: CubeId) -> bool:
        """Whether the cube's range may hold points of the box (spec §6.3, ε-widened)."""
        if cube.dimensions != self.dimensions:
            raise InvalidOptionError(
                f"cannot intersect a {self.dimensions}-D box with a {cube.dimensions}-D cube"
            )
        lower, upper = cube.bounds()
        for j in range(self.dimensions):
            cf, ct = lower[j], upper[j]
            pts = self.points[j]
            if pts is not None:
                if not any(_dim_intersects(p, p + EPSILON, cf, ct) for p in pts):
                    return False
                continue
            lo, hi = self.from_[j], self.to[j]
            f = 0.0 if lo is None else lo
            t = 1.0 if hi is None else hi + EPSILON
            if not _dim_intersects(f, t, cf, ct):
                return False
        return True

    def contains(self, other: Box) -> bool:
        """Whether every point of ``other`` lies in this box."""
        for j in range(self.dimensions):
            mine, theirs = self.points[j], other.points[j]
            lo = 0.0 if self.from_[j] is None else self.from_[j]
            hi = 1.0 if self.to[j] is None else self.to[j]
            if mine is not None:
                if theirs is None or not set(theirs) <= set(mine):
                    return False
                continue
            o_lo = 0.0 if other.from_[j] is None else other.from_[j]
            o_hi = 1.0 if other.to[j] is None else other.to[j]
            assert lo is not None and hi is not None and o_lo is not None and o_hi is not None
            if theirs is not None:
                if not all(lo <= p <= hi for p in theirs):
                    return False
            elif not (lo <= o_lo and o_hi <= hi):
                return False
        return True


class QuerySpace:
    """Base of the query spaces of one revision."""

    __slots__ = ()

    #: Whether the space is the whole unit hypercube.
    is_all: ClassVar[bool] = False
    #: Whether the space holds no point.
    is_empty: ClassVar[bool] = False

    def intersects_cube(self, cube: CubeId) -> bool:
        """Whether the cube may hold rows of the space."""
        raise NotImplementedError


class _ConstantSpace(QuerySpace):
    """A space that every cube intersects (the whole space) or none does (the empty one)."""

    __slots__ = ()

    def intersects_cube(self, cube: CubeId) -> bool:
        """Return whether the space is the whole space."""
        return self.is_all


@dataclass(frozen=True, slots=True)
class AllSpace(_ConstantSpace):
    """The whole space: no restriction."""

    is_all: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class EmptySpace(_ConstantSpace):
    """No point can match."""

    is_empty: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class Boxes(QuerySpace):
    """A union of boxes (at least one).

    Attributes:
        boxes: The boxes; a cube intersects the space when it intersects any of them.
    """

    boxes: tuple[Box, ...]

    def __post_init__(self) -> None:
        """Check there is at least one box of a single dimension count."""
        boxes = tuple(self.boxes)
        if not boxes:
            raise InvalidOptionError("Boxes needs at least one box; use EMPTY_SPACE instead")
        if len({b.dimensions for b in boxes}) != 1:
            raise InvalidOptionError("all boxes of a space must have the same dimensions")
        object.__setattr__(self, "boxes", boxes)

    def intersects_cube(self, cube: CubeId) -> bool:
        """Whether any box intersects the cube."""
        return any(b.intersects_cube(cube) for b in self.boxes)


ALL_SPACE = AllSpace()
"""The unrestricted space."""

EMPTY_SPACE = EmptySpace()
"""The empty space."""


# ---------------------------------------------------------------------------------------------
# literal → column value
# ---------------------------------------------------------------------------------------------

_DATE_ONLY_RE = re.compile(r"\s*\d{4}-\d{1,2}-\d{1,2}\s*")


def _finite_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return False
    if isinstance(value, float):
        return not math.isnan(value)
    if isinstance(value, Decimal):
        return not value.is_nan()
    return True


def _string_as_datetime(text: str, date_only: bool) -> _dt.date | _dt.datetime | None:
    if date_only:
        if _DATE_ONLY_RE.fullmatch(text) is None:
            return None
        return parse_date_literal(text)
    return parse_timestamp_literal(text)


def _ordered_value(value: object, data_type: QDataType | None) -> Any:
    """A literal as a value the ordered transformation can map monotonically, or None."""
    if value is None:
        return None
    if data_type is None:
        return None
    if data_type in (
        QDataType.INTEGER, QDataType.LONG, QDataType.DOUBLE, QDataType.FLOAT, QDataType.DECIMAL
    ):  # fmt: skip
        if isinstance(value, float) and math.isnan(value):
            return value  # NaN has a place: the top of the dimension (model.linear_scale)
        return value if _finite_number(value) or _is_inf(value) else None
    if data_type in (QDataType.TIMESTAMP, QDataType.DATE):
        if isinstance(value, _dt.date):  # date or datetime (UTC)
            return value
        if isinstance(value, str):
            return _string_as_datetime(value, date_only=data_type is QDataType.DATE)
        return None
    if data_type is QDataType.STRING:
        if isinstance(value, str) and all(ord(ch) < 0xD800 for ch in value):
            return value
        return None
    return None  # pragma: no cover


def _is_inf(value: object) -> bool:
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, Decimal):
        return value.is_infinite()
    return False


def _hash_value(value: object, data_type: QDataType | None) -> Any:
    """A literal as the exact value the writer hashed for an equal row, or None."""
    if value is None or isinstance(value, bool):
        return None
    if data_type is QDataType.STRING or data_type is None:
        return value if isinstance(value, str) else None
    if data_type in (QDataType.INTEGER, QDataType.LONG):
        if isinstance(value, int):
            as_int = value
        elif isinstance(value, float | Decimal) and _finite_number(value) and not _is_inf(value):
            if value != int(value):
                return None
            as_int = int(value)
        else:
            return None
        low, high = _INT32 if data_type is QDataType.INTEGER else _INT64
        return as_int if low <= as_int <= high else None
    if data_type is QDataType.DOUBLE:
        if not _finite_number(value) or _is_inf(value):
            return None
        as_float = float(value)  # type: ignore[arg-type]
        if not 1e-3 <= abs(as_float) < 1e7:
            return None  # zero (-0.0 = 0.0 in SQL) and JVM toString divergences
        return as_float
    return None  # FLOAT, DECIMAL (scale unknown), DATE, TIMESTAMP


def column_value(value: object, transformation: Transformation, data_type: QDataType | None) -> Any:
    """Convert a literal for ``transformation.transform``; None when it cannot be used.

    Args:
        value: The predicate literal (not None).
        transformation: The dimension's transformation.
        data_type: The column's data type from the revision.

    Returns:
        The value to transform, or None when the literal gives no usable bound.
    """
    if isinstance(transformation, HashTransformation):
        return _hash_value(value, data_type)
    if isinstance(transformation, StringHistogramTransformation | CDFStringQuantilesTransformation):
        return _ordered_value(value, QDataType.STRING)
    if isinstance(transformation, LinearTransformation | CDFNumericQuantilesTransformation):
        return _ordered_value(value, data_type)
    return None


def _data_type(transformer: Transformer, transformation: Transformation) -> QDataType | None:
    for owner, attr in (
        (transformation, "ordered_data_type"),
        (transformation, "data_type"),
        (transformer, "data_type"),
        (transformer, "ordered_data_type"),
    ):
        value = getattr(owner, attr, None)
        if isinstance(value, QDataType):
            return value
    if isinstance(transformation, CDFStringQuantilesTransformation | StringHistogramTransformation):
        return QDataType.STRING
    return None


# ---------------------------------------------------------------------------------------------
# predicate → space
# ---------------------------------------------------------------------------------------------


class _Dim:
    """The restriction of one dimension within one conjunction."""

    __slots__ = ("empty", "hi", "lo", "points")

    def __init__(self) -> None:
        self.lo: float | None = None
        self.hi: float | None = None
        self.points: frozenset[float] | None = None
        self.empty = False

    def bound(self, lo: float | None, hi: float | None) -> None:
        if lo is not None and not math.isnan(lo):
            self.lo = lo if self.lo is None else max(self.lo, lo)
        if hi is not None and not math.isnan(hi):
            self.hi = hi if self.hi is None else min(self.hi, hi)

    def restrict_points(self, points: frozenset[float]) -> None:
        self.points = points if self.points is None else self.points & points
        if not self.points:
            self.empty = True

    def finish(self) -> tuple[float | None, float | None, tuple[float, ...] | None] | None:
        """Return ``(from, to, points)`` clamped to [0, 1], or None when empty."""
        if self.empty:
            return None
        if self.points is not None:
            pts = tuple(sorted(p for p in self.points if 0.0 <= p <= 1.0))
            if not pts:
                return None
            return pts[0], pts[-1], pts
        lo, hi = self.lo, self.hi
        if lo is not None:
            if lo > 1.0:
                return None
            if lo <= 0.0:
                lo = None
        if hi is not None:
            if hi < 0.0:
                return None
            if hi >= 1.0:
                hi = None
        if lo is not None and hi is not None and lo > hi:
            return None
        return lo, hi, None


def _transform(t: Transformation, value: object) -> float | None:
    try:
        x = t.transform(value)
    except (InvalidOptionError, ArithmeticError, TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


_FLOATING = (QDataType.DOUBLE, QDataType.FLOAT)


def _coordinates(t: Transformation, value: object) -> tuple[float, float] | None:
    """The coordinates of the rows equal to ``value`` in Spark's sense, as ``(low, high)``.

    Spark compares ``-0.0`` and ``0.0`` as equal, so a zero literal covers the coordinates
    of both (the quantile CDF may separate them; the linear mapping never does).
    """
    x = _transform(t, value)
    if x is None:
        return None
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool) and value == 0:
        y, z = _transform(t, -0.0), _transform(t, 0.0)
        if y is None or z is None:
            return None
        return min(x, y, z), max(x, y, z)
    return x, x


def _clip_range_bound(
    t: Transformation, data_type: QDataType | None, op: str, x: float
) -> float:
    """Keep a range bound of a floating linear dimension inside [0, 1].

    Rows holding ``+inf`` or NaN sit at 1.0 and rows holding ``-inf`` at 0.0
    (model.linear_scale), while a finite literal beyond the revision's range maps outside
    [0, 1]: ``x > 1e300`` must still reach the rows at 1.0, and ``x < -1e300`` those at 0.0.
    """
    if not isinstance(t, LinearTransformation) or data_type not in _FLOATING:
        return x
    return min(x, 1.0) if op in (">", ">=") else max(x, 0.0)


def _apply(
    atom: Predicate,
    dim: _Dim,
    t: Transformation,
    data_type: QDataType | None,
    nan_rows: bool = True,
) -> None:
    is_hash = isinstance(t, HashTransformation)
    if isinstance(atom, IsNull):
        x = _transform(t, None)
        if x is None:
            return
        if is_hash:
            dim.restrict_points(frozenset({x}))
        else:
            dim.bound(x, x)
        return
    if isinstance(atom, Comparison):
        if atom.value is None:
            dim.empty = True
            return
        if is_hash and atom.op != "=":
            return  # hashed ranges say nothing (avoid the reference bug)
        if not is_hash and data_type in (QDataType.DOUBLE, QDataType.FLOAT):
            _apply_floating(atom, dim, t, nan_rows)
            return
        v = column_value(atom.value, t, data_type)
        if v is None:
            return
        if is_hash:
            x = _transform(t, v)
            if x is not None:
                dim.restrict_points(frozenset({x}))
            return
        span = _coordinates(t, v)
        if span is None:
            return
        if atom.op == "=":
            dim.bound(*span)
        elif atom.op in ("<", "<="):
            dim.bound(None, _clip_range_bound(t, data_type, atom.op, span[1]))
        else:
            dim.bound(_clip_range_bound(t, data_type, atom.op, span[0]), None)
        return
    if isinstance(atom, InList):
        values = [v for v in atom.values if v is not None]
        if not values:
            dim.empty = True
            return
        coords: list[float] = []
        for v in values:
            cv = column_value(v, t, data_type)
            if cv is None:
                return  # one unusable value: no restriction from this IN list
            if is_hash:
                x = _transform(t, cv)
                if x is None:
                    return
                coords.append(x)
                continue
            span = _coordinates(t, cv)
            if span is None:
                return
            coords.extend(span)
        if is_hash:
            dim.restrict_points(frozenset(coords))
        else:
            dim.bound(min(coords), max(coords))
    # IsNotNull, Not(…), Opaque: no restriction


def _apply_floating(atom: Comparison, dim: _Dim, t: Transformation, nan_rows: bool) -> None:
    """A comparison on an ordered FLOAT/DOUBLE dimension, with Spark's NaN and zeros.

    Spark orders NaN above every value and equal to itself, and ``-0.0 = 0.0``. NaN rows sit
    wherever the transformation puts NaN; when it cannot transform NaN, the revision holds
    none (its writer refuses what it cannot place).
    """
    value = atom.value
    if not isinstance(value, int | float | Decimal) or isinstance(value, bool):
        return
    nan_x = _transform(t, math.nan) if nan_rows else None
    if isinstance(value, float) and math.isnan(value):
        if atom.op in ("=", ">="):  # only NaN rows
            if nan_x is not None:
                dim.bound(nan_x, nan_x)
        elif atom.op == ">":
            dim.empty = True
        return  # < and <= NaN: every non-null row but NaN ones (and NaN for <=)
    v = column_value(value, t, QDataType.DOUBLE)
    if v is None:
        return
    xs = [x for x in (_transform(t, v), _transform(t, -v) if v == 0 else None) if x is not None]
    if not xs:
        return
    lo, hi = min(xs), max(xs)
    if atom.op == "=":
        dim.bound(lo, hi)
    elif atom.op in ("<", "<="):
        # -inf rows sit at 0.0: a bound below the revision's range still reaches them
        dim.bound(None, _clip_range_bound(t, QDataType.DOUBLE, atom.op, hi))
    else:  # > and >= also hold for NaN rows, and +inf rows sit at 1.0
        low = lo if nan_x is None else min(lo, nan_x)
        dim.bound(_clip_range_bound(t, QDataType.DOUBLE, atom.op, low), None)


def _is_restricting(t: Transformation) -> bool:
    return isinstance(
        t,
        LinearTransformation
        | HashTransformation
        | CDFNumericQuantilesTransformation
        | CDFStringQuantilesTransformation
        | StringHistogramTransformation,
    )


def query_space(
    revision: Revision, predicate: Predicate | None, *, max_boxes: int = 64
) -> QuerySpace:
    """Map a predicate into the normalized space of one revision (spec §6.3, conservative).

    Each conjunction of the predicate's DNF gives one box (see the module docstring); boxes
    contained in another are dropped. Columns are matched case-insensitively against the
    revision's indexed columns; predicates on other columns do not restrict.

    Args:
        revision: The revision whose transformations are used.
        predicate: The filter, or None for no filter.
        max_boxes: Upper bound on the number of DNF terms (beyond it the space is widened).

    Returns:
        :data:`ALL_SPACE`, :data:`EMPTY_SPACE` or :class:`Boxes`. A revision without
        transformations (staging, empty table) always gives :data:`ALL_SPACE`.
    """
    if predicate is None:
        return ALL_SPACE
    terms = to_dnf(predicate, max_terms=max_boxes)
    if not terms:
        return EMPTY_SPACE
    transformations = revision.transformations
    if not transformations or revision.is_staging:
        return ALL_SPACE
    index_of = {name.lower(): i for i, name in enumerate(revision.column_names)}
    types = [
        _data_type(tr, t)
        for tr, t in zip(revision.column_transformers, transformations, strict=True)
    ]
    d = revision.dimension_count
    boxes: list[Box] = []
    for term in terms:
        dims = [_Dim() for _ in range(d)]
        empty = False
        no_nan = nan_excluded_columns(term)
        for atom in term:
            if isinstance(atom, FalseLiteral):
                empty = True
                break
            column = getattr(atom, "column", None)
            if not isinstance(atom, Comparison | InList | IsNull) or column is None:
                continue
            j = index_of.get(column.lower())
            if j is None or not _is_restricting(transformations[j]):
                continue
            _apply(atom, dims[j], transformations[j], types[j], column.lower() not in no_nan)
            if dims[j].empty:
                empty = True
                break
        if empty:
            continue
        finished = [dim.finish() for dim in dims]
        if any(f is None for f in finished):
            continue
        lows = tuple(f[0] for f in finished if f is not None)
        highs = tuple(f[1] for f in finished if f is not None)
        points = tuple(f[2] for f in finished if f is not None)
        if all(
            lo is None and hi is None and p is None
            for lo, hi, p in zip(lows, highs, points, strict=True)
        ):
            return ALL_SPACE
        boxes.append(Box(lows, highs, points))
    if not boxes:
        return EMPTY_SPACE
    return Boxes(_drop_contained(boxes))


def _drop_contained(boxes: Sequence[Box]) -> tuple[Box, ...]:
    kept: list[Box] = []
    for i, b in enumerate(boxes):
        dominated = False
        for k, other in enumerate(boxes):
            if k == i:
                continue
            if other.contains(b) and (not b.contains(other) or k < i):
                dominated = True
                break
        if not dominated:
            kept.append(b)
    return tuple(kept)
