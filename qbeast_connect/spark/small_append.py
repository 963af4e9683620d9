"""Small appends: one Spark job (row counts and cube domains) instead of two.

A write normally runs a statistics job (two stages: partial and final aggregation), then
an estimation job (cube domains), then the write job. An append to the table's latest
revision knows the estimation's inputs before any statistics: the revision and the
existing cube max weights. So :func:`domains_job` runs one ``mapInArrow`` stage over the
indexed columns (:func:`qbeast_connect.spark.tasks.append_domains`) that returns each
partition's row count and cube domains, and reports any value beyond the revision's
bounds. When no value is, the statistics could not supersede the revision (spec §4.7),
so the write keeps it without the statistics job.

The domains are used only when they are exactly what the estimation job would compute
(:func:`exact_domains`): no sampling (``estimation_fraction == 1``), and every partition is
one local tree that never fills a cube (fewer rows than the group cube size, at most the
buffer capacity). Then a local tree's domains do not depend on the group cube size, which
the client cannot know before the row counts. In every other case the write runs the
statistics and estimation jobs as before. Either way the cube max weights and the file
layout, hence the index, are the ones the regular path computes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.write_plan import WEIGHT_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "SMALL_APPEND_MAX_ROWS",
    "declined",
    "domains_job",
    "exact_domains",
    "in_task_params",
    "may_use",
]

#: Rows per partition the domain task reads at most; a larger partition sends the write
#: through the statistics and estimation jobs.
SMALL_APPEND_MAX_ROWS = 100_000


def may_use(
    latest: Revision | None,
    specs: Sequence[ColumnSpec],
    cube_size: int | None,
    has_user_stats: bool,
) -> bool:
    """Whether an append to ``latest`` can skip the statistics job when its rows lie inside
    the revision's bounds: the revision has linear, identity or hash transformations (not a
    staging or empty one), the write names no other columns or transformers, keeps the cube
    size and passes no ``columnStats`` (which could widen the revision)."""
    from qbeast_connect.model.transformation import (
        HashTransformation,
        IdentityTransformation,
        LinearTransformation,
    )

    if latest is None or not latest.transformations or has_user_stats:
        return False
    kinds = (LinearTransformation, IdentityTransformation, HashTransformation)
    if not all(isinstance(t, kinds) for t in latest.transformations):
        return False
    if cube_size is not None and cube_size != latest.desired_cube_size:
        return False
    if specs:
        if len(specs) != len(latest.column_names):
            return False
        for spec, name, old in zip(
            specs, latest.column_names, latest.column_transformers, strict=True
        ):
            if spec.name.lower() != name.lower():
                return False
            if spec.transformer_type not in (None, old.type_name):
                return False
    return True


def in_task_params(
    existing: Mapping[Any, Any], buffer_capacity: int, sample_rows: int
) -> dict[str, Any]:
    """``WritePlan.append_task`` of a one-job small append to an index whose cubes have the
    statuses ``existing``: the inner cubes' max weights (for the local tree, as the
    estimation job gets them), every cube's element count (for the existing domains) and
    the most rows the task accepts: at most ``SMALL_APPEND_MAX_ROWS``, the buffer capacity
    (one local tree) and ``sample_rows`` (the estimation would read every row)."""
    return {
        "existingWeights": {
            str(c): int(s.max_weight) for c, s in existing.items() if s.max_weight < 2**31 - 1
        },
        "existingCounts": {str(c): int(s.element_count) for c, s in existing.items()},
        "bufferCapacity": buffer_capacity,
        "maxRows": min(SMALL_APPEND_MAX_ROWS, buffer_capacity, sample_rows),
    }


def declined(exc: BaseException) -> bool:
    """Whether ``exc`` is the failure of a one-job small append whose task declined its
    rows (``server_plugin.append_task``): the write then runs the regular jobs."""
    from server_plugin.append_task import DECLINED_MARKER

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if DECLINED_MARKER in str(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def domains_job(
    df: DataFrame,
    revision: Revision,
    existing_weights: Mapping[str, int],
    buffer_capacity: int,
) -> tuple[list[int], list[Any]] | None:
    """Run the domain task over ``df``: ``(rows per non-empty partition, domain rows)``, or
    None when a partition holds a value beyond the revision's bounds or too many rows."""
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
    with translate_errors():
        rows = projected.mapInArrow(
            functools.partial(append_domains, params), APPEND_DOMAIN_SCHEMA
        ).collect()
    if any(r["note"] in ("outside", "large") for r in rows):
        return None
    counts = [int(r["domain"]) for r in rows if r["note"] == "rows"]
    return counts, [r for r in rows if r["note"] is None]


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
    from qbeast_connect.index.append_plan import fits_local_trees

    if any(r["note"] is not None for r in domain_rows):
        return None
    if fraction < 1.0 or not fits_local_trees(per_partition, desired_cube_size, buffer_capacity):
        return None
    out: dict[str, float] = {}
    for row in domain_rows:
        out[row["cube"]] = out.get(row["cube"], 0.0) + float(row["domain"])
    return out
