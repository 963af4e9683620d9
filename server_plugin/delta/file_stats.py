"""Per-file Delta statistics (``add.stats``) computed from Arrow data.

The JSON is ``{"numRecords":N,"minValues":{...},"maxValues":{...},"nullCount":{...}}``
with nested objects for struct columns. Rules (Delta PROTOCOL "Per-file Statistics",
as written by Spark):

* Only the first ``num_indexed_cols`` leaf columns in schema order are covered (lists
  and maps count as one leaf; ``-1`` covers all).
* ``nullCount`` for every covered leaf, lists and maps included. A null struct makes
  its leaves null.
* min/max for integers, floats, decimals, dates, timestamps, strings and booleans
  (Spark omits boolean bounds; they are valid, and deltalake mis-prunes without them),
  and only when the column has a non-null value. Floats holding NaN or ±Infinity get
  no min/max (JSON cannot express them and pruning would be wrong); see
  :func:`compute_safe_stats` for readers that mishandle missing bounds.
* Decimals are plain JSON numbers with exactly ``scale`` fraction digits (built from
  ``Decimal``, never via float). Dates are ``YYYY-MM-DD``. Timestamps are UTC
  ``YYYY-MM-DDTHH:MM:SS.mmmZ`` floored to milliseconds (readers widen the max).
* Strings: min is the first 32 characters; a longer max is cut to 32 characters plus a
  tie-breaker (U+007F if the first dropped character is below U+007F, else U+10FFFF),
  extended past U+10FFFF characters so the bound stays >= the real maximum.

All aggregation is done with ``pyarrow.compute`` kernels, one pass per column.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal, localcontext
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "STRING_PREFIX_LENGTH",
    "compute_safe_stats",
    "compute_stats",
    "stats_json_from_values",
    "truncate_max_string",
    "truncate_min_string",
]

STRING_PREFIX_LENGTH = 32
_ASCII_MAX = "\x7f"
_UTF8_MAX = "\U0010ffff"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_TS_TO_MS_DIVISOR = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}


class _RawNumber:
    """A JSON number already formatted as text (exact decimals)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def truncate_min_string(value: str, prefix_length: int = STRING_PREFIX_LENGTH) -> str:
    """Return a lower bound for ``value``: its first ``prefix_length`` characters."""
    return value[:prefix_length]


def truncate_max_string(value: str, prefix_length: int = STRING_PREFIX_LENGTH) -> str:
    """Return an upper bound for ``value`` of about ``prefix_length`` characters.

    Keeps the prefix and appends a tie-breaker greater than the first dropped
    character. A dropped U+10FFFF has nothing greater, so the prefix is extended past
    such characters; if only U+10FFFF characters remain, ``value`` itself is returned.

    Args:
        value: The column's maximum.
        prefix_length: Number of characters to keep (Delta default 32).

    Returns:
        A string that compares >= ``value`` in code point (UTF-8 byte) order.
    """
    if len(value) <= prefix_length:
        return value
    index = prefix_length
    while index < len(value) and value[index] == _UTF8_MAX:
        index += 1
    if index >= len(value):
        return value
    tie_breaker = _ASCII_MAX if value[index] < _ASCII_MAX else _UTF8_MAX
    return value[:index] + tie_breaker


def _format_timestamp_ms(ms: int, utc: bool) -> str | None:
    try:
        moment = _EPOCH + _dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}."
        f"{moment.microsecond // 1000:03d}"
    )
    return text + "Z" if utc else text


def _timestamp_bounds(column: Any, type_: pa.TimestampType) -> tuple[str, str] | None:
    ints = column.cast(pa.int64())
    mm = pc.min_max(ints)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return None
    divisor = _TS_TO_MS_DIVISOR[type_.unit]
    if divisor is None:
        lo_ms, hi_ms = lo * 1000, hi * 1000
    else:
        lo_ms, hi_ms = lo // divisor, hi // divisor  # floor, also for negative values
    utc = type_.tz is not None
    lo_text, hi_text = _format_timestamp_ms(lo_ms, utc), _format_timestamp_ms(hi_ms, utc)
    if lo_text is None or hi_text is None:
        return None
    return lo_text, hi_text


def _min_max(column: Any) -> tuple[Any, Any] | None:
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return None
    return lo, hi


