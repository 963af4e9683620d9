"""columnsToIndex parsing, Spark type mapping, transformer choice (spec §4.1)."""

from __future__ import annotations

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.column_spec import (
    ColumnSpec,
    parse_columns_to_index,
    qdatatype_for_spark_type,
    transformer_for,
)
from qbeast_connect.model.transformation import (
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformer,
    HashTransformer,
    LinearTransformer,
    QDataType,
    StringHistogramTransformer,
)

PARSE_CASES = [
    ("single", "id", (("id", None),)),
    ("two", "id,name", (("id", None), ("name", None))),
    ("typed", "a:linear,b:hashing", (("a", "linear"), ("b", "hashing"))),
    ("case-insensitive-type", "a:LINEAR,b:Quantiles", (("a", "linear"), ("b", "quantiles"))),
    ("hash-alias", "b:hash", (("b", "hashing"),)),
    ("histogram", "s:histogram", (("s", "histogram"),)),
    ("whitespace-stripped", " a , b : hashing ", (("a", None), ("b", "hashing"))),
    ("keeps-name-case", "UserId", (("UserId", None),)),
    ("underscores", "user_id,event_time", (("user_id", None), ("event_time", None))),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in PARSE_CASES], ids=[c[0] for c in PARSE_CASES]
)
def test_parse_columns_to_index(text: str, expected: tuple[tuple[str, str | None], ...]) -> None:
    specs = parse_columns_to_index(text)
    assert tuple((s.name, s.transformer_type) for s in specs) == expected


ERROR_CASES = [
    ("empty", "", "columnsToIndex is empty"),
    ("blank", "   ", "columnsToIndex is empty"),
    ("empty-item", "a,,b", "invalid item ''"),
    ("trailing-comma", "a,", "invalid item ''"),
    ("unknown-type", "a:zorder", "unknown transformer type 'zorder'"),
    ("empty-type", "a:", "unknown transformer type ''"),
    ("two-colons", "a:linear:x", "invalid item 'a:linear:x'"),
    ("no-name", ":linear", "invalid item ':linear'"),
    ("duplicate", "a,b,A", "appears twice"),
    ("duplicate-typed", "a:linear,a:hashing", "appears twice"),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message) as info:
        parse_columns_to_index(text)
    if "type" in message:
        assert "linear, hashing, hash, quantiles, histogram" in str(info.value)


def test_column_spec() -> None:
    assert ColumnSpec("a", "HASH").transformer_type == "hashing"
    assert ColumnSpec("a", "hashing").spec == "a:hashing"
    assert ColumnSpec("a").spec == "a"
    with pytest.raises(InvalidOptionError):
        ColumnSpec("a", "nope")
    with pytest.raises(InvalidOptionError):
        ColumnSpec("")


SPARK_TYPES = [
    ("integer", QDataType.INTEGER),
    ("int", QDataType.INTEGER),
    ("long", QDataType.LONG),
    ("bigint", QDataType.LONG),
    ("double", QDataType.DOUBLE),
    ("float", QDataType.FLOAT),
    ("decimal(10,2)", QDataType.DECIMAL),
    ("decimal(38, 18)", QDataType.DECIMAL),
    ("DECIMAL", QDataType.DECIMAL),
    ("timestamp", QDataType.TIMESTAMP),
    ("date", QDataType.DATE),
    ("string", QDataType.STRING),
    ("short", QDataType.INTEGER),
    ("byte", QDataType.INTEGER),
    ("boolean", QDataType.INTEGER),
]


@pytest.mark.parametrize(("spark", "qtype"), SPARK_TYPES, ids=[s for s, _ in SPARK_TYPES])
def test_qdatatype_for_spark_type(spark: str, qtype: QDataType) -> None:
    assert qdatatype_for_spark_type(spark) is qtype


@pytest.mark.parametrize(
    "spark", ["binary", "timestamp_ntz", "array<int>", "struct<a:int>", "map<string,int>"]
)
def test_unsupported_spark_types(spark: str) -> None:
    with pytest.raises(InvalidOptionError, match=r"column 'c' has type .* cannot be indexed"):
        qdatatype_for_spark_type(spark, column="c")


TRANSFORMER_CASES = [
    ("default-ordered", ColumnSpec("a"), QDataType.LONG, LinearTransformer("a", QDataType.LONG)),
    ("default-string", ColumnSpec("s"), QDataType.STRING, HashTransformer("s", QDataType.STRING)),
    (
        "linear",
        ColumnSpec("a", "linear"),
        QDataType.DOUBLE,
        LinearTransformer("a", QDataType.DOUBLE),
    ),
    (
        "hash-number",
        ColumnSpec("a", "hash"),
        QDataType.INTEGER,
        HashTransformer("a", QDataType.INTEGER),
    ),
    (
        "quantiles-number",
        ColumnSpec("a", "quantiles"),
        QDataType.DECIMAL,
        CDFNumericQuantilesTransformer("a", QDataType.DECIMAL),
    ),
    (
        "quantiles-string",
        ColumnSpec("s", "quantiles"),
        QDataType.STRING,
        CDFStringQuantilesTransformer("s"),
    ),
    (
        "histogram",
        ColumnSpec("s", "histogram"),
        "StringDataType",
        StringHistogramTransformer("s", QDataType.STRING),
    ),
]


@pytest.mark.parametrize(
    ("spec", "data_type", "expected"),
    [c[1:] for c in TRANSFORMER_CASES],
    ids=[c[0] for c in TRANSFORMER_CASES],
)
def test_transformer_for(spec: ColumnSpec, data_type: QDataType, expected: object) -> None:
    assert transformer_for(spec, data_type) == expected


@pytest.mark.parametrize(
    ("spec", "data_type", "message"),
    [
        (ColumnSpec("s", "linear"), QDataType.STRING, "cannot use 'linear'"),
        (ColumnSpec("a", "histogram"), QDataType.INTEGER, "only applies to strings"),
        (ColumnSpec("t", "hashing"), QDataType.TIMESTAMP, "cannot use 'hashing'"),
        (ColumnSpec("d", "hashing"), QDataType.DATE, "cannot use 'hashing'"),
    ],
    ids=["linear-string", "histogram-number", "hash-timestamp", "hash-date"],
)
def test_transformer_misfits(spec: ColumnSpec, data_type: QDataType, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        transformer_for(spec, data_type)
