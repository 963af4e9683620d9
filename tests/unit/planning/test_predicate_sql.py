"""from_sql / to_sql: the SQL parser case table, error positions and rendering."""

from __future__ import annotations

import datetime as dt
import pickle
from decimal import Decimal
from typing import NamedTuple

import pytest

from qbeast_connect.exceptions import InvalidOptionError, error_from_text
from qbeast_connect.planning.predicate import (
    FALSE,
    TRUE,
    And,
    Between,
    Comparison,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Opaque,
    Or,
    Predicate,
    PredicateSyntaxError,
    from_sql,
    literal_sql,
    quote_identifier,
    to_sql,
)

UTC = dt.UTC


class Case(NamedTuple):
    id: str
    sql: str
    expected: Predicate


C = Comparison
PARSE_CASES = [
    Case("lt", "a < 5", C("a", "<", 5)),
    Case("le", "a <= 5", C("a", "<=", 5)),
    Case("gt", "a > 5", C("a", ">", 5)),
    Case("ge", "a >= 5", C("a", ">=", 5)),
    Case("eq", "a = 5", C("a", "=", 5)),
    Case("eq-double", "a == 5", C("a", "=", 5)),
    Case("neq-sql", "a <> 5", Not(C("a", "=", 5))),
    Case("neq-c", "a != 5", Not(C("a", "=", 5))),
    Case("not-lt-spark", "a !< 5", C("a", ">=", 5)),
    Case("literal-left-lt", "5 > a", C("a", "<", 5)),
    Case("literal-left-ge", "5 <= a", C("a", ">=", 5)),
    Case("literal-left-eq", "'x' = s", C("s", "=", "x")),
    Case("negative", "a > -3", C("a", ">", -3)),
    Case("plus-sign", "a > +3", C("a", ">", 3)),
    Case("decimal", "a < 1.50", C("a", "<", Decimal("1.50"))),
    Case("leading-dot", "a < .5", C("a", "<", Decimal("0.5"))),
    Case("exponent-is-double", "a < 1e3", C("a", "<", 1000.0)),
    Case("double-suffix", "a < 1.5D", C("a", "<", 1.5)),
    Case("bigint-suffix", "a < 10L", C("a", "<", 10)),
    Case("bigdecimal-suffix", "a < 10BD", C("a", "<", Decimal("10"))),
    Case("float-suffix-is-float32", "a < 0.1F", C("a", "<", 0.10000000149011612)),
    Case("big-int", "a < 123456789012345678901", C("a", "<", 123456789012345678901)),
    Case("string", "s = 'abc'", C("s", "=", "abc")),
    Case("string-doubled-quote", "s = 'it''s'", C("s", "=", "it's")),
    Case("string-backslash-quote", r"s = 'it\'s'", C("s", "=", "it's")),
    Case("string-escapes", r"s = 'a\nb\tc\\d\u0041'", C("s", "=", "a\nb\tc\\dA")),
    Case("string-double-quoted", 's = "abc"', C("s", "=", "abc")),
    Case("string-raw", r"s = r'a\nb'", C("s", "=", r"a\nb")),
    Case("string-adjacent", "s = 'ab' 'cd'", C("s", "=", "abcd")),
    Case("string-unicode", "s = 'ñandú'", C("s", "=", "ñandú")),
    Case("true", "b = TRUE", C("b", "=", True)),
    Case("false-lower", "b = false", C("b", "=", False)),
    Case("null-literal", "a = NULL", C("a", "=", None)),
    Case("date", "d = DATE '2024-01-15'", C("d", "=", dt.date(2024, 1, 15))),
    Case("date-short", "d >= date '2024-1-5'", C("d", ">=", dt.date(2024, 1, 5))),
    Case(
        "timestamp",
        "t < TIMESTAMP '2024-01-15 10:30:00'",
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, tzinfo=UTC)),
    ),
    Case(
        "timestamp-micros",
        "t < TIMESTAMP '2024-01-15 10:30:00.123456'",
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)),
    ),
    Case(
        "timestamp-nanos-truncated",
        "t < TIMESTAMP '2024-01-15 10:30:00.1234569'",
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)),
    ),
    Case(
        "timestamp-T-and-offset",
        "t < TIMESTAMP '2024-01-15T10:30:00+02:00'",
        C("t", "<", dt.datetime(2024, 1, 15, 8, 30, tzinfo=UTC)),
    ),
    Case(
        "timestamp-zulu",
        "t < TIMESTAMP '2024-01-15 10:30:00Z'",
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, tzinfo=UTC)),
    ),
    Case(
        "timestamp-date-only",
        "t >= TIMESTAMP '2024-01-15'",
        C("t", ">=", dt.datetime(2024, 1, 15, tzinfo=UTC)),
    ),
    Case("between", "a BETWEEN 1 AND 3", Between("a", 1, 3)),
    Case("not-between", "a NOT BETWEEN 1 AND 3", Not(Between("a", 1, 3))),
    Case("in", "a IN (1, 2, 3)", InList("a", (1, 2, 3))),
    Case("in-with-null", "a IN (1, NULL)", InList("a", (1, None))),
    Case("not-in", "a NOT IN ('x', 'y')", Not(InList("a", ("x", "y")))),
    Case("is-null", "a IS NULL", IsNull("a")),
    Case("is-not-null", "a IS NOT NULL", IsNotNull("a")),
    Case("isnull-function", "isnull(a)", IsNull("a")),
    Case("isnotnull-function", "ISNOTNULL(`a b`)", IsNotNull("a b")),
    Case("null-safe-eq", "a <=> 5", And((IsNotNull("a"), C("a", "=", 5)))),
    Case("null-safe-eq-null", "a <=> NULL", IsNull("a")),
    Case("and", "a > 1 AND b < 2", And((C("a", ">", 1), C("b", "<", 2)))),
    Case(
        "and-flattened",
        "a > 1 AND b < 2 AND c = 3",
        And((C("a", ">", 1), C("b", "<", 2), C("c", "=", 3))),
    ),
    Case("or", "a > 1 OR b < 2", Or((C("a", ">", 1), C("b", "<", 2)))),
    Case(
        "precedence-and-over-or",
        "a = 1 OR b = 2 AND c = 3",
        Or((C("a", "=", 1), And((C("b", "=", 2), C("c", "=", 3))))),
    ),
    Case(
        "parentheses",
        "(a = 1 OR b = 2) AND c = 3",
        And((Or((C("a", "=", 1), C("b", "=", 2))), C("c", "=", 3))),
    ),
    Case("not", "NOT a > 1", Not(C("a", ">", 1))),
    Case("bang", "!(a > 1)", Not(C("a", ">", 1))),
    Case("not-not", "NOT NOT a > 1", Not(Not(C("a", ">", 1)))),
    Case("true-constant", "TRUE", TRUE),
    Case("false-constant", "(FALSE)", FALSE),
    Case(
        "keywords-case-insensitive",
        "a between 1 and 3 or b is null",
        Or((Between("a", 1, 3), IsNull("b"))),
    ),
    Case("backquoted", "`my col` >= 2", C("my col", ">=", 2)),
    Case("backquoted-escaped", "`we``ird` = 1", C("we`ird", "=", 1)),
    Case("backquoted-dot", "`a.b` = 1", C("a.b", "=", 1)),
    Case("column-named-date", "date = 1", C("date", "=", 1)),
    Case("unicode-identifier", "größe < 3", C("größe", "<", 3)),
    Case(
        "comments",
        "a < 5 -- trailing\n AND /* inner /* nested */ */ b = 1",
        And((C("a", "<", 5), C("b", "=", 1))),
    ),
    # understood only partially: the unknown part is kept verbatim
    Case("function-call", "lower(s) = 'a'", Opaque("lower(s) = 'a'")),
    Case(
        "function-and-known",
        "lower(s) = 'a' AND a < 5",
        And((Opaque("lower(s) = 'a'"), C("a", "<", 5))),
    ),
    Case("like", "s LIKE 'a%'", Opaque("s LIKE 'a%'")),
    Case("not-like", "s NOT LIKE 'a%' ESCAPE '!'", Opaque("s NOT LIKE 'a%' ESCAPE '!'")),
    Case("like-any", "s LIKE ANY ('a%', 'b%')", Opaque("s LIKE ANY ('a%', 'b%')")),
    Case("rlike", "s RLIKE '^a'", Opaque("s RLIKE '^a'")),
    Case("column-vs-column", "a < b", Opaque("a < b")),
    Case("arithmetic", "a + 1 < 5", Opaque("a + 1 < 5")),
    Case("qualified-column", "t.a < 5", Opaque("t.a < 5")),
    Case("nested-field", "s.inner.x = 1", Opaque("s.inner.x = 1")),
    Case("subscript", "arr[0] = 1", Opaque("arr[0] = 1")),
    Case("cast", "CAST(a AS INT) = 1", Opaque("CAST(a AS INT) = 1")),
    Case("cast-operator", "a::int = 1", Opaque("a::int = 1")),
    Case(
        "case-when",
        "CASE WHEN a > 1 THEN 1 ELSE 0 END = 1",
        Opaque("CASE WHEN a > 1 THEN 1 ELSE 0 END = 1"),
    ),
    Case("in-subquery", "a IN (SELECT id FROM t)", Opaque("a IN (SELECT id FROM t)")),
    Case("exists", "EXISTS (SELECT 1)", Opaque("EXISTS (SELECT 1)")),
    Case("in-non-literal", "a IN (b, 1)", Opaque("a IN (b, 1)")),
    Case("between-non-literal", "a BETWEEN b AND 3", Opaque("a BETWEEN b AND 3")),
    Case("is-true", "b IS TRUE", Opaque("b IS TRUE")),
    Case("is-distinct-from", "a IS DISTINCT FROM 1", Opaque("a IS DISTINCT FROM 1")),
    Case("interval", "t > now() - INTERVAL '1' DAY", Opaque("t > now() - INTERVAL '1' DAY")),
    Case(
        "interval-multi",
        "t > now() - INTERVAL 1 DAY 2 HOURS",
        Opaque("t > now() - INTERVAL 1 DAY 2 HOURS"),
    ),
    Case("bare-column", "flag", Opaque("flag")),
    Case(
        "timestamp-ntz",
        "t = TIMESTAMP_NTZ '2024-01-01 00:00:00'",
        Opaque("t = TIMESTAMP_NTZ '2024-01-01 00:00:00'"),
    ),
    Case("bad-date-value", "d = DATE '2024-13-45'", Opaque("d = DATE '2024-13-45'")),
    Case("binary-literal", "b = X'00ff'", Opaque("b = X'00ff'")),
    Case("lambda", "exists(arr, x -> x > 1)", Opaque("exists(arr, x -> x > 1)")),
    Case("window", "rank() OVER (ORDER BY a) = 1", Opaque("rank() OVER (ORDER BY a) = 1")),
    Case("struct-equality", "(a, b) = (1, 2)", Opaque("(a, b) = (1, 2)")),
    Case("not-opaque", "NOT s LIKE 'a%'", Not(Opaque("s LIKE 'a%'"))),
    Case("collate", "s COLLATE UTF8_LCASE = 'a'", Opaque("s COLLATE UTF8_LCASE = 'a'")),
    Case("collate-literal", "s = 'a' COLLATE UNICODE_CI", Opaque("s = 'a' COLLATE UNICODE_CI")),
    Case("variant-path", "v:price > 5", Opaque("v:price > 5")),
    Case("backquoted-function", "`lower`(s) = 'a'", Opaque("`lower`(s) = 'a'")),
    Case("extract", "EXTRACT(YEAR FROM d) = 2024", Opaque("EXTRACT(YEAR FROM d) = 2024")),
    Case("decimal-cast-op", "a::decimal(10, 2) > 1", Opaque("a::decimal(10, 2) > 1")),
    Case("is-not-distinct", "a IS NOT DISTINCT FROM 1", Opaque("a IS NOT DISTINCT FROM 1")),
    Case("concat", "a || b = 'xy'", Opaque("a || b = 'xy'")),
    Case("div", "a DIV 2 = 1", Opaque("a DIV 2 = 1")),
    Case("date-no-space", "d = DATE'2024-01-15'", C("d", "=", dt.date(2024, 1, 15))),
    Case("in-parenthesized-items", "a IN ((1), (2))", InList("a", (1, 2))),
    Case("named-parameter", "a = :p", Opaque("a = :p")),
]


