"""Vectorized hash functions over Arrow arrays (spec §3.2 and §3.3).

Two different hash functions are involved in the Qbeast format:

* :func:`scala_bytes_hash_array` is Scala 2.12.18 ``MurmurHash3.bytesHash``, used by
  ``HashTransformation`` to place values in the index space. In Scala 2.12.9+ it is a
  *per-byte* ``arrayHash``: one Murmur3 ``mix`` per sign-extended byte, seed ``0x3c074a61``,
  then ``finalizeHash(h, len)``.
* :func:`spark_hash_columns` is Spark SQL ``hash(c1, ..., cd)`` (Murmur3 seed 42, nulls
  skipped, Spark's non-standard byte tail), the row *weight*. Spark computes it natively in
  the write pipeline; this version is for verifying tables and staging files.

Both work on whole columns with ``uint32`` numpy arithmetic (wrapping multiplication) and
iterate only over byte positions (``O(max length)`` numpy operations), never over rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.arrow_input import as_array, timestamp_epoch

__all__ = [
    "SCALA_BYTES_HASH_SEED",
    "SPARK_HASH_SEED",
    "scala_bytes_hash_array",
    "spark_hash_columns",
]

SCALA_BYTES_HASH_SEED = 0x3C074A61
SPARK_HASH_SEED = 42

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M5 = np.uint32(5)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_U13 = np.uint32(13)
_U15 = np.uint32(15)
_U16 = np.uint32(16)
_U17 = np.uint32(17)
_U19 = np.uint32(19)


# --------------------------------------------------------------------------------------
# uint32 Murmur3 building blocks (arrays only: numpy wraps array arithmetic silently)
# --------------------------------------------------------------------------------------


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    k = k * _C1
    k = (k << _U15) | (k >> _U17)
    return k * _C2


def _mix_h1(h: np.ndarray, k1: np.ndarray) -> np.ndarray:
    """``rotl(h ^ k1, 13) * 5 + 0xe6546b64`` where ``k1`` is already ``mixK1``-ed."""
    h = h ^ k1
    h = (h << _U13) | (h >> _U19)
    return h * _M5 + _N1


def _fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U16)
    h = h * _F1
    h = h ^ (h >> _U13)
    h = h * _F2
    out: np.ndarray = h ^ (h >> _U16)
    return out


# mixK1 of every sign-extended byte value, indexed by the unsigned byte (0..255).
_BYTE_K1: np.ndarray = _mix_k1(
    np.arange(256, dtype=np.uint8).view(np.int8).astype(np.int32).view(np.uint32)
)


# --------------------------------------------------------------------------------------
# Arrow helpers
# --------------------------------------------------------------------------------------


def _binary_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(data uint8, starts int64, lengths int64)`` of a string/binary array.

    Null slots get length 0 (they hash as the empty byte string).
    """
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        off_dtype: type = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        off_dtype = np.int64
    else:
        raise InvalidOptionError(f"expected a string or binary array, got {t}")
    n = len(arr)
    bufs = arr.buffers()
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0, dtype=np.uint8), empty, empty
    offsets: np.ndarray = np.frombuffer(bufs[1], dtype=off_dtype)[
        arr.offset : arr.offset + n + 1
    ].astype(np.int64)
    data_buf = bufs[2]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)
        if data_buf is not None and data_buf.size > 0
        else np.zeros(0, dtype=np.uint8)
    )
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        lengths = np.where(valid, lengths, 0)
    return data, starts, lengths


