"""Functions that Spark runs in the server's Python workers for the client's jobs.

They receive Arrow batches of the indexed columns (plus the row weight) and return
small summaries; they never touch storage.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision

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
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import check_inside_space

    params = json.loads(params_json)
    revision, estimator = _domain_estimator(params)
    d = revision.dimension_count
    for batch in batches:
        if batch.num_rows == 0:
            continue
        # the weight, then the indexed columns in the revision's order (by position: the
        # names may hold dots or backticks)
        columns = [batch.column(i + 1) for i in range(d)]
        points = normalize(revision.transformations, columns)
        check_inside_space(revision.transformations, revision.column_names, columns, points)
        weights = batch.column(0).to_numpy(zero_copy_only=False)
        estimator.add(points, weights)
    domains = estimator.finish()
    if domains:
        yield pa.RecordBatch.from_pydict(
            {"cube": list(domains.keys()), "domain": [float(v) for v in domains.values()]},
            schema=pa.schema([("cube", pa.string()), ("domain", pa.float64())]),
        )


#: Name of the helper column carrying a row's file group in consolidating writes.
GROUP_COLUMN = "_qbeastGroup"


@functools.lru_cache(maxsize=4)
def _group_assigner(params_json: str) -> tuple[Revision, Any, Any]:
    """The revision, cube assigner and file layout of a consolidating write (parsed once per
    Python worker, not once per batch)."""
    from qbeast_connect.index.assignment import CubeAssigner
    from qbeast_connect.index.layout import FileLayout

    params = json.loads(params_json)
    revision = Revision.from_json(params["revision"])
    assigner = CubeAssigner(revision.dimension_count, params["cubeWeights"])
    return revision, assigner, FileLayout.from_json_value(params["layout"])


def assign_groups(params_json: str, weight: pa.Array, *columns: pa.Array) -> pa.Array:
    """File group of every row, from its weight and its indexed columns (an Arrow UDF body).

    Args:
        params_json: JSON with ``revision``, ``cubeWeights`` (cube -> max weight) and
            ``layout`` (:class:`~qbeast_connect.index.layout.FileLayout` JSON value).
        weight: the row weights.
        columns: the indexed columns, in the revision's order.
    """
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.index.space import check_inside_space

    revision, assigner, layout = _group_assigner(params_json)
    if len(weight) == 0:
        return pa.array([], type=pa.int32())
    points = normalize(revision.transformations, list(columns))
    check_inside_space(revision.transformations, revision.column_names, columns, points)
    weights = weight.to_numpy(zero_copy_only=False)
    labels, inverse = assigner.assign_labels(points, weights)
    return pa.array(layout.groups(inverse, labels, weights), type=pa.int32())
