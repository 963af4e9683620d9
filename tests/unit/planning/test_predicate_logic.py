"""Negation normal form, DNF and SQL NULL semantics."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate import (
    FALSE,
    TRUE,
    And,
    Comparison,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Opaque,
    Or,
    Predicate,
    conjuncts,
    disjuncts,
    from_sql,
    nnf,
    referenced_columns,
    to_dnf,
    to_sql,
)

from ._helpers import eval3

C = Comparison

NNF_CASES = [
    ("NOT a < 5", C("a", ">=", 5)),
    ("NOT a <= 5", C("a", ">", 5)),
    ("NOT a > 5", C("a", "<=", 5)),
    ("NOT a >= 5", C("a", "<", 5)),
    ("NOT a = 5", Or((C("a", "<", 5), C("a", ">", 5)))),
    ("a != 5", Or((C("a", "<", 5), C("a", ">", 5)))),
    ("NOT a IS NULL", IsNotNull("a")),
    ("NOT a IS NOT NULL", IsNull("a")),
    ("NOT NOT a < 5", C("a", "<", 5)),
    ("NOT (a < 5 AND b > 1)", Or((C("a", ">=", 5), C("b", "<=", 1)))),
    ("NOT (a < 5 OR b > 1)", And((C("a", ">=", 5), C("b", "<=", 1)))),
    ("a NOT IN (1, 2)", Not(InList("a", (1, 2)))),
    ("NOT lower(s) = 'x'", Not(Opaque("lower(s) = 'x'"))),
    ("a = NULL", FALSE),
    ("NOT a = NULL", FALSE),
    ("a IN (NULL)", FALSE),
    ("NOT TRUE", FALSE),
    ("a < 5 AND FALSE", FALSE),
    ("a < 5 OR TRUE", TRUE),
    ("a < 5 AND TRUE", C("a", "<", 5)),
    ("NOT (a < 5 AND a = NULL)", C("a", ">=", 5)),
    ("a < 5 AND (b = 1 AND c = 2)", And((C("a", "<", 5), C("b", "=", 1), C("c", "=", 2)))),
    ("a < 5 AND a < 5", C("a", "<", 5)),
]


@pytest.mark.parametrize(("sql", "expected"), NNF_CASES, ids=[c[0] for c in NNF_CASES])
def test_nnf(sql: str, expected: Predicate) -> None:
    assert nnf(from_sql(sql)) == expected


def test_null_row_satisfies_neither_a_comparison_nor_its_negation() -> None:
    row: dict[str, Any] = {"a": None}
    for text in ("a < 5", "NOT a < 5", "a = 5", "a != 5", "a IN (1, 2)", "a NOT IN (1, 2)"):
        p = from_sql(text)
        assert eval3(p, row) is None
        assert eval3(nnf(p), row) is not True


def test_not_in_with_null_in_the_list_is_never_true() -> None:
    p = from_sql("a NOT IN (1, NULL)")
    assert eval3(p, {"a": 5}) is None
    assert eval3(p, {"a": 1}) is False


def test_conjuncts_and_disjuncts_flatten() -> None:
    p = from_sql("a = 1 AND (b = 2 AND (c = 3 OR d = 4))")
    assert conjuncts(p) == (C("a", "=", 1), C("b", "=", 2), Or((C("c", "=", 3), C("d", "=", 4))))
    assert disjuncts(from_sql("a = 1 OR (b = 2 OR c = 3)")) == (
        C("a", "=", 1), C("b", "=", 2), C("c", "=", 3),
    )  # fmt: skip
    assert conjuncts(TRUE) == ()
    assert disjuncts(FALSE) == ()
    assert conjuncts(C("a", "=", 1)) == (C("a", "=", 1),)


def test_referenced_columns() -> None:
    assert referenced_columns(from_sql("a < 1 AND (b IS NULL OR NOT c IN (1)) AND f(x) = 1")) == {
        "a", "b", "c",
    }  # fmt: skip


def test_dedupe_is_type_aware() -> None:
    # 1 == 1.0 == True in Python, but they are different SQL literals: never merge them
    p = Or((C("a", "=", 1), C("a", "=", True), C("a", "=", 1.0), C("a", "=", 1)))
    assert nnf(p) == Or((C("a", "=", 1), C("a", "=", True), C("a", "=", 1.0)))
    assert [t[0].value for t in to_dnf(p)] == [1, True, 1.0]
    assert [type(t[0].value) for t in to_dnf(p)] == [int, bool, float]


def test_dnf_exact() -> None:
    p = from_sql("(a = 1 OR b = 2) AND (c = 3 OR d = 4)")
    assert set(to_dnf(p)) == {
        (C("a", "=", 1), C("c", "=", 3)),
        (C("a", "=", 1), C("d", "=", 4)),
        (C("b", "=", 2), C("c", "=", 3)),
        (C("b", "=", 2), C("d", "=", 4)),
    }
    assert to_dnf(TRUE) == ((),)
    assert to_dnf(FALSE) == ()
    assert to_dnf(from_sql("a = NULL OR b = 1")) == ((C("b", "=", 1),),)


def test_dnf_widens_beyond_the_limit() -> None:
    # 2**8 = 256 exact terms; with a limit of 16 some OR groups are dropped (TRUE).
    p = And(tuple(Or((C(f"a{i}", "=", 1), C(f"b{i}", "=", 1))) for i in range(8)))
    terms = to_dnf(p, max_terms=16)
    assert 1 <= len(terms) <= 16
    # widening keeps every row where p is TRUE
    row = {f"a{i}": 1 for i in range(8)} | {f"b{i}": 0 for i in range(8)}
    assert eval3(p, row) is True
    assert any(all(eval3(a, row) is True for a in t) for t in terms)


def test_dnf_limit_must_be_positive() -> None:
    with pytest.raises(InvalidOptionError):
        to_dnf(TRUE, max_terms=0)


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------

COLUMNS = ("a", "b")
VALUES = st.one_of(st.none(), st.integers(-3, 3))
OPS = st.sampled_from(["=", "<", "<=", ">", ">="])

atoms = st.one_of(
    st.builds(Comparison, st.sampled_from(COLUMNS), OPS, VALUES),
    st.builds(
        InList, st.sampled_from(COLUMNS), st.lists(VALUES, min_size=1, max_size=3).map(tuple)
    ),
    st.builds(IsNull, st.sampled_from(COLUMNS)),
    st.builds(IsNotNull, st.sampled_from(COLUMNS)),
    st.sampled_from([TRUE, FALSE]),
)


def _combine(children: st.SearchStrategy[Predicate]) -> st.SearchStrategy[Predicate]:
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs))),
        children.map(Not),
    )


predicates = st.recursive(atoms, _combine, max_leaves=10)
ROWS = [
    dict(zip(COLUMNS, combo, strict=True))
    for combo in itertools.product([None, -2, 0, 1, 3], repeat=2)
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predicates)
def test_nnf_keeps_exactly_the_true_rows(p: Predicate) -> None:
    q = nnf(p)
    assert not _has_negated_comparison(q)
    for row in ROWS:
        assert (eval3(p, row) is True) == (eval3(q, row) is True), (row, to_sql(p), to_sql(q))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predicates, st.integers(1, 8))
def test_dnf_covers_every_true_row(p: Predicate, limit: int) -> None:
    terms = to_dnf(p, max_terms=limit)
    for row in ROWS:
        if eval3(p, row) is True:
            assert any(all(eval3(a, row) is True for a in t) for t in terms), (row, to_sql(p))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predicates)
def test_exact_dnf_is_equivalent(p: Predicate) -> None:
    terms = to_dnf(p, max_terms=10_000)
    for row in ROWS:
        expected = eval3(p, row) is True
        got = any(all(eval3(a, row) is True for a in t) for t in terms)
        assert expected == got, (row, to_sql(p))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predicates)
def test_sql_round_trip_preserves_semantics(p: Predicate) -> None:
    q = from_sql(to_sql(p))
    for row in ROWS:
        assert eval3(p, row) == eval3(q, row), (row, to_sql(p))


def _has_negated_comparison(p: Predicate) -> bool:
    if isinstance(p, Not):
        return not isinstance(p.child, InList | Opaque)
    if isinstance(p, And | Or):
        return any(_has_negated_comparison(c) for c in p.children)
    return False
