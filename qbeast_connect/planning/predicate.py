"""Filter predicates: a small immutable tree, a Spark SQL parser and Connect Column translation.

The tree only models what file pruning can use: comparisons of one column with a literal,
``IN`` lists, ``IS [NOT] NULL``, ``AND``/``OR``/``NOT`` and the constants. Anything else is
kept verbatim as :class:`Opaque`: it never prunes, but it still renders back to SQL so it can
be applied as a residual filter.

Semantics are Spark SQL's three-valued logic. A row is *kept* by a filter only when the
predicate is TRUE; NULL (unknown) drops the row just like FALSE. :func:`nnf` pushes ``NOT``
down to the leaves while keeping exactly the set of rows for which the predicate is TRUE,
so ``NOT a < 5`` becomes ``a >= 5`` (a NULL ``a`` satisfies neither).

Literal values are Python objects: ``None`` (SQL NULL), ``bool``, ``int``, ``float``,
``Decimal``, ``str``, ``datetime.date`` (DATE) and timezone-aware UTC ``datetime.datetime``
(TIMESTAMP, microsecond precision). A timestamp literal written without a zone is read as UTC,
the session time zone of our servers.

Nothing here imports pyspark at module level; :func:`from_column` and :func:`to_column`
import it lazily.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from qbeast_connect.exceptions import InvalidOptionError

if TYPE_CHECKING:
    from pyspark.sql import Column

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
    "LiteralValue",
    "Not",
    "Opaque",
    "Or",
    "Predicate",
    "PredicateSyntaxError",
    "TrueLiteral",
    "and_",
    "conjuncts",
    "disjuncts",
    "from_column",
    "from_sql",
    "literal_sql",
    "nnf",
    "or_",
    "parse_date_literal",
    "parse_timestamp_literal",
    "quote_identifier",
    "referenced_columns",
    "to_column",
    "to_dnf",
    "to_sql",
]

ComparisonOp: TypeAlias = Literal["=", "<", "<=", ">", ">="]
LiteralValue: TypeAlias = "bool | int | float | Decimal | str | _dt.date | _dt.datetime | None"

_T = TypeVar("_T")
_OPS: frozenset[str] = frozenset({"=", "<", "<=", ">", ">="})
_NEGATED: dict[str, ComparisonOp] = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_UTC = _dt.UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)


class PredicateSyntaxError(InvalidOptionError):
    """A filter's SQL text is not a valid boolean expression.

    Attributes:
        position: 0-based character offset in the text where the problem was found.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.position))


# ---------------------------------------------------------------------------------------------
# the tree
# ---------------------------------------------------------------------------------------------


def _check_column(column: object) -> None:
    if not isinstance(column, str) or not column:
        raise InvalidOptionError(f"a predicate needs a non-empty column name, got {column!r}")


