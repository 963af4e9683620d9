"""Spark SQL filter text to a predicate: a generic tree with source spans, then conversion."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate.literals import parse_date_literal, parse_timestamp_literal
from qbeast_connect.planning.predicate.nodes import (
    FALSE,
    TRUE,
    Between,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Opaque,
    Predicate,
    and_,
    chain_operands,
    comparison,
    or_,
)
from qbeast_connect.planning.predicate.sql_tokenizer import (
    PredicateSyntaxError,
    Token,
    syntax_error,
    tokenize,
)

__all__ = ["from_sql"]

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
        self.tokens = tokenize(text)
        self.pos = 0

    # ---- token helpers -------------------------------------------------------------------

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def advance(self) -> Token:
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

    def error(self, what: str, tok: Token | None = None) -> PredicateSyntaxError:
        tok = tok or self.peek()
        if tok.kind == "eof":
            what = f"{what}; the text ended"
        return syntax_error(self.text, tok.start, what)

    def expect_op(self, op: str) -> Token:
        if not self.is_op(op):
            raise self.error(f"expected {op!r}")
        return self.advance()

    def expect_kw(self, word: str) -> Token:
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
        return self.parse_junction("OR", self.parse_and)

    def parse_and(self) -> _Node:
        return self.parse_junction("AND", self.parse_not)

    def parse_junction(self, word: str, operand: Callable[[], _Node]) -> _Node:
        """``operand (word operand)*`` as a left-nested chain (``word`` is AND or OR)."""
        left = operand()
        while self.is_kw(word):
            self.advance()
            right = operand()
            left = _Node(word.lower(), left.start, right.end, args=(left, right))
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
        items = self.parse_items()
        if not self.is_op(")"):
            raise self.error(f"expected ',' or ')' in the IN list opened at {open_tok.start}")
        end = self.advance().end
        return _Node("in", value.start, end, args=(value, *items), neg=negated)

    def parse_items(self) -> list[_Node]:
        """A comma-separated list of expressions (at least one)."""
        items = [self.parse_or()]
        while self.is_op(","):
            self.advance()
            items.append(self.parse_or())
        return items

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
                raise syntax_error(self.text, open_tok.start, "unclosed '(' (no matching ')')")
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
            items = self.parse_items()
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
                    raise syntax_error(self.text, tok.start, "CASE without END")
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

    def parse_call(self, name: Token) -> _Node:
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


def _is_column_chain(tokens: Sequence[Token]) -> bool:
    """Whether the tokens are ``name`` or ``name.name…``."""
    for i, t in enumerate(tokens):
        if i % 2 == 0:
            if t.kind not in ("ident", "qident"):
                return False
        elif not (t.kind == "op" and t.text == "."):
            return False
    return len(tokens) % 2 == 1


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
            operands = chain_operands(node, kind, lambda n: n.kind, lambda n: n.args)
            children = [self.convert(a) for a in operands]
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
        return comparison(col, op, value)


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
