"""The write task of a one-job small append computes the index of its own rows.

For a small append to the table's latest revision the client skips the statistics and
estimation jobs and sends the write job's single task (the input coalesced to one
partition) what the estimation job would have needed: the existing cubes' max weights
and element counts (``WritePlan.append_task``). The task reads all its rows first,
checking each batch as it arrives; then it estimates their cube domains with the
estimation job's own code (one local tree, :class:`~qbeast_connect.index.estimation.
DomainEstimator`), turns them into cube max weights and a file layout exactly as the
client would (:func:`qbeast_connect.index.append_plan.weights_and_layout`), and writes
with that plan.

When the rows do not qualify (a value beyond the revision's bounds, more rows than
``maxRows``, or a tree that would fill a cube) the task raises :class:`SmallAppendDeclinedError`
before it writes any file: the job fails, nothing is committed, and the client runs the
regular write. :data:`DECLINED_MARKER` is how the client recognises that failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast_connect.exceptions import QbeastError
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan
from server_plugin.data_files import arrow_batches

__all__ = ["DECLINED_MARKER", "SmallAppendDeclinedError", "plan_in_task"]

#: Text of the error a declining task raises; the client looks for it in the job's error.
DECLINED_MARKER = "qbeast-small-append-declined"


class SmallAppendDeclinedError(QbeastError):
    """The rows of a one-job small append need the regular write. The client catches it
    (by :data:`DECLINED_MARKER`) and runs the regular jobs: users never see it."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{DECLINED_MARKER}: {reason}")
        self.reason = reason


def plan_in_task(
    plan: WritePlan, iterator: Iterator[Any]
) -> tuple[WritePlan, list[pa.RecordBatch]]:
    """Read the task's rows and return the plan completed with their cube max weights and
    file layout, and the rows.

    Raises:
        SmallAppendDeclinedError: the rows do not qualify (see the module docstring).
    """
    from qbeast_connect.index.append_plan import (
        fits_local_trees,
        weights_and_layout,
    )
    from qbeast_connect.index.estimation import DomainEstimator, group_cube_size
    from qbeast_connect.model.cube_id import CubeId
    from qbeast_connect.model.revision import Revision

    params = plan.append_task
    if params is None or plan.revision_json is None:
        return plan, list(arrow_batches(iterator))
    if plan.partitioning is not None:
        return _per_partition(plan, params, iterator)
    revision = Revision.from_json(plan.revision_json)
    d = revision.dimension_count
    dcs = revision.desired_cube_size
    buffer = int(params["bufferCapacity"])
    max_rows = int(params["maxRows"])
    existing = {
        CubeId.from_string(c, d): int(w) for c, w in params["existingWeights"].items()
    }
    # one local tree: the estimation job's group cube size for one tree of these rows
    estimator = DomainEstimator(
        d, group_cube_size(max(1, dcs), 1), buffer, existing_max_weights=existing or None
    )
    batches: list[pa.RecordBatch] = []
    compaction = bool(params.get("compaction"))
    for batch, points, weights in _qualifying_batches(revision, iterator, max_rows, compaction):
        estimator.add(points, weights)
        batches.append(batch)
    rows = sum(b.num_rows for b in batches)
    if rows == 0:
        return dataclasses.replace(plan, append_task=None), batches
    if not compaction and not fits_local_trees([rows], dcs, buffer):
        raise SmallAppendDeclinedError("the rows would fill a cube of their local tree")
    counts = {CubeId.from_string(c, d): int(n) for c, n in params["existingCounts"].items()}
    top = params.get("topRows")
    weights_map, layout = weights_and_layout(
        revision, estimator.finish(), counts, rows, None if top is None else int(top)
    )
    completed = dataclasses.replace(
        plan, cube_weights=weights_map, layout=layout, append_task=None
    )
    return completed, batches


