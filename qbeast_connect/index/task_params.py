"""What the write task of a one-job small append or compaction is told
(``WritePlan.append_task``): the existing cubes of the tree its rows join, and its limits.

The client builds it (:mod:`qbeast_connect.spark.small_append`), and so does the plugin's
own compaction after a ``format("qbeast")`` append (``server_plugin.compaction``); the task
that reads it is ``server_plugin.append_task``. Pure standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SMALL_APPEND_MAX_ROWS", "in_task_params", "in_task_partition_params"]

#: Rows the one-job task reads at most; a larger append runs the statistics and
#: estimation jobs.
SMALL_APPEND_MAX_ROWS = 100_000


def in_task_params(
    existing: Mapping[Any, Any],
    buffer_capacity: int,
    sample_rows: int,
    max_rows: int = SMALL_APPEND_MAX_ROWS,
    compaction: int | None = None,
    top_rows: int | None = None,
) -> dict[str, Any]:
    """``WritePlan.append_task`` of a one-job small append to an index whose cubes have the
    statuses ``existing``: the inner cubes' max weights (for the local tree, as the
    estimation job gets them), every cube's element count (for the existing domains) and
    the most rows the task accepts: at most ``max_rows`` (the client's cap:
    ``qbeast_connect.spark.small_append.max_rows_for``), the
    buffer capacity (one local tree) and ``sample_rows`` (the estimation would read every
    row).

    ``compaction`` (the cube size) marks an automatic compaction's write: its layout cuts
    finer top bands (``topRows``, :func:`~qbeast_connect.index.layout.compaction_top_rows`)
    and its task (``compaction``) indexes rows that fill cubes too, in one local tree as the
    estimation job grows for one partition, so its weights are a valid estimate though not
    the regular path's own (which may read its input in several partitions), and checks
    its rows against the revision's space only (``server_plugin.append_task``). A
    compaction needs no bit-identical index, only a valid one, and one job instead of four.
    ``top_rows`` gives the layout's top band without the rest (a row change's rows)."""
    out: dict[str, Any] = {
        "existingWeights": {
            str(c): int(s.max_weight) for c, s in existing.items() if s.max_weight < 2**31 - 1
        },
        "existingCounts": {str(c): int(s.element_count) for c, s in existing.items()},
        "bufferCapacity": buffer_capacity,
        "maxRows": min(max_rows, buffer_capacity, sample_rows),
    }
    if compaction is not None:
        from qbeast_connect.index.layout import compaction_top_rows

        top_rows = compaction_top_rows(compaction)
        out["compaction"] = True
    if top_rows is not None:
        out["topRows"] = top_rows
    return out


def in_task_partition_params(
    statuses: Mapping[str, Mapping[Any, Any]],
    buffer_capacity: int,
    sample_rows: int,
    max_rows: int = SMALL_APPEND_MAX_ROWS,
    compaction: int | None = None,
    top_rows: int | None = None,
) -> dict[str, Any]:
    """:func:`in_task_params` for a time-partitioned table, whose partitions are trees of
    their own: ``partitions`` maps each existing partition value (``statuses``: its cube
    statuses) to its ``existingWeights`` and ``existingCounts``; ``compaction`` and
    ``top_rows`` as there, for every partition's tree."""
    out = in_task_params({}, buffer_capacity, sample_rows, max_rows, compaction, top_rows)
    out["partitions"] = {}
    for value, own in statuses.items():
        params = in_task_params(own, buffer_capacity, sample_rows, max_rows)
        out["partitions"][value] = {
            "existingWeights": params["existingWeights"],
            "existingCounts": params["existingCounts"],
        }
    return out