@pytest.mark.parametrize("case", PARSE_CASES, ids=[c.id for c in PARSE_CASES])
def test_from_sql(case: Case) -> None:
    assert from_sql(case.sql) == case.expected


class ErrorCase(NamedTuple):
    id: str
    sql: str
    position: int
    fragment: str


ERROR_CASES = [
    ErrorCase("empty", "", 0, "empty filter"),
    ErrorCase("blank", "   ", 3, "empty filter"),
    ErrorCase("dangling-operator", "a <", 3, "expected an expression"),
    ErrorCase("dangling-and", "a < 1 AND", 9, "expected an expression"),
    ErrorCase("leading-and", "AND a < 1", 0, "expected an expression"),
    ErrorCase("unclosed-paren", "(a > 1", 6, "expected ')'"),
    ErrorCase("extra-paren", "a > 1)", 5, "unexpected token"),
    ErrorCase("unterminated-string", "s = 'abc", 4, "unterminated string"),
    ErrorCase("unterminated-backquote", "`abc = 1", 0, "unterminated backquoted"),
    ErrorCase("empty-in", "a IN ()", 6, "at least one value"),
    ErrorCase("in-without-paren", "a IN 1", 5, "expected '('"),
    ErrorCase("in-unclosed", "a IN (1, 2", 10, "IN list"),
    ErrorCase("trailing-word", "a > 1 b", 6, "unexpected token"),
    ErrorCase("bad-character", "a = #1", 4, "unexpected character"),
    ErrorCase("between-without-and", "a BETWEEN 1 OR 2", 12, "expected AND"),
    ErrorCase("is-garbage", "a IS 5", 5, "expected NULL"),
    ErrorCase("unclosed-function", "lower(a = 1", 5, "unclosed '('"),
    ErrorCase("unclosed-comment", "a = 1 /* x", 6, "unclosed comment"),
    ErrorCase("case-without-end", "CASE WHEN a THEN 1", 0, "CASE without END"),
    ErrorCase("double-operator", "a < < 1", 4, "expected an expression"),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c.id for c in ERROR_CASES])
