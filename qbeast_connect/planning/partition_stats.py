"""What a time partition proves about its files, as Delta statistics.

Every file of a time-partitioned table (:mod:`qbeast_connect.rules.time_partitioning`)
holds the rows of one partition: its partition column equals the canonical string in
``partitionValues``, and its time column lies in the partition's range ``[start, end)``.
:func:`partition_stats` writes these facts into the file's statistics (the partition
column's min = max = the value, no nulls; the time column's bounds when the file has none),
so the one statistics pruning of :mod:`~qbeast_connect.planning.file_planner` also prunes
whole partitions, for a filter on the partition column or on the time column.

Only what the writer guarantees is added: the time column's bounds only for a
``timestamp`` column (an instant, cut into partitions in UTC), never for a file whose
partition value is null or not a partition of the table's period.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.planning.coercion import column_types
from qbeast_connect.rules.time_partitioning import TimePartitioning, partitioning_of
from qbeast_connect.timeline.partition import TimePartition

__all__ = ["partition_stats"]


def _iso_millis(moment: _dt.datetime) -> str:
    """A timestamp stat as Delta writes them: UTC, milliseconds, ``Z``."""
    utc = moment.astimezone(_dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _parsed(raw: object) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str | bytes):
        try:
            value = json.loads(raw, parse_float=Decimal)
        except ValueError:
            return {}
        return dict(value) if isinstance(value, Mapping) else {}
    return {}


def _section(stats: dict[str, Any], name: str) -> dict[str, Any]:
    section = stats.get(name)
    out = dict(section) if isinstance(section, Mapping) else {}
    stats[name] = out
    return out


def _partitioning(configuration: Mapping[str, str]) -> TimePartitioning | None:
    try:
        return partitioning_of(configuration)
    except MetadataFormatError:
        return None  # an unreadable declaration proves nothing


def partition_stats(
    file_stats: Mapping[str, Any],
    add_actions: Iterable[Mapping[str, Any]],
    configuration: Mapping[str, str],
    schema: object,
) -> dict[str, Any]:
    """``file_stats`` (path -> ``add.stats``) with the facts of each file's time partition.

    Tables without a time partitioning get ``file_stats`` back unchanged (as a dict).

    Args:
        file_stats: the files' statistics, JSON text or parsed.
        add_actions: the live ``add`` actions (``path`` and ``partitionValues``).
        configuration: the table configuration (its time partitioning).
        schema: the table schema (Delta ``schemaString``, its dict or a ``StructType``).
    """
    out = dict(file_stats)
    partitioning = _partitioning(configuration)
    if partitioning is None:
        return out
    column = partitioning.column
    time_type = column_types(schema).get(partitioning.time_column.lower())
    bound_time = time_type is not None and time_type.kind == "timestamp"
    for add in add_actions:
        path = add.get("path")
        values = add.get("partitionValues")
        value = values.get(column) if isinstance(values, Mapping) else None
        if not isinstance(path, str) or not isinstance(value, str):
            continue
        try:
            part = TimePartition.parse(value, partitioning.period)
        except InvalidOptionError:
            continue
        if str(part) != value:
            continue
        stats = _parsed(out.get(path))
        low, high, nulls = (_section(stats, k) for k in ("minValues", "maxValues", "nullCount"))
        low[column] = high[column] = value
        nulls[column] = 0
        tc = partitioning.time_column
        if bound_time and tc not in low and tc not in high:
            low[tc] = _iso_millis(part.start)
            # the last millisecond that starts inside the partition (bounds are floored
            # to milliseconds, and the planner reads a maximum as up to 999 µs above it)
            high[tc] = _iso_millis(part.end - _dt.timedelta(milliseconds=1))
        out[path] = stats
    return out