def _leaf_bounds(column: Any, type_: pa.DataType) -> tuple[Any, Any] | None:
    """Return JSON-ready (min, max) for a leaf column, or None when not collected."""
    t = pa.types
    if t.is_integer(type_) or t.is_boolean(type_):
        return _min_max(column)
    if t.is_float32(type_) or t.is_float64(type_):
        if pc.any(pc.is_nan(column)).as_py() or pc.any(pc.is_inf(column)).as_py():
            return None
        return _min_max(column)
    if t.is_decimal(type_):
        bounds = _min_max(column)
        if bounds is None:
            return None
        quantum = Decimal(1).scaleb(-type_.scale)
        with localcontext() as ctx:
            ctx.prec = 100
            lo, hi = (_RawNumber(format(Decimal(v).quantize(quantum), "f")) for v in bounds)
        return lo, hi
    if t.is_date(type_):
        bounds = _min_max(column)
        if bounds is None:
            return None
        return bounds[0].isoformat(), bounds[1].isoformat()
    if t.is_timestamp(type_):
        return _timestamp_bounds(column, type_)
    if t.is_string(type_) or t.is_large_string(type_) or t.is_string_view(type_):
        if t.is_string_view(type_):
            column = column.cast(pa.large_string())
        bounds = _min_max(column)
        if bounds is None:
            return None
        return truncate_min_string(bounds[0]), truncate_max_string(bounds[1])
    return None


def _has_bounds_type(type_: pa.DataType) -> bool:
    t = pa.types
    return bool(
        t.is_integer(type_)
        or t.is_boolean(type_)
        or t.is_floating(type_)
        or t.is_decimal(type_)
        or t.is_date(type_)
        or t.is_timestamp(type_)
        or t.is_string(type_)
        or t.is_large_string(type_)
        or t.is_string_view(type_)
    )


