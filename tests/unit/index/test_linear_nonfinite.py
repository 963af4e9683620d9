"""Linear dimensions place NaN, ±infinity, -0.0, subnormals and extreme doubles."""

from __future__ import annotations

import math
import random
import sys

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qbeast_connect.index.cubes import check_points
from qbeast_connect.index.normalize import normalize
from qbeast_connect.model import LinearTransformation, LinearTransformer, QDataType
from qbeast_connect.model.transformation import ColumnStats

DOUBLE = QDataType.DOUBLE
FLOAT = QDataType.FLOAT
DBL_MAX = sys.float_info.max
TINY = 5e-324  # the smallest subnormal
NAN, INF = math.nan, math.inf


def _coords(t: LinearTransformation, values: list[float | None]) -> np.ndarray:
    """Vectorised coordinates, checked bit-identical to the scalar transform."""
    got = normalize([t], [pa.array(values, pa.float64())])[:, 0]
    scalar = np.array([t.transform(v) for v in values], dtype=np.float64)
    assert got.tobytes() == scalar.tobytes()
    return got


def test_nan_and_infinities_have_fixed_places_at_the_ends() -> None:
    t = LinearTransformation(-5.0, 10.0, 1.0, DOUBLE)
    got = _coords(t, [NAN, INF, -INF, -5.0, 10.0, None])
    assert got.tolist() == [1.0, 1.0, 0.0, 0.0, 1.0, t.transform(1.0)]
    check_points(got.reshape(-1, 1))  # every coordinate is inside [0, 1]


def test_negative_zero_maps_like_zero() -> None:
    for low in (0.0, -1.0):
        t = LinearTransformation(low, 4.0, 1.0, DOUBLE)
        got = _coords(t, [-0.0, 0.0])
        assert got[0] == got[1] and math.copysign(1.0, got[0]) == 1.0


def test_ordinary_spans_keep_the_reference_formula() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        low = rng.uniform(-1e12, 1e12) * 10.0 ** rng.randint(-200, 200)
        high = low + abs(rng.gauss(0, 1)) * 10.0 ** rng.randint(-150, 150) + abs(low) * 1e-15
        if not high > low:
            continue
        t = LinearTransformation(low, high, low, DOUBLE)
        x = rng.uniform(low, high)
        assert t.transform(x) == (x - low) * (1.0 / (high - low)) + 0.0


def test_extreme_doubles_index_inside_the_unit_interval() -> None:
    values = [-DBL_MAX, -1.7e308, -1e300, -1.0, -TINY, 0.0, TINY, 1.0, 1e300, 1.7e308, DBL_MAX]
    t = LinearTransformer("x", DOUBLE).make_transformation(
        ColumnStats(min=-DBL_MAX, max=DBL_MAX), random.Random(1)
    )
    assert isinstance(t, LinearTransformation) and math.isfinite(t.null_value)
    got = _coords(t, values)
    check_points(got.reshape(-1, 1))
    assert got[0] == 0.0 and got[-1] == 1.0 and got[5] == 0.5
    assert np.all(np.diff(got) >= 0)
    assert got[2] < got[3] <= got[7] < got[8]  # the order survives the scaled form


def test_subnormal_spans_index_inside_the_unit_interval() -> None:
    values = [0.0, TINY, 2 * TINY, 3 * TINY, 1e-320, 2e-320]
    t = LinearTransformation(0.0, 2e-320, TINY, DOUBLE)
    got = _coords(t, values)
    check_points(got.reshape(-1, 1))
    assert got[0] == 0.0 and 1.0 - 1e-15 <= got[-1] <= 1.0 and abs(got[4] - 0.5) < 1e-15
    assert np.all(np.diff(got) > 0)
    t2 = LinearTransformation(TINY, 2 * TINY, TINY, DOUBLE)
    assert _coords(t2, [TINY, 2 * TINY]).tolist() == [0.0, 1.0]


def test_float_columns_place_nan_and_infinities() -> None:
    t = LinearTransformation(-1.0, 3.0, 0.0, FLOAT)
    got = normalize([t], [pa.array([NAN, INF, -INF, 1.0], pa.float32())])[:, 0]
    assert got.tolist() == [1.0, 1.0, 0.0, 0.5]


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(finite, finite, finite, finite)
@example(-DBL_MAX, DBL_MAX, -1.0, 1e300)
@example(0.0, 1.5e308, 1.0, 1e300)
@example(TINY, 3 * TINY, 2 * TINY, 0.0)
def test_any_finite_span_is_monotone_and_in_range(a: float, b: float, c: float, d: float) -> None:
    low, high = min(a, b), max(a, b)
    if not high > low:
        return
    t = LinearTransformation(low, high, low, DOUBLE)
    xs = sorted(min(max(v, low), high) for v in (c, d))
    got = _coords(t, [low, *xs, high])
    check_points(got.reshape(-1, 1))
    assert got[0] == 0.0 and np.all(np.diff(got) >= 0)
