"""What a write accepts as input: column names, and inputs that change between jobs.

A write runs several Spark jobs over its DataFrame (statistics, estimation, write), and
Spark evaluates the DataFrame's plan again in each. They must all see the same rows: the
revision planned from the statistics job has to cover every row the write job writes.
Two things can break that:

* a non-deterministic plan: ``rand()``, ``uuid()``, ``shuffle()`` draw a new seed each time
  Spark analyses the plan, and ``current_timestamp()`` is a new instant per query;
* a source that changes between the jobs (files added to a directory being read).

The write freezes such inputs with ``localCheckpoint(eager=True)``: the rows are computed
once and kept on the executors, and every job reads those. Freezing costs a full extra pass
and executor storage, so it is done only when needed: up front when the plan is seen to be
non-deterministic (:func:`plan_changes`), and otherwise when a job of the write meets a row
outside the revision's space (:class:`~qbeast_connect.exceptions.InputChangedError`), after
which the write is redone once on the frozen input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedInputError
from qbeast_connect.model.column_spec import ColumnSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["check_column_names", "freeze", "plan_changes", "resolve_specs"]


def check_column_names(schema: StructType, path: str) -> None:
    """Refuse a DataFrame whose column names Delta cannot store.

    Delta column names are case-insensitive: ``a`` and ``A`` in one schema cannot be
    told apart by readers (Spark calls the reference ambiguous).

    Raises:
        UnsupportedInputError: two top-level columns differ only in case.
    """
    seen: dict[str, str] = {}
    for name in schema.names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise UnsupportedInputError(
                f"columns {other!r} and {name!r} differ only in case, which a Delta table "
                f"at {path} cannot hold (column names are case-insensitive); rename one, "
                f"e.g. df.withColumnRenamed({name!r}, {name + '_2'!r})"
            )


def _unquote(name: str) -> str:
    """``a.b`` and ```a.b``` both name the column ``a.b``; doubled backticks escape one."""
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def resolve_specs(
    specs: Sequence[ColumnSpec], names: Sequence[str]
) -> tuple[ColumnSpec, ...]:
    """The column specs with names spelled as in the DataFrame.

    A name in ``columnsToIndex`` is one column's whole name (dots are part of it; nested
    fields cannot be indexed), optionally in backticks, and matches case-insensitively as
    Spark resolves names.

    Raises:
        InvalidOptionError: a name matches no column.
    """
    by_lower: dict[str, str] = {}
    for n in names:
        by_lower.setdefault(n.lower(), n)
    out: list[ColumnSpec] = []
    for spec in specs:
        wanted = _unquote(spec.name)
        actual = wanted if wanted in names else by_lower.get(wanted.lower())
        if actual is None:
            raise InvalidOptionError(
                f"column {spec.name!r} in columnsToIndex is not in the data; columns are: "
                f"{', '.join(names)} (a name is a whole top-level column name; nested "
                "fields cannot be indexed)"
            )
        out.append(spec if actual == spec.name else ColumnSpec(actual, spec.transformer_type))
    return tuple(out)


_EXPR_ID = re.compile(r"#\d+L?")


def _plan_text(df: DataFrame) -> str | None:
    explain = getattr(df, "_explain_string", None)
    if explain is None:
        return None
    return _EXPR_ID.sub("#", str(explain(mode="simple")))


def plan_changes(df: DataFrame) -> bool:
    """Whether two analyses of ``df``'s plan differ: the plan is non-deterministic.

    Spark gives ``rand()``, ``uuid()``, ``shuffle()`` and friends a fresh seed, and
    ``current_timestamp()``/``now()`` a fresh instant, each time it analyses and optimizes
    a plan, which it does again for every job: two physical plans that differ in more than
    expression ids mean the jobs of a write would see different rows. Costs two planning
    round trips, no job. A False answer is no proof of determinism (a changing source or a
    non-deterministic UDF is not visible here); writes catch those in their tasks.
    """
    first = _plan_text(df)
    return first is not None and first != _plan_text(df)


def freeze(df: DataFrame) -> DataFrame:
    """``df`` computed once and kept on the executors (``localCheckpoint(eager=True)``).

    Every later job on the result reads the same rows. The copy lives as long as the
    returned DataFrame is referenced by the client.
    """
    return df.localCheckpoint(eager=True)