def _length_order(lengths: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """Order rows by decreasing length; return ``(order or None, sorted lengths)``.

    With rows sorted so, the rows longer than ``p`` are a prefix, so each byte position
    touches only the rows that have it.
    """
    if lengths.size == 0 or lengths.min() == lengths.max():
        return None, lengths
    maxlen = int(lengths.max())
    key = maxlen - lengths
    # uint16 keys let numpy use a radix sort
    key = key.astype(np.uint16) if maxlen < 65536 else key
    order = np.argsort(key, kind="stable")
    return order, lengths[order]


def _prefix_counts(sorted_desc_lengths: np.ndarray, maxlen: int) -> np.ndarray:
    """``counts[p]`` = number of rows with length > p, for p in 0..maxlen-1."""
    # lengths sorted decreasingly; count of rows with length > p
    asc = sorted_desc_lengths[::-1]
    return asc.size - np.searchsorted(asc, np.arange(maxlen), side="right")


# --------------------------------------------------------------------------------------
# Scala 2.12 bytesHash (per-byte arrayHash)
# --------------------------------------------------------------------------------------


def _scala_bytes_hash_parts(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    n = lengths.size
    h_sorted = np.full(n, SCALA_BYTES_HASH_SEED, dtype=np.uint32)
    if n == 0:
        return h_sorted.view(np.int32)
    order, slen = _length_order(lengths)
    sstarts = starts if order is None else starts[order]
    maxlen = int(slen.max()) if n else 0
    if maxlen > 0:
        counts = _prefix_counts(slen, maxlen) if order is not None else np.full(maxlen, n)
        for p in range(maxlen):
            k = int(counts[p])
            if k == 0:
                break
            if k == n:
                b = data[sstarts + p]
                h_sorted = _mix_h1(h_sorted, _BYTE_K1[b])
            else:
                b = data[sstarts[:k] + p]
                h_sorted[:k] = _mix_h1(h_sorted[:k], _BYTE_K1[b])
    h_sorted = _fmix(h_sorted ^ slen.astype(np.uint32))
    if order is None:
        return h_sorted.view(np.int32)
    out = np.empty(n, dtype=np.uint32)
    out[order] = h_sorted
    return out.view(np.int32)


def scala_bytes_hash_array(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Scala 2.12 ``MurmurHash3.bytesHash`` of every value of a string/binary Arrow array.

    Strings are hashed by their UTF-8 bytes. Null slots hash like the empty string (callers
    substitute the null value first). Returns ``int32`` of the same length.
    """
    arr = as_array(values)
    data, starts, lengths = _binary_parts(arr)
    return _scala_bytes_hash_parts(data, starts, lengths)


# --------------------------------------------------------------------------------------
# Spark SQL hash()
# --------------------------------------------------------------------------------------


def _hash_int(v: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark ``hashInt``: ``v`` int32/uint32 view, ``seed`` uint32."""
    h = _mix_h1(seed, _mix_k1(v.astype(np.int32, copy=False).view(np.uint32)))
    return _fmix(h ^ np.uint32(4))


def _hash_long(v: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark ``hashLong`` of int64 ``v``."""
    u = v.astype(np.int64, copy=False).view(np.uint64)
    low = (u & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    high = (u >> np.uint64(32)).astype(np.uint32)
    h = _mix_h1(seed, _mix_k1(low))
    h = _mix_h1(h, _mix_k1(high))
    return _fmix(h ^ np.uint32(8))


def _hash_bytes_parts(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, seed: np.ndarray
) -> np.ndarray:
    """Spark ``hashUnsafeBytes``: 4-byte LE words, then one mix per sign-extended tail byte."""
    n = lengths.size
    h = seed.astype(np.uint32, copy=True)
    if n == 0:
        return h
    order, slen = _length_order(lengths)
    sstarts = starts if order is None else starts[order]
    if order is not None:
        h = h[order]
    nwords = slen // 4
    maxwords = int(nwords.max())
    if maxwords > 0:
        wcounts = _prefix_counts(nwords, maxwords) if order is not None else np.full(maxwords, n)
        d32 = data.astype(np.uint32)
        for i in range(maxwords):
            k = int(wcounts[i])
            if k == 0:
                break
            s = sstarts[:k] + 4 * i
            w = (
                d32[s]
                | (d32[s + 1] << np.uint32(8))
                | (d32[s + 2] << np.uint32(16))
                | (d32[s + 3] << np.uint32(24))
            )
            h[:k] = _mix_h1(h[:k], _mix_k1(w))
    tail = slen - 4 * nwords
    tail_start = sstarts + 4 * nwords
    for j in range(3):
        m = tail > j
        if not m.any():
            break
        idx = np.nonzero(m)[0]
        b = data[tail_start[idx] + j]
        h[idx] = _mix_h1(h[idx], _BYTE_K1[b])
    h = _fmix(h ^ slen.astype(np.uint32))
    if order is None:
        return h
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out


def _decimal128_words(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Low and high signed 64-bit words of the unscaled values of a decimal128 array."""
    n = len(arr)
    buf = arr.buffers()[1]
    words = np.frombuffer(buf, dtype=np.int64)[2 * arr.offset : 2 * (arr.offset + n)]
    return words[0::2].copy(), words[1::2].copy()


def _minimal_be_bytes(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Java ``BigInteger.toByteArray`` of 128-bit values: (data, starts, lengths)."""
    n = lo.size
    be = np.empty((n, 16), dtype=np.uint8)
    be[:, :8] = hi.astype(">i8").view(np.uint8).reshape(n, 8)
    be[:, 8:] = lo.astype(">i8").view(np.uint8).reshape(n, 8)
    neg = hi < 0
    sign_byte = np.where(neg, 0xFF, 0x00).astype(np.uint8)
    eq = be == sign_byte[:, None]
    prefix_eq = np.cumprod(eq, axis=1).astype(bool)
    next_sign = (be[:, 1:] >= 0x80) == neg[:, None]
    redundant = prefix_eq[:, :15] & next_sign
    drop = redundant.sum(axis=1)
    lengths = (16 - drop).astype(np.int64)
    keep = np.arange(16)[None, :] >= drop[:, None]
    data = be[keep]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return data, starts, lengths


def _float64_bits(x: np.ndarray) -> np.ndarray:
    x = np.where(x == 0.0, 0.0, x)  # -0.0 -> 0.0
    bits = x.astype(np.float64).view(np.int64)
    return np.where(np.isnan(x), np.int64(0x7FF8000000000000), bits)


def _float32_bits(x: np.ndarray) -> np.ndarray:
    x = np.where(x == 0.0, np.float32(0.0), x).astype(np.float32)
    bits = x.view(np.int32)
    return np.where(np.isnan(x), np.int32(0x7FC00000), bits)


def _hash_column(arr: pa.Array, h: np.ndarray) -> np.ndarray:
    t = arr.type
    if pa.types.is_dictionary(t):
        return _hash_column(arr.dictionary_decode(), h)
    if pa.types.is_null(t):
        return h
    n = len(arr)
    if pa.types.is_boolean(t):
        v = np.asarray(arr.fill_null(False), dtype=bool).astype(np.int32)
        new = _hash_int(v, h)
    elif pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        v = np.asarray(arr.fill_null(0)).astype(np.int32)
        new = _hash_int(v, h)
    elif pa.types.is_date32(t):
        v = np.asarray(arr.cast(pa.int32()).fill_null(0), dtype=np.int32)
        new = _hash_int(v, h)
    elif pa.types.is_int64(t):
        new = _hash_long(np.asarray(arr.fill_null(0), dtype=np.int64), h)
    elif pa.types.is_timestamp(t):
        new = _hash_long(timestamp_epoch(arr, "us"), h)
    elif pa.types.is_float64(t):
        v = np.asarray(arr.fill_null(0.0), dtype=np.float64)
        new = _hash_long(_float64_bits(v), h)
    elif pa.types.is_float32(t):
        v = np.asarray(arr.fill_null(0.0), dtype=np.float32)
        new = _hash_int(_float32_bits(v), h)
    elif (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary_view(t)
    ):
        data, starts, lengths = _binary_parts(arr)
        new = _hash_bytes_parts(data, starts, lengths, h)
    elif pa.types.is_decimal128(t):
        lo, hi = _decimal128_words(arr)
        if t.precision <= 18:
            new = _hash_long(lo, h)
        else:
            data, starts, lengths = _minimal_be_bytes(lo, hi)
            new = _hash_bytes_parts(data, starts, lengths, h)
    else:
        raise InvalidOptionError(f"spark_hash_columns: unsupported Arrow type {t}")
    if arr.null_count:
        valid = np.asarray(arr.is_valid())
        return np.where(valid, new, h)
    assert new.shape == (n,)
    return new


def spark_hash_columns(
    columns: Sequence[pa.Array | pa.ChunkedArray], seed: int = SPARK_HASH_SEED
) -> np.ndarray:
    """Spark SQL ``hash(c1, ..., cd)`` (Murmur3, ``seed``) of every row, as ``int32``.

    Supported Arrow types: bool, int8/16/32 (``hashInt``), date32 (days, ``hashInt``),
    int64 (``hashLong``), timestamp of any unit/time zone (microseconds, ``hashLong``;
    nanoseconds are floored to microseconds), float64 / float32 (bit patterns with ``-0.0``
    as ``0.0`` and canonical NaN), string / binary (UTF-8 bytes, Spark's byte tail),
    decimal128 (``p <= 18``: ``hashLong`` of the unscaled value; otherwise the minimal
    big-endian two's-complement bytes). A null value leaves the running hash unchanged.
    """
    arrays = [as_array(c) for c in columns]
    if not arrays:
        raise ValueError("spark_hash_columns needs at least one column")
    n = len(arrays[0])
    for a in arrays:
        if len(a) != n:
            raise ValueError("spark_hash_columns: columns have different lengths")
    h = np.full(n, seed & 0xFFFFFFFF, dtype=np.uint32)
    for a in arrays:
        h = _hash_column(a, h)
    return h.view(np.int32)
