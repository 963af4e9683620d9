"""approx() arguments checked against the table's columns before a query is built (issue 36)."""

from __future__ import annotations

import pytest

from qbeast_connect.approx.aggregates import parse_aggregates
from qbeast_connect.approx.inputs import check_approx_columns
from qbeast_connect.exceptions import InvalidOptionError, UnsupportedInputError

TYPES = {"id": "long", "Price": "decimal(10,2)", "d": "date", "s": "string"}


def test_known_columns_of_any_case_and_numeric_measures_pass() -> None:
    aggs = parse_aggregates(["sum(price) AS p", "avg(ID)", "count(d)", "min(s)", "max(d)"])
    check_approx_columns(aggs, ["S", "d"], TYPES, "/t")


@pytest.mark.parametrize(
    ("aggregates", "group_by", "message"),
    [
        ("count(*)", ["nope"], "groupBy names the column 'nope'"),
        ("sum(nope) AS x", [], "aggregate 'x' names the column 'nope'"),
        ("count(DISTINCT id, nope)", [], "names the column 'nope'"),
    ],
)
def test_an_unknown_column_is_named_with_the_table_columns(
    aggregates: str, group_by: list[str], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message) as raised:
        check_approx_columns(parse_aggregates(aggregates), group_by, TYPES, "/t")
    assert "Price, d, id, s" in str(raised.value)


@pytest.mark.parametrize("text", ["avg(d)", "sum(s)"])
def test_sum_and_avg_of_a_column_that_is_not_a_number_are_refused(text: str) -> None:
    with pytest.raises(UnsupportedInputError, match="numeric columns only"):
        check_approx_columns(parse_aggregates(text), [], TYPES, "/t")
