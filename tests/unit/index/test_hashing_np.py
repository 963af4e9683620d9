"""Vectorized hashes against the spec vectors and the scalar model."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from qbeast_connect.index.hashing_np import scala_bytes_hash_array, spark_hash_columns
from qbeast_connect.model import hashing as scalar

SCALA_VECTORS = {
    "qbeast": 1791720291,
    "a": -185275570,
    "": -1579025880,
    "5": -671077459,
    "null": 1133269715,
    "-1628776639": -504800330,
    "1.5": 81045853,
}


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
def test_scala_bytes_hash_spec_vectors(typ: pa.DataType) -> None:
    texts = list(SCALA_VECTORS)
    values = (
        [t.encode() for t in texts]
        if pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
        else texts
    )
    got = scala_bytes_hash_array(pa.array(values, type=typ))
    assert got.dtype == np.int32
    assert got.tolist() == list(SCALA_VECTORS.values())


def test_scala_bytes_hash_lang_c_vector() -> None:
    # T26: the JVM under LANG=C hashes "ñandú" as "?and?"; UTF-8 gives the other value
    assert scala_bytes_hash_array(pa.array(["?and?"])).tolist() == [369576562]
    assert scala_bytes_hash_array(pa.array(["ñandú"])).tolist() == [-1753271483]


def _random_strings(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcXYZ019 -_ñúé€𝄞\x00"
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 13, 40])))
        for _ in range(n)
    ]


def test_scala_bytes_hash_matches_scalar_random() -> None:
    rng = random.Random(1)
    values = _random_strings(rng, 3000)
    got = scala_bytes_hash_array(pa.array(values))
    want = [scalar.scala_bytes_hash(v.encode("utf-8")) for v in values]
    assert got.tolist() == want


def test_scala_bytes_hash_sliced_chunked_and_nulls() -> None:
    rng = random.Random(2)
    values = _random_strings(rng, 500)
    arr = pa.array(values)
    sliced = arr.slice(37, 300)
    assert scala_bytes_hash_array(sliced).tolist() == [
        scalar.scala_bytes_hash(v.encode()) for v in values[37:337]
    ]
    chunked = pa.chunked_array([arr.slice(0, 100), arr.slice(100)])
    assert scala_bytes_hash_array(chunked).tolist() == [
        scalar.scala_bytes_hash(v.encode()) for v in values
    ]
    with_nulls = pa.array(["abc", None, "qbeast"])
    assert scala_bytes_hash_array(with_nulls).tolist() == [
        scalar.scala_bytes_hash(b"abc"),
        scalar.scala_bytes_hash(b""),
        1791720291,
    ]
    assert scala_bytes_hash_array(pa.array([], type=pa.string())).tolist() == []


def test_spark_hash_spec_vectors() -> None:
    # T10
    assert spark_hash_columns([pa.array([1, 2, 3, 4, 5], pa.int32())]).tolist() == [
        -559580957,
        1765031574,
        -1823081949,
        -397064898,
        1023896466,
    ]
    # T11
    assert spark_hash_columns([pa.array(["Spark", "qbeast", "", "ñandú"])]).tolist() == [
        228093765,
        1554361118,
        142593372,
        403952108,
    ]
    assert spark_hash_columns([pa.array([1, None], pa.int32()), pa.array(["a", "a"])]).tolist() == [
        -936062819,
        1485273170,
    ]
    assert spark_hash_columns([pa.array([None], pa.int32())]).tolist() == [42]
    # T12
    assert spark_hash_columns([pa.array([dt.date(2024, 1, 15)])]).tolist() == [1697177293]
    ts = pa.array([dt.datetime(2024, 1, 15, 10, 30)], pa.timestamp("us", tz="UTC"))
    assert spark_hash_columns([ts]).tolist() == [-1095283099]
    assert spark_hash_columns([ts.cast(pa.timestamp("ms", tz="UTC"))]).tolist() == [-1095283099]
    assert spark_hash_columns([pa.array([Decimal("123.45")], pa.decimal128(10, 2))]).tolist() == [
        1416086240
    ]
    assert spark_hash_columns([pa.array([Decimal("-123.45")], pa.decimal128(38, 10))]).tolist() == [
        1976400524
    ]
    assert spark_hash_columns([pa.array([3.5]), pa.array([10])]).tolist() == [530837656]
    assert spark_hash_columns([pa.array([-0.0])]).tolist() == [-1670924195]
    assert spark_hash_columns([pa.array([2.5], pa.float32())]).tolist() == [204117216]
    assert spark_hash_columns([pa.array([-5000000000])]).tolist() == [1755508969]


def test_spark_hash_matches_scalar_random_mixed_columns() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    ints = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    longs = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    doubles = rng.normal(0, 1e6, n)
    doubles[:5] = [0.0, -0.0, np.nan, np.inf, -np.inf]
    floats = rng.normal(0, 100, n).astype(np.float32)
    floats[:3] = [np.float32(-0.0), np.float32(np.nan), np.float32(1.5)]
    strings = _random_strings(random.Random(4), n)
    days = rng.integers(-20000, 40000, n).astype(np.int32)
    micros = rng.integers(-(10**15), 10**15, n, dtype=np.int64)
    bools = rng.integers(0, 2, n).astype(bool)
    dec_small = [Decimal(int(x)).scaleb(-2) for x in rng.integers(-(10**15), 10**15, n)]
    dec_big = [
        Decimal(int(x) * 10**12 + int(y)).scaleb(-5)
        for x, y in zip(rng.integers(-(10**15), 10**15, n), rng.integers(0, 10**12, n), strict=True)
    ]
    nullmask = rng.random(n) < 0.1

    def with_nulls(values: list, typ: pa.DataType) -> pa.Array:
        return pa.array([None if m else v for v, m in zip(values, nullmask, strict=True)], type=typ)

    columns = [
        (with_nulls(ints.tolist(), pa.int32()), "int", ints.tolist()),
        (pa.array(longs), "long", longs.tolist()),
        (with_nulls(doubles.tolist(), pa.float64()), "double", doubles.tolist()),
        (pa.array(floats), "float", floats.astype(np.float64).tolist()),
        (with_nulls(strings, pa.string()), "string", strings),
        (
            pa.array(days, pa.int32()).cast(pa.date32()),
            "date",
            [dt.date(1970, 1, 1) + dt.timedelta(days=int(x)) for x in days],
        ),
        (
            pa.array(micros, pa.timestamp("us", tz="UTC")),
            "timestamp",
            [
                dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(x))
                for x in micros
            ],
        ),
        (pa.array(bools), "boolean", bools.tolist()),
        (pa.array(dec_small, pa.decimal128(18, 2)), "decimal(18,2)", dec_small),
        (with_nulls(dec_big, pa.decimal128(38, 5)), "decimal(38,5)", dec_big),
    ]
    got = spark_hash_columns([c for c, _, _ in columns])
    types = [t for _, t, _ in columns]
    for i in range(0, n, 7):
        row = []
        for arr, _, vals in columns:
            row.append(None if not arr[i].is_valid else vals[i])
        want = scalar.spark_hash(row, types)
        assert got[i] == want, (i, row)
    # each column alone
    for arr, typ, vals in columns:
        single = spark_hash_columns([arr])
        for i in range(0, n, 97):
            v = None if not arr[i].is_valid else vals[i]
            assert single[i] == scalar.spark_hash([v], [typ]), (typ, v)