def _struct_children(column: Any) -> list[Any]:
    """Children of a struct column with the parent's nulls merged in."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 0:
            return [pa.chunked_array([], type=f.type) for f in column.type]
        flat_chunks = [chunk.flatten() for chunk in column.chunks]
        return [
            pa.chunked_array([flat[i] for flat in flat_chunks], type=f.type)
            for i, f in enumerate(column.type)
        ]
    flattened: list[Any] = column.flatten()
    return flattened


class _Collector:
    def __init__(self, num_rows: int, budget: int) -> None:
        self.num_rows = num_rows
        self.budget = budget  # < 0 means unlimited
        self.unbounded: list[str] = []  # columns with values but no expressible bounds

    def exhausted(self) -> bool:
        return self.budget == 0

    def take(self) -> None:
        if self.budget > 0:
            self.budget -= 1

    def collect(
        self,
        name: str,
        type_: pa.DataType,
        column: Any,
        mins: dict[str, Any],
        maxs: dict[str, Any],
        nulls: dict[str, Any],
    ) -> None:
        if pa.types.is_struct(type_):
            sub_min: dict[str, Any] = {}
            sub_max: dict[str, Any] = {}
            sub_null: dict[str, Any] = {}
            children = _struct_children(column) if column is not None else None
            for i, child_field in enumerate(type_):
                if self.exhausted():
                    break
                child = children[i] if children is not None else None
                self.collect(child_field.name, child_field.type, child, sub_min, sub_max, sub_null)
            if sub_null:
                nulls[name] = sub_null
            if sub_min:
                mins[name] = sub_min
            if sub_max:
                maxs[name] = sub_max
            return
        self.take()
        if column is None or pa.types.is_null(type_):
            nulls[name] = self.num_rows
            return
        null_count = int(column.null_count)
        nulls[name] = null_count
        if null_count >= len(column):
            return
        bounds = _leaf_bounds(column, type_)
        if bounds is not None:
            mins[name], maxs[name] = bounds
        elif _has_bounds_type(type_):
            self.unbounded.append(name)


def _encode(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{_dumps(k)}:{_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, _RawNumber):
        return value.text
    return _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def _collect(table: pa.Table | pa.RecordBatch, num_indexed_cols: int) -> tuple[str, bool]:
    collector = _Collector(table.num_rows, num_indexed_cols if num_indexed_cols >= 0 else -1)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for field, column in zip(table.schema, table.columns, strict=True):
        if collector.exhausted():
            break
        collector.collect(field.name, field.type, column, mins, maxs, nulls)
    stats = {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return _encode(stats), bool(collector.unbounded)


def compute_stats(table: pa.Table | pa.RecordBatch, num_indexed_cols: int = 32) -> str:
    """Compute the Delta ``stats`` JSON of one data file.

    Follows the protocol exactly: a float column holding NaN or ±Infinity (or a
    timestamp outside years 1-9999) gets ``nullCount`` but no min/max. Booleans get
    min/max too (valid per the protocol; Spark omits them, delta-rs needs them).
    See :func:`compute_safe_stats` for the variant that is safe for deltalake.

    Args:
        table: Exactly the rows and columns written to the file (partition columns,
            which are not stored in files, must not be included).
        num_indexed_cols: ``delta.dataSkippingNumIndexedCols``: number of leaf columns
            covered, in schema order; ``-1`` for all.

    Returns:
        The stats JSON text, e.g.
        ``{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}``.
    """
    return _collect(table, num_indexed_cols)[0]


def compute_safe_stats(table: pa.Table | pa.RecordBatch, num_indexed_cols: int = 32) -> str | None:
    """Like :func:`compute_stats`, but None when some bounds cannot be expressed.

    deltalake (delta-rs 1.6 ``to_pyarrow_dataset``, also used by ``to_pyarrow_table``)
    turns a missing min/max of a primitive column into a ``col >= null`` fragment
    guarantee and then skips the file for any comparison on that column, returning
    wrong results. Files without ``stats`` are never skipped by any reader, so for a
    file whose covered column holds NaN/±Infinity (or an unformattable timestamp) this
    returns None: correct everywhere, at the cost of data skipping for that one file.

    Args:
        table: Exactly the rows and columns written to the file.
        num_indexed_cols: As for :func:`compute_stats`.

    Returns:
        The stats JSON text, or None for files whose bounds JSON cannot express.
    """
    text, unbounded = _collect(table, num_indexed_cols)
    return None if unbounded else text


def stats_types(schema_string: str) -> dict[tuple[str, ...], str]:
    """The Delta type of every timestamp-like leaf of a schema, by column path.

    Only ``timestamp`` and ``timestamp_ntz`` leaves (inside structs) are listed: those are
    the bounds whose text depends on the type (a ``Z`` or not).
    """
    out: dict[tuple[str, ...], str] = {}

    def visit(t: Any, path: tuple[str, ...]) -> None:
        if isinstance(t, str):
            if t in ("timestamp", "timestamp_ntz"):
                out[path] = t
        elif isinstance(t, dict) and t.get("type") == "struct":
            for f in t.get("fields") or []:
                if isinstance(f, dict) and isinstance(f.get("name"), str):
                    visit(f.get("type"), (*path, f["name"]))

    try:
        visit(json.loads(schema_string), ())
    except ValueError:
        return {}
    return out


def stats_json_from_values(
    stats: Any, types: Mapping[tuple[str, ...], str] | None = None
) -> str | None:
    """Encode a parsed stats object (e.g. a checkpoint's ``add.stats_parsed`` row) as JSON.

    Values are encoded like :func:`compute_stats` does: dates as ``YYYY-MM-DD``,
    decimals as exact numbers, datetimes floored to milliseconds. A bound of a
    ``timestamp`` column (per ``types``) is an instant written with ``Z``, whether the
    parquet gave it with a zone or without one (INT96 and ``isAdjustedToUTC=false``
    files come back naive, in UTC); a ``timestamp_ntz`` bound is written without ``Z``.
    Without ``types``, an aware datetime gets ``Z`` and a naive one does not. Bounds
    that JSON cannot express (NaN, ±Infinity, bytes) are dropped.

    Args:
        stats: A dict with ``numRecords``, ``minValues``, ``maxValues``, ``nullCount``.
        types: ``timestamp``/``timestamp_ntz`` by column path (see :func:`stats_types`).

    Returns:
        The stats JSON, or None when ``stats`` is not a dict.
    """
    if not isinstance(stats, dict):
        return None
    known = types or {}

    def convert(value: Any, path: tuple[str, ...] | None) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if path is None:
                    child: tuple[str, ...] | None = () if k in ("minValues", "maxValues") else None
                else:
                    child = (*path, str(k))
                converted = convert(v, child)
                if converted is not _DROP and not (isinstance(converted, dict) and not converted):
                    out[str(k)] = converted
            return out
        if value is None or isinstance(value, bytes | bytearray | list | tuple):
            return _DROP
        if isinstance(value, bool):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else _DROP
        if isinstance(value, Decimal):
            return _RawNumber(format(value, "f")) if value.is_finite() else _DROP
        if isinstance(value, _dt.datetime):
            declared = known.get(path) if path is not None else None
            if value.tzinfo is None:
                ms = (value - _dt.datetime(1970, 1, 1)) // _dt.timedelta(milliseconds=1)
            else:
                ms = (value - _EPOCH) // _dt.timedelta(milliseconds=1)
            utc = declared == "timestamp" if declared is not None else value.tzinfo is not None
            return _format_timestamp_ms(ms, utc=utc) or _DROP
        if isinstance(value, _dt.date):
            return value.isoformat()
        return value

    converted = convert(stats, None)
    return _encode(converted)


_DROP = object()
