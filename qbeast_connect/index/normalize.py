"""Vectorized transformations: Arrow columns -> normalized points in [0, 1]^d (spec §4).

:func:`normalize` is bit-identical to calling the scalar ``transform`` of the
``qbeast_connect.model.transformation`` classes row by row, with these Arrow value
conversions (the scalar model takes the Python value after the same conversion):

======================  ==========================================================
Arrow type              value seen by the transformation
======================  ==========================================================
int8..int64, uint*      the exact integer (converted to double inside the formulas)
float32 / float64       the float (float32 widened exactly; hashed as Java ``Float``)
decimal128 / 256        linear / quantiles: correctly rounded double
                        (``BigDecimal.doubleValue``); hashing: ``BigDecimal.toString``
                        at the column scale
date32 / date64         epoch milliseconds (``days * 86_400_000``)
timestamp (any unit/tz) epoch milliseconds, ``floor(micros / 1000)``
                        (``java.sql.Timestamp.getTime``)
bool                    linear / quantiles: 0 / 1; hashing: ``"true"`` / ``"false"``
string / binary         the text / bytes (binary only for hashing: raw bytes)
dictionary              each dictionary value is transformed once, then gathered
======================  ==========================================================

Nulls take the coordinate the scalar ``transform(None)`` gives (the transformation's
null value), computed once per column.

Exactness notes: hashing texts follow Java ``toString`` (integers via Arrow's decimal cast,
doubles and floats as JDK 17 prints them (``index/java_text_np.py``), once per distinct bit
pattern, decimals through ``java_decimal_to_string``); the quantile searches
reproduce Scala's ``Searching.search`` bisection exactly, with ``java.lang.Double.compare``
order for numbers (``-0.0 < 0.0``; a NaN value sorts last and maps to 1.0) and UTF-16
code-unit order for strings. Linear columns place NaN and ±infinity at fixed coordinates
and compute huge or tiny spans in a scaled form (:mod:`qbeast_connect.model.linear_scale`);
a NaN *coordinate* would still raise :class:`InvalidOptionError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.arrow_input import as_array, timestamp_epoch
from qbeast_connect.index.hashing_np import scala_bytes_hash_array
from qbeast_connect.index.java_text_np import java_double_texts, java_float_texts
from qbeast_connect.model.linear_scale import (
    NAN_COORDINATE,
    NEGATIVE_INFINITY_COORDINATE,
    POSITIVE_INFINITY_COORDINATE,
)

__all__ = ["column_values_as_float64", "normalize", "scala_search"]

_MS_PER_DAY = 86_400_000
_INT_MAX_F = 2147483647.0


# --------------------------------------------------------------------------------------
# Arrow -> numpy value conversion
# --------------------------------------------------------------------------------------


def _valid_mask(arr: pa.Array) -> np.ndarray | None:
    """Boolean validity mask, or ``None`` when there are no nulls."""
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid(), dtype=bool)


def _decimal_to_float64(arr: pa.Array) -> np.ndarray:
    """Correctly rounded doubles of a decimal array (like ``BigDecimal.doubleValue``)."""
    t = arr.type
    scale = t.scale
    n = len(arr)
    out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return out
    fast = np.zeros(n, dtype=bool)
    if pa.types.is_decimal128(t):
        words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[
            2 * arr.offset : 2 * (arr.offset + n)
        ]
        lo = words[0::2]
        hi = words[1::2]
        # the unscaled value fits int64 iff hi is the sign extension of lo
        fits = hi == (lo >> 63)
        small = fits & (np.abs(lo) <= (1 << 53))  # |lo| exact in a double (abs(INT64_MIN) < 0)
        if -22 <= scale <= 22:
            fast = small & (lo != np.iinfo(np.int64).min)
            u = lo[fast].astype(np.float64)  # exact
            # one correctly rounded operation on exact operands = correctly rounded result
            if scale >= 0:
                out[fast] = u / float(10**scale)
            else:
                out[fast] = u * float(10 ** (-scale))
    valid = _valid_mask(arr)
    slow = ~fast if valid is None else (~fast & valid)
    if slow.any():
        idx = np.nonzero(slow)[0]
        sub = arr.take(pa.array(idx))
        # decimal text -> Python float() is correctly rounded
        texts = pc.cast(sub, pa.string())
        uniq = pc.unique(texts)
        uvals = np.array([float(s) for s in uniq.to_pylist()], dtype=np.float64)
        pos = np.asarray(pc.index_in(texts, value_set=uniq), dtype=np.int64)
        out[idx] = uvals[pos]
    return out


def column_values_as_float64(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of an ordered column as doubles, as the Scala transformations see them.

    Integers are converted with round-to-nearest (Java ``long.toDouble``), decimals are
    correctly rounded, dates and timestamps become epoch milliseconds. Null slots hold an
    unspecified value (callers overwrite them).
    """
    arr = as_array(values)
    t = arr.type
    if pa.types.is_integer(t):
        return np.asarray(arr.fill_null(0)).astype(np.float64)
    if pa.types.is_floating(t):
        return np.asarray(arr.fill_null(0), dtype=np.float64)
    if pa.types.is_boolean(t):
        return np.asarray(arr.fill_null(False), dtype=bool).astype(np.float64)
    if pa.types.is_decimal(t):
        return _decimal_to_float64(arr)
    if pa.types.is_date32(t):
        days = np.asarray(arr.cast(pa.int32()).fill_null(0), dtype=np.int64)
        return (days * _MS_PER_DAY).astype(np.float64)
    if pa.types.is_date64(t):
        return np.asarray(arr.cast(pa.int64()).fill_null(0), dtype=np.int64).astype(np.float64)
    if pa.types.is_timestamp(t):
        return timestamp_epoch(arr, "ms").astype(np.float64)
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=np.float64)
    raise InvalidOptionError(f"column of type {t} cannot be used as an ordered (numeric) column")


