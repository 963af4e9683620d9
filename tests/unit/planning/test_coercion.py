"""Binding predicates to the schema: literals coerced as Spark coerces them, or no pruning."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from functools import reduce
from typing import Any

import pyarrow as pa
import pytest

from qbeast_connect.model import (
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    QDataType,
    Revision,
)
from qbeast_connect.planning.coercion import bind_for_pruning, column_types, is_utc
from qbeast_connect.planning.file_planner import file_may_match
from qbeast_connect.planning.predicate import (
    FALSE,
    And,
    Comparison,
    IsNotNull,
    Opaque,
    Or,
    Predicate,
    from_sql,
    to_dnf,
)
from qbeast_connect.planning.query_space import ALL_SPACE, Box, Boxes, query_space
from qbeast_connect.spark.columns import from_column

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": True, "metadata": {}}
            for n, t in (
                ("i", "integer"), ("l", "long"), ("x", "double"), ("f", "float"),
                ("dec", "decimal(10,2)"), ("s", "string"), ("d", "date"), ("ts", "timestamp"),
                ("b", "boolean"), ("ntz", "timestamp_ntz"),
            )
        ]
        + [{"name": "st", "type": {"type": "struct", "fields": []}, "nullable": True,
            "metadata": {}}],
    }
)  # fmt: skip
TYPES = column_types(SCHEMA)


def bind(p: str | Predicate, utc: bool = True) -> Predicate:
    return bind_for_pruning(from_sql(p) if isinstance(p, str) else p, TYPES, utc=utc)


def stats(column: str, low: Any, high: Any, rows: int = 10, nulls: int = 0) -> str:
    return json.dumps(
        {
            "numRecords": rows,
            "minValues": {column: low},
            "maxValues": {column: high},
            "nullCount": {column: nulls},
        }
    )


def may_match(p: Predicate, file_stats: str) -> bool:
    return file_may_match(to_dnf(p), file_stats)


# --- the issues' cases -------------------------------------------------------------------


def test_date_column_compared_with_a_timestamp_string_keeps_the_day() -> None:
    bound = bind("d = '2024-04-09 12:00'")
    assert bound == Comparison("d", "=", dt.date(2024, 4, 9))
    # the file whose max date is that day holds the rows Spark returns
    assert may_match(bound, stats("d", "2024-04-01", "2024-04-09"))
    assert not may_match(bound, stats("d", "2024-04-10", "2024-04-30"))


def test_timestamp_column_compared_with_a_string_is_read_in_utc() -> None:
    bound = bind("ts = '2024-01-05 07:00:00'")
    assert bound == Comparison("ts", "=", dt.datetime(2024, 1, 5, 7, tzinfo=dt.UTC))
    file = stats("ts", "2024-01-05T03:00:00.000Z", "2024-01-05T09:00:00.000Z")
    assert may_match(bound, file)
    # another session time zone: a zone-less literal means another instant, so no pruning
    assert isinstance(bind("ts = '2024-01-05 07:00:00'", utc=False), Opaque)
    assert isinstance(bind("ts < TIMESTAMP '2024-01-05 07:00:00'", utc=False), Opaque)
    assert bind("d < DATE '2024-01-05'", utc=False) == Comparison("d", "<", dt.date(2024, 1, 5))


def test_nan_equality_keeps_files_whose_bounds_hold_no_nan() -> None:
    bound = bind(Comparison("x", "=", math.nan))
    assert isinstance(bound, Comparison) and math.isnan(bound.value)
    assert may_match(bound, stats("x", -5.0, 5.0))
    assert not may_match(bound, stats("x", None, None, rows=10, nulls=10))


def test_greater_than_keeps_files_that_may_hold_nan() -> None:
    # Spark orders NaN above every double: NaN > 50 is TRUE, and min/max never show NaN
    assert may_match(bind("x > 50"), stats("x", -5.0, 5.0))
    assert may_match(bind("x >= 50"), stats("x", -5.0, 5.0))
    assert not may_match(bind("x < -50"), stats("x", -5.0, 5.0))
    assert not may_match(bind(Comparison("x", ">", math.nan)), stats("x", -5.0, 5.0))
    # ... unless the conjunction already rules NaN rows out
    assert not may_match(bind("x >= 50 AND x < 60"), stats("x", -5.0, 5.0))
    assert not may_match(bind("x > 50 AND x = 70"), stats("x", -5.0, 5.0))
    assert may_match(bind("x > 50 AND i < 60"), stats("x", -5.0, 5.0))


def test_negative_zero_equals_zero() -> None:
    assert bind("x = -0.0") == Comparison("x", "=", 0.0)
    assert math.copysign(1.0, bind("x = -0.0D").value) == 1.0  # type: ignore[attr-defined]
    assert may_match(bind("x = -0.0"), stats("x", 0.0, 3.0))
    assert may_match(bind("x = 0.0D"), stats("x", -0.0, -0.0))
    assert not may_match(bind("x < -0.0"), stats("x", 1.0, 3.0))


def test_negative_zero_reaches_both_quantile_buckets() -> None:
    # Java's order puts -0.0 below 0.0, so a quantile index may place them apart
    t = CDFNumericQuantilesTransformation((-1.0, -0.0, 0.0, 1.0), QDataType.DOUBLE)
    rev = Revision(1, 0, "t", 10, (CDFNumericQuantilesTransformer("z", QDataType.DOUBLE),), (t,))
    low, high = t.transform(-0.0), t.transform(0.0)
    assert low < high
    for text in ("z = 0.0", "z = -0.0", "z = 0"):
        space = query_space(rev, bind_for_pruning(from_sql(text), column_types(
            {"fields": [{"name": "z", "type": "double"}]}), utc=True))  # fmt: skip
        assert isinstance(space, Boxes)
        box = space.boxes[0]
        assert (box.from_[0] or 0.0) <= low and (1.0 if box.to[0] is None else box.to[0]) >= high


# --- coercions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i < 2.5", Comparison("i", "<", 3)),
        ("i <= 2.5D", Comparison("i", "<=", 2)),
        ("i > -2.5", Comparison("i", ">", -3)),
        ("i >= 2.0", Comparison("i", ">=", 2)),
        ("i = 1.5", FALSE),
        ("i = 2.0D", Comparison("i", "=", 2)),
        ("l < 9007199254740991.5D", None),  # LONG → DOUBLE rounds there
        ("x = 3", Comparison("x", "=", 3.0)),
        ("x < 1.25", Comparison("x", "<", 1.25)),
        ("f = 16777217", None),  # compared in FLOAT, where it rounds
        ("dec = 1.255", Comparison("dec", "=", Decimal("1.255"))),
        ("dec > 3", Comparison("dec", ">", Decimal(3))),
        ("s = 'a'", Comparison("s", "=", "a")),
        ("s = 1", None),
        ("i = '1'", None),
        ("d = '2024-1-5'", None),
        ("d = 'not a date'", None),
        ("d >= TIMESTAMP '2024-01-05 06:00:00'", Comparison("d", ">=", dt.date(2024, 1, 6))),
        ("d > TIMESTAMP '2024-01-05 06:00:00'", Comparison("d", ">", dt.date(2024, 1, 5))),
        ("d = TIMESTAMP '2024-01-05 06:00:00'", FALSE),
        ("ts >= DATE '2024-01-05'", Comparison("ts", ">=", dt.datetime(2024, 1, 5, tzinfo=dt.UTC))),
        ("b = TRUE", Comparison("b", "=", True)),
        ("b = 1", None),
        ("ntz = TIMESTAMP '2024-01-05 06:00:00'", None),
        ("nope = 1", None),
        ("I < 2.5", Comparison("I", "<", 3)),
        ("i = NULL", FALSE),
    ],
)
def test_literals_are_coerced_like_spark_or_not_used(text: str, expected: Predicate | None) -> None:
    bound = bind(text)
    if expected is None:
        assert isinstance(bound, Opaque), bound
    else:
        assert bound == expected


def test_decimal_column_against_a_double_is_widened() -> None:
    bound = bind("dec = 0.1D")
    assert isinstance(bound, And)
    low, high = bound.children
    assert isinstance(low, Comparison) and isinstance(high, Comparison)
    assert low.value < Decimal("0.1") < high.value
    assert bind(Comparison("dec", "<", math.inf)) == IsNotNull("dec")
    assert bind(Comparison("dec", "=", math.nan)) == FALSE


def test_in_lists_bind_each_value_or_none() -> None:
    assert bind("i IN (1, 2.5, 3)") == Or((Comparison("i", "=", 1), Comparison("i", "=", 3)))
    assert isinstance(bind("i IN (1, 2.5D)"), Opaque)  # mixed types: Spark picks one common type
    assert bind("d IN ('2024-01-01', '2024-01-02 10:00')") == Or(
        (Comparison("d", "=", dt.date(2024, 1, 1)), Comparison("d", "=", dt.date(2024, 1, 2)))
    )
    assert bind("NOT i IN (1, 2)") == from_sql("NOT i IN (1, 2)")  # never prunes


def test_negations_are_bound_after_nnf() -> None:
    # NOT (i = 1.5) is TRUE for every non-null i: the bound form must keep every file
    bound = bind("NOT (i = 1.5)")
    assert may_match(bound, stats("i", 1, 1))
    # Spark casts the string to the DATE 2024-04-09: NOT (d = …) is FALSE on that day
    assert not may_match(
        bind("NOT (d = '2024-04-09 12:00')"), stats("d", "2024-04-09", "2024-04-09")
    )
    assert may_match(bind("NOT (d = '2024-04-09 12:00')"), stats("d", "2024-04-09", "2024-04-10"))
    assert not may_match(
        bind("NOT (d >= '2024-04-09 12:00')"), stats("d", "2024-04-09", "2024-05-09")
    )


def test_nested_and_unknown_columns_prune_nothing() -> None:
    assert TYPES["st"] is None and TYPES["ntz"] is None
    assert isinstance(bind("st IS NULL"), type(from_sql("st IS NULL")))
    assert isinstance(bind("unknown IS NULL"), Opaque)
    dup = column_types({"fields": [{"name": "a", "type": "long"}, {"name": "A", "type": "long"}]})
    assert dup == {"a": None}
    assert is_utc("UTC") and is_utc("Etc/UTC") and not is_utc("Europe/Madrid") and not is_utc(None)


# --- predicates of any size ----------------------------------------------------------------


def test_500_ands_and_1000_ors_parse_without_recursion() -> None:
    ands = from_sql(" AND ".join(f"i <> {k}" for k in range(500)))
    ors = from_sql(" OR ".join(f"i = {k}" for k in range(1000)))
    assert isinstance(ands, And) and len(ands.children) == 500
    assert isinstance(ors, Or) and len(ors.children) == 1000
    assert may_match(bind(ors), stats("i", 10, 20))
    assert may_match(bind(ands), stats("i", 0, 1000))
    assert not may_match(bind(ands), stats("i", 0, 0))  # i <> 0 rules the file out


def test_500_ands_and_1000_ors_as_columns_translate_and_balance() -> None:
    from pyspark.sql.connect import functions as F

    from qbeast_connect.spark.balance import balanced_column

    ands = reduce(lambda a, b: a & b, [F.col("i") != k for k in range(500)])
    ors = reduce(lambda a, b: a | b, [F.col("i") == k for k in range(1000)])
    assert len(from_column(ands).children) == 500  # type: ignore[attr-defined]
    assert len(from_column(ors).children) == 1000  # type: ignore[attr-defined]

    def depth(expr: Any) -> int:
        children = getattr(expr, "_args", None) or []
        return 1 + max((depth(c) for c in children), default=0)

    balanced = balanced_column(ors)
    assert depth(balanced._expr) <= 12  # type: ignore[attr-defined]
    assert from_column(balanced) == from_column(ors)
    small = F.col("i") == 1
    assert balanced_column(small) is small


# --- parquet statistics of NaN columns -----------------------------------------------------


def test_float_columns_holding_nan_get_no_statistics_and_zeros_no_dictionary() -> None:
    from server_plugin.parquet_statistics import parquet_write_options, statistics_columns

    table = pa.table({"a": [1.0, math.nan], "b": [1.0, 2.0], "c": [1, 2], "s": ["x", "y"]})
    assert statistics_columns(table) == ["b", "c", "s"]
    assert statistics_columns(table.drop(["a"])) is True
    zeros = pa.table({"z": [-0.0, 1.0], "p": [0.0, 2.0], "c": [0, 1]})
    # pyarrow writes a zero min as -0.0 and a zero max as +0.0: the bounds stay safe
    assert statistics_columns(zeros) is True
    assert parquet_write_options(zeros)["use_dictionary"] == ["c"]
    assert "use_dictionary" not in parquet_write_options(table)


# --- NaN in an indexed column --------------------------------------------------------------


def test_nan_rows_stay_reachable_wherever_the_index_puts_them() -> None:
    from dataclasses import dataclass

    from qbeast_connect.model import LinearTransformation, LinearTransformer

    @dataclass(frozen=True)
    class NanAt(LinearTransformation):  # a writer that places NaN rows at `spot`
        spot: float = 0.0

        def transform(self, value: object) -> float:
            if isinstance(value, float) and math.isnan(value):
                return self.spot
            return LinearTransformation.transform(self, value)

    types = column_types({"fields": [{"name": "y", "type": "double"}]})
    for spot in (0.0, 1.0):
        t = NanAt(0.0, 10.0, 1.0, QDataType.DOUBLE, spot)
        rev = Revision(1, 0, "t", 10, (LinearTransformer("y", QDataType.DOUBLE),), (t,))

        def box(text: str | Predicate, rev: Revision = rev) -> Any:
            p = from_sql(text) if isinstance(text, str) else text
            space = query_space(rev, bind_for_pruning(p, types, utc=True))
            if space is ALL_SPACE:
                return Box((None,), (None,))
            assert isinstance(space, Boxes)
            return space.boxes[0]

        assert (box("y > 5").from_[0] or 0.0) <= spot  # NaN > 5 is TRUE in Spark
        assert box(Comparison("y", "=", math.nan)).from_[0] in (None, spot)
        assert box("y < 5").to[0] == pytest.approx(0.5)
    # today's transformations cannot place NaN, so their revisions hold none
    plain = LinearTransformation(0.0, 10.0, 1.0, QDataType.DOUBLE)
    rev = Revision(1, 0, "t", 10, (LinearTransformer("y", QDataType.DOUBLE),), (plain,))
    space = query_space(rev, bind_for_pruning(from_sql("y > 5"), types, utc=True))
    assert isinstance(space, Boxes) and space.boxes[0].from_[0] == pytest.approx(0.5)
