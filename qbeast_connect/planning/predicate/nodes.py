"""The predicate tree: immutable nodes, constructors, splitting and rendering to SQL.

The tree only models what file pruning can use: comparisons of one column with a literal,
``IN`` lists, ``IS [NOT] NULL``, ``AND``/``OR``/``NOT`` and the constants. Anything else is
kept verbatim as :class:`Opaque`: it never prunes, but it still renders back to SQL so it can
be applied as a residual filter.

:func:`to_sql` lives with the nodes (not in :mod:`.sql_render`, which renders identifiers and
literals) so that ``str(predicate)`` needs no import back into this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate.literals import normalize_literal
from qbeast_connect.planning.predicate.sql_render import literal_sql, quote_identifier

# the names the package re-exports; comparison and chain_operands serve the SQL parser and
# the Connect translation (qbeast_connect.spark.columns)
__all__ = [
    "FALSE",
    "TRUE",
    "And",
    "Between",
    "Comparison",
    "ComparisonOp",
    "FalseLiteral",
    "InList",
    "IsNotNull",
    "IsNull",
    "Not",
    "Opaque",
    "Or",
    "Predicate",
    "TrueLiteral",
    "and_",
    "conjuncts",
    "disjuncts",
    "or_",
    "referenced_columns",
    "to_sql",
]

ComparisonOp: TypeAlias = Literal["=", "<", "<=", ">", ">="]

_T = TypeVar("_T")
_OPS: frozenset[str] = frozenset({"=", "<", "<=", ">", ">="})


def _check_column(column: object) -> None:
    if not isinstance(column, str) or not column:
        raise InvalidOptionError(f"a predicate needs a non-empty column name, got {column!r}")


class Predicate:
    """Base of the predicate tree nodes (immutable, hashable).

    ``p & q``, ``p | q`` and ``~p`` build :class:`And`, :class:`Or` and :class:`Not`.
    """

    __slots__ = ()

    def __and__(self, other: Predicate) -> Predicate:
        """Return ``self AND other``."""
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        """Return ``self OR other``."""
        return or_(self, other)

    def __invert__(self) -> Predicate:
        """Return ``NOT self``."""
        return Not(self)

    def __str__(self) -> str:
        """Return the Spark SQL text (see :func:`to_sql`)."""
        try:
            return to_sql(self)
        except InvalidOptionError:
            return repr(self)


@dataclass(frozen=True, slots=True)
class Comparison(Predicate):
    """``column op value``; with a NULL value it is never TRUE (nor is its negation).

    Attributes:
        column: Column name (a single, unqualified name).
        op: One of ``=``, ``<``, ``<=``, ``>``, ``>=``.
        value: The literal.
    """

    column: str
    op: ComparisonOp
    value: Any

    def __post_init__(self) -> None:
        """Check the fields and normalize the literal."""
        _check_column(self.column)
        if self.op not in _OPS:
            raise InvalidOptionError(
                f"comparison operator must be one of {sorted(_OPS)}, got {self.op!r}"
            )
        object.__setattr__(self, "value", normalize_literal(self.value))


@dataclass(frozen=True, slots=True)
class InList(Predicate):
    """``column IN (values…)``; NULL values in the list never match.

    Attributes:
        column: Column name.
        values: The literals (at least one).
    """

    column: str
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        """Check the fields and normalize the literals."""
        _check_column(self.column)
        values = tuple(normalize_literal(v) for v in self.values)
        if not values:
            raise InvalidOptionError("an IN list needs at least one value")
        object.__setattr__(self, "values", values)


@dataclass(frozen=True, slots=True)
class IsNull(Predicate):
    """``column IS NULL``."""

    column: str

    def __post_init__(self) -> None:
        """Check the column name."""
        _check_column(self.column)


@dataclass(frozen=True, slots=True)
class IsNotNull(Predicate):
    """``column IS NOT NULL``."""

    column: str

    def __post_init__(self) -> None:
        """Check the column name."""
        _check_column(self.column)


def _check_children(children: object, what: str) -> tuple[Predicate, ...]:
    if isinstance(children, Predicate) or not isinstance(children, Iterable):
        raise InvalidOptionError(f"{what} takes a sequence of predicates, got {children!r}")
    result: tuple[Any, ...] = tuple(children)
    if not result:
        raise InvalidOptionError(f"{what} needs at least one child")
    for c in result:
        if not isinstance(c, Predicate):
            raise InvalidOptionError(f"{what} children must be predicates, got {c!r}")
    return result


@dataclass(frozen=True, slots=True)
class And(Predicate):
    """Conjunction of the children (at least one)."""

    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        """Freeze and check the children."""
        object.__setattr__(self, "children", _check_children(self.children, "And"))


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    """Disjunction of the children (at least one)."""

    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        """Freeze and check the children."""
        object.__setattr__(self, "children", _check_children(self.children, "Or"))


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    """Negation of the child (three-valued: NOT NULL is NULL)."""

    child: Predicate

    def __post_init__(self) -> None:
        """Check the child."""
        if not isinstance(self.child, Predicate):
            raise InvalidOptionError(f"Not needs a predicate, got {self.child!r}")


@dataclass(frozen=True, slots=True)
class TrueLiteral(Predicate):
    """The constant TRUE."""


@dataclass(frozen=True, slots=True)
class FalseLiteral(Predicate):
    """The constant FALSE."""


TRUE = TrueLiteral()
"""The constant TRUE."""

FALSE = FalseLiteral()
"""The constant FALSE."""


@dataclass(frozen=True, slots=True)
class Opaque(Predicate):
    """A boolean expression the planner does not interpret; kept only as a residual filter.

    Attributes:
        sql: The expression's Spark SQL text (verbatim from the parsed text, or rendered from
            a Connect expression). Empty when a Connect expression cannot be rendered; then
            :func:`to_sql` raises and :func:`~qbeast_connect.spark.columns.to_column` must be used.
        expr: The original Connect ``Expression`` when translated from a Column (not compared).
    """

    sql: str
    expr: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Check the text."""
        if not isinstance(self.sql, str):
            raise InvalidOptionError(f"Opaque.sql must be a string, got {self.sql!r}")
        if not self.sql.strip() and self.expr is None:
            raise InvalidOptionError("Opaque needs SQL text or a Connect expression")