# --------------------------------------------------------------------------------------
# Scala ``Searching.search`` (binary search that may land on any of equal elements)
# --------------------------------------------------------------------------------------


def scala_search(sorted_keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized Scala ``IndexedSeq.search`` over a totally ordered key array.

    For every value: ``lo = 0, hi = n; while lo < hi: mid = lo + (hi - lo - 1) // 2;``
    ``v < q[mid] -> hi = mid; v > q[mid] -> lo = mid + 1; else Found(mid)``; otherwise
    ``InsertionPoint(lo)``. With duplicated keys this is *not* ``np.searchsorted``: the index
    found is the one the bisection lands on. Returns ``(found, index)`` where ``index`` is the
    found index or the insertion point. ``O(log n)`` vectorized steps.
    """
    q = np.asarray(sorted_keys)
    v = np.asarray(values)
    n_q = q.size
    m = v.size
    lo = np.zeros(m, dtype=np.int64)
    hi = np.full(m, n_q, dtype=np.int64)
    found = np.zeros(m, dtype=bool)
    active = lo < hi
    while active.any():
        mid = lo + (hi - lo - 1) // 2
        midc = np.clip(mid, 0, max(n_q - 1, 0))
        qm = q[midc]
        less = active & (v < qm)
        greater = active & (v > qm)
        equal = active & ~less & ~greater
        hi = np.where(less, mid, hi)
        lo = np.where(greater, mid + 1, lo)
        found |= equal
        lo = np.where(equal, mid, lo)
        hi = np.where(equal, mid, hi)  # stop
        active = lo < hi
    return found, lo


def _double_order_keys(x: np.ndarray) -> np.ndarray:
    """int64 keys ordering doubles like Java ``Double.compare`` (-0.0 < 0.0, NaN last)."""
    x = np.asarray(x, dtype=np.float64)
    bits = x.view(np.int64).copy()
    bits[np.isnan(x)] = 0x7FF8000000000000
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


# --------------------------------------------------------------------------------------
# Per-transformation kernels
# --------------------------------------------------------------------------------------


def _kind(t: Any) -> str:
    for cls in type(t).__mro__:
        if cls.__name__ in _KERNELS:
            return cls.__name__
    raise InvalidOptionError(f"unsupported transformation {type(t).__name__}")


def _null_coord(t: Any) -> float:
    return float(t.transform(None))


def _linear(t: Any, arr: pa.Array, name: str) -> np.ndarray:
    factor, offset, scale = t.scaled_form
    x = column_values_as_float64(arr)
    with np.errstate(over="ignore", invalid="ignore"):
        out: np.ndarray = (x * factor - offset) * scale + 0.0  # + 0.0: -0.0 becomes 0.0
    if not np.isfinite(x).all():  # the fixed places of NaN and ±infinity (model.linear_scale)
        out[np.isnan(x)] = NAN_COORDINATE
        out[x == np.inf] = POSITIVE_INFINITY_COORDINATE
        out[x == -np.inf] = NEGATIVE_INFINITY_COORDINATE
    valid = _valid_mask(arr)
    if valid is not None:
        out[~valid] = _null_coord(t)
    return out


def _constant_zero(t: Any, arr: pa.Array, name: str) -> np.ndarray:
    return np.zeros(len(arr), dtype=np.float64)


def _hash_texts(arr: pa.Array, name: str) -> pa.Array:
    """The bytes ``HashTransformation`` hashes, as a string/binary array (nulls kept)."""
    t = arr.type
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    ):
        return arr
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return arr.cast(pa.large_binary())
    if pa.types.is_integer(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_boolean(t):
        # the scalar model renders Java Boolean.toString (the reference rejects booleans)
        return pc.if_else(arr, pa.scalar("true"), pa.scalar("false"))
    if pa.types.is_null(t):
        return pa.array([None] * len(arr), type=pa.string())
    from qbeast_connect.model import hashing as _h

    if pa.types.is_floating(t):
        # Java 17 Double.toString / Float.toString, once per distinct bit pattern
        if pa.types.is_float64(t):
            bits = np.asarray(arr.fill_null(0.0), dtype=np.float64).view(np.int64)
            ubits, inverse = np.unique(bits, return_inverse=True)
            text_list = java_double_texts(ubits.view(np.float64))
        elif pa.types.is_float32(t):
            bits32 = np.asarray(arr.fill_null(0.0), dtype=np.float32).view(np.int32)
            ubits, inverse = np.unique(bits32, return_inverse=True)
            text_list = java_float_texts(ubits.view(np.float32))
        else:
            raise InvalidOptionError(f"{name}: cannot hash values of type {t}")
        utexts = pa.array(text_list, type=pa.string())
        texts = utexts.take(pa.array(inverse.ravel()))
        valid = _valid_mask(arr)
        if valid is not None:
            texts = pc.if_else(pa.array(valid), texts, pa.scalar(None, pa.string()))
        return texts
    if pa.types.is_decimal(t):
        uniq = pc.unique(arr.drop_null())
        utexts = pa.array(
            [_h.java_decimal_to_string(v, t.scale) for v in uniq.to_pylist()], type=pa.string()
        )
        pos = pc.index_in(arr, value_set=uniq)
        return utexts.take(pos)
    raise InvalidOptionError(
        f"{name}: the hashing transformation does not support values of type {t}"
    )


def _hash(t: Any, arr: pa.Array, name: str) -> np.ndarray:
    texts = _hash_texts(arr, name)
    h = scala_bytes_hash_array(texts)
    out = (h & np.int32(0x7FFFFFFF)).astype(np.float64) / _INT_MAX_F
    valid = _valid_mask(arr)
    if valid is not None:
        out[~valid] = _null_coord(t)
    return out


def _cdf_numeric(t: Any, arr: pa.Array, name: str) -> np.ndarray:
    q = np.asarray([float(v) for v in t.quantiles], dtype=np.float64)
    n = q.size
    x = column_values_as_float64(arr)
    found, idx = scala_search(_double_order_keys(q), _double_order_keys(x))
    denom = float(n - 1)
    out = np.empty(x.size, dtype=np.float64)
    out[found] = idx[found].astype(np.float64) / denom
    ins = ~found
    out[ins & (idx == 0)] = 0.0
    out[ins & (idx == n)] = 1.0
    mid = ins & (idx > 0) & (idx < n)
    if mid.any():
        upper = idx[mid]
        lower = upper - 1
        lv = q[lower]
        uv = q[upper]
        with np.errstate(divide="ignore", invalid="ignore"):  # only unsorted quantiles
            fraction = (x[mid] - lv) / (uv - lv)
        out[mid] = (lower.astype(np.float64) + fraction) / denom
    valid = _valid_mask(arr)
    if valid is not None:
        out[~valid] = _null_coord(t)
    return out


def _utf16_key(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def _string_positions(
    values: pa.Array, sorted_distinct: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """For every value: ``(pos, eq)`` with ``pos`` = number of distinct quantiles smaller
    than the value (Java ``String.compareTo`` order) and ``eq`` = value is one of them."""
    m = len(sorted_distinct)
    nrows = len(values)
    if m == 0:
        return np.zeros(nrows, dtype=np.int64), np.zeros(nrows, dtype=bool)
    # UTF-8 byte order equals UTF-16 code-unit order unless supplementary characters
    # (4-byte UTF-8 sequences) take part; use the exact Python path then.
    data = values.buffers()[2]
    has_supp = any(ord(ch) > 0xFFFF for s in sorted_distinct for ch in s)
    if data is not None and not has_supp:
        has_supp = bool((np.frombuffer(data, dtype=np.uint8) >= 0xF0).any())
    if has_supp:
        uniq = pc.unique(values)
        keys = [_utf16_key(s) for s in sorted_distinct]
        import bisect

        upos = []
        ueq = []
        for s in uniq.to_pylist():
            k = _utf16_key(s)
            p = bisect.bisect_left(keys, k)
            upos.append(p)
            ueq.append(p < m and keys[p] == k)
        ind = np.asarray(pc.index_in(values, value_set=uniq), dtype=np.int64)
        return np.asarray(upos, dtype=np.int64)[ind], np.asarray(ueq, dtype=bool)[ind]
    sd = pa.array(sorted_distinct, type=values.type)
    lo = np.zeros(nrows, dtype=np.int64)
    hi = np.full(nrows, m, dtype=np.int64)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        midc = np.minimum(mid, m - 1)
        pivots = sd.take(pa.array(midc))
        pivot_less = np.asarray(pc.less(pivots, values), dtype=bool)  # sd[mid] < v
        lo = np.where(active & pivot_less, mid + 1, lo)
        hi = np.where(active & ~pivot_less, mid, hi)
    posc = np.minimum(lo, m - 1)
    eq = (lo < m) & np.asarray(pc.equal(sd.take(pa.array(posc)), values), dtype=bool)
    return lo, eq


def _string_search(
    t: Any, quantiles: Sequence[str], arr: pa.Array, name: str, allow_numbers: bool
) -> np.ndarray:
    t_arr = arr.type
    n = len(quantiles)
    if n < 2:
        # a 1-bin histogram maps everything to 0.0
        return np.zeros(len(arr), dtype=np.float64)
    if pa.types.is_null(t_arr):
        return np.full(len(arr), _null_coord(t), dtype=np.float64)
    if allow_numbers and pa.types.is_integer(t_arr):
        arr = pc.cast(arr, pa.string())
    elif allow_numbers and pa.types.is_boolean(t_arr):
        arr = pc.if_else(arr, pa.scalar("true"), pa.scalar("false"))
    elif pa.types.is_large_string(t_arr) or pa.types.is_string_view(t_arr):
        arr = arr.cast(pa.large_string())
    elif not pa.types.is_string(t_arr):
        raise InvalidOptionError(
            f"{name}: string quantiles cannot be used on values of type {t_arr}"
        )
    values = arr.fill_null("")
    qlist = [str(s) for s in quantiles]
    sorted_distinct = sorted(set(qlist), key=_utf16_key)
    rank = {s: i for i, s in enumerate(sorted_distinct)}
    qkeys = np.asarray([2 * rank[s] + 1 for s in qlist], dtype=np.int64)
    pos, eq = _string_positions(values, sorted_distinct)
    vkeys = 2 * pos + eq.astype(np.int64)
    found, idx = scala_search(qkeys, vkeys)
    denom = float(n - 1)
    out = np.where(idx == 0, 0.0, (idx - 1).astype(np.float64) / denom)
    out = np.where(~found & (idx == n), 1.0, out)
    out[found] = idx[found].astype(np.float64) / denom
    valid = _valid_mask(arr)
    if valid is not None:
        out[~valid] = _null_coord(t)
    return out


def _cdf_string(t: Any, arr: pa.Array, name: str) -> np.ndarray:
    return _string_search(t, list(t.quantiles), arr, name, allow_numbers=False)


def _histogram(t: Any, arr: pa.Array, name: str) -> np.ndarray:
    return _string_search(t, list(t.histogram), arr, name, allow_numbers=True)


_KERNELS = {
    "LinearTransformation": _linear,
    "IdentityTransformation": _constant_zero,
    "EmptyTransformation": _constant_zero,
    "HashTransformation": _hash,
    "CDFNumericQuantilesTransformation": _cdf_numeric,
    "CDFStringQuantilesTransformation": _cdf_string,
    "StringHistogramTransformation": _histogram,
}


def normalize(
    transformations: Sequence[Any],
    columns: Sequence[pa.Array | pa.ChunkedArray],
    column_names: Sequence[str] | None = None,
) -> np.ndarray:
    """Normalized points ``(n, d)`` float64 of ``columns`` under ``transformations``.

    Bit-identical to ``transformations[j].transform(value)`` row by row (see the module
    docstring for how Arrow values are presented). A NaN coordinate (which no
    transformation produces) raises :class:`InvalidOptionError` naming the column.
    Coordinates are not range-checked here (see ``cubes.check_points``).
    """
    if len(transformations) != len(columns):
        raise InvalidOptionError(
            f"{len(transformations)} transformations but {len(columns)} columns"
        )
    if not columns:
        raise InvalidOptionError("normalize needs at least one column")
    arrays = [as_array(c) for c in columns]
    n = len(arrays[0])
    out = np.empty((n, len(arrays)), dtype=np.float64)
    for j, (t, arr) in enumerate(zip(transformations, arrays, strict=True)):
        name = column_names[j] if column_names is not None else f"dimension {j}"
        if len(arr) != n:
            raise InvalidOptionError("normalize: columns have different lengths")
        kernel = _KERNELS[_kind(t)]
        if pa.types.is_dictionary(arr.type):
            # transform each distinct value once, then gather
            per_value = kernel(t, arr.dictionary, name)
            indices = arr.indices
            idx = np.asarray(indices.fill_null(0), dtype=np.int64)
            col = per_value[idx] if per_value.size else np.zeros(len(arr), dtype=np.float64)
            if indices.null_count:
                col[~np.asarray(indices.is_valid(), dtype=bool)] = _null_coord(t)
        else:
            col = kernel(t, arr, name)
        if np.isnan(col).any():
            raise InvalidOptionError(f"column {name!r}: NaN cannot be indexed")
        out[:, j] = col
    return out
