"""Arrow input of the vectorized index code: one array per column, timestamps as integers.

Shared by :mod:`.hashing_np` (Spark's hash takes epoch microseconds) and :mod:`.normalize`
(the transformations take epoch milliseconds).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["as_array", "timestamp_epoch"]

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array of a column (dictionary chunks share one dictionary first)."""
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            return values.chunk(0)
        if values.num_chunks == 0:
            return pa.array([], type=values.type)
        if pa.types.is_dictionary(values.type):
            values = values.unify_dictionaries()
        return values.combine_chunks()
    return values


def timestamp_epoch(arr: pa.Array, unit: str) -> np.ndarray:
    """The int64 epoch values of a timestamp array in ``unit`` (``"ms"``, ``"us"``, …).

    A finer source unit is floored (as Spark and ``Timestamp.getTime`` do), a coarser one is
    multiplied (int64 wrap-around, like the JVM); nulls read as 0.
    """
    v = np.asarray(arr.cast(pa.int64()).fill_null(0), dtype=np.int64)
    have, want = _PER_SECOND[arr.type.unit], _PER_SECOND[unit]
    if have == want:
        return v
    if have < want:
        return v * (want // have)
    return np.floor_divide(v, have // want)
