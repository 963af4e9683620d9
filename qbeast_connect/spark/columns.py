"""Spark Connect Columns <-> predicates: the client-side translation of filter expressions.

:func:`from_column` reads a Column's client-side expression tree (no server needed) into the
pure predicate tree of :mod:`qbeast_connect.planning.predicate`; :func:`to_column` builds a
Column back. pyspark is imported lazily, inside the functions.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning import predicate as P
from qbeast_connect.planning.predicate.literals import to_float32
from qbeast_connect.planning.predicate.nodes import chain_operands, comparison
from qbeast_connect.planning.predicate.sql_tokenizer import read_backquoted

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["from_column", "session_time_zone", "to_column"]

_UTC = _dt.UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_NO_VALUE = object()  # a Connect literal the predicate tree has no value for


def session_time_zone(spark: Any) -> str | None:
    """The time zone the session reads zone-less timestamps in
    (``spark.sql.session.timeZone``), which binding a filter's timestamp literals needs;
    None when the server does not say (an old or restricted server): the planner then
    prunes on no leaf that depends on it."""
    try:
        value = spark.conf.get("spark.sql.session.timeZone")
    except Exception:
        return None
    return value if isinstance(value, str) else None


def to_column(p: P.Predicate) -> Column:
    """Build a Spark Connect ``Column`` for the predicate (imports pyspark lazily).

    Opaque nodes translated from a Column reuse the original expression, so this works even
    where :func:`to_sql` cannot render the text.
    """
    from pyspark.sql.connect import functions as F
    from pyspark.sql.connect.column import Column as ConnectColumn

    def build(q: P.Predicate) -> Column:
        if isinstance(q, P.And | P.Or):
            cols = [build(c) for c in q.children]
            out = cols[0]
            for c in cols[1:]:
                out = (out & c) if isinstance(q, P.And) else (out | c)
            return out
        if isinstance(q, P.Not):
            return ~build(q.child)
        if isinstance(q, P.Opaque) and q.expr is not None:
            return ConnectColumn(q.expr)
        return F.expr(P.to_sql(q))

    return build(p)


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
            quoted = None if current else read_backquoted(text, i)
            if quoted is None:
                return None
            current.append(quoted[0])
            quoted_part = True
            i = quoted[1]
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
            return to_float32(float(value))
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
        return ".".join(P.quote_identifier(p) for p in parts)
    if isinstance(expr, E.LiteralExpression):
        value = _connect_literal(expr)
        if value is _NO_VALUE:
            return None
        return P.literal_sql(value)
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


def _connect_opaque(expr: Any) -> P.Opaque:
    return P.Opaque(_render_connect(expr) or "", expr)


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


def _args(expr: Any) -> list[Any]:
    return list(expr._args)


def _connect_junction(expr: Any) -> str:
    """``and``/``or`` for a plain Connect AND/OR call, else an empty string."""
    from pyspark.sql.connect import expressions as E

    if isinstance(expr, E.UnresolvedFunction) and not expr._is_distinct:
        name = expr._name.lower()
        if name in ("and", "or") and expr._args:
            return str(name)
    return ""


def _from_connect(expr: Any) -> P.Predicate:
    from pyspark.sql.connect import expressions as E

    if isinstance(expr, E.ColumnAlias):
        return _from_connect(expr._child)
    if isinstance(expr, E.SQLExpression):
        try:
            return P.from_sql(expr._expr)
        except P.PredicateSyntaxError:
            # Spark parses this text itself and reports its own errors; we just don't prune.
            return P.Opaque(f"({expr._expr})", expr)
    if isinstance(expr, E.LiteralExpression):
        value = _connect_literal(expr)
        if isinstance(value, bool):
            return P.TRUE if value else P.FALSE
        return _connect_opaque(expr)
    if not isinstance(expr, E.UnresolvedFunction) or expr._is_distinct:
        return _connect_opaque(expr)
    name = expr._name.lower()
    args = list(expr._args)
    if name in ("and", "or") and len(args) >= 1:
        leaves = chain_operands(expr, name, _connect_junction, _args)
        children = [_from_connect(a) for a in leaves]
        return P.and_(*children) if name == "and" else P.or_(*children)
    if name == "not" and len(args) == 1:
        return P.Not(_from_connect(args[0]))
    if name in ("==", "=", "<", "<=", ">", ">=", "!=", "<>", "<=>") and len(args) == 2:
        col, value = _connect_column_name(args[0]), _connect_value(args[1])
        op = name
        if col is None or value is _NO_VALUE:
            col, value = _connect_column_name(args[1]), _connect_value(args[0])
            if col is None or value is _NO_VALUE:
                return _connect_opaque(expr)
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        return comparison(col, op, value)
    if name in ("isnull", "isnotnull") and len(args) == 1:
        col = _connect_column_name(args[0])
        if col is None:
            return _connect_opaque(expr)
        return P.IsNull(col) if name == "isnull" else P.IsNotNull(col)
    if name == "in" and len(args) >= 2:
        col = _connect_column_name(args[0])
        values = [_connect_value(a) for a in args[1:]]
        if col is None or any(v is _NO_VALUE for v in values):
            return _connect_opaque(expr)
        return P.InList(col, tuple(values))
    if name == "between" and len(args) == 3:
        col = _connect_column_name(args[0])
        lo, hi = _connect_value(args[1]), _connect_value(args[2])
        if col is None or lo is _NO_VALUE or hi is _NO_VALUE:
            return _connect_opaque(expr)
        return P.Between(col, lo, hi)
    return _connect_opaque(expr)


def from_column(col: object) -> P.Predicate:
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
        return P.from_sql(col)
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
