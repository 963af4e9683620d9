"""Rebuild long AND/OR chains of a Connect Column as balanced trees.

``reduce(lambda a, b: a | b, conditions)`` over a thousand conditions gives a Column nested a
thousand levels deep, and pyspark's client serialises an expression by recursion: such a
Column fails with ``RecursionError`` before Spark sees it. AND and OR are associative (also
in Spark's three-valued logic), so the same conditions regrouped as a balanced tree mean the
same thing at a depth of about ``log2(n)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qbeast_connect.planning.predicate.nodes import chain_operands

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["balanced_column"]

#: Chains shorter than this are left as they are.
_MIN_CHAIN = 32


def _junction(expr: Any) -> str:
    from pyspark.sql.connect import expressions as E

    if isinstance(expr, E.UnresolvedFunction) and not expr._is_distinct:
        name = str(expr._name).lower()
        if name in ("and", "or") and len(expr._args) == 2:
            return name
    return ""


def _operands(root: Any, kind: str) -> list[Any]:
    return chain_operands(root, kind, _junction, lambda node: node._args)


def _balance(expr: Any) -> Any:
    from pyspark.sql.connect import expressions as E

    kind = _junction(expr)
    if not kind:
        is_not = isinstance(expr, E.UnresolvedFunction) and expr._name.lower() == "not"
        if is_not and len(expr._args) == 1:
            inner = _balance(expr._args[0])
            if inner is not expr._args[0]:
                return E.UnresolvedFunction(expr._name, [inner], expr._is_distinct)
        return expr
    operands = _operands(expr, kind)
    if len(operands) < _MIN_CHAIN:
        return expr
    level = [_balance(o) for o in operands]
    while len(level) > 1:
        paired = [
            E.UnresolvedFunction(kind, [level[i], level[i + 1]])
            for i in range(0, len(level) - 1, 2)
        ]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def balanced_column(col: Column) -> Column:
    """The same condition with long AND/OR chains regrouped into balanced trees."""
    from pyspark.sql.connect.column import Column as ConnectColumn
    from pyspark.sql.connect.expressions import Expression

    expr = getattr(col, "_expr", None)
    if not isinstance(expr, Expression):
        return col
    out = _balance(expr)
    return col if out is expr else ConnectColumn(out)
