"""Filter predicates: a small immutable tree, its normal forms, and Spark SQL text both ways.

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

The modules: :mod:`.nodes` (the tree, :func:`to_sql`), :mod:`.normal_form` (:func:`nnf`,
:func:`to_dnf`), :mod:`.literals`, :mod:`.sql_render` (:func:`quote_identifier`,
:func:`literal_sql`), :mod:`.sql_tokenizer` and :mod:`.sql_parser` (:func:`from_sql`). This
package is pure: translating Spark Connect Columns (``from_column``, ``to_column``) is the
transport's job, in :mod:`qbeast_connect.spark.columns`.
"""

from __future__ import annotations

from qbeast_connect.planning.predicate.literals import (
    LiteralValue,
    parse_date_literal,
    parse_timestamp_literal,
)
from qbeast_connect.planning.predicate.nodes import (
    FALSE,
    TRUE,
    And,
    Between,
    Comparison,
    ComparisonOp,
    FalseLiteral,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Opaque,
    Or,
    Predicate,
    TrueLiteral,
    and_,
    conjuncts,
    disjuncts,
    or_,
    referenced_columns,
    to_sql,
)
from qbeast_connect.planning.predicate.normal_form import nnf, to_dnf
from qbeast_connect.planning.predicate.sql_parser import from_sql
from qbeast_connect.planning.predicate.sql_render import literal_sql, quote_identifier
from qbeast_connect.planning.predicate.sql_tokenizer import PredicateSyntaxError

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
    "from_sql",
    "literal_sql",
    "nnf",
    "or_",
    "parse_date_literal",
    "parse_timestamp_literal",
    "quote_identifier",
    "referenced_columns",
    "to_dnf",
    "to_sql",
]