def test_from_sql_errors_name_the_position(case: ErrorCase) -> None:
    with pytest.raises(PredicateSyntaxError) as info:
        from_sql(case.sql)
    err = info.value
    assert err.position == case.position
    assert f"position {case.position}" in str(err)
    assert case.fragment in str(err)
    assert isinstance(err, InvalidOptionError)
    assert isinstance(err, ValueError)


def test_syntax_error_survives_pickle_and_text_transport() -> None:
    with pytest.raises(PredicateSyntaxError) as info:
        from_sql("a <")
    copy = pickle.loads(pickle.dumps(info.value))
    assert isinstance(copy, PredicateSyntaxError)
    assert copy.position == 3
    rebuilt = error_from_text(str(info.value))
    assert isinstance(rebuilt, InvalidOptionError)


def test_from_sql_rejects_non_strings() -> None:
    with pytest.raises(InvalidOptionError, match="must be a string"):
        from_sql(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------


class RenderCase(NamedTuple):
    id: str
    predicate: Predicate
    sql: str


RENDER_CASES = [
    RenderCase("int", C("a", "<", 5), "`a` < 5"),
    RenderCase("negative-int", C("a", ">=", -5), "`a` >= -5"),
    RenderCase("float-is-double", C("a", "<", 1.5), "`a` < 1.5D"),
    RenderCase("float-exponent", C("a", "<", 1e-7), "`a` < 1e-07D"),
    RenderCase("float-nan", C("a", "<", float("nan")), "`a` < CAST('NaN' AS DOUBLE)"),
    RenderCase("float-inf", C("a", "<", float("inf")), "`a` < CAST('Infinity' AS DOUBLE)"),
    RenderCase("decimal-keeps-scale", C("a", "=", Decimal("1.50")), "`a` = 1.50BD"),
    RenderCase("decimal-exponent-expanded", C("a", "=", Decimal("1E+3")), "`a` = 1000BD"),
    RenderCase("bool", C("b", "=", True), "`b` = TRUE"),
    RenderCase("null", C("a", "=", None), "`a` = NULL"),
    RenderCase("string-quote", C("s", "=", "it's"), r"`s` = 'it\'s'"),
    RenderCase("string-backslash", C("s", "=", "a\\b"), r"`s` = 'a\\b'"),
    RenderCase("date", C("d", "=", dt.date(2024, 1, 5)), "`d` = DATE '2024-01-05'"),
    RenderCase(
        "timestamp",
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, tzinfo=UTC)),
        "`t` < TIMESTAMP '2024-01-15 10:30:00Z'",
    ),
    RenderCase(
        "timestamp-micros-and-offset",
        C(
            "t",
            "<",
            dt.datetime(2024, 1, 15, 12, 30, 0, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        ),
        "`t` < TIMESTAMP '2024-01-15 10:30:00.000005Z'",
    ),
    RenderCase(
        "naive-timestamp-is-utc",
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30)),
        "`t` < TIMESTAMP '2024-01-15 10:30:00Z'",
    ),
    RenderCase("identifier-quoting", C("we`ird name", "=", 1), "`we``ird name` = 1"),
    RenderCase("in", InList("a", (1, None, "x")), "`a` IN (1, NULL, 'x')"),
    RenderCase("is-null", IsNull("a"), "`a` IS NULL"),
    RenderCase("is-not-null", IsNotNull("a"), "`a` IS NOT NULL"),
    RenderCase(
        "and-or-not",
        And((Or((IsNull("a"), C("a", "<", 1))), Not(C("b", "=", 2)))),
        "((`a` IS NULL) OR (`a` < 1)) AND (NOT (`b` = 2))",
    ),
    RenderCase(
        "opaque-verbatim", And((Opaque("lower(s) = 'a'"), TRUE)), "(lower(s) = 'a') AND (TRUE)"
    ),
    RenderCase("false", FALSE, "FALSE"),
]


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c.id for c in RENDER_CASES])
def test_to_sql(case: RenderCase) -> None:
    assert to_sql(case.predicate) == case.sql


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c.id for c in RENDER_CASES])
def test_to_sql_parses_back(case: RenderCase) -> None:
    reparsed = from_sql(to_sql(case.predicate))
    if "NaN" in case.sql or "Infinity" in case.sql:
        assert isinstance(reparsed, Opaque)  # CAST(…) is kept verbatim
    else:
        assert to_sql(reparsed) == to_sql(case.predicate)


