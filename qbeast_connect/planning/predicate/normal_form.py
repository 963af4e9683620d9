"""Negation normal form and disjunctive normal form of predicates.

Semantics are Spark SQL's three-valued logic. A row is *kept* by a filter only when the
predicate is TRUE; NULL (unknown) drops the row just like FALSE. :func:`nnf` pushes ``NOT``
down to the leaves while keeping exactly the set of rows for which the predicate is TRUE,
so ``NOT a < 5`` becomes ``a >= 5`` (a NULL ``a`` satisfies neither).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate.nodes import (
    FALSE,
    TRUE,
    And,
    Comparison,
    ComparisonOp,
    FalseLiteral,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    TrueLiteral,
)

__all__ = ["nnf", "to_dnf"]

_T = TypeVar("_T")
_NEGATED: dict[str, ComparisonOp] = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def nnf(p: Predicate) -> Predicate:
    """Return an equivalent predicate with ``NOT`` pushed down to the leaves.

    "Equivalent" means: TRUE for exactly the same rows (Spark's three-valued logic, where a
    filter keeps only TRUE rows). Rules: De Morgan over AND/OR; ``NOT a < v`` → ``a >= v``
    (likewise for the other orders; NaN is the largest value and equal to itself, as in
    Spark); ``NOT a = v`` → ``a < v OR a > v``; ``NOT a IS NULL`` → ``a IS NOT NULL``; a
    comparison with a NULL literal → FALSE in both polarities. ``NOT (a IN …)`` and
    ``NOT opaque`` stay as ``Not`` leaves, which pruning treats as unrestricted. Constant
    children are folded (``x AND FALSE`` → FALSE, ``x OR TRUE`` → TRUE).
    """
    return _nnf(p, False)


def _nnf(p: Predicate, negate: bool) -> Predicate:
    if isinstance(p, Not):
        return _nnf(p.child, not negate)
    if isinstance(p, And | Or):
        is_and = isinstance(p, And) != negate  # De Morgan flips the connective
        children = [_nnf(c, negate) for c in p.children]
        return _fold(children, is_and)
    if isinstance(p, TrueLiteral):
        return FALSE if negate else TRUE
    if isinstance(p, FalseLiteral):
        return TRUE if negate else FALSE
    if isinstance(p, Comparison):
        if p.value is None:
            return FALSE  # a comparison with NULL is NULL, and so is its negation
        if not negate:
            return p
        if p.op == "=":
            return Or((Comparison(p.column, "<", p.value), Comparison(p.column, ">", p.value)))
        return Comparison(p.column, _NEGATED[p.op], p.value)
    if isinstance(p, IsNull):
        return IsNotNull(p.column) if negate else p
    if isinstance(p, IsNotNull):
        return IsNull(p.column) if negate else p
    if isinstance(p, InList):
        if not negate and all(v is None for v in p.values):
            return FALSE
        return Not(p) if negate else p
    # Opaque or unknown subclasses
    return Not(p) if negate else p


def _fold(children: list[Predicate], is_and: bool) -> Predicate:
    absorbing: Predicate = FALSE if is_and else TRUE
    neutral_type = TrueLiteral if is_and else FalseLiteral
    flat: list[Predicate] = []
    for c in children:
        if c == absorbing:
            return absorbing
        if isinstance(c, neutral_type):
            continue
        if (is_and and isinstance(c, And)) or (not is_and and isinstance(c, Or)):
            flat.extend(c.children)
        else:
            flat.append(c)
    flat = _unique(flat)
    if not flat:
        return TRUE if is_and else FALSE
    if len(flat) == 1:
        return flat[0]
    return And(tuple(flat)) if is_and else Or(tuple(flat))


def _unique(items: Iterable[_T]) -> list[_T]:
    """Drop duplicates, keeping order; type-aware (``1``, ``1.0`` and ``True`` differ)."""
    seen: dict[str, _T] = {}
    for item in items:
        seen.setdefault(repr(item), item)
    return list(seen.values())


def to_dnf(p: Predicate, *, max_terms: int = 64) -> tuple[tuple[Predicate, ...], ...]:
    """Return the disjunctive normal form of ``nnf(p)`` as a tuple of conjunctions.

    ``()`` means FALSE and ``((),)`` means TRUE. When the exact DNF would exceed
    ``max_terms`` conjunctions the result is *widened* (some OR sub-trees are replaced by
    TRUE), so it still holds for every row where ``p`` is TRUE: use it for pruning only.
    The leaves are the NNF leaves: Comparison, InList, IsNull, IsNotNull, Opaque and
    ``Not`` of InList/Opaque.
    """
    if max_terms < 1:
        raise InvalidOptionError(f"max_terms must be ≥ 1, got {max_terms}")
    return _dnf(nnf(p), max_terms)


def _dnf(p: Predicate, limit: int) -> tuple[tuple[Predicate, ...], ...]:
    if isinstance(p, TrueLiteral):
        return ((),)
    if isinstance(p, FalseLiteral):
        return ()
    if isinstance(p, Or):
        terms: list[tuple[Predicate, ...]] = []
        for c in p.children:
            terms.extend(_dnf(c, limit))
            if len(terms) > limit:
                return ((),)  # widen: no restriction
        return tuple(_unique(terms))
    if isinstance(p, And):
        parts = [_dnf(c, limit) for c in p.children]
        if any(len(part) == 0 for part in parts):
            return ()
        # Widen by dropping the widest disjunctions until the product fits.
        parts.sort(key=len)
        while parts and math.prod(len(part) for part in parts) > limit:
            parts.pop()
        result: list[tuple[Predicate, ...]] = [()]
        for part in parts:
            result = [a + b for a in result for b in part]
        return tuple(_unique(tuple(_unique(t)) for t in result))
    return ((p,),)
