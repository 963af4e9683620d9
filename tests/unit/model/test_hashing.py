"""JVM hash functions and number formatting (spec §3.2-3.5; T10-T13, T15, T25, T26)."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import mmh3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.hashing import (
    Float32,
    JavaRandom,
    java_decimal_to_string,
    java_double_to_string,
    java_float_to_string,
    scala_bytes_hash,
    scala_string_hash,
    spark_hash,
    spark_hash_bytes,
    to_float32,
)

UTC = dt.UTC

# ---- Spark hash() -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, -559580957), (2, 1765031574), (3, -1823081949), (4, -397064898), (5, 1023896466)],
    ids=[f"T10-{i}" for i in range(1, 6)],
)
def test_t10_int_row_weight(value: int, expected: int) -> None:
    assert spark_hash([value], ["integer"]) == expected


SPARK_HASH_CASES = [
    ("T11-Spark", ["Spark"], ["string"], 228093765),
    ("T11-qbeast", ["qbeast"], ["string"], 1554361118),
    ("T11-int-and-string", [1, "a"], ["integer", "string"], -936062819),
    ("T11-null-and-string", [None, "a"], ["integer", "string"], 1485273170),
    ("T11-null-int", [None], ["integer"], 42),
    ("T11-empty-string", [""], ["string"], 142593372),
    ("T11-non-ascii", ["ñandú"], ["string"], 403952108),
    ("T12-date", [dt.date(2024, 1, 15)], ["date"], 1697177293),
    ("T12-date-as-days", [19737], ["date"], 1697177293),
    ("T12-timestamp", [dt.datetime(2024, 1, 15, 10, 30, tzinfo=UTC)], ["timestamp"], -1095283099),
    ("T12-timestamp-naive-is-utc", [dt.datetime(2024, 1, 15, 10, 30)], ["timestamp"], -1095283099),
    ("T12-timestamp-micros", [1705314600_000_000], ["timestamp"], -1095283099),
    ("T12-decimal-10-2", [Decimal("123.45")], ["decimal(10,2)"], 1416086240),
    ("T12-decimal-38-10", [Decimal("-123.45")], ["decimal(38,10)"], 1976400524),
    ("T12-double-long", [3.5, 10], ["double", "long"], 530837656),
    ("T12-negative-zero", [-0.0], ["double"], -1670924195),
    ("T12-positive-zero-same", [0.0], ["double"], -1670924195),
    ("T12-float", [2.5], ["float"], 204117216),
    ("T12-bigint", [-5000000000], ["long"], 1755508969),
    ("T12-bigint-sql-name", [-5000000000], ["bigint"], 1755508969),
    ("boolean-is-int", [True], ["boolean"], -559580957),
    ("short-is-int", [3], ["short"], -1823081949),
    ("int-sql-name", [3], ["int"], -1823081949),
]


@pytest.mark.parametrize(
    ("values", "types", "expected"),
    [c[1:] for c in SPARK_HASH_CASES],
    ids=[c[0] for c in SPARK_HASH_CASES],
)
def test_spark_hash_vectors(values: list[object], types: list[str], expected: int) -> None:
    assert spark_hash(values, types) == expected


def test_spark_hash_nan_is_canonical() -> None:
    other_nan = struct.unpack("<d", struct.pack("<q", 0x7FF0000000000001))[0]
    assert spark_hash([other_nan], ["double"]) == spark_hash([math.nan], ["double"])
    assert spark_hash([-0.0], ["float"]) == spark_hash([0.0], ["float"])


@pytest.mark.parametrize("n", [0, 4, 8, 12])
def test_spark_hash_bytes_equals_murmur3_for_whole_words(n: int) -> None:
    data = bytes(range(200, 200 + n))
    assert spark_hash_bytes(data, 42) == mmh3.hash(data, 42, signed=True)


def test_spark_hash_bytes_tail_is_not_standard_murmur3() -> None:
    data = "ñandú".encode()  # 7 bytes, tail with bytes > 127
    assert spark_hash_bytes(data, 42) == 403952108
    assert mmh3.hash(data, 42, signed=True) != 403952108


@pytest.mark.parametrize(
    ("values", "types", "message"),
    [
        ([1], ["integer", "string"], "one type per value"),
        ([[1]], ["array<int>"], "cannot hash Spark type"),
        (["x"], ["integer"], "integer value is expected"),
        ([Decimal("123.456")], ["decimal(4,2)"], "does not fit"),
        ([1e39], ["float"], "out of the range"),
    ],
    ids=["length-mismatch", "unknown-type", "wrong-value", "decimal-overflow", "float-overflow"],
)
def test_spark_hash_errors(values: list[object], types: list[str], message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        spark_hash(values, types)


# ---- Scala hashes -------------------------------------------------------------------------------

BYTES_HASH_CASES = [
    ("qbeast", 1791720291),
    ("a", -185275570),
    ("", -1579025880),
    ("5", -671077459),
    ("null", 1133269715),
    ("-1628776639", -504800330),
    ("1.5", 81045853),
    ("ñandú", -1753271483),
]


@pytest.mark.parametrize(
    ("text", "expected"), BYTES_HASH_CASES, ids=[f"T13-{t or 'empty'}" for t, _ in BYTES_HASH_CASES]
)
def test_t13_scala_bytes_hash(text: str, expected: int) -> None:
    assert scala_bytes_hash(text.encode("utf-8")) == expected


T25 = [("qbeast", -56278339), ("a", -1188936396), ("5", 16359229), ("ñandú", -1295986263)]


@pytest.mark.parametrize(("text", "wrong"), T25, ids=[f"T25-{t}" for t, _ in T25])
def test_t25_not_the_scala_213_hash(text: str, wrong: int) -> None:
    data = text.encode("utf-8")
    # The wrong values are standard Murmur3 with the bytesHash seed (Scala 2.13)...
    assert mmh3.hash(data, 0x3C074A61, signed=True) == wrong
    # ...and our port must not produce them.
    assert scala_bytes_hash(data) != wrong


def test_t26_ascii_locale_bytes() -> None:
    # JDK 17 under LANG=C turns every non-ASCII character into '?'.
    assert scala_bytes_hash("ñandú".encode("ascii", errors="replace")) == 369576562


def test_t15_string_hash_and_random() -> None:
    seed = scala_string_hash('{"minNumber":0,"maxNumber":10,"orderedDataType":"IntegerDataType"}')
    assert seed == -398672889
    r = JavaRandom(seed).next_double()
    assert r == 0.7708405040306471
    assert 0 + int(r * (10 - 0)) == 7


def test_scala_string_hash_odd_and_surrogates() -> None:
    # odd number of UTF-16 units, and a supplementary character (two units)
    assert scala_string_hash("abc") != scala_string_hash("abd")
    assert scala_string_hash("😀") != scala_string_hash("\ud83d")


@pytest.mark.parametrize(
    ("seed", "next_int", "next_double"),
    [(42, -1170105035, 0.7275636800328681), (0, -1155484576, 0.730967787376657)],
    ids=["seed-42", "seed-0"],
)
def test_java_random_known_sequences(seed: int, next_int: int, next_double: float) -> None:
    assert JavaRandom(seed).next_int() == next_int
    assert JavaRandom(seed).next_double() == next_double


# ---- Java number formatting ---------------------------------------------------------------------

DOUBLE_CASES = [
    (1.0, "1.0"),
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.5, "1.5"),
    (-1.5, "-1.5"),
    (100.0, "100.0"),
    (0.1, "0.1"),
    (0.001, "0.001"),
    (0.0009999, "9.999E-4"),
    (1e-4, "1.0E-4"),
    (9999999.0, "9999999.0"),
    (1e7, "1.0E7"),
    (1e10, "1.0E10"),
    (123456.789, "123456.789"),
    (123456789.123, "1.23456789123E8"),
    (-1628776639.0, "-1.628776639E9"),
    (2e23, "1.9999999999999998E23"),  # JDK 17 (the reference) prints extra digits
    (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (math.nan, "NaN"),
    (math.inf, "Infinity"),
    (-math.inf, "-Infinity"),
]


@pytest.mark.parametrize(("x", "text"), DOUBLE_CASES, ids=[t for _, t in DOUBLE_CASES])
def test_java_double_to_string(x: float, text: str) -> None:
    assert java_double_to_string(x) == text


FLOAT_CASES = [
    (2.5, "2.5"),
    (1e10, "1.0E10"),
    (0.1, "0.1"),
    (0.3, "0.3"),
    (1.0, "1.0"),
    (16777216.0, "1.6777216E7"),
    (3.259049e15, "3.2590491E15"),  # JDK 17
    (3.4028234663852886e38, "3.4028235E38"),
    (1.401298464324817e-45, "1.4E-45"),
    (-0.0, "-0.0"),
]


@pytest.mark.parametrize(("x", "text"), FLOAT_CASES, ids=[t for _, t in FLOAT_CASES])
def test_java_float_to_string(x: float, text: str) -> None:
    assert java_float_to_string(x) == text


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_to_string_round_trips(x: float) -> None:
    text = java_double_to_string(x)
    assert float(text) == x
    assert "+" not in text and ("E" in text or 1e-3 <= abs(x) < 1e7 or x == 0.0)


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_java_float_to_string_round_trips(x: float) -> None:
    text = java_float_to_string(x)
    assert to_float32(float(text)) == x


def test_float32_marker() -> None:
    f = to_float32(0.1)
    assert isinstance(f, Float32)
    assert f == 0.10000000149011612
    assert repr(f) == "0.1"
    with pytest.raises(InvalidOptionError):
        to_float32(1e39)


DECIMAL_CASES = [
    ("T26", Decimal("0.00000010"), 8, "1.0E-7"),
    ("plain-scale-2", Decimal("5"), 2, "5.00"),
    ("plain", Decimal("123.45"), 2, "123.45"),
    ("round-half-up", Decimal("123.455"), 2, "123.46"),
    ("negative", Decimal("-0.5"), 1, "-0.5"),
    ("adjusted-minus-6-plain", Decimal("0.000001"), 6, "0.000001"),
    ("adjusted-minus-7-sci", Decimal("0.0000001"), 7, "1E-7"),
    ("zero-scale-8", Decimal("0"), 8, "0E-8"),
    ("zero-scale-2", Decimal("0"), 2, "0.00"),
    ("integer", Decimal("42"), 0, "42"),
    ("negative-scale", Decimal("1000"), -3, "1E+3"),
    ("negative-scale-digits", Decimal("12000"), -3, "1.2E+4"),
]


@pytest.mark.parametrize(
    ("value", "scale", "text"), [c[1:] for c in DECIMAL_CASES], ids=[c[0] for c in DECIMAL_CASES]
)
def test_java_decimal_to_string(value: Decimal, scale: int, text: str) -> None:
    assert java_decimal_to_string(value, scale) == text


def test_t19_sample_predicate() -> None:
    from qbeast_connect.model.weight import MIN_WEIGHT, weight_from_fraction

    assert weight_from_fraction(0.1) == -1717986918  # sample(0.1): hash < -1717986918
    upper, lower = weight_from_fraction(0.5), weight_from_fraction(0.0)
    assert lower == MIN_WEIGHT
    kept = [i for i in range(1, 6) if lower <= spark_hash([i], ["integer"]) < upper]
    assert kept == [1, 3, 4]