def _normalize_literal(value: object) -> Any:
    """Validate a literal and bring it to its canonical form (UTC-aware datetimes)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=_UTC)
        return value.astimezone(_UTC)
    if isinstance(value, _dt.date):
        return value
    raise InvalidOptionError(
        f"unsupported literal {value!r} ({type(value).__name__}); use None, bool, int, float, "
        "Decimal, str, datetime.date or datetime.datetime"
    )


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
        object.__setattr__(self, "value", _normalize_literal(self.value))


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
        values = tuple(_normalize_literal(v) for v in self.values)
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
            :func:`to_sql` raises and :func:`to_column` must be used.
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
    flat: list[Predicate] = []
    for p in predicates:
        flat.extend(p.children if isinstance(p, And) else (p,))
    if not flat:
        return TRUE
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def or_(*predicates: Predicate) -> Predicate:
    """Disjunction with nested ``Or`` flattened; a single predicate is returned as is."""
    flat: list[Predicate] = []
    for p in predicates:
        flat.extend(p.children if isinstance(p, Or) else (p,))
    if not flat:
        return FALSE
    return flat[0] if len(flat) == 1 else Or(tuple(flat))


def conjuncts(p: Predicate) -> tuple[Predicate, ...]:
    """Split at top-level ANDs (nested ``And`` flattened); ``TRUE`` gives ``()``."""
    if isinstance(p, TrueLiteral):
        return ()
    if isinstance(p, And):
        out: list[Predicate] = []
        for c in p.children:
            out.extend(conjuncts(c))
        return tuple(out)
    return (p,)


def disjuncts(p: Predicate) -> tuple[Predicate, ...]:
    """Split at top-level ORs (nested ``Or`` flattened); ``FALSE`` gives ``()``."""
    if isinstance(p, FalseLiteral):
        return ()
    if isinstance(p, Or):
        out: list[Predicate] = []
        for c in p.children:
            out.extend(disjuncts(c))
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


# ---------------------------------------------------------------------------------------------
# negation normal form and DNF
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# rendering to SQL
# ---------------------------------------------------------------------------------------------


def quote_identifier(name: str) -> str:
    """Return ``name`` as a backquoted Spark SQL identifier (backquotes doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _quote_string(s: str) -> str:
    # Backslash escapes work in every Spark version (doubled quotes only since Spark 4).
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _format_timestamp(value: _dt.datetime) -> str:
    value = value.astimezone(_UTC)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.year < 1000:
        text = f"{value.year:04d}" + text[text.index("-") :]
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def literal_sql(value: object) -> str:
    """Render a literal as Spark SQL.

    ``None`` → ``NULL``; booleans → ``TRUE``/``FALSE``; floats → ``1.5D`` (a double, not a
    decimal; NaN and infinities as ``CAST('NaN' AS DOUBLE)``); ``Decimal`` → ``1.50BD``;
    strings single-quoted with backslash escapes; dates → ``DATE 'yyyy-mm-dd'``; datetimes
    → ``TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]Z'`` in UTC.

    Raises:
        InvalidOptionError: The value is not a supported literal (or a NaN Decimal).
    """
    value = _normalize_literal(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
        return repr(value) + "D"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidOptionError(f"cannot render the decimal {value} as a SQL literal")
        return format(value, "f") + "BD"
    if isinstance(value, str):
        return _quote_string(value)
    if isinstance(value, _dt.datetime):
        return f"TIMESTAMP '{_format_timestamp(value)}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    raise InvalidOptionError(f"cannot render {value!r} as a SQL literal")  # pragma: no cover


def to_sql(p: Predicate) -> str:
    """Render a predicate as Spark SQL text (identifiers backquoted, literals typed).

    Raises:
        InvalidOptionError: An :class:`Opaque` node has no SQL text (a Connect expression
            that could not be rendered; use :func:`to_column`).
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


def to_column(p: Predicate) -> Column:
    """Build a Spark Connect ``Column`` for the predicate (imports pyspark lazily).

    Opaque nodes translated from a Column reuse the original expression, so this works even
    where :func:`to_sql` cannot render the text.
    """
    from pyspark.sql.connect import functions as F
    from pyspark.sql.connect.column import Column as ConnectColumn

    def build(q: Predicate) -> Column:
        if isinstance(q, And | Or):
            cols = [build(c) for c in q.children]
            out = cols[0]
            for c in cols[1:]:
                out = (out & c) if isinstance(q, And) else (out | c)
            return out
        if isinstance(q, Not):
            return ~build(q.child)
        if isinstance(q, Opaque) and q.expr is not None:
            return ConnectColumn(q.expr)
        return F.expr(to_sql(q))

    return build(p)


# ---------------------------------------------------------------------------------------------
# SQL tokenizer
# ---------------------------------------------------------------------------------------------

_OPERATORS = (
    "<=>", ">>>", "<<", ">>", "<=", ">=", "<>", "!=", "==", "!<", "!>", "||", "::", "->", "=>",
    "=", "<", ">", "!", "+", "-", "*", "/", "%", "&", "|", "^", "~", "(", ")", ",", ".", "[",
    "]", ":", "?", ";", "{", "}",
)  # fmt: skip
_NUMBER_RE = re.compile(
    r"(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?(bd|BD|bD|Bd|[lLsSyYdDfF])?", re.ASCII
)


def _is_digit(ch: str) -> bool:
    """ASCII digits only, like Spark's lexer (``'²'.isdigit()`` is true in Python)."""
    return "0" <= ch <= "9"
_WORD_RE = re.compile(r"\w+")
_OCTAL_RE = re.compile(r"[0-3][0-7][0-7]")
_HEX4_RE = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES = {
    "0": "\x00", "'": "'", '"': '"', "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
    "\\": "\\", "%": "\\%", "_": "\\_",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "ident", "qident", "string", "number", "op", "eof"
    text: str
    value: Any
    start: int
    end: int


def _syntax_error(text: str, position: int, what: str) -> PredicateSyntaxError:
    near = text[position : position + 20]
    where = f"near {near!r}" if near else "at the end of the text"
    return PredicateSyntaxError(
        f"cannot parse filter {text!r}: {what} at position {position} ({where})", position
    )


def _unescape(body: str) -> str:
    """Spark's ``unescapeSQLString`` for the body of a quoted literal."""
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and _HEX4_RE.fullmatch(body, i + 2, i + 6):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif _OCTAL_RE.fullmatch(body, i + 1, i + 4):
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if text.startswith("/*", i):
            depth = 0
            j = i
            while j < n:
                if text.startswith("/*", j):
                    depth += 1
                    j += 2
                elif text.startswith("*/", j):
                    depth -= 1
                    j += 2
                    if depth == 0:
                        break
                else:
                    j += 1
            if depth != 0:
                raise _syntax_error(text, i, "unclosed comment")
            i = j
            continue
        start = i
        raw = ch in "rR" and i + 1 < n and text[i + 1] in "'\""
        if ch in "'\"" or raw:
            quote = text[i + 1] if raw else ch
            j = i + 2 if raw else i + 1
            parts: list[str] = []
            while True:
                if j >= n:
                    raise _syntax_error(text, start, "unterminated string literal")
                c = text[j]
                if c == "\\" and not raw:
                    parts.append(text[j : j + 2])
                    j += 2
                    continue
                if c == quote:
                    if not raw and j + 1 < n and text[j + 1] == quote:
                        parts.append(quote if quote == "'" else '"')
                        j += 2
                        continue
                    break
                parts.append(c)
                j += 1
            body = "".join(parts)
            value = body if raw else _unescape(body)
            tokens.append(_Token("string", text[start : j + 1], value, start, j + 1))
            i = j + 1
            continue
        if ch == "`":
            j = i + 1
            name: list[str] = []
            while True:
                if j >= n:
                    raise _syntax_error(text, start, "unterminated backquoted identifier")
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        name.append("`")
                        j += 2
                        continue
                    break
                name.append(text[j])
                j += 1
            tokens.append(_Token("qident", text[start : j + 1], "".join(name), start, j + 1))
            i = j + 1
            continue
        if _is_digit(ch) or (ch == "." and i + 1 < n and _is_digit(text[i + 1])):
            m = _NUMBER_RE.match(text, i)
            assert m is not None
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] == "_") and "." not in m.group(1):
                w = _WORD_RE.match(text, i)
                assert w is not None
                tokens.append(_Token("ident", w.group(), w.group(), start, w.end()))
                i = w.end()
                continue
            tokens.append(_Token("number", m.group(), _number_value(m), start, end))
            i = end
            continue
        if ch.isalpha() or ch == "_":
            w = _WORD_RE.match(text, i)
            assert w is not None
            tokens.append(_Token("ident", w.group(), w.group(), start, w.end()))
            i = w.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                tokens.append(_Token("op", op, op, start, i + len(op)))
                i += len(op)
                break
        else:
            raise _syntax_error(text, i, f"unexpected character {ch!r}")
    tokens.append(_Token("eof", "", None, n, n))
    return tokens


def _to_float32(x: float) -> float:
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def _number_value(m: re.Match[str]) -> int | float | Decimal:
    digits, exponent, suffix = m.group(1), m.group(2) or "", (m.group(3) or "").upper()
    body = digits + exponent
    if suffix == "BD":
        return Decimal(body)
    if suffix == "D":
        return float(body)
    if suffix == "F":
        return _to_float32(float(body))
    if suffix in ("L", "S", "Y"):
        return int(digits)  # the grammar only allows digits with these suffixes
    if exponent:
        return float(body)  # Spark: an exponent literal is a DOUBLE
    if "." in digits:
        return Decimal(digits)  # Spark: 1.5 is a DECIMAL literal
    return int(digits)


# ---------------------------------------------------------------------------------------------
# SQL parser (generic expression tree with source spans, then conversion)
# ---------------------------------------------------------------------------------------------

_NO_VALUE = object()


@dataclass(slots=True)
class _Node:
    kind: str  # "col", "lit", "cmp", "between", "in", "isnull", "not", "and", "or", "other"
    start: int
    end: int
    parts: tuple[str, ...] = ()
    value: Any = _NO_VALUE  # literal value; _NO_VALUE for a literal we do not model
    op: str = ""
    args: tuple[_Node, ...] = ()
    neg: bool = False


_COMPARISON_TOKENS = frozenset({"=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>", "!<", "!>"})
_BINARY_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"|"}),
    frozenset({"^"}),
    frozenset({"&"}),
    frozenset({"<<", ">>", ">>>"}),
    frozenset({"+", "-", "||"}),
    frozenset({"*", "/", "%", "DIV"}),
)
_NOT_AN_EXPRESSION = frozenset(
    {"AND", "OR", "IN", "IS", "BETWEEN", "LIKE", "ILIKE", "RLIKE", "REGEXP", "THEN", "ELSE",
     "END", "WHEN", "ESCAPE", "NOT"}
)  # fmt: skip
_PREDICATE_KEYWORDS = frozenset({"BETWEEN", "IN", "LIKE", "ILIKE", "RLIKE", "REGEXP"})
_SUBQUERY_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE"})
_INTERVAL_UNITS = frozenset(
    u + s
    for u in ("YEAR", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND",
              "MICROSECOND", "NANOSECOND")
    for s in ("", "S")
)  # fmt: skip


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    # ---- token helpers -------------------------------------------------------------------

    def peek(self, offset: int = 0) -> _Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        tok = self.tokens[self.pos]
        if tok.kind != "eof":
            self.pos += 1
        return tok

    def is_kw(self, word: str, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok.kind == "ident" and tok.text.upper() == word

    def is_op(self, op: str, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok.kind == "op" and tok.text == op

    def error(self, what: str, tok: _Token | None = None) -> PredicateSyntaxError:
        tok = tok or self.peek()
        if tok.kind == "eof":
            what = f"{what}; the text ended"
        return _syntax_error(self.text, tok.start, what)

    def expect_op(self, op: str) -> _Token:
        if not self.is_op(op):
            raise self.error(f"expected {op!r}")
        return self.advance()

    def expect_kw(self, word: str) -> _Token:
        if not self.is_kw(word):
            raise self.error(f"expected {word}")
        return self.advance()

    def last_end(self) -> int:
        return self.tokens[self.pos - 1].end if self.pos > 0 else 0

    # ---- grammar -------------------------------------------------------------------------

    def parse(self) -> _Node:
        if self.peek().kind == "eof":
            raise self.error("empty filter")
        node = self.parse_or()
        if self.peek().kind != "eof":
            raise self.error("unexpected token")
        return node

    def parse_or(self) -> _Node:
        left = self.parse_and()
        while self.is_kw("OR"):
            self.advance()
            right = self.parse_and()
            left = _Node("or", left.start, right.end, args=(left, right))
        return left

    def parse_and(self) -> _Node:
        left = self.parse_not()
        while self.is_kw("AND"):
            self.advance()
            right = self.parse_not()
            left = _Node("and", left.start, right.end, args=(left, right))
        return left

    def parse_not(self) -> _Node:
        if self.is_kw("NOT") or self.is_op("!"):
            tok = self.advance()
            child = self.parse_not()
            return _Node("not", tok.start, child.end, args=(child,))
        return self.parse_predicate()

    def parse_predicate(self) -> _Node:
        value = self.parse_comparison()
        while True:
            negated = False
            if (
                self.is_kw("NOT")
                and self.peek(1).kind == "ident"
                and (self.peek(1).text.upper() in _PREDICATE_KEYWORDS)
            ):
                self.advance()
                negated = True
            if self.is_kw("BETWEEN"):
                self.advance()
                low = self.parse_comparison()
                self.expect_kw("AND")
                high = self.parse_comparison()
                value = _Node(
                    "between", value.start, high.end, args=(value, low, high), neg=negated
                )
            elif self.is_kw("IN"):
                self.advance()
                value = self.parse_in(value, negated)
            elif self.peek().kind == "ident" and self.peek().text.upper() in (
                "LIKE",
                "ILIKE",
                "RLIKE",
                "REGEXP",
            ):
                self.advance()
                if (
                    self.peek().kind == "ident"
                    and self.peek().text.upper() in ("ANY", "SOME", "ALL")
                    and self.is_op("(", 1)
                ):
                    self.advance()
                    self.skip_parenthesized()
                else:
                    self.parse_comparison()
                if self.is_kw("ESCAPE"):
                    self.advance()
                    if self.peek().kind != "string":
                        raise self.error("expected a string after ESCAPE")
                    self.advance()
                value = _Node("other", value.start, self.last_end())
            elif self.is_kw("IS"):
                self.advance()
                is_not = False
                if self.is_kw("NOT"):
                    self.advance()
                    is_not = True
                if self.is_kw("NULL"):
                    self.advance()
                    value = _Node("isnull", value.start, self.last_end(), args=(value,), neg=is_not)
                elif any(self.is_kw(w) for w in ("TRUE", "FALSE", "UNKNOWN")):
                    self.advance()
                    value = _Node("other", value.start, self.last_end())
                elif self.is_kw("DISTINCT"):
                    self.advance()
                    self.expect_kw("FROM")
                    other = self.parse_comparison()
                    value = _Node("other", value.start, other.end)
                else:
                    raise self.error("expected NULL, NOT NULL, TRUE, FALSE or DISTINCT FROM")
            else:
                if negated:  # pragma: no cover - guarded by the lookahead above
                    raise self.error("expected BETWEEN, IN or LIKE after NOT")
                return value

    def parse_in(self, value: _Node, negated: bool) -> _Node:
        open_tok = self.peek()
        if not self.is_op("("):
            raise self.error("expected '(' after IN")
        if self.peek(1).kind == "ident" and self.peek(1).text.upper() in _SUBQUERY_KEYWORDS:
            self.skip_parenthesized()
            return _Node("other", value.start, self.last_end())
        self.advance()
        if self.is_op(")"):
            raise self.error("an IN list needs at least one value")
        items = [self.parse_or()]
        while self.is_op(","):
            self.advance()
            items.append(self.parse_or())
        if not self.is_op(")"):
            raise self.error(f"expected ',' or ')' in the IN list opened at {open_tok.start}")
        end = self.advance().end
        return _Node("in", value.start, end, args=(value, *items), neg=negated)

    def parse_comparison(self) -> _Node:
        left = self.parse_binary(0)
        while self.peek().kind == "op" and self.peek().text in _COMPARISON_TOKENS:
            op = self.advance().text
            right = self.parse_binary(0)
            left = _Node("cmp", left.start, right.end, op=op, args=(left, right))
        return left

    def _at_binary_op(self, level: int) -> bool:
        tok = self.peek()
        ops = _BINARY_LEVELS[level]
        if tok.kind == "op":
            return tok.text in ops
        return tok.kind == "ident" and tok.text.upper() in ops

    def parse_binary(self, level: int) -> _Node:
        if level == len(_BINARY_LEVELS):
            return self.parse_unary()
        left = self.parse_binary(level + 1)
        while self._at_binary_op(level):
            self.advance()
            right = self.parse_binary(level + 1)
            left = _Node("other", left.start, right.end)
        return left

    def parse_unary(self) -> _Node:
        if self.peek().kind == "op" and self.peek().text in ("-", "+", "~"):
            tok = self.advance()
            operand = self.parse_unary()
            if (
                tok.text in ("-", "+")
                and operand.kind == "lit"
                and isinstance(operand.value, int | float | Decimal)
                and not isinstance(operand.value, bool)
            ):
                v = operand.value if tok.text == "+" else -operand.value
                return _Node("lit", tok.start, operand.end, value=v)
            return _Node("other", tok.start, operand.end)
        return self.parse_postfix()

    def parse_postfix(self) -> _Node:
        node = self.parse_primary()
        while True:
            if self.is_op(".") and self.peek(1).kind in ("ident", "qident"):
                self.advance()
                name = self.advance()
                if node.kind == "col":
                    node = _Node("col", node.start, name.end, parts=(*node.parts, name.value))
                else:
                    node = _Node("other", node.start, name.end)
            elif self.is_op("["):
                self.advance()
                self.parse_or()
                end = self.expect_op("]").end
                node = _Node("other", node.start, end)
            elif self.is_op("::"):
                self.advance()
                self.skip_type()
                node = _Node("other", node.start, self.last_end())
            elif self.is_kw("COLLATE") and self.peek(1).kind in ("ident", "qident"):
                self.advance()  # a collation changes comparisons: never interpret it
                self.advance()
                while self.is_op(".") and self.peek(1).kind in ("ident", "qident"):
                    self.advance()
                    self.advance()
                node = _Node("other", node.start, self.last_end())
            elif self.is_op(":") and self.peek(1).kind in ("ident", "qident", "string"):
                self.advance()  # variant / JSON path: col:field
                self.advance()
                node = _Node("other", node.start, self.last_end())
            else:
                return node

    def skip_type(self) -> None:
        if self.peek().kind not in ("ident", "qident"):
            raise self.error("expected a type name")
        self.advance()
        if self.is_op("("):
            self.skip_parenthesized()
        elif self.is_op("<"):
            depth = 0
            while True:
                tok = self.advance()
                if tok.kind == "eof":
                    raise self.error("unclosed '<' in a type", tok)
                if tok.kind == "op":
                    depth += tok.text.count("<") if tok.text in ("<", "<<") else 0
                    depth -= tok.text.count(">") if tok.text in (">", ">>", ">>>") else 0
                if depth <= 0:
                    return

    def skip_parenthesized(self) -> None:
        """Consume a balanced ``( … )`` group without interpreting it."""
        open_tok = self.expect_op("(")
        depth = 1
        while depth:
            tok = self.advance()
            if tok.kind == "eof":
                raise _syntax_error(self.text, open_tok.start, "unclosed '(' (no matching ')')")
            if tok.kind == "op" and tok.text in ("(", "[", "{"):
                depth += 1
            elif tok.kind == "op" and tok.text in (")", "]", "}"):
                depth -= 1

    def parse_primary(self) -> _Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "(":
            if self.peek(1).kind == "ident" and self.peek(1).text.upper() in _SUBQUERY_KEYWORDS:
                self.skip_parenthesized()
                return _Node("other", tok.start, self.last_end())
            self.advance()
            items = [self.parse_or()]
            while self.is_op(","):
                self.advance()
                items.append(self.parse_or())
            if not self.is_op(")"):
                raise self.error(f"expected ')' to close the '(' at position {tok.start}")
            end = self.advance().end
            if len(items) == 1:
                return items[0]
            return _Node("other", tok.start, end)  # a struct / row value
        if tok.kind == "number":
            self.advance()
            return _Node("lit", tok.start, tok.end, value=tok.value)
        if tok.kind == "string":
            return self.parse_strings()
        if tok.kind == "qident":
            self.advance()
            if self.is_op("("):
                return self.parse_call(tok)
            return _Node("col", tok.start, tok.end, parts=(tok.value,))
        if tok.kind == "ident":
            return self.parse_word()
        if tok.kind == "op" and tok.text in ("?", ":"):
            self.advance()
            if tok.text == ":" and self.peek().kind in ("ident", "qident"):
                self.advance()
            return _Node("other", tok.start, self.last_end())
        raise self.error("expected an expression")

    def parse_strings(self) -> _Node:
        first = self.peek()
        parts: list[str] = []
        while self.peek().kind == "string":
            parts.append(self.advance().value)
        return _Node("lit", first.start, self.last_end(), value="".join(parts))

    def parse_word(self) -> _Node:
        tok = self.advance()
        word = tok.text.upper()
        nxt = self.peek()
        if word in ("TRUE", "FALSE"):
            return _Node("lit", tok.start, tok.end, value=word == "TRUE")
        if word == "NULL":
            return _Node("lit", tok.start, tok.end, value=None)
        if nxt.kind == "string" and word != "INTERVAL":  # typed literal: DATE '…', X'…'
            lit = self.parse_strings()
            value = _typed_literal(word, lit.value)
            return _Node("lit", tok.start, lit.end, value=value)
        if word == "INTERVAL" and (
            nxt.kind in ("string", "number") or (nxt.kind == "op" and nxt.text in "+-")
        ):
            self.skip_interval()
            return _Node("other", tok.start, self.last_end())
        if word == "CASE":
            depth = 1
            while depth:
                t = self.advance()
                if t.kind == "eof":
                    raise _syntax_error(self.text, tok.start, "CASE without END")
                if t.kind == "ident" and t.text.upper() == "CASE":
                    depth += 1
                elif t.kind == "ident" and t.text.upper() == "END":
                    depth -= 1
            return _Node("other", tok.start, self.last_end())
        if nxt.kind == "op" and nxt.text == "(":
            return self.parse_call(tok)
        if word in _NOT_AN_EXPRESSION:
            raise self.error("expected an expression", tok)
        if nxt.kind == "op" and nxt.text == "->":  # lambda x -> …
            self.advance()
            body = self.parse_or()
            return _Node("other", tok.start, body.end)
        return _Node("col", tok.start, tok.end, parts=(tok.text,))

    def parse_call(self, name: _Token) -> _Node:
        args_start = self.pos + 1
        self.skip_parenthesized()
        args_end = self.pos - 1  # index of the closing ')'
        inner = self.tokens[args_start:args_end]
        end = self.last_end()
        for clause in ("FILTER", "OVER"):
            if self.is_kw(clause) and self.is_op("(", 1):
                self.advance()
                self.skip_parenthesized()
            elif (
                clause == "OVER" and self.is_kw("OVER") and self.peek(1).kind in ("ident", "qident")
            ):
                self.advance()
                self.advance()
        if self.is_kw("WITHIN") and self.is_kw("GROUP", 1) and self.is_op("(", 2):
            self.advance()
            self.advance()
            self.skip_parenthesized()
        end = self.last_end()
        fname = name.text.lower()
        if fname in ("isnull", "isnotnull") and inner and _is_column_chain(inner):
            col = _Node(
                "col", inner[0].start, inner[-1].end,
                parts=tuple(t.value for t in inner if t.kind != "op"),
            )  # fmt: skip
            return _Node("isnull", name.start, end, args=(col,), neg=fname == "isnotnull")
        return _Node("other", name.start, end)

    def skip_interval(self) -> None:
        while True:
            offset = 1 if self.peek().kind == "op" and self.peek().text in "+-" else 0
            if self.peek(offset).kind not in ("string", "number"):
                return
            if offset and not (
                self.peek(2).kind == "ident" and self.peek(2).text.upper() in _INTERVAL_UNITS
            ):
                return
            for _ in range(offset + 1):
                self.advance()
            while self.peek().kind == "ident" and (
                self.peek().text.upper() in _INTERVAL_UNITS or self.peek().text.upper() == "TO"
            ):
                self.advance()


def _is_column_chain(tokens: Sequence[_Token]) -> bool:
    """Whether the tokens are ``name`` or ``name.name…``."""
    for i, t in enumerate(tokens):
        if i % 2 == 0:
            if t.kind not in ("ident", "qident"):
                return False
        elif not (t.kind == "op" and t.text == "."):
            return False
    return len(tokens) % 2 == 1


_DATE_RE = re.compile(r"([+-]?\d{4,})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", re.ASCII)
_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?", re.ASCII)
_ZONE_RE = re.compile(r"\s*(?:(Z|UTC|GMT|UT)?\s*(?:([+-])(\d{1,2})(?::?(\d{2}))?)?)", re.ASCII)


def parse_date_literal(text: str) -> _dt.date | None:
    """Parse a Spark DATE string (``yyyy[-m[m][-d[d]]]``, optionally followed by ``T…``)."""
    s = text.strip()
    m = _DATE_RE.match(s)
    if m is None:
        return None
    rest = s[m.end() :]
    if rest and not (m.group(3) and rest[0] in " T"):
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None


def parse_timestamp_literal(text: str) -> _dt.datetime | None:
    """Parse a Spark TIMESTAMP string; no zone means UTC (our servers' session time zone)."""
    s = text.strip()
    m = _DATE_RE.match(s)
    if m is None:
        return None
    try:
        day = _dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None
    rest = s[m.end() :]
    hour = minute = second = micro = 0
    if rest:
        if not m.group(3) or rest[0] not in " T":
            return None
        rest = rest[1:]
        t = _TIME_RE.match(rest)
        if t is not None:
            hour, minute = int(t.group(1)), int(t.group(2))
            second = int(t.group(3) or 0)
            fraction = (t.group(4) or "")[:6]
            micro = int(fraction.ljust(6, "0")) if fraction else 0
            rest = rest[t.end() :]
        elif rest.strip():
            return None
    offset = _dt.timedelta(0)
    if rest.strip():
        z = _ZONE_RE.fullmatch(rest)
        if z is None or not (z.group(1) or z.group(2)):
            return None
        if z.group(2):
            hours = int(z.group(3))
            minutes = int(z.group(4) or 0)
            if hours > 18 or minutes > 59:
                return None
            offset = _dt.timedelta(hours=hours, minutes=minutes)
            if z.group(2) == "-":
                offset = -offset
    try:
        local = _dt.datetime(day.year, day.month, day.day, hour, minute, second, micro, tzinfo=_UTC)
        return (local - offset).astimezone(_UTC)
    except (ValueError, OverflowError):
        return None


def _typed_literal(type_name: str, text: str) -> Any:
    if type_name == "DATE":
        value = parse_date_literal(text)
    elif type_name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        value = parse_timestamp_literal(text)
    else:  # TIMESTAMP_NTZ, X'…', TIME, … : kept verbatim
        value = None
    return _NO_VALUE if value is None else value


class _Converter:
    """Turn the generic parse tree into predicates; unknown parts become Opaque text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def opaque(self, node: _Node) -> Opaque:
        return Opaque(self.text[node.start : node.end].strip())

    @staticmethod
    def column(node: _Node) -> str | None:
        if node.kind == "col" and len(node.parts) == 1:
            return node.parts[0]
        return None

    @staticmethod
    def literal(node: _Node) -> Any:
        if node.kind == "lit":
            return node.value
        return _NO_VALUE

    def convert(self, node: _Node) -> Predicate:
        kind = node.kind
        if kind in ("and", "or"):
            # chains of thousands of ANDs/ORs: flatten without recursion
            children = [self.convert(a) for a in _chain(node, kind, lambda n: n.kind, _args)]
            return and_(*children) if kind == "and" else or_(*children)
        if kind == "not":
            return Not(self.convert(node.args[0]))
        if kind == "lit":
            if isinstance(node.value, bool):
                return TRUE if node.value else FALSE
            return self.opaque(node)
        if kind == "cmp":
            return self.convert_comparison(node)
        if kind == "between":
            x, low, high = node.args
            col = self.column(x)
            lo, hi = self.literal(low), self.literal(high)
            if col is None or lo is _NO_VALUE or hi is _NO_VALUE:
                return self.opaque(node)
            between = Between(col, lo, hi)
            return Not(between) if node.neg else between
        if kind == "in":
            col = self.column(node.args[0])
            values = [self.literal(a) for a in node.args[1:]]
            if col is None or any(v is _NO_VALUE for v in values):
                return self.opaque(node)
            in_list = InList(col, tuple(values))
            return Not(in_list) if node.neg else in_list
        if kind == "isnull":
            col = self.column(node.args[0])
            if col is None:
                return self.opaque(node)
            return IsNotNull(col) if node.neg else IsNull(col)
        return self.opaque(node)

    def convert_comparison(self, node: _Node) -> Predicate:
        left, right = node.args
        op = node.op
        col, value = self.column(left), self.literal(right)
        if col is None or value is _NO_VALUE:
            col, value = self.column(right), self.literal(left)
            if col is None or value is _NO_VALUE:
                return self.opaque(node)
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!<": "!>", "!>": "!<"}.get(op, op)
        return _comparison(col, op, value)


def _comparison(col: str, op: str, value: Any) -> Predicate:
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


def from_sql(text: str) -> Predicate:
    """Parse a Spark SQL boolean expression into a predicate.

    Understood: comparisons (``=``, ``==``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``,
    ``<=>``) between a column and a literal on either side, ``[NOT] BETWEEN``, ``[NOT] IN
    (…)``, ``IS [NOT] NULL``, ``isnull(c)``/``isnotnull(c)``, ``AND``/``OR``/``NOT``/``!``,
    parentheses, backquoted identifiers, numbers (``1`` int, ``1.5`` Decimal, ``1e3``/``1.5D``
    float, ``1L``, ``1BD``…), strings (``'…'`` or ``"…"`` with backslash escapes and doubled
    quotes, raw ``r'…'``), ``DATE '…'``, ``TIMESTAMP '…'`` (UTC unless a zone is given),
    ``TRUE``/``FALSE``/``NULL``. Any other valid construct (function calls, LIKE, CASE,
    arithmetic, subqueries, …) becomes an :class:`Opaque` node holding its text.

    Args:
        text: The SQL text, e.g. ``"id < 100 AND name IN ('a', 'b')"``.

    Returns:
        The predicate tree.

    Raises:
        PredicateSyntaxError: (an :class:`InvalidOptionError`) The text is not a valid
            expression; the message and ``position`` give the 0-based offset.
    """
    if not isinstance(text, str):
        raise InvalidOptionError(f"a SQL filter must be a string, got {type(text).__name__}")
    node = _Parser(text).parse()
    return _Converter(text).convert(node)


# ---------------------------------------------------------------------------------------------
# Spark Connect Column translation
# ---------------------------------------------------------------------------------------------

_CONNECT_BINARY_SQL = {
    "==": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>", "!=": "!=",
    "+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "&": "&", "|": "|", "^": "^",
    "and": "AND", "or": "OR", "like": "LIKE", "rlike": "RLIKE", "ilike": "ILIKE",
}  # fmt: skip
_FUNCTION_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _split_identifier(text: str) -> tuple[str, ...] | None:
    """Split an unparsed Spark attribute name (``a.b``, ``` `a.b` ```) into its parts."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    n = len(text)
    quoted_part = False
    while i < n:
        ch = text[i]
        if ch == "`":
            if current and not quoted_part:
                return None
            j = i + 1
            while True:
                if j >= n:
                    return None
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        current.append("`")
                        j += 2
                        continue
                    break
                current.append(text[j])
                j += 1
            quoted_part = True
            i = j + 1
            if i < n and text[i] != ".":
                return None
            continue
        if ch == ".":
            if not current and not quoted_part:
                return None
            parts.append("".join(current))
            current, quoted_part = [], False
            i += 1
            continue
        if quoted_part:
            return None
        current.append(ch)
        i += 1
    if not current and not quoted_part:
        return None
    parts.append("".join(current))
    return tuple(parts)


def _connect_literal(expr: Any) -> Any:
    """The Python value of a Connect ``LiteralExpression``, or ``_NO_VALUE``."""
    from pyspark.sql import types as T

    value = expr._value
    dtype = expr._dataType
    if value is None:
        return None
    try:
        if isinstance(dtype, T.BooleanType):
            return bool(value)
        if isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
            return int(value)
        if isinstance(dtype, T.FloatType):
            return _to_float32(float(value))
        if isinstance(dtype, T.DoubleType):
            return float(value)
        if isinstance(dtype, T.DecimalType):
            return Decimal(value)
        if isinstance(dtype, T.StringType):
            return str(value)
        if isinstance(dtype, T.DateType):
            return _EPOCH_DATE + _dt.timedelta(days=int(value))
        if isinstance(dtype, T.TimestampType) and not isinstance(dtype, T.TimestampNTZType):
            return _EPOCH + _dt.timedelta(microseconds=int(value))
    except (OverflowError, ValueError, TypeError, InvalidOperation):
        return _NO_VALUE
    return _NO_VALUE


def _render_connect(expr: Any) -> str | None:
    """Best-effort Spark SQL text of a Connect expression (None when not renderable)."""
    from pyspark.sql.connect import expressions as E
    from pyspark.sql.types import DataType

    if isinstance(expr, E.ColumnReference):
        parts = _split_identifier(expr._unparsed_identifier)
        if parts is None:
            return None
        return ".".join(quote_identifier(p) for p in parts)
    if isinstance(expr, E.LiteralExpression):
        value = _connect_literal(expr)
        if value is _NO_VALUE:
            return None
        return literal_sql(value)
    if isinstance(expr, E.SQLExpression):
        return f"({expr._expr})"
    if isinstance(expr, E.ColumnAlias):
        return _render_connect(expr._child)
    if isinstance(expr, E.CastExpression):
        inner = _render_connect(expr._expr)
        if inner is None:
            return None
        dtype = expr._data_type
        type_text = dtype.simpleString() if isinstance(dtype, DataType) else str(dtype)
        cast = "TRY_CAST" if expr._eval_mode == "try" else "CAST"
        return f"{cast}({inner} AS {type_text})"
    if isinstance(expr, E.CaseWhen):
        pieces = ["CASE"]
        for cond, val in expr._branches:
            c, v = _render_connect(cond), _render_connect(val)
            if c is None or v is None:
                return None
            pieces.append(f"WHEN {c} THEN {v}")
        if expr._else_value is not None:
            e = _render_connect(expr._else_value)
            if e is None:
                return None
            pieces.append(f"ELSE {e}")
        pieces.append("END")
        return "(" + " ".join(pieces) + ")"
    if isinstance(expr, E.UnresolvedFunction):
        args = [_render_connect(a) for a in expr._args]
        if any(a is None for a in args):
            return None
        texts: list[str] = [a for a in args if a is not None]
        name = expr._name
        lname = name.lower()
        if lname in _CONNECT_BINARY_SQL and len(texts) == 2 and not expr._is_distinct:
            return f"({texts[0]} {_CONNECT_BINARY_SQL[lname]} {texts[1]})"
        if lname == "not" and len(texts) == 1:
            return f"(NOT {texts[0]})"
        if lname == "negative" and len(texts) == 1:
            return f"(- {texts[0]})"
        if lname == "isnull" and len(texts) == 1:
            return f"({texts[0]} IS NULL)"
        if lname == "isnotnull" and len(texts) == 1:
            return f"({texts[0]} IS NOT NULL)"
        if lname == "in" and len(texts) >= 2:
            return f"({texts[0]} IN ({', '.join(texts[1:])}))"
        if not _FUNCTION_NAME_RE.fullmatch(name):
            return None
        distinct = "DISTINCT " if expr._is_distinct else ""
        return f"{name}({distinct}{', '.join(texts)})"
    return None


def _connect_opaque(expr: Any) -> Opaque:
    return Opaque(_render_connect(expr) or "", expr)


def _connect_column_name(expr: Any) -> str | None:
    from pyspark.sql.connect import expressions as E

    if not isinstance(expr, E.ColumnReference) or getattr(expr, "_is_metadata_column", False):
        return None
    parts = _split_identifier(expr._unparsed_identifier)
    if parts is None or len(parts) != 1:
        return None
    return parts[0]


def _connect_value(expr: Any) -> Any:
    from pyspark.sql.connect import expressions as E

    if isinstance(expr, E.LiteralExpression):
        return _connect_literal(expr)
    return _NO_VALUE


def _args(node: Any) -> Sequence[Any]:
    return node.args if isinstance(node, _Node) else node._args


def _connect_junction(expr: Any) -> str:
    """``and``/``or`` for a plain Connect AND/OR call, else an empty string."""
    from pyspark.sql.connect import expressions as E

    if isinstance(expr, E.UnresolvedFunction) and not expr._is_distinct:
        name = expr._name.lower()
        if name in ("and", "or") and expr._args:
            return str(name)
    return ""


def _chain(root: _T, kind: str, kind_of: Any, args_of: Any) -> list[_T]:
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


def _from_connect(expr: Any) -> Predicate:
    from pyspark.sql.connect import expressions as E

    if isinstance(expr, E.ColumnAlias):
        return _from_connect(expr._child)
    if isinstance(expr, E.SQLExpression):
        try:
            return from_sql(expr._expr)
        except PredicateSyntaxError:
            # Spark parses this text itself and reports its own errors; we just don't prune.
            return Opaque(f"({expr._expr})", expr)
    if isinstance(expr, E.LiteralExpression):
        value = _connect_literal(expr)
        if isinstance(value, bool):
            return TRUE if value else FALSE
        return _connect_opaque(expr)
    if not isinstance(expr, E.UnresolvedFunction) or expr._is_distinct:
        return _connect_opaque(expr)
    name = expr._name.lower()
    args = list(expr._args)
    if name in ("and", "or") and len(args) >= 1:
        leaves = _chain(expr, name, _connect_junction, _args)
        children = [_from_connect(a) for a in leaves]
        return and_(*children) if name == "and" else or_(*children)
    if name == "not" and len(args) == 1:
        return Not(_from_connect(args[0]))
    if name in ("==", "=", "<", "<=", ">", ">=", "!=", "<>", "<=>") and len(args) == 2:
        col, value = _connect_column_name(args[0]), _connect_value(args[1])
        op = name
        if col is None or value is _NO_VALUE:
            col, value = _connect_column_name(args[1]), _connect_value(args[0])
            if col is None or value is _NO_VALUE:
                return _connect_opaque(expr)
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        return _comparison(col, op, value)
    if name in ("isnull", "isnotnull") and len(args) == 1:
        col = _connect_column_name(args[0])
        if col is None:
            return _connect_opaque(expr)
        return IsNull(col) if name == "isnull" else IsNotNull(col)
    if name == "in" and len(args) >= 2:
        col = _connect_column_name(args[0])
        values = [_connect_value(a) for a in args[1:]]
        if col is None or any(v is _NO_VALUE for v in values):
            return _connect_opaque(expr)
        return InList(col, tuple(values))
    if name == "between" and len(args) == 3:
        col = _connect_column_name(args[0])
        lo, hi = _connect_value(args[1]), _connect_value(args[2])
        if col is None or lo is _NO_VALUE or hi is _NO_VALUE:
            return _connect_opaque(expr)
        return Between(col, lo, hi)
    return _connect_opaque(expr)


def from_column(col: object) -> Predicate:
    """Translate a Spark Connect ``Column`` (or a SQL string) into a predicate.

    Reads the client-side expression tree (``col._expr``); no server is needed. Handled:
    ``UnresolvedFunction`` named ``and``, ``or``, ``not``, ``==``, ``<``, ``<=``, ``>``,
    ``>=``, ``!=``/``<>``, ``<=>``, ``in``, ``isNull``, ``isNotNull``, ``between`` with a
    plain single-part ``ColumnReference`` on one side and a ``LiteralExpression`` on the
    other (``between`` and ``isin`` arrive as ``and(>=, <=)`` and ``in``);
    ``SQLExpression`` (``F.expr``) through :func:`from_sql` (text it cannot parse becomes
    Opaque instead of raising: Spark reports its own errors); ``ColumnAlias`` (unwrapped);
    boolean literals. Everything else — other functions, casts, arithmetic, UDFs, qualified
    or metadata columns, TimestampNTZ/binary/array literals — becomes :class:`Opaque`, with
    best-effort SQL text and the original expression for :func:`to_column`.

    Raises:
        InvalidOptionError: ``col`` is neither a Connect Column nor a string.
    """
    if isinstance(col, str):
        return from_sql(col)
    expr = getattr(col, "_expr", None)
    try:
        from pyspark.sql.connect.expressions import Expression
    except ImportError as err:  # pragma: no cover - pyspark is a dependency
        raise InvalidOptionError(f"cannot translate {col!r}: pyspark is not installed") from err
    if not isinstance(expr, Expression):
        raise InvalidOptionError(
            f"expected a Spark Connect Column or a SQL string, got {type(col).__name__}"
        )
    return _from_connect(expr)
