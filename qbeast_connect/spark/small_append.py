"""Small appends in one Spark job.

A write normally runs a statistics job (two stages: partial and final aggregation), then
an estimation job (cube domains), then the write job. An append to the table's latest
revision knows the estimation's inputs before any statistics: the revision and the
existing cubes. So when :func:`may_use` says the append could keep the latest revision,
the client runs only the write job, with the input coalesced to one partition and the
plan carrying :func:`in_task_params` (the existing cubes' max weights and element counts).
Its single task (``server_plugin.append_task``) reads all the rows first; when none lies
beyond the revision's bounds (then the statistics could not supersede the revision, spec
§4.7), there are at most ``maxRows`` of them (so the estimation would read every row) and
their one local tree fills no cube, their domains are exactly the estimation job's, and
the task derives the cube max weights and file layout exactly as the client would
(``qbeast_connect.index.append_plan``) and writes. Otherwise the task fails before writing
any file, with an error :func:`declined` recognises: nothing is committed, and the client
runs the statistics and estimation jobs as before. Either way the cube max weights and
the file layout, hence the index, are the ones the regular path computes.

A declined attempt costs reading at most ``maxRows`` rows of one partition (measured in
``bench/append_bench.py --big-rows``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qbeast_connect.index.task_params import (
    SMALL_APPEND_MAX_ROWS,
    in_task_params,
    in_task_partition_params,
)
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision

__all__ = [
    "SMALL_APPEND_MAX_ROWS",
    "UNKNOWN_SIZE_MAX_ROWS",
    "declined",
    "in_task_params",
    "in_task_partition_params",
    "max_rows_for",
    "may_use",
]

#: The cap for an input whose size the client cannot see in its plan (a table scan, a
#: join...): a declined attempt then costs one short job, not reading 100,000 rows.
UNKNOWN_SIZE_MAX_ROWS = 10_000

#: Relations that never return more rows than their input.
_ROW_PRESERVING = ("project", "filter", "with_columns", "drop", "to_df",
                   "with_columns_renamed", "deduplicate", "hint")


def max_rows_for(df: Any, compaction: bool = False) -> int:
    """The row cap of a one-job attempt for ``df``: ``SMALL_APPEND_MAX_ROWS`` when its plan
    shows it is bounded (rows the client sent inline, or a ``limit`` of at most that many,
    under projections and filters only) or it is a compaction's (small runs: the client
    chose them by their size), else ``UNKNOWN_SIZE_MAX_ROWS``."""
    if compaction:
        return SMALL_APPEND_MAX_ROWS
    try:
        rel = df._plan.to_proto(df.sparkSession.client).root
    except Exception:  # not a Connect DataFrame: no plan to look at
        return UNKNOWN_SIZE_MAX_ROWS
    while True:
        kind = rel.WhichOneof("rel_type")
        if kind == "local_relation":
            return SMALL_APPEND_MAX_ROWS
        if kind == "limit" and rel.limit.limit <= SMALL_APPEND_MAX_ROWS:
            return SMALL_APPEND_MAX_ROWS
        if kind not in _ROW_PRESERVING:
            return UNKNOWN_SIZE_MAX_ROWS
        rel = getattr(rel, kind).input


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