@pytest.mark.parametrize("case", PARSE_CASES, ids=[c.id for c in PARSE_CASES])
def test_parse_render_parse_is_stable(case: Case) -> None:
    once = from_sql(case.sql)
    assert from_sql(to_sql(once)) == once


def test_literal_sql_rejects_unsupported_values() -> None:
    with pytest.raises(InvalidOptionError):
        literal_sql(object())
    with pytest.raises(InvalidOptionError):
        literal_sql(Decimal("NaN"))


def test_quote_identifier() -> None:
    assert quote_identifier("a") == "`a`"
    assert quote_identifier("a`b") == "`a``b`"


def test_opaque_without_text_cannot_render() -> None:
    with pytest.raises(InvalidOptionError, match="to_column"):
        to_sql(Opaque("", expr=object()))


# ---------------------------------------------------------------------------------------------
# tree construction
# ---------------------------------------------------------------------------------------------


def test_nodes_are_hashable_and_immutable() -> None:
    p = from_sql("a < 5 AND s IN ('x', 'y')")
    assert hash(p) == hash(from_sql("a < 5 AND s IN ('x', 'y')"))
    with pytest.raises(AttributeError):
        p.children = ()  # type: ignore[misc]


def test_operators_build_trees() -> None:
    a, b = C("a", "<", 1), C("b", ">", 2)
    assert (a & b) == And((a, b))
    assert (a | b) == Or((a, b))
    assert ~a == Not(a)
    assert (a & b & a) == And((a, b, a))


@pytest.mark.parametrize(
    "build",
    [
        lambda: C("a", "!=", 1),  # type: ignore[arg-type]
        lambda: C("", "<", 1),
        lambda: C("a", "<", object()),
        lambda: InList("a", ()),
        lambda: And(()),
        lambda: And(C("a", "<", 1)),  # type: ignore[arg-type]
        lambda: Not("a < 1"),  # type: ignore[arg-type]
        lambda: Opaque("   "),
    ],
    ids=[
        "bad-op",
        "empty-column",
        "bad-literal",
        "empty-in",
        "empty-and",
        "and-single",
        "not-string",
        "blank-opaque",
    ],
)
def test_invalid_nodes_are_rejected(build: object) -> None:
    with pytest.raises(InvalidOptionError):
        build()  # type: ignore[operator]


def test_str_renders_sql() -> None:
    assert str(from_sql("a BETWEEN 1 AND 2")) == "(`a` >= 1) AND (`a` <= 2)"
