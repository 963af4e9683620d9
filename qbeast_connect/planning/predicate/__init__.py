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

from qbeast_connect.planning.predicate import (
    literals,
    nodes,
    normal_form,
    sql_parser,
    sql_render,
    sql_tokenizer,
)
from qbeast_connect.planning.predicate.literals import *  # noqa: F403
from qbeast_connect.planning.predicate.nodes import *  # noqa: F403
from qbeast_connect.planning.predicate.normal_form import *  # noqa: F403
from qbeast_connect.planning.predicate.sql_parser import *  # noqa: F403
from qbeast_connect.planning.predicate.sql_render import *  # noqa: F403
from qbeast_connect.planning.predicate.sql_tokenizer import *  # noqa: F403

# each module's __all__ lists the names it contributes to the package
__all__: list[str] = []
__all__ += literals.__all__
__all__ += nodes.__all__
__all__ += normal_form.__all__
__all__ += sql_parser.__all__
__all__ += sql_render.__all__
__all__ += sql_tokenizer.__all__
