"""Column rules of a write: which names a written table may hold, and the indexed columns.

A name in ``columnsToIndex`` is one top-level column's whole name (dots are part of it;
nested fields cannot be indexed), optionally in backticks, and matches case-insensitively
as Spark resolves names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedInputError
from qbeast_connect.model.column_spec import ColumnSpec, qdatatype_for_spark_type
from qbeast_connect.model.revision import Revision, parse_column_stats
from qbeast_connect.model.transformation import ColumnStats, QDataType
from qbeast_connect.write_plan import INTERNAL_PREFIX, is_internal_name

__all__ = [
    "check_column_names",
    "index_types",
    "indexed_specs",
    "resolve_specs",
    "user_column_stats",
]


def check_column_names(names: Sequence[str], path: str) -> None:
    """Refuse column names a qbeast table at ``path`` cannot hold.

    Raises:
        InvalidOptionError: a column's name starts with :data:`INTERNAL_PREFIX` (in any
            case), the namespace of the columns qbeast adds for its own bookkeeping.
        UnsupportedInputError: two top-level columns differ only in case (Delta column
            names are case-insensitive: readers could not tell them apart).
    """
    reserved = [name for name in names if is_internal_name(name)]
    if reserved:
        example = reserved[0]
        renamed = example[len(INTERNAL_PREFIX) :].lstrip("_") or "value"
        raise InvalidOptionError(
            f"columns {reserved} are reserved by qbeast for index bookkeeping: names "
            f"starting with {INTERNAL_PREFIX!r} (in any case) are those of the columns qbeast "
            f"adds while it writes, so the table at {path} cannot hold them; rename them "
            f"before writing, e.g. df.withColumnRenamed({example!r}, {renamed!r})"
        )
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise UnsupportedInputError(
                f"columns {other!r} and {name!r} differ only in case, which a Delta table "
                f"at {path} cannot hold (column names are case-insensitive); rename one, "
                f"e.g. df.withColumnRenamed({name!r}, {name + '_2'!r})"
            )


def indexed_specs(
    specs: Sequence[ColumnSpec], latest: Revision | None, example: str
) -> tuple[ColumnSpec, ...]:
    """The columns a write indexes: ``specs`` (from ``columnsToIndex``), else the columns of
    the table's ``latest`` revision.

    Raises:
        InvalidOptionError: neither gives a column (the message shows ``example``).
    """
    if not specs and latest is not None:
        return tuple(ColumnSpec(n) for n in latest.column_names)
    if not specs:
        raise InvalidOptionError(
            f"option columnsToIndex is required to create a qbeast table, e.g. {example}"
        )
    return tuple(specs)


def _unquote(name: str) -> str:
    """``a.b`` and ```a.b``` both name the column ``a.b``; doubled backticks escape one."""
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def resolve_specs(
    specs: Sequence[ColumnSpec], names: Sequence[str]
) -> tuple[ColumnSpec, ...]:
    """The column specs with names spelled as in the data.

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


def index_types(
    specs: Sequence[ColumnSpec], column_types: Mapping[str, str]
) -> dict[str, QDataType]:
    """The index data type of every indexed column (``column_types``: name -> Spark type
    name, as :func:`qbeast_connect.rules.schema.column_types`).

    Raises:
        InvalidOptionError: a column is not in the data, or its type cannot be indexed.
    """
    out: dict[str, QDataType] = {}
    for spec in specs:
        spark_type = column_types.get(spec.name)
        if spark_type is None:
            matches = [k for k in column_types if k.lower() == spec.name.lower()]
            if not matches:
                raise InvalidOptionError(
                    f"column {spec.name!r} in columnsToIndex is not in the data; "
                    f"columns are: {', '.join(column_types)}"
                )
            spark_type = column_types[matches[0]]
        out[spec.name] = qdatatype_for_spark_type(spark_type, column=spec.name)
    return out


def user_column_stats(
    column_stats: str | None, specs: Sequence[ColumnSpec], column_types: Mapping[str, str]
) -> dict[str, ColumnStats]:
    """The ``columnStats`` option's bounds of the indexed columns (empty without it)."""
    if not column_stats:
        return {}
    types = {s.name: column_types.get(s.name, "") for s in specs}
    return dict(parse_column_stats(column_stats, types))
