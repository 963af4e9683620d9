"""The tokenizer of Spark SQL filter text (strings, numbers, identifiers, operators, comments)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.predicate.literals import to_float32

# the name the package re-exports; the other names serve the parser and the Connect translation
__all__ = ["PredicateSyntaxError"]


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
class Token:
    kind: str  # "ident", "qident", "string", "number", "op", "eof"
    text: str
    value: Any
    start: int
    end: int


def syntax_error(text: str, position: int, what: str) -> PredicateSyntaxError:
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


def read_backquoted(text: str, start: int) -> tuple[str, int] | None:
    """Read the backquoted identifier opening at ``text[start]`` (a doubled backquote is one).

    Returns:
        The name and the index after its closing backquote; None when it is not closed.
    """
    name: list[str] = []
    j = start + 1
    while j < len(text):
        if text.startswith("``", j):
            name.append("`")
            j += 2
        elif text[j] == "`":
            return "".join(name), j + 1
        else:
            name.append(text[j])
            j += 1
    return None


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
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
                raise syntax_error(text, i, "unclosed comment")
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
                    raise syntax_error(text, start, "unterminated string literal")
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
            tokens.append(Token("string", text[start : j + 1], value, start, j + 1))
            i = j + 1
            continue
        if ch == "`":
            quoted = read_backquoted(text, i)
            if quoted is None:
                raise syntax_error(text, start, "unterminated backquoted identifier")
            name, i = quoted
            tokens.append(Token("qident", text[start:i], name, start, i))
            continue
        if _is_digit(ch) or (ch == "." and i + 1 < n and _is_digit(text[i + 1])):
            m = _NUMBER_RE.match(text, i)
            assert m is not None
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] == "_") and "." not in m.group(1):
                w = _WORD_RE.match(text, i)
                assert w is not None
                tokens.append(Token("ident", w.group(), w.group(), start, w.end()))
                i = w.end()
                continue
            tokens.append(Token("number", m.group(), _number_value(m), start, end))
            i = end
            continue
        if ch.isalpha() or ch == "_":
            w = _WORD_RE.match(text, i)
            assert w is not None
            tokens.append(Token("ident", w.group(), w.group(), start, w.end()))
            i = w.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                tokens.append(Token("op", op, op, start, i + len(op)))
                i += len(op)
                break
        else:
            raise syntax_error(text, i, f"unexpected character {ch!r}")
    tokens.append(Token("eof", "", None, n, n))
    return tokens


def _number_value(m: re.Match[str]) -> int | float | Decimal:
    digits, exponent, suffix = m.group(1), m.group(2) or "", (m.group(3) or "").upper()
    body = digits + exponent
    if suffix == "BD":
        return Decimal(body)
    if suffix == "D":
        return float(body)
    if suffix == "F":
        return to_float32(float(body))
    if suffix in ("L", "S", "Y"):
        return int(digits)  # the grammar only allows digits with these suffixes
    if exponent:
        return float(body)  # Spark: an exponent literal is a DOUBLE
    if "." in digits:
        return Decimal(digits)  # Spark: 1.5 is a DECIMAL literal
    return int(digits)
