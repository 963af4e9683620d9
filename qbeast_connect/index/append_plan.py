"""Pure pieces of a small append shared by the client and the in-task path.

An append to the table's latest revision can be indexed without the statistics and
estimation jobs when its rows lie inside the revision's bounds (:func:`beyond_bounds`)
and the estimation would be one local tree per partition that never fills a cube
(:func:`fits_local_trees`): then the domains are the rows' own and the cube max weights
and the file layout follow from them and the existing index (:func:`weights_and_layout`),
exactly as the regular path computes them. The client uses these after its domain job;
the write task of a one-job small append (``server_plugin.append_task``) uses them on the
rows it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast_connect.index.layout import FileLayout
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision

__all__ = ["beyond_bounds", "fits_local_trees", "weights_and_layout"]


def beyond_bounds(transformations: Any, columns: Sequence[pa.Array], points: Any) -> bool:
    """Whether a row could make the write's statistics supersede the revision (spec §4.7).

    Linear columns compare their values, as the statistics job computes them, with the
    revision's bounds; equal timestamps count as beyond (the statistics floor to a
    millisecond), and so do integers too large for a double. Other columns use the writer's
    own check (:func:`qbeast_connect.index.space.outside_space`). Erring towards "beyond"
    only sends the append through the statistics job.
    """
    from qbeast_connect.index.normalize import column_values_as_float64
    from qbeast_connect.index.space import outside_space
    from qbeast_connect.model.transformation import LinearTransformation, QDataType

    if outside_space(transformations, list(columns), points).any():
        return True
    for t, column in zip(transformations, columns, strict=True):
        if not isinstance(t, LinearTransformation):
            continue
        values = column_values_as_float64(column)
        keep = np.asarray(column.is_valid(), dtype=bool) & np.isfinite(values)
        values = values[keep]
        low, high = float(t.min_number), float(t.max_number)
        if t.ordered_data_type is QDataType.TIMESTAMP:
            beyond = (values <= low) | (values >= high)
        else:
            beyond = (values < low) | (values > high) | (np.abs(values) >= 2.0**53)
        if beyond.any():
            return True
    return False


def fits_local_trees(
    per_partition: Sequence[int], desired_cube_size: int, buffer_capacity: int
) -> bool:
    """Whether every non-empty partition is one local tree that never fills a cube: fewer
    rows than the group cube size of the estimation job, at most the buffer capacity. The
    domains of such trees do not depend on the group cube size."""
    from qbeast_connect.index.estimation import group_cube_size

    counts = [n for n in per_partition if n > 0]
    if not counts:
        return False
    num_trees = sum(max(1, -(-n // buffer_capacity)) for n in counts)
    gcs = group_cube_size(max(1, desired_cube_size), num_trees)
    return max(counts) < gcs and max(counts) <= buffer_capacity


def weights_and_layout(
    revision: Revision,
    input_domains: Mapping[str, float],
    existing_counts: Mapping[CubeId, Any],
    total: int,
    top_rows: int | None = None,
) -> tuple[dict[str, int], FileLayout]:
    """Cube max weights from a write's domains plus the existing index's (spec §5.4, §5.5),
    and the file layout of the write's rows. ``existing_counts`` maps each cube of the
    index appended to to its :class:`~qbeast_connect.model.snapshot.CubeStatus` or its
    element count (empty for a new index); ``top_rows``: the layout's top band rows
    (:func:`~qbeast_connect.index.layout.band_edges`; default the cube size)."""
    from qbeast_connect.index.layout import estimated_counts, plan_layout, segments_from_counts
    from qbeast_connect.model.estimation_math import existing_domains, weights_from_domains

    d = revision.dimension_count
    dcs = revision.desired_cube_size
    domains: dict[CubeId, float] = {CubeId.from_string(c, d): v for c, v in input_domains.items()}
    if existing_counts:
        for cube, value in existing_domains(existing_counts).items():
            domains[cube] = domains.get(cube, 0.0) + value
    weights = {str(c): int(w) for c, w in weights_from_domains(domains, dcs).items()}
    counts = estimated_counts(dict(input_domains), weights, d)
    layout = plan_layout(
        segments_from_counts(counts, weights, d), dcs, rows=total, top_rows=top_rows
    )
    return weights, layout
