"""Bind a predicate to the table schema: every literal in its column's own domain, or no pruning.

Spark compares a column with a literal of another type after coercing one of them (ANSI
mode, Spark 4's default): a DATE column with a string casts the string to a DATE, a LONG
column with a DOUBLE casts the column to DOUBLE, and so on. File and cube pruning compare
statistics and coordinates of the column's own values, so a literal must first be brought
into the column's domain with the same meaning Spark gives it.

:func:`bind_for_pruning` does that on the negation normal form of the predicate, where
every leaf appears positively. A leaf is then replaced by a predicate over the column's
own values that is TRUE for *at least* the rows where Spark finds the leaf TRUE — exactly the
same rows wherever that is cheap (``int_col < 2.5`` becomes ``int_col <= 2``), a wider range
when Spark's cast rounds (a DECIMAL column against a DOUBLE), ``FALSE`` when no value of the
column can match (``int_col = 1.5``), and an :class:`Opaque` leaf — no pruning — whenever the
coercion is doubtful: strings against numbers, booleans against anything else, timestamps
when the session time zone is not UTC, decimal widenings beyond 38 digits, string shapes
Spark's casts might read differently, unknown or nested columns, collated strings.

The result is only for pruning: the caller still applies the original filter to the rows.

Literal domains after binding (what the file planner and the query space see):
integral columns get ``int``, FLOAT and DOUBLE columns ``float`` (``-0.0`` written as
``0.0``; NaN and the infinities kept), DECIMAL columns ``Decimal``, STRING ``str``, DATE
``datetime.date``, TIMESTAMP UTC ``datetime.datetime``, BOOLEAN ``bool``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from qbeast_connect.planning.predicate import (
    FALSE,
    And,
    Comparison,
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
    nnf,
    or_,
)

__all__ = ["ColumnType", "bind_for_pruning", "column_types", "is_utc", "nan_excluded_columns"]

_INTEGRAL_BITS = {"byte": 8, "short": 16, "integer": 32, "int": 32, "long": 64, "bigint": 64}
_DECIMAL_RE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_SIMPLE = frozenset({"float", "double", "string", "date", "timestamp", "boolean"})
_UTC_NAMES = frozenset(
    {"utc", "etc/utc", "gmt", "etc/gmt", "z", "zulu", "universal", "etc/universal", "uct",
     "etc/uct", "+00:00", "-00:00", "utc+0", "utc-0", "gmt+0", "gmt-0", "etc/gmt+0",
     "etc/gmt-0", "gmt0", "etc/gmt0", "greenwich", "etc/greenwich"}
)  # fmt: skip
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_MICROS_PER_DAY = 86_400_000_000
_TWO_53 = 2**53
_TWO_24 = 2**24
_MAX_DECIMAL_DIGITS = 38
_DATE_TEXT_RE = re.compile(r"\s*(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?\s*")
_TIMESTAMP_TEXT_RE = re.compile(
    r"\s*(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*"
)


@dataclass(frozen=True, slots=True)
class ColumnType:
    """The Spark type of a top-level column, as far as pruning cares.

    Attributes:
        kind: ``integral``, ``float``, ``double``, ``decimal``, ``string``, ``date``,
            ``timestamp`` or ``boolean``.
        bits: Width of an integral column (8, 16, 32, 64).
        precision: Precision of a decimal column.
        scale: Scale of a decimal column.
    """

    kind: str
    bits: int = 0
    precision: int = 0
    scale: int = 0


def is_utc(time_zone: object) -> bool:
    """Whether a Spark session time zone id denotes UTC."""
    return isinstance(time_zone, str) and time_zone.strip().lower() in _UTC_NAMES


def _field_type(field: Mapping[str, Any]) -> ColumnType | None:
    type_ = field.get("type")
    if not isinstance(type_, str):
        return None  # struct, array, map: never pruned by value
    metadata = field.get("metadata")
    if isinstance(metadata, Mapping) and any("collation" in str(k).lower() for k in metadata):
        return None
    name = type_.strip().lower()
    if name in _INTEGRAL_BITS:
        return ColumnType("integral", bits=_INTEGRAL_BITS[name])
    m = _DECIMAL_RE.fullmatch(name)
    if m is not None:
        precision, scale = int(m.group(1)), int(m.group(2))
        if not 0 <= scale <= precision <= _MAX_DECIMAL_DIGITS:
            return None
        return ColumnType("decimal", precision=precision, scale=scale)
    if name == "decimal":
        return ColumnType("decimal", precision=10, scale=0)
    if name in _SIMPLE:
        return ColumnType(name)
    return None  # timestamp_ntz, binary, collated strings, variant, intervals, …


def column_types(schema: object) -> dict[str, ColumnType | None]:
    """Top-level column types by lower-cased name, from a schema.

    Args:
        schema: A Delta ``schemaString`` (JSON text), its parsed dict, or a pyspark
            ``StructType``.

    Returns:
        Lower-cased name → :class:`ColumnType`, or None for columns pruning must not
        interpret (nested or unsupported types, names that differ only by case).
    """
    if hasattr(schema, "jsonValue"):
        schema = schema.jsonValue()
    if isinstance(schema, str | bytes):
        try:
            schema = json.loads(schema)
        except ValueError:
            return {}
    fields = schema.get("fields") if isinstance(schema, Mapping) else None
    out: dict[str, ColumnType | None] = {}
    if not isinstance(fields, list):
        return out
    for field in fields:
        if not isinstance(field, Mapping) or not isinstance(field.get("name"), str):
            continue
        key = field["name"].lower()
        out[key] = None if key in out else _field_type(field)
    return out


# ---------------------------------------------------------------------------------------------
# binding
# ---------------------------------------------------------------------------------------------


def bind_for_pruning(
    predicate: Predicate, types: Mapping[str, ColumnType | None], *, utc: bool
) -> Predicate:
    """Return a predicate over the columns' own values for pruning (see the module docstring).

    Args:
        predicate: The filter.
        types: Column types from :func:`column_types`.
        utc: Whether the session time zone of the Spark that evaluates the filter is UTC;
            if not, no comparison needing a time zone (strings or dates against timestamps,
            timestamp literals without a zone) prunes.

    Returns:
        A predicate that is TRUE at least for every row where ``predicate`` is TRUE.
    """
    return _Binder(types, utc).walk(nnf(predicate))


class _Binder:
    def __init__(self, types: Mapping[str, ColumnType | None], utc: bool) -> None:
        self.types = types
        self.utc = utc

    def walk(self, p: Predicate) -> Predicate:
        if isinstance(p, And):
            return nnf(and_(*(self.walk(c) for c in p.children)))  # nnf folds constants
        if isinstance(p, Or):
            return nnf(or_(*(self.walk(c) for c in p.children)))
        if isinstance(p, TrueLiteral | FalseLiteral | Opaque | Not):
            return p  # Not only wraps IN lists and opaque leaves in NNF: never prunes
        if isinstance(p, IsNull | IsNotNull):
            return p if p.column.lower() in self.types else _unbound(p)
        if isinstance(p, Comparison):
            ctype = self.types.get(p.column.lower())
            if ctype is None:
                return _unbound(p)
            if p.value is None:
                return FALSE
            return self.comparison(p, ctype)
        if isinstance(p, InList):
            return self.in_list(p)
        return _unbound(p)

    def comparison(self, p: Comparison, ctype: ColumnType) -> Predicate:
        value = p.value
        bound: Predicate | None
        if isinstance(value, bool):
            bound = Comparison(p.column, p.op, value) if ctype.kind == "boolean" else None
        elif ctype.kind == "integral":
            bound = _integral(p.column, p.op, value, ctype)
        elif ctype.kind in ("float", "double"):
            bound = _floating(p.column, p.op, value, ctype)
        elif ctype.kind == "decimal":
            bound = _decimal(p.column, p.op, value, ctype)
        elif ctype.kind == "string":
            bound = Comparison(p.column, p.op, value) if isinstance(value, str) else None
        elif ctype.kind == "date":
            bound = self.date(p.column, p.op, value)
        elif ctype.kind == "timestamp":
            bound = self.timestamp(p.column, p.op, value)
        else:
            bound = None
        return _unbound(p) if bound is None else bound

    def in_list(self, p: InList) -> Predicate:
        ctype = self.types.get(p.column.lower())
        values = [v for v in p.values if v is not None]
        if ctype is None or not values:
            return _unbound(p) if values else FALSE
        kinds = {_literal_family(v) for v in values}
        if len(kinds) != 1:
            return _unbound(p)  # Spark casts every item to one common type: keep it simple
        terms = []
        for v in values:
            term = self.comparison(Comparison(p.column, "=", v), ctype)
            if isinstance(term, Opaque):
                return _unbound(p)
            terms.append(term)
        return nnf(or_(*terms))

    def date(self, column: str, op: str, value: Any) -> Predicate | None:
        if isinstance(value, _dt.datetime):
            if not self.utc:
                return None
            return _date_against_instant(column, op, _micros(value))
        if isinstance(value, _dt.date):
            return Comparison(column, op, value)  # type: ignore[arg-type]
        if isinstance(value, str):
            day = _date_from_text(value)
            return None if day is None else Comparison(column, op, day)  # type: ignore[arg-type]
        return None

    def timestamp(self, column: str, op: str, value: Any) -> Predicate | None:
        if not self.utc:
            return None  # a zone-less literal or a date would mean another instant
        if isinstance(value, _dt.datetime):
            return Comparison(column, op, value)  # type: ignore[arg-type]
        if isinstance(value, _dt.date):
            midnight = _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.UTC)
            return Comparison(column, op, midnight)  # type: ignore[arg-type]
        if isinstance(value, str):
            moment = _timestamp_from_text(value)
            return None if moment is None else Comparison(column, op, moment)  # type: ignore[arg-type]
        return None


def _unbound(p: Predicate) -> Opaque:
    return Opaque(f"/* not pruned */ {p!r}")


def _literal_family(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | Decimal):
        return "exact"
    return type(value).__name__


def _micros(value: _dt.datetime) -> int:
    return (value.astimezone(_dt.UTC) - _EPOCH) // _dt.timedelta(microseconds=1)


def _decimal_shape(value: Decimal) -> tuple[int, int]:
    """(integer digits, scale) of a finite decimal, as Spark types its literal."""
    _sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    precision = max(len(digits) + max(0, exponent), scale, 1)
    return precision - scale, scale


def _int_shape(value: int) -> tuple[int, int]:
    if -(2**31) <= value < 2**31:
        return 10, 0
    if -(2**63) <= value < 2**63:
        return 20, 0
    return len(str(abs(value))), 0


def _compare_discrete(column: str, op: str, floor: Any, ceil: Any) -> Predicate:
    """``column op v`` on a column of discrete values, for a ``v`` with ``floor <= v <= ceil``.

    ``floor`` and ``ceil`` are the column values nearest to ``v`` (equal when ``v`` is one).
    """
    if op == "=":
        return Comparison(column, "=", floor) if floor == ceil else FALSE
    # a strict lower or a non-strict upper bound rounds down, the other two round up
    bound = floor if op in ("<=", ">") else ceil
    return Comparison(column, op, bound)  # type: ignore[arg-type]


def _exact_compare(column: str, op: str, value: Fraction) -> Predicate:
    """``column op value`` on an integral column for an exact rational ``value``."""
    return _compare_discrete(column, op, math.floor(value), math.ceil(value))


def _special_float(column: str, op: str, value: float) -> Predicate:
    """A column that holds no NaN nor infinity against NaN or ±Infinity (Spark's order)."""
    above_all = math.isnan(value) or value > 0  # NaN and +inf are above every finite value
    if op in ("<", "<="):
        return IsNotNull(column) if above_all else FALSE
    if op in (">", ">="):
        return FALSE if above_all else IsNotNull(column)
    return FALSE


def _integral(column: str, op: str, value: Any, ctype: ColumnType) -> Predicate | None:
    if isinstance(value, int):
        return Comparison(column, op, value)  # type: ignore[arg-type]
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        digits, scale = _decimal_shape(value)
        if max(digits, 20) + scale > _MAX_DECIMAL_DIGITS:
            return None
        return _exact_compare(column, op, Fraction(value))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return _special_float(column, op, value)
        if ctype.bits == 64 and abs(value) >= _TWO_53:
            return None  # LONG → DOUBLE rounds there
        return _exact_compare(column, op, Fraction(value))
    return None


def _floating(column: str, op: str, value: Any, ctype: ColumnType) -> Predicate | None:
    if isinstance(value, float):
        if math.isnan(value) and op == ">":
            return FALSE  # nothing is above NaN
        return Comparison(column, op, value + 0.0)  # type: ignore[arg-type]
    if isinstance(value, int):
        if ctype.kind == "float" and abs(value) > _TWO_24:
            return None  # Spark compares in FLOAT and rounds the literal
        try:
            return Comparison(column, op, float(value) + 0.0)  # type: ignore[arg-type]
        except OverflowError:
            return None
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        _sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        unscaled = int("".join(map(str, digits)) or "0")
        if unscaled > _TWO_53 or not -22 <= exponent <= 0:
            return None  # Spark's DECIMAL → DOUBLE may round twice there
        as_float = float(value) + 0.0
        if ctype.kind == "float" and float(Fraction(as_float)) != as_float:
            return None  # pragma: no cover - float() is exact for a double already
        return Comparison(column, op, as_float)  # type: ignore[arg-type]
    return None


def _decimal(column: str, op: str, value: Any, ctype: ColumnType) -> Predicate | None:
    col_digits, col_scale = ctype.precision - ctype.scale, ctype.scale
    if isinstance(value, int | Decimal):
        if isinstance(value, Decimal) and not value.is_finite():
            return None
        digits, scale = _int_shape(value) if isinstance(value, int) else _decimal_shape(value)
        if max(digits, col_digits) + max(scale, col_scale) > _MAX_DECIMAL_DIGITS:
            return None
        return Comparison(column, op, Decimal(value))  # type: ignore[arg-type]
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return _special_float(column, op, value)
        # Spark compares CAST(column AS DOUBLE) with the double: widen by the rounding.
        slack = Decimal(math.ulp(value)) * 4 + Decimal(math.ulp(0.0))
        exact = Decimal(value)
        low, high = exact - slack, exact + slack
        if op == "=":
            return And((Comparison(column, ">=", low), Comparison(column, "<=", high)))
        if op in ("<", "<="):
            return Comparison(column, "<=", high)
        return Comparison(column, ">=", low)
    return None


def _date_against_instant(column: str, op: str, micros: int) -> Predicate | None:
    """A DATE column against a TIMESTAMP: Spark compares the date's UTC midnight."""
    floor_day, rest = divmod(micros, _MICROS_PER_DAY)
    ceil_day = floor_day + (1 if rest else 0)
    try:
        floor_date = _EPOCH_DATE + _dt.timedelta(days=floor_day)
        ceil_date = _EPOCH_DATE + _dt.timedelta(days=ceil_day)
    except OverflowError:
        return None
    return _compare_discrete(column, op, floor_date, ceil_date)


def _date_from_text(text: str) -> _dt.date | None:
    """A string Spark casts to a DATE: only ``yyyy-mm-dd`` with an optional ``hh:mm[:ss]``."""
    m = _DATE_TEXT_RE.fullmatch(text)
    if m is None:
        return None
    if m.group(4) is not None and not (
        int(m.group(4)) < 24 and int(m.group(5)) < 60 and int(m.group(6) or 0) < 60
    ):
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _timestamp_from_text(text: str) -> _dt.datetime | None:
    """A zone-less ``yyyy-mm-dd[ hh:mm[:ss[.ffffff]]]`` read in the (UTC) session zone."""
    m = _TIMESTAMP_TEXT_RE.fullmatch(text)
    if m is None:
        return None
    fraction = m.group(7) or ""
    try:
        return _dt.datetime(
            int(m.group(1)), int(m.group(2)), int(m.group(3)),
            int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0),
            int(fraction.ljust(6, "0")) if fraction else 0, tzinfo=_dt.UTC,
        )  # fmt: skip
    except ValueError:
        return None


def nan_excluded_columns(term: Iterable[Predicate]) -> frozenset[str]:
    """Lower-cased columns whose NaN rows a conjunction of bound leaves can never keep.

    A NaN row fails ``x < v``, ``x <= v`` and ``x = v`` for every number ``v`` other than NaN,
    so once the conjunction holds one of them, its ``x > w`` and ``x >= w`` need not allow
    for NaN rows either.
    """
    out: set[str] = set()
    for atom in term:
        if (
            isinstance(atom, Comparison)
            and atom.op in ("<", "<=", "=")
            and isinstance(atom.value, float)
            and not math.isnan(atom.value)
        ):
            out.add(atom.column.lower())
    return frozenset(out)
