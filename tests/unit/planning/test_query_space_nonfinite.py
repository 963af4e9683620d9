"""Query spaces over DOUBLE dimensions holding NaN, ±infinity, -0.0 and extreme values.

Spark orders doubles ``-inf < finite < +inf < NaN``, compares ``NaN = NaN`` as true and
``-0.0 = 0.0`` as true. Every row a predicate keeps must lie in a cube the space reaches.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import pyarrow as pa
import pytest

from qbeast_connect.index.normalize import normalize
from qbeast_connect.model import (
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    CubeId,
    LinearTransformation,
    LinearTransformer,
    QDataType,
    Revision,
)
from qbeast_connect.model.transformation import Transformation, Transformer
from qbeast_connect.planning.predicate import Comparison, InList, IsNull, Predicate
from qbeast_connect.planning.query_space import EMPTY_SPACE, Boxes, query_space

NAN, INF = math.nan, math.inf
DBL_MAX = sys.float_info.max
DOUBLE = QDataType.DOUBLE


def _revision(transformer: Transformer, transformation: Transformation) -> Revision:
    return Revision(1, 0, "t", 10, (transformer,), (transformation,))


def _key(v: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(v) else (0, v)


_OPS: dict[str, Callable[[tuple[int, float], tuple[int, float]], bool]] = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _spark_keeps(p: Predicate, v: float | None) -> bool:
    """Whether Spark's filter keeps a row whose column holds ``v``."""
    if isinstance(p, IsNull):
        return v is None
    if v is None:
        return False
    if isinstance(p, Comparison):
        return _OPS[p.op](_key(v), _key(float(p.value)))
    assert isinstance(p, InList)
    return any(_key(v) == _key(float(x)) for x in p.values)


LITERALS = [NAN, INF, -INF, 0.0, -0.0, 1e300, -1e300, -5.0, 2.5, 10.0, 11.0, 1e-320, DBL_MAX]


def _predicates() -> list[Predicate]:
    out: list[Predicate] = [IsNull("x")]
    out += [Comparison("x", op, v) for op in _OPS for v in LITERALS]
    out += [InList("x", (NAN, 2.5)), InList("x", (-INF, 0.0)), InList("x", (INF, -0.0))]
    return out


def _check_never_prunes_a_kept_row(rev: Revision, values: list[float | None]) -> int:
    coords = normalize(rev.transformations, [pa.array(values, pa.float64())])
    pruning = 0
    for p in _predicates():
        space = query_space(rev, p)
        for depth in (0, 3, 9):
            for v, point in zip(values, coords.tolist(), strict=True):
                cube = CubeId.container(point, depth)
                if _spark_keeps(p, v):
                    assert space.intersects_cube(cube), (p, v, depth, space)
                elif not space.intersects_cube(cube):
                    pruning += 1
    return pruning


VALUES: list[float | None] = [NAN, INF, -INF, -0.0, 0.0, -5.0, 10.0, 2.5, 1e-320, None, NAN]


def test_filters_on_nan_and_infinity_reach_every_matching_row() -> None:
    rev = _revision(
        LinearTransformer("x", DOUBLE), LinearTransformation(-5.0, 10.0, 2.5, DOUBLE)
    )
    assert _check_never_prunes_a_kept_row(rev, VALUES) > 100  # and it still prunes


def test_filters_on_extreme_spans_reach_every_matching_row() -> None:
    values: list[float | None] = [*VALUES, -DBL_MAX, DBL_MAX, 1e300, -1e300]
    rev = _revision(
        LinearTransformer("x", DOUBLE), LinearTransformation(-DBL_MAX, DBL_MAX, 0.0, DOUBLE)
    )
    assert _check_never_prunes_a_kept_row(rev, values) > 50


def test_quantile_filters_on_zero_reach_negative_zero_rows() -> None:
    t = CDFNumericQuantilesTransformation((-1.0, 0.0, 0.0, 0.0, 1.0), DOUBLE)
    rev = _revision(CDFNumericQuantilesTransformer("x", DOUBLE), t)
    assert _check_never_prunes_a_kept_row(rev, VALUES) > 0


def test_nan_and_infinity_literals_select_the_ends() -> None:
    rev = _revision(
        LinearTransformer("x", DOUBLE), LinearTransformation(0.0, 10.0, 1.0, DOUBLE)
    )

    def box(p: Predicate) -> tuple[object, object]:
        space = query_space(rev, p)
        assert isinstance(space, Boxes) and len(space.boxes) == 1, (p, space)
        return space.boxes[0].from_[0], space.boxes[0].to[0]

    assert box(Comparison("x", "=", NAN)) == (1.0, None)
    assert box(Comparison("x", "=", INF)) == (1.0, None)
    assert box(Comparison("x", "=", -INF)) == (None, 0.0)
    assert box(Comparison("x", ">", 1e300)) == (1.0, None)  # +inf and NaN rows match
    assert box(Comparison("x", ">", INF)) == (1.0, None)  # NaN > +inf in Spark
    assert box(Comparison("x", "<", -1e300)) == (None, 0.0)  # -inf rows match
    # every finite value of a revision lies inside its range: no row equals 11.0
    assert query_space(rev, Comparison("x", "=", 11.0)) is EMPTY_SPACE


@pytest.mark.parametrize("dt", [QDataType.INTEGER, QDataType.LONG])
def test_integral_columns_stay_exact_beyond_the_range(dt: QDataType) -> None:
    rev = _revision(LinearTransformer("x", dt), LinearTransformation(0, 10, 1, dt))
    assert query_space(rev, Comparison("x", ">", 11)) is EMPTY_SPACE
    assert query_space(rev, Comparison("x", "<", -1)) is EMPTY_SPACE
