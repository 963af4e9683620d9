"""Functions that Spark runs in the server's Python workers for the client's jobs.

They receive Arrow batches of the indexed columns (plus the row weight) and return
small summaries; they never touch storage.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision
from qbeast_connect.write_plan import INTERNAL_PREFIX

#: Output schema of :func:`estimate_domains`.
DOMAIN_SCHEMA = "cube string, domain double"


def _domain_estimator(params: dict[str, Any]) -> tuple[Revision, Any]:
    """The revision and an empty local-OTree estimator from a domain task's parameters
    (``revision``, ``groupCubeSize``, ``bufferCapacity``, ``existing``)."""
    from qbeast_connect.index.estimation import DomainEstimator

    revision = Revision.from_json(params["revision"])
    d = revision.dimension_count
    existing = {
        CubeId.from_string(cube, d): int(weight) for cube, weight in params["existing"].items()
    }
    estimator = DomainEstimator(
        d,
        int(params["groupCubeSize"]),
        int(params["bufferCapacity"]),
        existing_max_weights=existing or None,
    )
    return revision, estimator


def _points_and_weights(revision: Revision, batch: pa.RecordBatch) -> tuple[Any, Any]:
    """The normalized points and weights of an estimation batch: the weight, then the
    indexed columns in the revision's order (by position: the names may hold dots or
    backticks). Raises when a value lies outside the revision's space."""
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import check_inside_space

    columns = [batch.column(i + 1) for i in range(revision.dimension_count)]
    points = normalize(revision.transformations, columns)
    check_inside_space(revision.transformations, revision.column_names, columns, points)
    return points, batch.column(0).to_numpy(zero_copy_only=False)


