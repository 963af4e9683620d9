"""normalize() against the scalar model transformations, row by row, bit for bit."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.normalize import normalize, scala_search
from qbeast_connect.model.hashing import to_float32
from qbeast_connect.model.transformation import (
    CDFNumericQuantilesTransformation,
    CDFStringQuantilesTransformation,
    EmptyTransformation,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    QDataType,
    StringHistogramTransformation,
)

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def _scalar_value(arr: pa.Array, i: int) -> object:
    """The Python value the scalar model receives for row i (module docstring conventions)."""
    s = arr[i]
    if not s.is_valid:
        return None
    t = arr.type
    if pa.types.is_timestamp(t):
        micros = s.cast(pa.timestamp("us", tz=t.tz)).value if t.unit != "ns" else None
        if micros is None:
            return s.value // 1_000_000
        return micros // 1000
    if pa.types.is_date32(t):
        return s.cast(pa.int32()).as_py() * 86_400_000
    if pa.types.is_float32(t):
        return to_float32(s.as_py())
    return s.as_py()


def assert_bit_identical(t: object, arr: pa.Array) -> np.ndarray:
    got = normalize([t], [arr])[:, 0]
    want = np.array([t.transform(_scalar_value(arr, i)) for i in range(len(arr))], dtype=np.float64)
    mismatch = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert mismatch.size == 0, [(arr[i], got[i], want[i]) for i in mismatch[:5]]
    return got


def _nulls(rng: np.random.Generator, values: list, frac: float = 0.1) -> list:
    mask = rng.random(len(values)) < frac
    return [None if m else v for v, m in zip(values, mask, strict=False)]


N = 1500


# --------------------------------------------------------------------------- linear


def test_linear_spec_vectors() -> None:
    t = LinearTransformation(0, 100, 50, QDataType.INTEGER)
    assert normalize([t], [pa.array([25], pa.int32())])[0, 0] == 0.25
    t = LinearTransformation(1, 4000000, 7, QDataType.INTEGER)
    assert normalize([t], [pa.array([2000000], pa.int32())])[0, 0] == 0.49999987499996873
    ident = IdentityTransformation(5, QDataType.INTEGER)
    assert normalize([ident], [pa.array([5, None, 7], pa.int32())]).tolist() == [
        [0.0],
        [0.0],
        [0.0],
    ]
    assert normalize([EmptyTransformation()], [pa.array(["x", None])]).tolist() == [[0.0], [0.0]]


def test_linear_integer_and_long() -> None:
    rng = np.random.default_rng(10)
    ints = rng.integers(-1000, 5000, N).tolist()
    t = LinearTransformation(-1000, 4999, 17, QDataType.INTEGER)
    assert_bit_identical(t, pa.array(_nulls(rng, ints), pa.int32()))
    longs = rng.integers(-(2**60), 2**60, N).tolist()  # beyond 2**53: double rounding
    t = LinearTransformation(-(2**60), 2**60, 12345678901234567, QDataType.LONG)
    got = assert_bit_identical(t, pa.array(_nulls(rng, longs), pa.int64()))
    assert ((got >= 0) & (got <= 1)).all()


def test_linear_double_float() -> None:
    rng = np.random.default_rng(11)
    doubles = (rng.normal(0, 1e3, N)).tolist()
    lo, hi = min(doubles), max(doubles)
    t = LinearTransformation(lo, hi, 0.123, QDataType.DOUBLE)
    assert_bit_identical(t, pa.array(_nulls(rng, doubles), pa.float64()))
    floats = rng.normal(0, 10, N).astype(np.float32)
    t = LinearTransformation(float(floats.min()), float(floats.max()), 1.5, QDataType.FLOAT)
    assert_bit_identical(t, pa.array(_nulls(rng, floats.tolist()), pa.float32()))


def test_linear_decimal() -> None:
    rng = np.random.default_rng(12)
    small = [Decimal(int(x)).scaleb(-3) for x in rng.integers(-(10**12), 10**12, N)]
    t = LinearTransformation(-1e9, 1e9, 0.5, QDataType.DECIMAL)
    assert_bit_identical(t, pa.array(_nulls(rng, small), pa.decimal128(15, 3)))
    # unscaled values beyond 2**53 and precision > 18 take the exact slow path
    big = [
        Decimal(int(x) * 10**9 + int(y)).scaleb(-6)
        for x, y in zip(rng.integers(-(10**15), 10**15, N), rng.integers(0, 10**9, N), strict=False)
    ]
    t = LinearTransformation(-1e18, 1e18, 0.5, QDataType.DECIMAL)
    assert_bit_identical(t, pa.array(_nulls(rng, big), pa.decimal128(30, 6)))
    mid = [Decimal(int(x)).scaleb(-4) for x in rng.integers(-(10**17), 10**17, N)]
    t = LinearTransformation(-1e13, 1e13, 0.5, QDataType.DECIMAL)
    assert_bit_identical(t, pa.array(mid, pa.decimal128(18, 4)))


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_linear_timestamp(unit: str) -> None:
    rng = np.random.default_rng(13)
    per_sec = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    raw = rng.integers(-(10**9), 2 * 10**9, N) * per_sec + rng.integers(0, per_sec, N)
    arr = pa.array(_nulls(rng, raw.tolist()), pa.timestamp(unit, tz="UTC"))
    t = LinearTransformation(-(10**12), 2 * 10**12, 5, QDataType.TIMESTAMP)
    assert_bit_identical(t, arr)
    # the scalar model also accepts datetimes: floor to milliseconds (pre-1970 included)
    if unit == "us":
        got = normalize([t], [arr])[:, 0]
        for i in range(0, N, 50):
            if arr[i].is_valid:
                value = EPOCH + dt.timedelta(microseconds=int(raw[i]))
                assert got[i] == t.transform(value)


def test_linear_date() -> None:
    rng = np.random.default_rng(14)
    days = rng.integers(-30000, 30000, N)
    arr = pa.array(_nulls(rng, days.tolist()), pa.int32()).cast(pa.date32())
    t = LinearTransformation(-30000 * 86_400_000, 30000 * 86_400_000, 0, QDataType.DATE)
    got = assert_bit_identical(t, arr)
    for i in range(0, N, 100):
        if arr[i].is_valid:
            assert got[i] == t.transform(arr[i].as_py())  # date objects too


def test_linear_nan_takes_the_top_coordinate() -> None:
    t = LinearTransformation(0.0, 1.0, 0.5, QDataType.DOUBLE)
    got = normalize([t], [pa.array([0.1, float("nan")])], column_names=["price"])
    assert got[:, 0].tolist() == [0.1, 1.0]


# --------------------------------------------------------------------------- hash


def test_hash_spec_vectors() -> None:
    t = HashTransformation(-1628776639)
    coords = normalize(
        [t] * 1,
        [pa.array(["qbeast", "a", "", None, "null"])],
    )[:, 0].tolist()
    assert coords == [
        0.8343347775909746,
        0.9137243399926109,
        0.2647087761502288,
        0.7649340288550286,
        0.5277198345995134,
    ]
    assert normalize([t], [pa.array([5], pa.int32())])[0, 0] == 0.687505206878998
    assert normalize([t], [pa.array([1.5])])[0, 0] == 0.03773991625650782
    assert (
        normalize([HashTransformation("null")], [pa.array([None], pa.string())])[0, 0]
        == 0.5277198345995134
    )


def test_hash_strings_random() -> None:
    rng = random.Random(20)
    alphabet = "abcdefXYZ0123 ñú€𝄞"
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(N)]
    nrng = np.random.default_rng(20)
    for typ in (pa.string(), pa.large_string()):
        assert_bit_identical(HashTransformation(123), pa.array(_nulls(nrng, values), typ))
    assert_bit_identical(HashTransformation("null"), pa.array(_nulls(nrng, values)))
    assert_bit_identical(HashTransformation(None), pa.array(_nulls(nrng, values)))
    assert_bit_identical(HashTransformation(2.5), pa.array(_nulls(nrng, values)))


def test_hash_numbers_random() -> None:
    rng = np.random.default_rng(21)
    t = HashTransformation(-7)
    assert_bit_identical(
        t, pa.array(_nulls(rng, rng.integers(-(2**31), 2**31, N).tolist()), pa.int32())
    )
    assert_bit_identical(
        t, pa.array(_nulls(rng, rng.integers(-(2**63), 2**63 - 1, N).tolist()), pa.int64())
    )
    doubles = np.concatenate(
        [
            rng.normal(0, 1, 200),
            rng.normal(0, 1e8, 200),
            10.0 ** rng.integers(-8, 12, 200),
            [0.0, -0.0, 1.0, 1e7, 1e-3, 1e-4, float("inf"), float("nan")],
        ]
    )
    doubles = np.concatenate([doubles, doubles[:50]])  # duplicates
    assert_bit_identical(t, pa.array(_nulls(rng, doubles.tolist()), pa.float64()))
    floats = np.concatenate([rng.normal(0, 100, 300), [0.0, -0.0, 2.5, 1e10, 0.1]]).astype(
        np.float32
    )
    assert_bit_identical(t, pa.array(_nulls(rng, floats.tolist()), pa.float32()))
    decs = [Decimal(int(x)).scaleb(-8) for x in rng.integers(-(10**10), 10**10, 300)] + [
        Decimal("0.00000010"),
        Decimal("5.00000000"),
    ]
    got = assert_bit_identical(t, pa.array(_nulls(rng, decs), pa.decimal128(20, 8)))
    assert got[-2] == HashTransformation(0).transform("1.0E-7")  # T26 text
    assert_bit_identical(t, pa.array(_nulls(rng, [True, False] * 50), pa.bool_()))


def test_hash_binary_hashes_raw_bytes() -> None:
    t = HashTransformation(1)
    got = normalize([t], [pa.array([b"qbeast", b"a"], pa.binary())])[:, 0].tolist()
    assert got == [0.8343347775909746, 0.9137243399926109]


def test_hash_rejects_timestamps() -> None:
    with pytest.raises(InvalidOptionError):
        normalize([HashTransformation(1)], [pa.array([1], pa.timestamp("us"))])


# --------------------------------------------------------------------------- quantiles


def test_scala_search_duplicates_differs_from_searchsorted() -> None:
    q = np.array([1, 2, 2, 2, 3])
    found, idx = scala_search(q, np.array([2, 0, 4, 1, 3]))
    assert found.tolist() == [True, False, False, True, True]
    assert idx.tolist() == [2, 0, 5, 0, 4]
    q2 = np.array([0, 1, 1, 1, 1, 1, 1, 5])
    found, idx = scala_search(q2, np.array([1]))
    assert (found[0], idx[0]) == (True, 3)
    assert np.searchsorted(q2, 1) == 1


def test_cdf_numeric_spec_vectors() -> None:
    t = CDFNumericQuantilesTransformation((0, 10, 20, 30, 40), QDataType.DOUBLE)
    got = normalize([t], [pa.array([15.0, 20.0, -5.0, 45.0, None])])[:, 0].tolist()
    assert got == [0.375, 0.5, 0.0, 1.0, 0.0]
    t = CDFNumericQuantilesTransformation((1, 2, 2, 2, 3), QDataType.INTEGER)
    assert normalize([t], [pa.array([2], pa.int32())])[0, 0] == 0.5


def test_cdf_numeric_random_with_duplicates() -> None:
    rng = np.random.default_rng(30)
    for trial in range(20):
        nq = int(rng.integers(2, 40))
        q = np.sort(rng.integers(-20, 20, nq)).astype(np.float64)
        if trial % 3 == 0:
            q = np.sort(np.concatenate([q, [0.0, -0.0]]))
        t = CDFNumericQuantilesTransformation(tuple(q.tolist()), QDataType.DOUBLE)
        values = np.concatenate(
            [rng.integers(-25, 25, 200).astype(np.float64), rng.uniform(-25, 25, 200), [0.0, -0.0]]
        )
        assert_bit_identical(t, pa.array(_nulls(rng, values.tolist()), pa.float64()))
    ti = CDFNumericQuantilesTransformation((0, 5, 5, 100, 1000), QDataType.INTEGER)
    assert_bit_identical(ti, pa.array(_nulls(rng, rng.integers(-10, 1100, N).tolist()), pa.int32()))
    tt = CDFNumericQuantilesTransformation((0, 10**12, 2 * 10**12), QDataType.TIMESTAMP)
    ts = rng.integers(-(10**15), 3 * 10**15, N)
    assert_bit_identical(tt, pa.array(_nulls(rng, ts.tolist()), pa.timestamp("us", tz="UTC")))


def test_cdf_string_spec_vectors() -> None:
    t = CDFStringQuantilesTransformation(("a", "c", "e"))
    got = normalize([t], [pa.array(["A", "a", "b", "c", "d", "e", "z", None])])[:, 0].tolist()
    assert got == [0, 0, 0, 0.5, 0.5, 1, 1, 0.0]


def _random_words(rng: random.Random, n: int, alphabet: str) -> list[str]:
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) for _ in range(n)]


@pytest.mark.parametrize("alphabet", ["abcde", "a\u00f1\u20acbZ", "ab\uff61\U0001f600c"])
def test_cdf_string_and_histogram_random(alphabet: str) -> None:
    rng = random.Random(31)
    nrng = np.random.default_rng(31)
    for _ in range(10):
        q = sorted(
            _random_words(rng, rng.randint(2, 12), alphabet), key=lambda s: s.encode("utf-16-be")
        )
        values = _random_words(rng, 300, alphabet) + q
        arr = pa.array(_nulls(nrng, values))
        assert_bit_identical(CDFStringQuantilesTransformation(tuple(q)), arr)
        assert_bit_identical(StringHistogramTransformation(tuple(q)), arr)


def test_histogram_default_and_numbers() -> None:
    t = StringHistogramTransformation(tuple(chr(c) for c in range(ord("a"), ord("z") + 1)))
    rng = random.Random(32)
    values = [*_random_words(rng, 500, "amzAZ0~n"), "null", None]
    assert_bit_identical(t, pa.array(values))
    assert_bit_identical(
        StringHistogramTransformation(("1", "10", "5")), pa.array([1, 10, 3, None, 7], pa.int64())
    )
    assert normalize([StringHistogramTransformation(("x",))], [pa.array(["a", "z"])]).tolist() == [
        [0.0],
        [0.0],
    ]


def test_multiple_columns_and_shape() -> None:
    ts = [
        LinearTransformation(0, 10, 3, QDataType.INTEGER),
        HashTransformation(9),
        CDFNumericQuantilesTransformation((0.0, 1.0), QDataType.DOUBLE),
    ]
    cols = [
        pa.array([0, 10, None], pa.int32()),
        pa.chunked_array([["a"], ["b", None]]),
        pa.array([0.5, 2.0, None]),
    ]
    got = normalize(ts, cols)
    assert got.shape == (3, 3) and got.dtype == np.float64
    assert got[:, 0].tolist() == [0.0, 1.0, 0.30000000000000004]
    assert got[:, 2].tolist() == [0.5, 1.0, 0.0]
    assert got[:, 1].tolist() == [ts[1].transform(v) for v in ("a", "b", None)]
    with pytest.raises(InvalidOptionError):
        normalize(ts[:2], cols)


def test_dictionary_columns_transform_each_value_once() -> None:
    rng = np.random.default_rng(40)
    values = _nulls(rng, [f"v{int(x)}" for x in rng.integers(0, 50, 800)])
    plain = pa.array(values)
    encoded = plain.dictionary_encode()
    t = HashTransformation(99)
    assert normalize([t], [encoded]).tolist() == normalize([t], [plain]).tolist()
    assert_bit_identical(t, plain)
    chunked = pa.chunked_array([encoded.slice(0, 300), pa.array(values[300:]).dictionary_encode()])
    assert normalize([t], [chunked]).tolist() == normalize([t], [plain]).tolist()
    ints = pa.array(_nulls(rng, rng.integers(0, 9, 300).tolist()), pa.int32())
    lin = LinearTransformation(0, 8, 4, QDataType.INTEGER)
    assert (
        normalize([lin], [ints.dictionary_encode()]).tolist() == normalize([lin], [ints]).tolist()
    )


def test_hash_double_plain_range_matches_java_formatting() -> None:
    from qbeast_connect.model.hashing import java_double_to_string

    rng = np.random.default_rng(41)
    values = np.concatenate(
        [
            10.0 ** rng.uniform(-3, 7, 3000),
            -(10.0 ** rng.uniform(-3, 7, 1000)),
            rng.integers(-(10**7) + 1, 10**7, 1000).astype(np.float64),
            [1e-3, np.nextafter(1e-3, 0), np.nextafter(1e7, 0), 1e7, 0.1, 100.0, 1234567.125],
        ]
    )
    t = HashTransformation(0)
    got = normalize([t], [pa.array(values)])[:, 0]
    want = [t.transform(java_double_to_string(float(v))) for v in values]
    assert got.tolist() == want


def test_cdf_numeric_nan_value_sorts_last_like_java() -> None:
    t = CDFNumericQuantilesTransformation((0.0, 1.0, 2.0), QDataType.DOUBLE)
    arr = pa.array([float("nan"), -0.0, 0.0, float("inf"), float("-inf")])
    got = assert_bit_identical(t, arr)
    assert got.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]
