"""Small appends: the statistics and the cube domains of an append in one Spark query.

A write normally runs a statistics job, then an estimation job (cube domains), then the
write job. For an append to a table's latest revision the estimation's inputs are known
before the statistics are: the revision (unless the statistics supersede it) and the
existing cube max weights. So the client sends both in ONE query: the statistics
aggregation united with a ``mapInArrow`` that builds the local trees of each partition
against the latest revision (:func:`qbeast_connect.spark.tasks.append_domains`).

The domains are used only when they are exactly what the estimation job would have
computed (:func:`exact_domains`): the statistics keep the latest revision, no row lies
outside its space, no sampling (``estimation_fraction == 1``), and every partition is one
local tree that never fills a cube (fewer rows than the group cube size and at most the
buffer capacity). Under these conditions a local tree's domains do not depend on the
group cube size, which the client cannot know before the row counts. Otherwise the write
runs the regular estimation job, so the cube max weights and the file layout, hence the
index, are the same as on the three-job path in every case.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast_connect.model.revision import Revision
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.write_plan import WEIGHT_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SMALL_APPEND_MAX_ROWS", "collect_with_domains", "exact_domains", "may_use"]

#: Rows per partition the combined query's domain task reads at most; a larger partition
#: makes the write fall back to the sampled estimation job.
SMALL_APPEND_MAX_ROWS = 100_000


def may_use(latest: Revision | None, cube_size: int | None) -> bool:
    """Whether an append to ``latest`` can estimate its domains in the statistics query.

    The latest revision must have built transformations (not the staging or an empty
    revision) and the write must keep its cube size.
    """
    if latest is None or not latest.transformations:
        return False
    if any(t.is_empty for t in latest.transformations):
        return False
    return cube_size is None or cube_size == latest.desired_cube_size


def collect_with_domains(
    stats: DataFrame,
    df: DataFrame,
    revision: Revision,
    existing_weights: Mapping[str, int],
    buffer_capacity: int,
) -> tuple[list[Any], list[Any]]:
    """Run the statistics aggregation ``stats`` and the domain task over ``df`` in one
    query; return ``(statistics rows, domain rows)``."""
    from pyspark.sql import functions as F

    from qbeast_connect.spark.errors import translate_errors
    from qbeast_connect.spark.tasks import APPEND_DOMAIN_SCHEMA, append_domains

    params = json.dumps(
        {
            "revision": revision.to_json(),
            # an upper bound of the real group cube size: exact_domains accepts the result
            # only when no cube of a local tree reached the real one
            "groupCubeSize": max(1, revision.desired_cube_size),
            "bufferCapacity": buffer_capacity,
            "existing": dict(existing_weights),
            "maxRows": min(SMALL_APPEND_MAX_ROWS, buffer_capacity),
        }
    )
    names = list(revision.column_names)
    projected = df.select(
        F.hash(*[F.col(quote_identifier(n)) for n in names]).alias(WEIGHT_COLUMN),
        *[F.col(quote_identifier(n)).alias(f"_qbeastC{i}") for i, n in enumerate(names)],
    )
    domains = projected.mapInArrow(functools.partial(append_domains, params), APPEND_DOMAIN_SCHEMA)
    with translate_errors():
        rows = stats.unionByName(domains, allowMissingColumns=True).collect()
    stat_rows = [r for r in rows if r["__n"] is not None]
    domain_rows = [r for r in rows if r["__n"] is None]
    return stat_rows, domain_rows


def exact_domains(
    domain_rows: Sequence[Any],
    per_partition: Sequence[int],
    desired_cube_size: int,
    buffer_capacity: int,
    fraction: float,
) -> dict[str, float] | None:
    """The input domains (cube string -> domain) when they equal the estimation job's,
    else None (the write then runs that job). ``fraction`` is the share of the rows that
    job would sample (``write.estimation_fraction``)."""
    from qbeast_connect.index.estimation import group_cube_size

    if any(r["note"] is not None for r in domain_rows):
        return None
    counts = [n for n in per_partition if n > 0]
    if not counts:
        return None
    if fraction < 1.0:
        return None
    num_trees = sum(max(1, -(-n // buffer_capacity)) for n in counts)
    gcs = group_cube_size(max(1, desired_cube_size), num_trees)
    if max(counts) >= gcs or max(counts) > buffer_capacity:
        return None
    out: dict[str, float] = {}
    for row in domain_rows:
        out[row["cube"]] = out.get(row["cube"], 0.0) + float(row["domain"])
    return out