def Between(column: str, low: object, high: object) -> Predicate:  # noqa: N802 - node-like
    """Return ``column BETWEEN low AND high`` as ``column >= low AND column <= high``."""
    return And((Comparison(column, ">=", low), Comparison(column, "<=", high)))


def and_(*predicates: Predicate) -> Predicate:
    """Conjunction with nested ``And`` flattened; a single predicate is returned as is."""
    return _join(predicates, And, TRUE)


def or_(*predicates: Predicate) -> Predicate:
    """Disjunction with nested ``Or`` flattened; a single predicate is returned as is."""
    return _join(predicates, Or, FALSE)


def _join(
    predicates: Iterable[Predicate], junction: type[And] | type[Or], empty: Predicate
) -> Predicate:
    flat: list[Predicate] = []
    for p in predicates:
        flat.extend(p.children if isinstance(p, junction) else (p,))
    if not flat:
        return empty
    return flat[0] if len(flat) == 1 else junction(tuple(flat))


def conjuncts(p: Predicate) -> tuple[Predicate, ...]:
    """Split at top-level ANDs (nested ``And`` flattened); ``TRUE`` gives ``()``."""
    return _split(p, And, TrueLiteral)


def disjuncts(p: Predicate) -> tuple[Predicate, ...]:
    """Split at top-level ORs (nested ``Or`` flattened); ``FALSE`` gives ``()``."""
    return _split(p, Or, FalseLiteral)


def _split(
    p: Predicate, junction: type[And] | type[Or], neutral: type[Predicate]
) -> tuple[Predicate, ...]:
    if isinstance(p, neutral):
        return ()
    if isinstance(p, junction):
        out: list[Predicate] = []
        for c in p.children:
            out.extend(_split(c, junction, neutral))
        return tuple(out)
    return (p,)


def referenced_columns(p: Predicate) -> frozenset[str]:
    """Column names used by the interpreted leaves (Opaque text is not inspected)."""
    if isinstance(p, Comparison | InList | IsNull | IsNotNull):
        return frozenset({p.column})
    if isinstance(p, And | Or):
        out: set[str] = set()
        for c in p.children:
            out |= referenced_columns(c)
        return frozenset(out)
    if isinstance(p, Not):
        return referenced_columns(p.child)
    return frozenset()


def comparison(col: str, op: str, value: Any) -> Predicate:
    """Build the predicate of ``col op value`` for every SQL comparison operator."""
    if op in ("=", "=="):
        return Comparison(col, "=", value)
    if op in ("<>", "!="):
        return Not(Comparison(col, "=", value))
    if op == "!<":
        return Comparison(col, ">=", value)
    if op == "!>":
        return Comparison(col, "<=", value)
    if op == "<=>":  # null-safe equality: never NULL
        if value is None:
            return IsNull(col)
        return And((IsNotNull(col), Comparison(col, "=", value)))
    return Comparison(col, op, value)  # type: ignore[arg-type]


def chain_operands(
    root: _T, kind: str, kind_of: Callable[[_T], str], args_of: Callable[[_T], Iterable[_T]]
) -> list[_T]:
    """The operands of a nested chain of one connective, left to right, without recursion."""
    out: list[_T] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if kind_of(node) == kind:
            stack.extend(reversed(list(args_of(node))))
        else:
            out.append(node)
    return out


def to_sql(p: Predicate) -> str:
    """Render a predicate as Spark SQL text (identifiers backquoted, literals typed).

    Raises:
        InvalidOptionError: An :class:`Opaque` node has no SQL text (a Connect expression
            that could not be rendered; use :func:`~qbeast_connect.spark.columns.to_column`).
    """
    if isinstance(p, Comparison):
        return f"{quote_identifier(p.column)} {p.op} {literal_sql(p.value)}"
    if isinstance(p, InList):
        items = ", ".join(literal_sql(v) for v in p.values)
        return f"{quote_identifier(p.column)} IN ({items})"
    if isinstance(p, IsNull):
        return f"{quote_identifier(p.column)} IS NULL"
    if isinstance(p, IsNotNull):
        return f"{quote_identifier(p.column)} IS NOT NULL"
    if isinstance(p, And | Or):
        joiner = " AND " if isinstance(p, And) else " OR "
        if len(p.children) == 1:
            return to_sql(p.children[0])
        return joiner.join(f"({to_sql(c)})" for c in p.children)
    if isinstance(p, Not):
        return f"NOT ({to_sql(p.child)})"
    if isinstance(p, TrueLiteral):
        return "TRUE"
    if isinstance(p, FalseLiteral):
        return "FALSE"
    if isinstance(p, Opaque):
        if not p.sql.strip():
            raise InvalidOptionError(
                "this filter holds a Column expression that cannot be rendered as SQL; "
                "apply it with to_column() instead"
            )
        return p.sql
    raise InvalidOptionError(f"not a predicate: {p!r}")