def estimate_domains(
    params_json: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Build the local OTrees of one partition and yield their cube domains (spec §5.3).

    Args:
        params_json: JSON with ``revision`` (revision JSON), ``groupCubeSize``,
            ``bufferCapacity`` and ``existing`` (cube string -> max weight of the index
            being appended to, or empty).
        batches: Arrow batches with the weight column, then the indexed columns in the
            revision's order (read by position).
    """
    params = json.loads(params_json)
    revision, estimator = _domain_estimator(params)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        estimator.add(*_points_and_weights(revision, batch))
    domains = estimator.finish()
    if domains:
        yield pa.RecordBatch.from_pydict(
            {"cube": list(domains.keys()), "domain": [float(v) for v in domains.values()]},
            schema=pa.schema([("cube", pa.string()), ("domain", pa.float64())]),
        )


#: Output schema of :func:`estimate_partition_domains`.
PARTITION_DOMAIN_SCHEMA = "part string, cube string, domain double"


def estimate_partition_domains(
    params_json: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """:func:`estimate_domains` for a time-partitioned table: one set of local OTrees per
    partition value, so that every partition's cube domains are its own tree's.

    Args:
        params_json: as for :func:`estimate_domains`, but ``existing`` maps each partition
            value to the max weights of that partition's existing inner cubes.
        batches: the weight, the indexed columns in the revision's order, then the
            partition value (by position).
    """
    from qbeast_connect.index.partition_trees import rows_by_value

    params = json.loads(params_json)
    existing_by_part: dict[str, Any] = params["existing"]
    revision = Revision.from_json(params["revision"])
    d = revision.dimension_count
    estimators: dict[str, Any] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        points, weights = _points_and_weights(revision, batch)
        for value, rows in rows_by_value(batch.column(d + 1)):
            estimator = estimators.get(value)
            if estimator is None:
                own = dict(params, existing=existing_by_part.get(value, {}))
                estimator = estimators[value] = _domain_estimator(own)[1]
            estimator.add(points[rows], weights[rows])
    parts: list[str] = []
    cubes: list[str] = []
    values: list[float] = []
    for value, estimator in estimators.items():
        for cube, domain in estimator.finish().items():
            parts.append(value)
            cubes.append(cube)
            values.append(float(domain))
    if cubes:
        yield pa.RecordBatch.from_pydict(
            {"part": parts, "cube": cubes, "domain": values},
            schema=pa.schema([("part", pa.string()), ("cube", pa.string()),
                              ("domain", pa.float64())]),
        )


#: Name of the helper column carrying a row's file group in consolidating writes.
GROUP_COLUMN = f"{INTERNAL_PREFIX}Group"


@functools.lru_cache(maxsize=4)
def _group_assigner(params_json: str) -> tuple[Revision, Any, Any, np.ndarray]:
    """The revision, cube assigner, file layout and partition keys of a consolidating write
    (parsed once per Python worker, not once per batch)."""
    from qbeast_connect.index.assignment import CubeAssigner
    from qbeast_connect.index.layout import FileLayout

    params = json.loads(params_json)
    revision = Revision.from_json(params["revision"])
    assigner = CubeAssigner(revision.dimension_count, params["cubeWeights"])
    layout = FileLayout.from_json_value(params["layout"])
    return revision, assigner, layout, partition_keys(max(1, layout.group_count))


def spark_partition_of(keys: np.ndarray, partitions: int) -> np.ndarray:
    """The partition Spark's hash partitioning (``repartition(partitions, column)``) sends
    each ``int`` column value to: ``pmod(hash(value), partitions)``, Murmur3 with seed 42."""
    from qbeast_connect.index.hashing_np import spark_hash_columns

    hashes = spark_hash_columns([pa.array(np.asarray(keys, dtype=np.int32), pa.int32())])
    partition: np.ndarray = hashes.astype(np.int64) % partitions  # floor modulo = Spark's pmod
    return partition


@functools.lru_cache(maxsize=16)
def partition_keys(partitions: int) -> np.ndarray:
    """``keys[p]``: the smallest non-negative ``int`` that Spark's hash partitioning into
    ``partitions`` partitions sends to partition ``p``.

    A consolidating write shuffles rows by ``keys[group]`` rather than by the group itself:
    hashing the group ids would send several file groups to one partition and none to
    others (about a third of the partitions stay empty), leaving idle tasks and tasks that
    buffer several groups and flush them into more files than groups.
    """
    keys = np.full(partitions, -1, dtype=np.int64)
    missing = partitions
    start = 0
    while missing:
        candidates = np.arange(start, start + 4 * partitions + 64, dtype=np.int64)
        start = int(candidates[-1]) + 1
        where = spark_partition_of(candidates, partitions)
        # the first candidate reaching each partition, among those still without a key
        first = np.unique(where, return_index=True)
        for part, at in zip(first[0].tolist(), first[1].tolist(), strict=True):
            if keys[part] < 0:
                keys[part] = candidates[at]
                missing -= 1
    out: np.ndarray = keys.astype(np.int32)
    return out


def assign_groups(params_json: str, weight: pa.Array, *columns: pa.Array) -> pa.Array:
    """Partition key of every row's file group (:func:`partition_keys`), from its weight and
    its indexed columns (an Arrow UDF body).

    Args:
        params_json: JSON with ``revision``, ``cubeWeights`` (cube -> max weight) and
            ``layout`` (:class:`~qbeast_connect.index.layout.FileLayout` JSON value).
        weight: the row weights.
        columns: the indexed columns, in the revision's order.
    """
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import check_inside_space

    revision, assigner, layout, keys = _group_assigner(params_json)
    if len(weight) == 0:
        return pa.array([], type=pa.int32())
    points = normalize(revision.transformations, list(columns))
    check_inside_space(revision.transformations, revision.column_names, columns, points)
    weights = weight.to_numpy(zero_copy_only=False)
    labels, inverse = assigner.assign_labels(points, weights)
    return pa.array(keys[layout.groups(inverse, labels, weights)], type=pa.int32())


@functools.lru_cache(maxsize=4)
def _partition_assigners(params_json: str) -> tuple[Revision, dict[str, Any], dict[str, int], Any]:
    """The revision, every partition's (assigner, layout), the partitions' first group
    numbers and the partition keys of a consolidating write to a time-partitioned table."""
    from qbeast_connect.index.assignment import CubeAssigner
    from qbeast_connect.index.partition_trees import group_offsets, trees_from_json

    params = json.loads(params_json)
    revision = Revision.from_json(params["revision"])
    trees = trees_from_json(params["trees"]) or {}
    offsets, count = group_offsets(trees)
    assigners = {
        value: (CubeAssigner(revision.dimension_count, tree.cube_weights), tree.layout)
        for value, tree in trees.items()
    }
    return revision, assigners, offsets, partition_keys(count)


def assign_partition_groups(params_json: str, weight: pa.Array, *columns: pa.Array) -> pa.Array:
    """:func:`assign_groups` for a time-partitioned table: the last column is the
    partition value, and each partition's rows get groups of that partition's tree
    (``params_json`` has ``trees`` instead of one ``cubeWeights``/``layout``)."""
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import check_inside_space

    revision, assigners, offsets, keys = _partition_assigners(params_json)
    if len(weight) == 0:
        return pa.array([], type=pa.int32())
    indexed, part = list(columns[:-1]), columns[-1]
    points = normalize(revision.transformations, indexed)
    check_inside_space(revision.transformations, revision.column_names, indexed, points)
    weights = weight.to_numpy(zero_copy_only=False)
    groups = np.full(len(weight), len(keys) - 1, dtype=np.int64)  # no tree: the last group
    encoded = part.dictionary_encode()
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    for code, value in enumerate(encoded.dictionary.to_pylist()):
        found = assigners.get(value)
        rows = np.flatnonzero(indices == code)
        if found is None or not rows.size:
            continue
        assigner, layout = found
        labels, inverse = assigner.assign_labels(points[rows], weights[rows])
        groups[rows] = offsets[value] + layout.groups(inverse, labels, weights[rows])
    return pa.array(keys[groups], type=pa.int32())
