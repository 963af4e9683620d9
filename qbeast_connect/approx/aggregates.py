"""The aggregates :meth:`QbeastTable.approx` accepts, parsed from short SQL texts.

``"sum(l_extendedprice) AS revenue"``, ``"count(*) AS n"``, ``"avg(x)"``, ``"min(x)"``,
``"max(x)"``, ``"count(x)"`` and ``"count(DISTINCT a, b)"``. Without ``AS`` the alias is
Spark's default text of the call (``sum(x)``). Anything else is refused with a message, so an
aggregate is never estimated with a formula meant for another.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from qbeast_connect.exceptions import InvalidOptionError

__all__ = ["KINDS", "Aggregate", "parse_aggregates"]

KINDS = ("count", "sum", "avg", "min", "max", "count_distinct")

_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_CALL = re.compile(
    r"^\s*(?P<fn>[A-Za-z_]+)\s*\(\s*(?P<distinct>DISTINCT\s+)?(?P<args>[^()]*?)\s*\)"
    r"(?:\s+(?P<as>AS\s+)?(?P<alias>" + _IDENT + r"))?\s*$",
    re.IGNORECASE,
)
_ONE_IDENT = re.compile(r"^\s*(" + _IDENT + r")\s*$")
_ALIAS_SUFFIXES = ("", "_low", "_high", "_reliable")


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One aggregate to estimate.

    Attributes:
        kind: one of :data:`KINDS`.
        columns: the column names it reads (none for ``count(*)``; several only for
            ``count(DISTINCT ...)``).
        alias: the name of its keys in the result (``alias``, ``alias_low``, ...).
    """

    kind: str
    columns: tuple[str, ...]
    alias: str

    @property
    def column(self) -> str | None:
        """The one column of a single-column aggregate (None for ``count(*)``)."""
        return self.columns[0] if len(self.columns) == 1 else None

    @property
    def is_bound(self) -> bool:
        """min and max: reported as the bound the rows read show, never estimated."""
        return self.kind in ("min", "max")


def _unquote(name: str) -> str:
    if name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def _columns(args: str, text: str) -> tuple[str, ...]:
    out = []
    for part in args.split(","):
        m = _ONE_IDENT.match(part)
        if m is None:
            raise InvalidOptionError(
                f"cannot estimate {text!r}: the argument {part.strip()!r} is not a column "
                "name; approx() takes aggregates of plain columns, like 'sum(x) AS total'"
            )
        out.append(_unquote(m.group(1)))
    return tuple(out)


def _parse_one(text: object) -> Aggregate:
    if not isinstance(text, str):
        raise InvalidOptionError(f"an aggregate must be a string like 'sum(x) AS a', got {text!r}")
    m = _CALL.match(text)
    if m is None:
        raise InvalidOptionError(
            f"cannot parse the aggregate {text!r}: write 'count(*)', 'sum(col)', 'avg(col)', "
            "'min(col)', 'max(col)' or 'count(DISTINCT cols)', optionally followed by 'AS name'"
        )
    if m.group("as") is None and (m.group("alias") or "").upper() == "AS":
        raise InvalidOptionError(
            f"cannot parse the aggregate {text!r}: 'AS' must be followed by the result's "
            "name, like 'sum(x) AS total' (quote a name with backticks: AS `AS`)"
        )
    fn = m.group("fn").lower()
    args = m.group("args")
    distinct = m.group("distinct") is not None
    alias = _unquote(m.group("alias")) if m.group("alias") else None
    if fn == "count" and args == "*" and not distinct:
        return Aggregate("count", (), alias or "count(1)")
    if fn not in ("count", "sum", "avg", "min", "max"):
        raise InvalidOptionError(
            f"cannot estimate {text!r}: approx() supports count, sum, avg, min, max and "
            "count(DISTINCT ...)"
        )
    columns = _columns(args, text)
    if distinct:
        if fn != "count":
            raise InvalidOptionError(
                f"cannot estimate {text!r}: only count takes DISTINCT in approx()"
            )
        default = f"count(DISTINCT {', '.join(columns)})"
        return Aggregate("count_distinct", columns, alias or default)
    if len(columns) != 1:
        raise InvalidOptionError(f"cannot estimate {text!r}: {fn} takes one column")
    return Aggregate(fn, columns, alias or f"{fn}({columns[0]})")


def parse_aggregates(
    aggregates: str | Sequence[str], group_by: Sequence[str] = ()
) -> tuple[Aggregate, ...]:
    """Parse the aggregates of an ``approx`` call and check that their result keys are unique.

    Args:
        aggregates: one text or a list of texts.
        group_by: the grouping columns (their names are result keys too).

    Raises:
        InvalidOptionError: an aggregate that cannot be parsed or estimated, none at all, or
            two result keys with the same name.
    """
    texts = [aggregates] if isinstance(aggregates, str) else list(aggregates)
    if not texts:
        raise InvalidOptionError("approx() needs at least one aggregate, e.g. 'count(*) AS n'")
    parsed = tuple(_parse_one(t) for t in texts)
    seen: set[str] = set(group_by)
    for agg in parsed:
        for suffix in _ALIAS_SUFFIXES:
            key = agg.alias + suffix
            if key in seen:
                raise InvalidOptionError(
                    f"the result key {key!r} is used twice: give the aggregates distinct "
                    "names with 'AS name'"
                )
            seen.add(key)
    return parsed