def _qualifying_batches(
    revision: Any, iterator: Iterator[Any], max_rows: int, compaction: bool = False
) -> Iterator[tuple[pa.RecordBatch, Any, Any]]:
    """The task's non-empty batches with their normalized points and weights.

    A compaction's rows (``compaction``) are only checked against the revision's space
    (:func:`~qbeast_connect.index.space.outside_space`, the writer's own check): they come
    from revisions it covers, and a compaction never widens a revision, so the statistics
    the append check mirrors (:func:`~qbeast_connect.index.append_plan.beyond_bounds`, which
    also counts a timestamp equal to a bound as beyond) have nothing to decide.

    Raises:
        SmallAppendDeclinedError: more than ``max_rows`` rows, or a value beyond the
            revision's bounds.
    """
    from qbeast_connect.index.append_plan import beyond_bounds
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import outside_space

    rows = 0
    for batch in arrow_batches(iterator):
        if not batch.num_rows:
            continue
        rows += batch.num_rows
        if rows > max_rows:
            raise SmallAppendDeclinedError(f"more than {max_rows} rows")
        columns = [batch.column(name) for name in revision.column_names]
        points = normalize(revision.transformations, columns)
        beyond = outside_space if compaction else beyond_bounds
        if np.asarray(beyond(revision.transformations, columns, points)).any():
            raise SmallAppendDeclinedError("a value lies beyond the revision's bounds")
        yield batch, points, batch.column(WEIGHT_COLUMN).to_numpy(zero_copy_only=False)


def _per_partition(
    plan: WritePlan, params: Mapping[str, Any], iterator: Iterator[Any]
) -> tuple[WritePlan, list[pa.RecordBatch]]:
    """:func:`plan_in_task` for a time-partitioned table: one local tree per partition
    value, grown from that partition's existing tree (``params["partitions"]``: value ->
    ``existingWeights``/``existingCounts``), and one :class:`PartitionTree` per partition.

    Raises:
        SmallAppendDeclinedError: as :func:`plan_in_task`, for any partition.
    """
    from qbeast_connect.index.append_plan import (
        fits_local_trees,
        weights_and_layout,
    )
    from qbeast_connect.index.estimation import DomainEstimator, group_cube_size
    from qbeast_connect.index.partition_trees import PartitionTree, rows_by_value
    from qbeast_connect.model.cube_id import CubeId
    from qbeast_connect.model.revision import Revision

    assert plan.revision_json is not None and plan.partitioning is not None
    revision = Revision.from_json(plan.revision_json)
    d = revision.dimension_count
    dcs = revision.desired_cube_size
    buffer = int(params["bufferCapacity"])
    max_rows = int(params["maxRows"])
    known: Mapping[str, Any] = params["partitions"]
    estimators: dict[str, Any] = {}
    counts: dict[str, int] = {}
    batches: list[pa.RecordBatch] = []
    compaction = bool(params.get("compaction"))
    for batch, points, weights in _qualifying_batches(revision, iterator, max_rows, compaction):
        for value, at in rows_by_value(batch.column(plan.partitioning.column)):
            if value is None:
                continue  # a null partition: the writer reports it
            estimator = estimators.get(value)
            if estimator is None:
                own = (known.get(value) or {}).get("existingWeights", {})
                existing = {CubeId.from_string(c, d): int(w) for c, w in own.items()}
                estimator = estimators[value] = DomainEstimator(
                    d, group_cube_size(max(1, dcs), 1), buffer,
                    existing_max_weights=existing or None,
                )
            estimator.add(points[at], weights[at])
            counts[value] = counts.get(value, 0) + int(at.size)
        batches.append(batch)
    top = params.get("topRows")
    trees: dict[str, PartitionTree] = {}
    for value, estimator in estimators.items():
        if not compaction and not fits_local_trees([counts[value]], dcs, buffer):
            raise SmallAppendDeclinedError("the rows would fill a cube of their local tree")
        own = (known.get(value) or {}).get("existingCounts", {})
        existing_counts = {CubeId.from_string(c, d): int(n) for c, n in own.items()}
        cube_weights, layout = weights_and_layout(
            revision, estimator.finish(), existing_counts, counts[value],
            None if top is None else int(top),
        )
        trees[value] = PartitionTree(cube_weights, layout)
    return dataclasses.replace(plan, partition_trees=trees, append_task=None), batches
