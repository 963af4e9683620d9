"""Whether rows lie inside a revision's space.

A revision's space is fixed by the statistics the write planned it from: a ``linear``
column covers ``[min, max]`` (normalized coordinates in ``[0, 1]``), an ``identity``
column one value (or only nulls). ``hashing`` and ``quantiles`` columns map every value
inside. A row outside the space cannot be indexed by that revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast_connect.exceptions import InputChangedError

__all__ = ["check_inside_space", "outside_space"]


def outside_space(
    transformations: Sequence[Any],
    columns: Sequence[pa.Array | pa.ChunkedArray],
    points: np.ndarray,
) -> np.ndarray:
    """Boolean ``(n, d)`` mask of the coordinates outside the revision's space.

    Args:
        transformations: the revision's transformations, one per indexed column.
        columns: the indexed columns of the rows.
        points: their normalized points (``normalize(transformations, columns)``).

    NaN coordinates are not flagged here: they are a property of the value, not of the
    space, and the cube assignment reports them.
    """
    from qbeast_connect.index.normalize import column_values_as_float64
    from qbeast_connect.model.transformation import IdentityTransformation

    pts = np.asarray(points, dtype=np.float64)
    bad = (pts < 0.0) | (pts > 1.0)
    for j, t in enumerate(transformations):
        if not isinstance(t, IdentityTransformation):
            continue
        arr = columns[j]
        values = column_values_as_float64(arr)
        # NaN and ±infinity never widen a revision: they sit at fixed coordinates
        # (qbeast_connect.model.linear_scale), so only finite values must match
        valid = np.asarray(arr.is_valid(), dtype=bool) & np.isfinite(values)
        if t.identity_value is None:
            bad[:, j] |= valid
        else:
            bad[:, j] |= valid & (values != float(t.identity_value))
    return bad


def check_inside_space(
    transformations: Sequence[Any],
    names: Sequence[str],
    columns: Sequence[pa.Array | pa.ChunkedArray],
    points: np.ndarray,
) -> None:
    """Raise :class:`InputChangedError` when a row lies outside the revision's space.

    Used by the jobs of a write after its statistics job: the revision covers every row
    that job saw, so a row outside means the input changed between the jobs.
    """
    bad = outside_space(transformations, columns, points)
    if bad.any():
        row, dim = (int(x) for x in np.argwhere(bad)[0])
        value = columns[dim][row].as_py()
        raise InputChangedError(
            f"column {names[dim]!r} has value {value!r}, outside the indexed space computed "
            "by the statistics job of this write: the input gave different rows to the "
            "write's jobs (a non-deterministic expression such as rand(), uuid() or "
            "current_timestamp(), or a source that changed during the write); write a "
            "materialised copy, e.g. df.localCheckpoint()"
        )
