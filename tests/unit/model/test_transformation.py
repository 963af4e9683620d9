"""Transformers and transformations: transform, make, supersede/merge, JSON (spec §4, §1.2).

Vectors T13 (coordinates), T14, T15, T16, T17, T26, T27.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import pickle
import random
from decimal import Decimal

import pytest

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model._json import dumps
from qbeast_connect.model.hashing import Float32, scala_bytes_hash, to_float32
from qbeast_connect.model.transformation import (
    DEFAULT_HISTOGRAM,
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformation,
    CDFStringQuantilesTransformer,
    ColumnStats,
    EmptyTransformation,
    EmptyTransformer,
    HashTransformation,
    HashTransformer,
    IdentityTransformation,
    LinearTransformation,
    LinearTransformer,
    QDataType,
    StringHistogramTransformation,
    StringHistogramTransformer,
    Transformation,
    jackson_tree_text,
    transformation_from_json,
    transformation_to_json,
    transformer_from_json,
    transformer_to_json,
)

P = "io.qbeast.core.transform."
INT, LONG, DOUBLE, FLOAT = QDataType.INTEGER, QDataType.LONG, QDataType.DOUBLE, QDataType.FLOAT
UTC = dt.UTC


def rng() -> random.Random:
    return random.Random(1234)


def coordinate(text: str) -> float:
    return (scala_bytes_hash(text.encode()) & 0x7FFFFFFF) / 2147483647.0


# ---- QDataType ---------------------------------------------------------------------------------


def test_qdatatype_names_and_order() -> None:
    assert [t.value for t in QDataType] == [
        "DoubleDataType",
        "IntegerDataType",
        "FloatDataType",
        "LongDataType",
        "DecimalDataType",
        "TimestampDataType",
        "DateDataType",
        "StringDataType",
    ]
    assert QDataType.INTEGER == "IntegerDataType"
    assert [t.is_ordered for t in QDataType] == [True] * 7 + [False]
    assert QDataType.parse("DateDataType") is QDataType.DATE
    with pytest.raises(InvalidOptionError, match="unknown Qbeast data type"):
        QDataType.parse("BinaryDataType")


# ---- linear / identity transform (T14) ---------------------------------------------------------

T14 = [
    ("T14-int-0-100", LinearTransformation(0, 100, 50, INT), 25, 0.25),
    (
        "T14-int-fixture",
        LinearTransformation(1, 4000000, 2836883, INT),
        2000000,
        0.49999987499996873,
    ),
    ("T14-identity", IdentityTransformation(7, INT), 123456, 0.0),
    ("T14-identity-null", IdentityTransformation(None, DOUBLE), None, 0.0),
    ("no-clamping-above", LinearTransformation(0, 100, 50, INT), 200, 2.0),
    ("no-clamping-below", LinearTransformation(0, 100, 50, INT), -100, -1.0),
    ("null-uses-null-value", LinearTransformation(0, 100, 50, INT), None, 0.5),
    ("double", LinearTransformation(-1.0, 1.0, 0.0, DOUBLE), 0.5, 0.75),
    (
        "decimal-value",
        LinearTransformation(0.0, 10.0, 1.0, QDataType.DECIMAL),
        Decimal("2.5"),
        0.25,
    ),
    (
        "timestamp-datetime",
        LinearTransformation(0, 86_400_000, 1, QDataType.TIMESTAMP),
        dt.datetime(1970, 1, 1, 12, tzinfo=UTC),
        0.5,
    ),
    (
        "timestamp-ms",
        LinearTransformation(0, 86_400_000, 1, QDataType.TIMESTAMP),
        21_600_000,
        0.25,
    ),
    ("date", LinearTransformation(0, 864_000_000, 1, QDataType.DATE), dt.date(1970, 1, 6), 0.5),
    ("empty", EmptyTransformation(), "anything", 0.0),
]


@pytest.mark.parametrize(("t", "value", "expected"), [c[1:] for c in T14], ids=[c[0] for c in T14])
def test_linear_and_identity_transform(t: Transformation, value: object, expected: float) -> None:
    assert t.transform(value) == expected


def test_linear_transform_is_java_arithmetic() -> None:
    t = LinearTransformation(1, 4000000, 2836883, INT)
    assert t.transform(None) == (2836883.0 - 1.0) * (1.0 / (4000000.0 - 1.0))
    assert t.transform(4000000) <= 1.0


# ---- hashing transform (T13, T26) --------------------------------------------------------------

T13_COORDS = [
    ("T13-qbeast", HashTransformation(0), "qbeast", 0.8343347775909746),
    ("T13-a", HashTransformation(0), "a", 0.9137243399926109),
    ("T13-empty", HashTransformation(0), "", 0.2647087761502288),
    ("T13-int-5", HashTransformation(0), 5, 0.687505206878998),
    ("T13-null-string", HashTransformation("null"), None, 0.5277198345995134),
    ("T13-int-null-value", HashTransformation(-1628776639), None, 0.7649340288550286),
    ("T13-double", HashTransformation(0), 1.5, 0.03773991625650782),
    ("T26-decimal", HashTransformation(0), Decimal("0.00000010"), coordinate("1.0E-7")),
    ("decimal-scale-kept", HashTransformation(0), Decimal("5.00"), coordinate("5.00")),
    ("float32", HashTransformation(0), to_float32(0.1), coordinate("0.1")),
    (
        "float32-as-double",
        HashTransformation(0),
        float(to_float32(0.1)),
        coordinate("0.10000000149011612"),
    ),
    ("double-E-notation", HashTransformation(0), 1e7, coordinate("1.0E7")),
    ("boolean", HashTransformation(0), True, coordinate("true")),
    ("missing-null-value", HashTransformation(None), None, coordinate("null")),
]


@pytest.mark.parametrize(
    ("t", "value", "expected"), [c[1:] for c in T13_COORDS], ids=[c[0] for c in T13_COORDS]
)
def test_hash_transform(t: HashTransformation, value: object, expected: float) -> None:
    assert t.transform(value) == expected


@pytest.mark.parametrize(
    "value", [dt.date(2024, 1, 1), dt.datetime(2024, 1, 1), b"x"], ids=["date", "datetime", "bytes"]
)
def test_hash_transform_rejects_unsupported_values(value: object) -> None:
    with pytest.raises(InvalidOptionError):
        HashTransformation(0).transform(value)


# ---- CDF (T16, T17) and histogram --------------------------------------------------------------

CDF_NUM = CDFNumericQuantilesTransformation((0, 10, 20, 30, 40), INT)
CDF_DUP = CDFNumericQuantilesTransformation((1, 2, 2, 2, 3), INT)
T16 = [
    ("T16-15", CDF_NUM, 15, 0.375),
    ("T16-20", CDF_NUM, 20, 0.5),
    ("T16-below", CDF_NUM, -5, 0.0),
    ("T16-above", CDF_NUM, 45, 1.0),
    ("T16-null", CDF_NUM, None, 0.0),
    ("T16-duplicates", CDF_DUP, 2, 0.5),
    ("first", CDF_NUM, 0, 0.0),
    ("last", CDF_NUM, 40, 1.0),
    ("decimal", CDF_NUM, Decimal("5"), 0.125),
]


@pytest.mark.parametrize(("t", "value", "expected"), [c[1:] for c in T16], ids=[c[0] for c in T16])
def test_t16_cdf_numeric(t: Transformation, value: object, expected: float) -> None:
    assert t.transform(value) == expected


def test_cdf_numeric_uses_java_double_compare() -> None:
    # Double.compare(-0.0, 0.0) < 0: -0.0 is not "found" at the 0.0 quantile.
    t = CDFNumericQuantilesTransformation((-1.0, 0.0, 1.0), DOUBLE)
    assert t.transform(0.0) == 0.5
    assert t.transform(-0.0) == (0 + (-0.0 - -1.0) / (0.0 - -1.0)) / 2


CDF_STR = CDFStringQuantilesTransformation(("a", "c", "e"))
T17 = [
    ("A", 0.0),
    ("a", 0.0),
    ("b", 0.0),
    ("c", 0.5),
    ("d", 0.5),
    ("e", 1.0),
    ("z", 1.0),
    (None, 0.0),
]


@pytest.mark.parametrize(("value", "expected"), T17, ids=[f"T17-{v}" for v, _ in T17])
def test_t17_cdf_string(value: str | None, expected: float) -> None:
    assert CDF_STR.transform(value) == expected


def test_cdf_string_uses_utf16_order() -> None:
    # U+FF5E sorts after U+1F600 in UTF-16 code units (surrogates D83D < FF5E).
    t = CDFStringQuantilesTransformation(("\U0001f600", "\uff5e"))
    assert t.transform("\U0001f600") == 0.0
    assert t.transform("\uff5e") == 1.0


def test_string_histogram() -> None:
    t = StringHistogramTransformation(DEFAULT_HISTOGRAM)
    assert t.is_default
    assert t.transform("m") == 12 / 25
    assert t.transform(None) == 13 / 25  # hashed as "null", between "n" and "o"
    assert t.transform("5") == 0.0
    assert t.transform("zz") == 1.0


# ---- make_transformation -----------------------------------------------------------------------

LIN = LinearTransformer("id", INT)

MAKE_CASES = [
    ("linear-no-stats", LIN, None, IdentityTransformation(None, INT)),
    ("linear-all-null", LIN, ColumnStats(), IdentityTransformation(None, INT)),
    ("linear-min-eq-max", LIN, ColumnStats(5, 5), IdentityTransformation(5, INT)),
    ("linear-min-only", LIN, ColumnStats(min=3), IdentityTransformation(3, INT)),
    ("linear-max-only", LIN, ColumnStats(max=9), IdentityTransformation(9, INT)),
    (
        "cdf-no-quantiles",
        CDFNumericQuantilesTransformer("x", INT),
        ColumnStats(1, 2),
        EmptyTransformation(),
    ),
    (
        "cdf-numeric",
        CDFNumericQuantilesTransformer("x", INT),
        ColumnStats(quantiles=(0, 5, 10)),
        CDFNumericQuantilesTransformation((0.0, 5.0, 10.0), INT),
    ),
    ("cdf-string-none", CDFStringQuantilesTransformer("s"), None, EmptyTransformation()),
    (
        "cdf-string",
        CDFStringQuantilesTransformer("s"),
        ColumnStats(quantiles=("a", "b")),
        CDFStringQuantilesTransformation(("a", "b")),
    ),
    (
        "histogram-default",
        StringHistogramTransformer("s", QDataType.STRING),
        None,
        StringHistogramTransformation(DEFAULT_HISTOGRAM),
    ),
    ("empty", EmptyTransformer("a"), ColumnStats(1, 2), EmptyTransformation()),
]


@pytest.mark.parametrize(
    ("transformer", "stats", "expected"),
    [c[1:] for c in MAKE_CASES],
    ids=[c[0] for c in MAKE_CASES],
)
def test_make_transformation(
    transformer: object, stats: ColumnStats | None, expected: object
) -> None:
    assert transformer.make_transformation(stats, rng()) == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("data_type", "low", "high"),
    [
        (INT, 1, 4000000),
        (LONG, -(2**62), 2**62),
        (DOUBLE, -1.5, 2.5),
        (FLOAT, 0.1, 0.2),
        (QDataType.DECIMAL, 0.0, 1.0),
        (QDataType.TIMESTAMP, 0, 10**12),
        (QDataType.DATE, 0, 86_400_000 * 3),
    ],
    ids=lambda v: str(v),
)
def test_linear_make_draws_null_in_range(data_type: QDataType, low: float, high: float) -> None:
    for seed in range(20):
        t = LinearTransformer("c", data_type).make_transformation(
            ColumnStats(low, high), random.Random(seed)
        )
        assert isinstance(t, LinearTransformation)
        assert t.min_number <= t.null_value < t.max_number or t.null_value == t.max_number
        assert isinstance(t.null_value, int if data_type.is_integral else float)
        if data_type is FLOAT:
            assert isinstance(t.null_value, Float32)


def test_linear_make_converts_datetimes_and_rejects_inverted_bounds() -> None:
    t = LinearTransformer("ts", QDataType.TIMESTAMP).make_transformation(
        ColumnStats(dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1970, 1, 2, tzinfo=UTC)), rng()
    )
    assert isinstance(t, LinearTransformation) and (t.min_number, t.max_number) == (0, 86_400_000)
    with pytest.raises(InvalidOptionError, match="greater than max"):
        LIN.make_transformation(ColumnStats(10, 1), rng())


def test_hash_make_draws_int32() -> None:
    values = {
        HashTransformer("n", QDataType.STRING)
        .make_transformation(None, random.Random(s))
        .null_value
        for s in range(50)
    }  # type: ignore[attr-defined]
    assert len(values) > 40
    assert all(isinstance(v, int) and -(2**31) <= v < 2**31 for v in values)


def test_cdf_needs_two_quantiles() -> None:
    with pytest.raises(InvalidOptionError, match="at least 2 quantiles"):
        CDFNumericQuantilesTransformer("x", INT).make_transformation(
            ColumnStats(quantiles=(1,)), rng()
        )


@pytest.mark.parametrize(
    ("transformer", "spec", "type_name"),
    [
        (LinearTransformer("id", INT), "id:linear", "linear"),
        (HashTransformer("name", QDataType.STRING), "name:hashing", "hashing"),
        (CDFNumericQuantilesTransformer("x", INT), "x:quantiles", "quantiles"),
        (CDFStringQuantilesTransformer("s"), "s:quantiles", "quantiles"),
        (StringHistogramTransformer("a", QDataType.STRING), "a:histogram", "histogram"),
        (EmptyTransformer("a"), "a:empty", "empty"),
    ],
    ids=["linear", "hashing", "quantiles-num", "quantiles-str", "histogram", "empty"],
)
def test_transformer_spec(transformer: object, spec: str, type_name: str) -> None:
    assert transformer.spec == spec  # type: ignore[attr-defined]
    assert transformer.type_name == type_name  # type: ignore[attr-defined]


# ---- isSupersededBy / merge (§4.7) -------------------------------------------------------------

L010 = LinearTransformation(0, 10, 5, INT)
ID5 = IdentityTransformation(5, INT)
IDN = IdentityTransformation(None, INT)
HASH = HashTransformation(1)
EMPTY = EmptyTransformation()
Q1 = CDFNumericQuantilesTransformation((0, 10), INT)
Q2 = CDFNumericQuantilesTransformation((0, 20), INT)
S1 = CDFStringQuantilesTransformation(("a", "z"))
S2 = CDFStringQuantilesTransformation(("a", "m", "z"))
HD = StringHistogramTransformation(DEFAULT_HISTOGRAM)
H1 = StringHistogramTransformation(("a", "m"))
H2 = StringHistogramTransformation(("b", "n"))

SUPERSEDED = [
    ("linear-same", L010, LinearTransformation(0, 10, 3, INT), False),
    ("linear-narrower", L010, LinearTransformation(2, 8, 3, INT), False),
    ("linear-lower-min", L010, LinearTransformation(-1, 10, 3, INT), True),
    ("linear-higher-max", L010, LinearTransformation(0, 11, 3, INT), True),
    ("linear-other-type", L010, LinearTransformation(0, 10, 3, LONG), True),
    ("linear-identity-inside", L010, ID5, False),
    ("linear-identity-outside", L010, IdentityTransformation(11, INT), True),
    ("linear-identity-null", L010, IDN, False),
    ("linear-identity-other-type", L010, IdentityTransformation(5, LONG), True),
    ("linear-empty", L010, EMPTY, False),
    ("linear-hash", L010, HASH, True),
    ("identity-same", ID5, IdentityTransformation(5, INT), False),
    ("identity-null-new", ID5, IDN, False),
    ("identity-other-value", ID5, IdentityTransformation(6, INT), True),
    ("identity-null-old", IDN, ID5, True),
    ("identity-linear", ID5, L010, True),
    ("identity-empty", ID5, EMPTY, False),
    ("hash-hash", HASH, HashTransformation(2), False),
    ("hash-empty", HASH, EMPTY, False),
    ("hash-linear", HASH, L010, True),
    ("cdf-same", Q1, CDFNumericQuantilesTransformation((0, 10), INT), False),
    ("cdf-different", Q1, Q2, True),
    ("cdf-empty", Q1, EMPTY, False),
    ("cdf-linear", Q1, L010, True),
    ("cdf-str-same", S1, CDFStringQuantilesTransformation(("a", "z")), False),
    ("cdf-str-different", S1, S2, True),
    ("cdf-str-empty", S1, EMPTY, False),
    ("hist-default-default", HD, StringHistogramTransformation(DEFAULT_HISTOGRAM), False),
    ("hist-default-custom", HD, H1, True),
    ("hist-custom-default", H1, HD, False),
    ("hist-custom-other", H1, H2, True),
    ("hist-custom-same", H1, StringHistogramTransformation(("a", "m")), False),
    ("hist-empty", H1, EMPTY, False),
    ("empty-empty", EMPTY, EmptyTransformation(), False),
    ("empty-linear", EMPTY, L010, True),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), [c[1:] for c in SUPERSEDED], ids=[c[0] for c in SUPERSEDED]
)
def test_is_superseded_by(old: Transformation, new: Transformation, expected: bool) -> None:
    assert old.is_superseded_by(new) is expected


def _range(t: Transformation) -> tuple[object, ...]:
    assert isinstance(t, LinearTransformation)
    assert t.min_number <= t.null_value <= t.max_number
    return (t.min_number, t.max_number, t.ordered_data_type)


MERGE_RANGE = [
    ("linear-linear-widens", L010, LinearTransformation(-5, 3, 0, INT), (-5, 10, INT)),
    ("linear-linear-same-range", L010, LinearTransformation(2, 8, 3, INT), (0, 10, INT)),
    ("linear-identity-outside", L010, IdentityTransformation(20, INT), (0, 20, INT)),
    ("identity-linear-outside", IdentityTransformation(-3, INT), L010, (-3, 10, INT)),
    ("identity-identity-differ", ID5, IdentityTransformation(9, INT), (5, 9, INT)),
    ("identity-identity-differ-rev", ID5, IdentityTransformation(1, INT), (1, 5, INT)),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), [c[1:] for c in MERGE_RANGE], ids=[c[0] for c in MERGE_RANGE]
)
def test_merge_builds_linear(
    old: Transformation, new: Transformation, expected: tuple[object, ...]
) -> None:
    assert _range(old.merge(new, rng())) == expected


MERGE_SAME = [
    ("linear-identity-null", L010, IDN, "old"),
    ("linear-empty", L010, EMPTY, "old"),
    ("linear-other-type", L010, LinearTransformation(0, 10, 3, LONG), "new"),
    ("linear-hash", L010, HASH, "new"),
    ("identity-linear-inside", ID5, L010, "new"),
    ("identity-null-linear", IDN, L010, "new"),
    ("identity-identity-null", ID5, IDN, "old"),
    ("identity-null-identity", IDN, ID5, "new"),
    ("identity-identity-equal", ID5, IdentityTransformation(5, INT), "old"),
    ("identity-empty", ID5, EMPTY, "old"),
    ("identity-hash", ID5, HASH, "new"),
    ("hash-empty", HASH, EMPTY, "old"),
    ("hash-linear", HASH, L010, "new"),
    ("cdf-empty", Q1, EMPTY, "old"),
    ("cdf-other", Q1, Q2, "new"),
    ("cdf-str-other", S1, S2, "new"),
    ("hist-empty", H1, EMPTY, "old"),
    ("hist-other", H1, H2, "new"),
    ("empty-linear", EMPTY, L010, "new"),
    ("empty-empty", EMPTY, EmptyTransformation(), "new"),
]


@pytest.mark.parametrize(
    ("old", "new", "which"), [c[1:] for c in MERGE_SAME], ids=[c[0] for c in MERGE_SAME]
)
def test_merge_keeps_one_side(old: Transformation, new: Transformation, which: str) -> None:
    merged = old.merge(new, rng())
    assert merged is (old if which == "old" else new)


def test_merge_draws_a_new_null_value() -> None:
    nulls = {
        L010.merge(LinearTransformation(0, 1000, 1, INT), random.Random(s)).null_value
        for s in range(20)
    }  # type: ignore[attr-defined]
    assert len(nulls) > 10


# ---- invariants --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: LinearTransformation(0, 10, 1.5, INT),
        lambda: LinearTransformation(0, 2**31, 1, INT),
        lambda: LinearTransformation(10, 0, 1, INT),
        lambda: LinearTransformation(1.0, 1.0, 1.0, DOUBLE),
        lambda: LinearTransformation(0.0, math.nan, 1.0, DOUBLE),
        lambda: LinearTransformation(0.0, math.inf, 1.0, DOUBLE),
        lambda: LinearTransformation(0, 10, None, INT),
        lambda: LinearTransformation("a", "b", "a", QDataType.STRING),
        lambda: IdentityTransformation("x", INT),
        lambda: CDFNumericQuantilesTransformation((0.0,), DOUBLE),
        lambda: CDFStringQuantilesTransformation(("a", 1)),
        lambda: HashTransformation(math.nan),
        lambda: LinearTransformer("s", QDataType.STRING),
        lambda: LinearTransformer("", INT),
    ],
    ids=[
        "int-with-fraction",
        "int-overflow",
        "min-above-max",
        "min-equals-max",
        "nan",
        "infinity",
        "null-none",
        "string-linear",
        "identity-string",
        "one-quantile",
        "mixed-quantiles",
        "hash-nan",
        "linear-transformer-on-string",
        "empty-column-name",
    ],
)
def test_invalid_models_are_rejected(build: object) -> None:
    with pytest.raises(InvalidOptionError):
        build()  # type: ignore[operator]


def test_values_are_normalized_to_the_data_type() -> None:
    d = LinearTransformation(0, 10, 5, DOUBLE)
    assert (type(d.min_number), type(d.max_number), type(d.null_value)) == (float, float, float)
    i = LinearTransformation(0.0, 10.0, 5.0, INT)
    assert (type(i.min_number), type(i.null_value)) == (int, int)
    f = LinearTransformation(0.1, 0.2, 0.15, FLOAT)
    assert isinstance(f.min_number, Float32) and f.min_number == to_float32(0.1)
    assert LinearTransformation(Decimal("1.5"), 3, 2, QDataType.DECIMAL).min_number == 1.5
    assert LinearTransformation(0, 10, 5, "IntegerDataType").ordered_data_type is INT


def test_models_are_hashable_and_picklable() -> None:
    for t in (L010, ID5, HASH, EMPTY, Q1, S1, H1, LIN, CDFStringQuantilesTransformer("s")):
        assert pickle.loads(pickle.dumps(t)) == t
        hash(t)
    assert pickle.loads(pickle.dumps(L010)).transform(5) == 0.5


# ---- JSON --------------------------------------------------------------------------------------

TRANSFORMER_JSON = [
    (
        "linear",
        f'{{"className":"{P}LinearTransformer","columnName":"id","dataType":"IntegerDataType"}}',
    ),
    (
        "hash",
        f'{{"className":"{P}HashTransformer","columnName":"name","dataType":"StringDataType"}}',
    ),
    (
        "cdf-numeric",
        f'{{"className":"{P}CDFNumericQuantilesTransformer","columnName":"x","orderedDataType":"IntegerDataType"}}',
    ),
    ("cdf-string", f'{{"className":"{P}CDFStringQuantilesTransformer","columnName":"s"}}'),
    (
        "histogram",
        f'{{"className":"{P}StringHistogramTransformer","columnName":"s","dataType":"StringDataType"}}',
    ),
    ("empty", f'{{"className":"{P}EmptyTransformer","columnName":"id"}}'),
]


@pytest.mark.parametrize(
    "text", [t for _, t in TRANSFORMER_JSON], ids=[i for i, _ in TRANSFORMER_JSON]
)
def test_transformer_json_round_trip(text: str) -> None:
    t = transformer_from_json(json.loads(text))
    assert dumps(transformer_to_json(t)) == text


TRANSFORMATION_JSON = [
    (
        "linear-int",
        f'{{"className":"{P}LinearTransformation","minNumber":1,"maxNumber":4000000,"nullValue":2836883,"orderedDataType":"IntegerDataType"}}',
    ),
    (
        "linear-double",
        f'{{"className":"{P}LinearTransformation","minNumber":0.0,"maxNumber":1.0E7,"nullValue":1234.5,"orderedDataType":"DoubleDataType"}}',
    ),
    (
        "linear-double-small",
        f'{{"className":"{P}LinearTransformation","minNumber":-1.0E-4,"maxNumber":0.001,"nullValue":2.5E-4,"orderedDataType":"DoubleDataType"}}',
    ),
    (
        "linear-float",
        f'{{"className":"{P}LinearTransformation","minNumber":2.5,"maxNumber":1.0E10,"nullValue":0.1,"orderedDataType":"FloatDataType"}}',
    ),
    (
        "linear-decimal",
        f'{{"className":"{P}LinearTransformation","minNumber":-12.5,"maxNumber":99.99,"nullValue":3.0,"orderedDataType":"DecimalDataType"}}',
    ),
    (
        "linear-timestamp",
        f'{{"className":"{P}LinearTransformation","minNumber":1704067200000,"maxNumber":1735689599999,"nullValue":1720000000000,"orderedDataType":"TimestampDataType"}}',
    ),
    (
        "linear-long",
        f'{{"className":"{P}LinearTransformation","minNumber":-5000000000,"maxNumber":5000000000,"nullValue":0,"orderedDataType":"LongDataType"}}',
    ),
    (
        "identity-null",
        f'{{"className":"{P}IdentityTransformation","identityValue":null,"orderedDataType":"DoubleDataType"}}',
    ),
    (
        "identity-int",
        f'{{"className":"{P}IdentityTransformation","identityValue":7,"orderedDataType":"IntegerDataType"}}',
    ),
    ("hash", f'{{"className":"{P}HashTransformation","nullValue":-1628776639}}'),
    ("hash-string-null", f'{{"className":"{P}HashTransformation","nullValue":"null"}}'),
    (
        "cdf-numeric",
        f'{{"className":"{P}CDFNumericQuantilesTransformation","quantiles":[0.0,10.0,2.5E7],"dataType":"IntegerDataType"}}',
    ),
    (
        "cdf-string",
        f'{{"className":"{P}CDFStringQuantilesTransformation","quantiles":["a","c","é"]}}',
    ),
    ("histogram", f'{{"className":"{P}StringHistogramTransformation","histogram":["a","b"]}}'),
    ("empty", f'{{"className":"{P}EmptyTransformation"}}'),
]


@pytest.mark.parametrize(
    "text", [t for _, t in TRANSFORMATION_JSON], ids=[i for i, _ in TRANSFORMATION_JSON]
)
def test_transformation_json_round_trip(text: str) -> None:
    t = transformation_from_json(json.loads(text))
    assert dumps(transformation_to_json(t)) == text


@pytest.mark.parametrize(
    ("t", "fragment"),
    [
        (
            LinearTransformation(0, 10, 5, DOUBLE),
            '"minNumber":0.0,"maxNumber":10.0,"nullValue":5.0',
        ),
        (LinearTransformation(0.0, 10.0, 5.0, INT), '"minNumber":0,"maxNumber":10,"nullValue":5'),
        (LinearTransformation(0, 1e7, 1e-4, DOUBLE), '"maxNumber":1.0E7,"nullValue":1.0E-4'),
        (LinearTransformation(0, 1e10, 0.1, FLOAT), '"maxNumber":1.0E10,"nullValue":0.1'),
        (IdentityTransformation(3, DOUBLE), '"identityValue":3.0'),
        (CDFNumericQuantilesTransformation((0, 1), INT), '"quantiles":[0.0,1.0]'),
    ],
    ids=[
        "double-ints-become-floats",
        "int-floats-become-ints",
        "java-exponents",
        "float32",
        "identity-double",
        "quantiles-doubles",
    ],
)
def test_strict_number_kinds_when_writing(t: Transformation, fragment: str) -> None:
    assert fragment in dumps(transformation_to_json(t))


def test_class_name_comes_first() -> None:
    obj = transformation_to_json(L010)
    assert next(iter(obj)) == "className"
    assert next(iter(transformer_to_json(LIN))) == "className"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"className": P + "Nope"}, "unknown transformation className"),
        ({"minNumber": 1}, "no className"),
        (
            {
                "className": P + "LinearTransformation",
                "minNumber": 1.0,
                "maxNumber": 2,
                "nullValue": 1,
                "orderedDataType": "IntegerDataType",
            },
            "integer literals",
        ),
        (
            {
                "className": P + "LinearTransformation",
                "minNumber": None,
                "maxNumber": 2,
                "nullValue": 1,
                "orderedDataType": "IntegerDataType",
            },
            "is null",
        ),
        (
            {
                "className": P + "LinearTransformation",
                "maxNumber": 2,
                "orderedDataType": "IntegerDataType",
            },
            "no 'minNumber'",
        ),
        (
            {
                "className": P + "LinearTransformation",
                "minNumber": 5,
                "maxNumber": 2,
                "nullValue": 3,
                "orderedDataType": "IntegerDataType",
            },
            "max > min",
        ),
        (
            {
                "className": P + "LinearTransformation",
                "minNumber": 1,
                "maxNumber": 2,
                "nullValue": 1,
                "orderedDataType": "Foo",
            },
            "unknown Qbeast data type",
        ),
        (
            {"className": P + "CDFStringQuantilesTransformation", "quantiles": ["a", 1]},
            "array of strings",
        ),
        ({"className": P + "HashTransformation", "nullValue": [1]}, "scalar"),
    ],
    ids=[
        "unknown-class",
        "no-class",
        "int-with-float-literal",
        "null-bound",
        "missing-bound",
        "inverted",
        "bad-type",
        "bad-quantiles",
        "hash-array",
    ],
)
def test_transformation_json_errors(obj: dict[str, object], message: str) -> None:
    with pytest.raises(MetadataFormatError, match=message):
        transformation_from_json(obj)


def test_transformer_json_errors() -> None:
    with pytest.raises(MetadataFormatError, match="unknown column transformer"):
        transformer_from_json({"className": P + "Bogus", "columnName": "a"})
    with pytest.raises(MetadataFormatError, match="columnName"):
        transformer_from_json({"className": P + "LinearTransformer", "dataType": "IntegerDataType"})
    with pytest.raises(MetadataFormatError, match="ordered type"):
        transformer_from_json(
            {"className": P + "LinearTransformer", "columnName": "s", "dataType": "StringDataType"}
        )


def test_unknown_fields_are_ignored_and_lenient_doubles() -> None:
    t = transformation_from_json(
        {
            "className": P + "LinearTransformation",
            "minNumber": 0,
            "maxNumber": 10,
            "nullValue": 5,
            "orderedDataType": "DoubleDataType",
            "extra": {"x": 1},
        }
    )
    assert t == LinearTransformation(0.0, 10.0, 5.0, DOUBLE)
    long_from_float = transformation_from_json(
        {
            "className": P + "LinearTransformation",
            "minNumber": 0,
            "maxNumber": 1.5e12,
            "nullValue": 7.9,
            "orderedDataType": "LongDataType",
        }
    )
    assert long_from_float == LinearTransformation(0, 1_500_000_000_000, 7, LONG)


def test_hash_transformation_without_null_value() -> None:
    t = transformation_from_json({"className": P + "HashTransformation"})
    assert t == HashTransformation(None)
    assert dumps(transformation_to_json(t)) == f'{{"className":"{P}HashTransformation"}}'


@pytest.mark.parametrize(
    ("obj", "hint", "expected"),
    [
        (
            {"className": P + "IdentityToZeroTransformation", "identityValue": 5},
            None,
            IdentityTransformation(5, INT),
        ),
        (
            {"className": P + "IdentityToZeroTransformation", "identityValue": 5},
            LONG,
            IdentityTransformation(5, LONG),
        ),
        (
            {"className": P + "IdentityToZeroTransformation", "identityValue": 2.5},
            None,
            IdentityTransformation(2.5, DOUBLE),
        ),
        (
            {"className": P + "NullToZeroTransformation$"},
            None,
            IdentityTransformation(None, DOUBLE),
        ),
        (
            {"className": P + "NullToZeroTransformation$"},
            "DateDataType",
            IdentityTransformation(None, QDataType.DATE),
        ),
    ],
    ids=[
        "identity-to-zero",
        "identity-to-zero-hint",
        "identity-to-zero-double",
        "null-to-zero",
        "null-to-zero-hint",
    ],
)
def test_legacy_identity_classes(
    obj: dict[str, object], hint: object, expected: Transformation
) -> None:
    assert transformation_from_json(obj, data_type=hint) == expected  # type: ignore[arg-type]


# ---- legacy null value (T15, T27) --------------------------------------------------------------


def test_t15_legacy_linear_null_value() -> None:
    text = (
        f'{{"className":"{P}LinearTransformation",'
        '"minNumber":0,"maxNumber":10,"orderedDataType":"IntegerDataType"}'
    )
    t = transformation_from_json(json.loads(text))
    assert t == LinearTransformation(0, 10, 7, INT)
    # Once loaded, the null value is written explicitly.
    assert '"nullValue":7' in dumps(transformation_to_json(t))


def test_t15_class_name_position_does_not_matter() -> None:
    text = (
        f'{{"minNumber":0,"maxNumber":10,"className":"{P}LinearTransformation",'
        '"orderedDataType":"IntegerDataType"}'
    )
    assert transformation_from_json(json.loads(text)).null_value == 7  # type: ignore[attr-defined]


def test_t27_jackson_tree_text() -> None:
    raw = (
        f'{{"minNumber":0, "className":"{P}LinearTransformation", "maxNumber":1e1, '
        '"orderedDataType":"IntegerDataType"}'
    )
    assert jackson_tree_text(json.loads(raw)) == (
        '{"minNumber":0,"maxNumber":10.0,"orderedDataType":"IntegerDataType"}'
    )


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        ({"a": 10000000000.0}, '{"a":1.0E10}'),
        ({"a": 1}, '{"a":1}'),
        ({"a": 'x\u0001"\\/é\n'}, '{"a":"x\\u0001\\"\\\\/é\\n"}'),
        ({"a": "\u001f"}, '{"a":"\\u001F"}'),
        ({"a": [1, 2.5, None, True]}, '{"a":[1,2.5,null,true]}'),
        ({"unknown": {"k": 1}, "className": "x"}, '{"unknown":{"k":1}}'),
    ],
    ids=["float-exponent", "int", "escapes", "uppercase-hex", "array", "nested-and-class-dropped"],
)
def test_jackson_tree_text_rendering(obj: dict[str, object], text: str) -> None:
    assert jackson_tree_text(obj) == text


@pytest.mark.parametrize(
    ("data_type", "low", "high"),
    [
        ("LongDataType", 0, 10),
        ("DoubleDataType", 0.0, 10.0),
        ("IntegerDataType", -(2**31), 2**31 - 1),
    ],
    ids=["long", "double", "int-wraps"],
)
def test_legacy_null_value_formula(data_type: str, low: float, high: float) -> None:
    from qbeast_connect.model.hashing import JavaRandom, scala_string_hash

    obj = {
        "className": P + "LinearTransformation",
        "minNumber": low,
        "maxNumber": high,
        "orderedDataType": data_type,
    }
    r = JavaRandom(scala_string_hash(jackson_tree_text(obj))).next_double()
    t = transformation_from_json(obj)
    assert isinstance(t, LinearTransformation)
    if data_type == "DoubleDataType":
        assert t.null_value == low + r * (high - low)
    elif data_type == "LongDataType":
        assert t.null_value == low + int(r * (high - low))
    else:
        # max - min wraps to -1 in int32: null = min + trunc(r * -1) = min
        assert t.null_value == low


def test_nan_is_never_written() -> None:
    with pytest.raises(InvalidOptionError, match="NaN"):
        dumps({"x": math.nan})


def test_longs_that_are_one_double_are_refused_naming_the_column_and_hashing() -> None:
    """Issue 36: distinct longs near 2**63 were refused as 'needs max > min'."""
    import random

    from qbeast_connect.exceptions import UnsupportedInputError
    from qbeast_connect.model.transformation.datatypes import QDataType
    from qbeast_connect.model.transformation.linear import LinearTransformer

    top = 2**63 - 1
    transformer = LinearTransformer("v", QDataType.LONG)
    with pytest.raises(UnsupportedInputError, match=r"column 'v' holds values from .*hashing"):
        transformer.make_transformation(ColumnStats(top - 299, top), random.Random(0))
    wide = transformer.make_transformation(ColumnStats(top - 5000, top), random.Random(0))
    assert wide.transform(top) == 1.0
