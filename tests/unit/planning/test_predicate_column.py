"""from_column: translating Spark Connect Columns (built client-side, no server needed)."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

import pytest

from qbeast_connect.exceptions import InvalidOptionError
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
    from_sql,
    to_sql,
)
from qbeast_connect.spark.columns import from_column, to_column

F = pytest.importorskip("pyspark.sql.connect.functions")
from pyspark.sql.connect.column import Column  # noqa: E402
from pyspark.sql.connect.expressions import LiteralExpression  # noqa: E402
from pyspark.sql.types import FloatType, TimestampNTZType  # noqa: E402

UTC = dt.UTC
C = Comparison


def test_building_connect_columns_needs_no_session() -> None:
    # Run in a fresh interpreter: no SparkSession exists, none is created.
    code = (
        "from pyspark.sql.connect import functions as F\n"
        "from pyspark.sql.connect.session import SparkSession\n"
        "c = (F.col('a') > 1) & F.col('b').isin(1, 2)\n"
        "assert SparkSession.getActiveSession() is None\n"
        "print(type(c._expr).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "UnresolvedFunction"


class ColumnCase(NamedTuple):
    id: str
    build: Callable[[], Any]
    expected: Predicate


CASES = [
    ColumnCase("gt", lambda: F.col("a") > 1, C("a", ">", 1)),
    ColumnCase("lt", lambda: F.col("a") < 1.5, C("a", "<", 1.5)),
    ColumnCase("le", lambda: F.col("a") <= 2, C("a", "<=", 2)),
    ColumnCase("ge", lambda: F.col("a") >= 2, C("a", ">=", 2)),
    ColumnCase("eq", lambda: F.col("a") == "x", C("a", "=", "x")),
    ColumnCase("reflected", lambda: F.col("a") < 5, C("a", "<", 5)),
    ColumnCase("literal-first", lambda: F.lit(5) <= F.col("a"), C("a", ">=", 5)),
    ColumnCase("ne", lambda: F.col("a") != 3, Not(C("a", "=", 3))),
    ColumnCase("between", lambda: F.col("a").between(1, 3), Between("a", 1, 3)),
    ColumnCase("isin", lambda: F.col("a").isin(1, 2), InList("a", (1, 2))),
    ColumnCase("isin-list", lambda: F.col("a").isin([1, 2]), InList("a", (1, 2))),
    ColumnCase("isin-null", lambda: F.col("a").isin(1, None), InList("a", (1, None))),
    ColumnCase("invert", lambda: ~(F.col("a") > 1), Not(C("a", ">", 1))),
    ColumnCase(
        "and", lambda: (F.col("a") > 1) & (F.col("b") < 2), And((C("a", ">", 1), C("b", "<", 2)))
    ),
    ColumnCase(
        "or", lambda: (F.col("a") > 1) | F.col("b").isNull(), Or((C("a", ">", 1), IsNull("b")))
    ),
    ColumnCase("is-not-null", lambda: F.col("a").isNotNull(), IsNotNull("a")),
    ColumnCase("isnull-function", lambda: F.isnull(F.col("a")), IsNull("a")),
    ColumnCase("eq-null", lambda: F.col("a") == None, C("a", "=", None)),  # noqa: E711
    ColumnCase(
        "null-safe", lambda: F.col("a").eqNullSafe(3), And((IsNotNull("a"), C("a", "=", 3)))
    ),
    ColumnCase("null-safe-null", lambda: F.col("a").eqNullSafe(None), IsNull("a")),
    ColumnCase(
        "date", lambda: F.col("d") == F.lit(dt.date(2024, 1, 15)), C("d", "=", dt.date(2024, 1, 15))
    ),
    ColumnCase(
        "timestamp-utc",
        lambda: F.col("t") < F.lit(dt.datetime(2024, 1, 15, 10, 30, 0, 7, tzinfo=UTC)),
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, 0, 7, tzinfo=UTC)),
    ),
    ColumnCase(
        "timestamp-offset",
        lambda: (
            F.col("t")
            < F.lit(dt.datetime(2024, 1, 15, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))))
        ),
        C("t", "<", dt.datetime(2024, 1, 15, 10, 30, tzinfo=UTC)),
    ),
    ColumnCase("decimal", lambda: F.col("a") < Decimal("1.50"), C("a", "<", Decimal("1.50"))),
    ColumnCase("bigint", lambda: F.col("a") < 2**40, C("a", "<", 2**40)),
    ColumnCase("bool", lambda: F.col("b") == True, C("b", "=", True)),  # noqa: E712
    ColumnCase(
        "float32-literal",
        lambda: F.col("a") < Column(LiteralExpression(0.1, FloatType())),
        C("a", "<", 0.10000000149011612),
    ),
    ColumnCase("backquoted-name", lambda: F.col("`we.ird`") > 1, C("we.ird", ">", 1)),
    ColumnCase("name-with-space", lambda: F.col("my col") > 1, C("my col", ">", 1)),
    ColumnCase("alias", lambda: (F.col("a") > 1).alias("x"), C("a", ">", 1)),
    ColumnCase("lit-true", lambda: F.lit(True), TRUE),
    ColumnCase("lit-false", lambda: F.lit(False), FALSE),
    ColumnCase(
        "expr",
        lambda: F.expr("a > 1 and s = 'x'"),
        And((C("a", ">", 1), C("s", "=", "x"))),
    ),
    ColumnCase(
        "expr-inside-and",
        lambda: F.expr("a IN (1, 2)") & (F.col("b") >= 0),
        And((InList("a", (1, 2)), C("b", ">=", 0))),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_from_column(case: ColumnCase) -> None:
    assert from_column(case.build()) == case.expected


class OpaqueCase(NamedTuple):
    id: str
    build: Callable[[], Any]
    sql: str


OPAQUE_CASES = [
    OpaqueCase("like", lambda: F.col("s").like("a%"), "(`s` LIKE 'a%')"),
    OpaqueCase("startswith", lambda: F.col("s").startswith("ab"), "startsWith(`s`, 'ab')"),
    OpaqueCase("function", lambda: F.lower(F.col("s")) == "a", "(lower(`s`) = 'a')"),
    OpaqueCase("cast", lambda: F.col("a").cast("int") > 1, "(CAST(`a` AS int) > 1)"),
    OpaqueCase("column-vs-column", lambda: F.col("a") < F.col("b"), "(`a` < `b`)"),
    OpaqueCase("arithmetic", lambda: F.col("a") + 1 > 2, "((`a` + 1) > 2)"),
    OpaqueCase("qualified", lambda: F.col("t.a") > 1, "(`t`.`a` > 1)"),
    OpaqueCase("in-with-column", lambda: F.col("a").isin(F.col("b"), 1), "(`a` IN (`b`, 1))"),
    OpaqueCase(
        "timestamp-ntz",
        lambda: F.col("t") < Column(LiteralExpression(dt.datetime(2024, 1, 1), TimestampNTZType())),
        "",
    ),
    OpaqueCase(
        "case-when",
        lambda: F.when(F.col("a") > 1, True).otherwise(False),
        "(CASE WHEN (`a` > 1) THEN TRUE ELSE FALSE END)",
    ),
    OpaqueCase("isnan", lambda: F.col("a").isNaN(), "isNaN(`a`)"),
]


@pytest.mark.parametrize("case", OPAQUE_CASES, ids=[c.id for c in OPAQUE_CASES])
def test_unknown_nodes_become_opaque(case: OpaqueCase) -> None:
    column = case.build()
    p = from_column(column)
    assert isinstance(p, Opaque)
    assert p.sql == case.sql
    assert p.expr is column._expr
    if case.sql:
        from_sql(case.sql)  # the rendered text is valid SQL for our parser too


def test_opaque_inside_known_tree() -> None:
    p = from_column((F.col("a") > 1) & F.col("s").like("x%"))
    assert isinstance(p, And)
    assert p.children[0] == C("a", ">", 1)
    assert isinstance(p.children[1], Opaque)
    assert to_sql(p) == "(`a` > 1) AND ((`s` LIKE 'x%'))"


def test_unparsable_expr_text_becomes_opaque() -> None:
    column = F.expr("a > 1 +")  # Spark will report this error itself
    p = from_column(column)
    assert isinstance(p, Opaque)
    assert p.sql == "(a > 1 +)"


def test_from_column_accepts_sql_strings() -> None:
    assert from_column("a < 5") == C("a", "<", 5)


@pytest.mark.parametrize("bad", [5, None, object()], ids=["int", "none", "object"])
def test_from_column_rejects_other_types(bad: object) -> None:
    with pytest.raises(InvalidOptionError, match="Spark Connect Column"):
        from_column(bad)


def test_to_column_builds_connect_columns() -> None:
    p = from_column((F.col("a") > 1) & ~F.col("s").like("x%") | F.col("b").isNull())
    column = to_column(p)
    assert isinstance(column, Column)
    # Known leaves go through SQL text; the opaque LIKE reuses the original expression.
    text = repr(column._expr)
    assert "`a` > 1" in text and "like(s, x%)" in text and "`b` IS NULL" in text


def test_to_column_round_trips_through_from_column() -> None:
    p = from_sql("a BETWEEN 1 AND 3 OR s IN ('x', 'y')")
    assert from_column(to_column(p)) == p


def test_importing_planning_does_not_import_pyspark() -> None:
    code = (
        "import sys\n"
        "import qbeast_connect.planning.predicate, qbeast_connect.planning.query_space\n"
        "import qbeast_connect.planning.file_planner\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'numpy', 'pyarrow', 'pandas'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
