"""Partition timelines and time-range cover planning over rollup tables (the Lens design).

* :class:`UpdatePeriod`, :class:`TimePartition`, :class:`TimeRange`: UTC time partitions
  with canonical strings (``2015-01-29-06`` hourly, ``2015-W05`` weekly, ``2015-Q1``...).
* :class:`PartitionTimeline` and its implementations :class:`StoreAllTimeline`,
  :class:`EndsAndHolesTimeline` (default) and :class:`RangesTimeline`: which partitions
  exist, in memory, saved in the Delta table's configuration
  (``qbeast.timeline.<column>.<period>.*``, see :mod:`.timeline`).
* :func:`write_partitioned`, :func:`drop_partition`, :func:`load_timelines`,
  :func:`set_timeline_impl`, :func:`rebuild_timelines`: time-partitioned Delta tables
  whose timelines change in the same commit as their files.
* :class:`Fact`: a named set of tables at several update periods; ``cover(start, end)``
  plans the coarsest covering partitions, ``read(start, end)`` reads them.

The modules ``update_period``, ``partition``, ``timeline``, ``cover`` and ``plan`` are
pure (standard library only) and belong to the core layer; ``writer`` and ``fact`` talk to
Spark and belong to the API layer. This package is the user's namespace, so it sits in the
API layer too, but it loads ``writer`` and ``fact`` only when one of their names is first
used: importing a core timeline module (as the server plugin does) never pulls in the client
transport.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import UncoverableRangeError
from qbeast_connect.timeline.cover import CoverPlan, TimelineOracle, cover, plan_cover
from qbeast_connect.timeline.partition import TimePartition, TimeRange
from qbeast_connect.timeline.timeline import (
    DEFAULT_IMPL,
    EndsAndHolesTimeline,
    PartitionTimeline,
    RangesTimeline,
    StoreAllTimeline,
)
from qbeast_connect.timeline.update_period import UpdatePeriod

if TYPE_CHECKING:
    from qbeast_connect.timeline.fact import Fact
    from qbeast_connect.timeline.writer import (
        TimelineWriteResult,
        drop_partition,
        load_timelines,
        rebuild_timelines,
        set_timeline_impl,
        write_partitioned,
    )

#: Names of the API modules, loaded on first use (see the module docstring).
_LAZY = {
    "Fact": "fact",
    "TimelineWriteResult": "writer",
    "drop_partition": "writer",
    "load_timelines": "writer",
    "rebuild_timelines": "writer",
    "set_timeline_impl": "writer",
    "write_partitioned": "writer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_IMPL",
    "CoverPlan",
    "EndsAndHolesTimeline",
    "Fact",
    "PartitionTimeline",
    "RangesTimeline",
    "StoreAllTimeline",
    "TimePartition",
    "TimeRange",
    "TimelineOracle",
    "TimelineWriteResult",
    "UncoverableRangeError",
    "UpdatePeriod",
    "cover",
    "drop_partition",
    "load_timelines",
    "plan_cover",
    "rebuild_timelines",
    "set_timeline_impl",
    "write_partitioned",
]
