"""Cover a time range with the coarsest existing partitions of a fact's tables.

The algorithm is the Lens one, with its right-hand remainder bug fixed:

1. Take the coarsest update period whose whole partitions fit in the range (the
   *aligned sub-range* ``[ceil(start), floor(end))``); if none fits, the range cannot
   be covered.
2. For each partition of that sub-range, in order: if some table of the fact has it,
   use it; otherwise cover the partition's own range with the strictly finer periods.
3. Cover the left remainder ``[start, ceil(start))`` **and the right remainder**
   ``[floor(end), end)`` with the strictly finer periods (the seed's pseudo-code
   recursed into the left remainder twice and so never covered the right one).

Instead of stopping at the first hole, the planner collects every sub-range that no
partition covers, so the error names all of them, and the number of existence checks
equals the Lens count (534,738 for a year over yearly..minutely with no partitions).

Existence is asked of an oracle ``exists(table, period, partition)``; the planner counts
the calls. :class:`TimelineOracle` answers them from in-memory timelines.

Pure standard library: no pyspark, pyarrow or numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from qbeast_connect.exceptions import InvalidOptionError, UncoverableRangeError
from qbeast_connect.timeline.partition import TimePartition, TimeRange, merge_ranges
from qbeast_connect.timeline.timeline import PartitionTimeline
from qbeast_connect.timeline.update_period import UpdatePeriod

__all__ = ["CoverPlan", "ExistsOracle", "TimelineOracle", "cover", "plan_cover"]

#: ``exists(table, period, partition) -> bool``.
ExistsOracle = Callable[[str, UpdatePeriod, TimePartition], bool]

_MAX_LISTED = 10


@dataclass(frozen=True, slots=True)
class CoverPlan:
    """The result of :func:`plan_cover`.

    Attributes:
        range: the range asked for.
        parts: ``(table, partition)`` pairs covering it, in time order (complete only
            when ``uncovered`` is empty).
        uncovered: the sub-ranges no partition covers, merged and in time order.
        existence_checks: how many times the oracle was asked.
    """

    range: TimeRange
    parts: tuple[tuple[str, TimePartition], ...]
    uncovered: tuple[TimeRange, ...]
    existence_checks: int

    @property
    def complete(self) -> bool:
        """Whether the parts cover the whole range."""
        return not self.uncovered

    def require_complete(self, name: str | None = None) -> list[tuple[str, TimePartition]]:
        """The parts, or raise when some sub-range is uncovered.

        Args:
            name: the fact's name, for the message.

        Raises:
            UncoverableRangeError: naming every uncovered sub-range (the first ten in the
                message, all of them in the error's ``uncovered`` attribute).
        """
        if self.complete:
            return list(self.parts)
        listed = ", ".join(str(r) for r in self.uncovered[:_MAX_LISTED])
        more = len(self.uncovered) - _MAX_LISTED
        suffix = f" and {more} more" if more > 0 else ""
        subject = f"fact {name!r}" if name else "the tables"
        raise UncoverableRangeError(
            f"{subject} cannot cover {self.range}: no partition covers the sub-range(s) "
            f"{listed}{suffix}; write those partitions or query a covered range",
            uncovered=self.uncovered,
        )


class TimelineOracle:
    """Answers existence checks from in-memory timelines.

    Args:
        timelines: table -> update period -> timeline. A missing table or period means
            the table holds no partition of that period.
    """

    def __init__(self, timelines: Mapping[str, Mapping[UpdatePeriod, PartitionTimeline]]) -> None:
        self._timelines = timelines

    def __call__(self, table: str, period: UpdatePeriod, partition: TimePartition) -> bool:
        return self.exists_ordinal(table, period, partition.ordinal)

    def exists_ordinal(self, table: str, period: UpdatePeriod, ordinal: int) -> bool:
        """Whether ``table`` has the partition numbered ``ordinal`` of ``period``."""
        timeline = self._timelines.get(table, {}).get(period)
        return timeline is not None and timeline.exists_ordinal(ordinal)


def _normalize_tables(
    tables: Mapping[str, Iterable[UpdatePeriod | str]],
) -> dict[str, tuple[UpdatePeriod, ...]]:
    out: dict[str, tuple[UpdatePeriod, ...]] = {}
    for table, periods in tables.items():
        if isinstance(periods, str | UpdatePeriod):
            raise InvalidOptionError(
                f"the update periods of table {table!r} must be a list, e.g. ['daily', 'hourly']"
            )
        out[table] = tuple(sorted({UpdatePeriod.from_name(p) for p in periods}))
    return out


def plan_cover(
    time_range: TimeRange,
    tables: Mapping[str, Iterable[UpdatePeriod | str]],
    exists: ExistsOracle,
) -> CoverPlan:
    """Plan the partitions that cover ``time_range``, preferring the coarsest.

    Args:
        time_range: the half-open range to cover.
        tables: the fact's tables, each with its update periods (table order decides
            which table serves a partition that several tables have).
        exists: the existence oracle; called at most once per (table, partition) tried.

    Returns:
        A :class:`CoverPlan`; check ``complete`` or call ``require_complete()``.
    """
    by_table = _normalize_tables(tables)
    periods: list[UpdatePeriod] = sorted({p for ps in by_table.values() for p in ps})
    holders: dict[UpdatePeriod, list[str]] = {
        p: [t for t, ps in by_table.items() if p in ps] for p in periods
    }
    parts: list[tuple[str, TimePartition]] = []
    # (start, end) of uncovered sub-ranges; the recursion visits the range in time order,
    # so touching ranges are merged on the way
    uncovered: list[list[datetime]] = []
    checks = 0

    def miss(start: datetime, end: datetime) -> None:
        if uncovered and uncovered[-1][1] == start:
            uncovered[-1][1] = end
        else:
            uncovered.append([start, end])

    # an oracle answering by partition number (TimelineOracle) skips building partitions
    by_ordinal: Callable[[str, UpdatePeriod, int], bool] | None = getattr(
        exists, "exists_ordinal", None
    )

    def find(period: UpdatePeriod, ordinal: int) -> str | None:
        nonlocal checks
        partition: TimePartition | None = None
        for table in holders[period]:
            checks += 1
            if by_ordinal is not None:
                hit = by_ordinal(table, period, ordinal)
            else:
                if partition is None:
                    partition = TimePartition.from_ordinal(period, ordinal)
                hit = exists(table, period, partition)
            if hit:
                return table
        return None

    def cover_range(rng: TimeRange, usable: int) -> None:
        # usable: periods[:usable] may be used
        if rng.is_empty:
            return
        index = usable - 1
        sub: TimeRange | None = None
        while index >= 0:
            sub = rng.aligned(periods[index])
            if sub is not None:
                break
            index -= 1
        if index < 0 or sub is None:
            miss(rng.start, rng.end)
            return
        period = periods[index]
        cover_range(TimeRange(rng.start, sub.start), index)
        run: int | None = None  # first of the current run of missing partitions (finest)
        last = period.ordinal(sub.end)
        for n in range(period.ordinal(sub.start), last):
            table = find(period, n)
            if table is not None:
                if run is not None:
                    miss(period.start_of(run), period.start_of(n))
                    run = None
                parts.append((table, TimePartition.from_ordinal(period, n)))
            elif index == 0:
                if run is None:  # no finer period to fall back to
                    run = n
            else:
                cover_range(TimeRange(period.start_of(n), period.start_of(n + 1)), index)
        if run is not None:
            miss(period.start_of(run), period.start_of(last))
        cover_range(TimeRange(sub.end, rng.end), index)  # the right remainder

    cover_range(time_range, len(periods))
    return CoverPlan(
        range=time_range,
        parts=tuple(parts),
        uncovered=tuple(merge_ranges(TimeRange(a, b) for a, b in uncovered)),
        existence_checks=checks,
    )


def cover(
    time_range: TimeRange,
    tables: Mapping[str, Iterable[UpdatePeriod | str]],
    exists: ExistsOracle,
    *,
    name: str | None = None,
) -> list[tuple[str, TimePartition]]:
    """The ``(table, partition)`` pairs covering ``time_range``, coarsest first preferred.

    Raises:
        UncoverableRangeError: some sub-range has no covering partition; the message
            names the uncovered sub-ranges.

    Example:
        >>> from qbeast_connect.timeline import TimeRange
        >>> have = {"2015-02", "2015-01-31"}
        >>> plan = cover(
        ...     TimeRange.of("2015-01-31", "2015-03-01"),
        ...     {"m": ["monthly"], "d": ["daily"]},
        ...     lambda table, period, p: str(p) in have,
        ... )
        >>> [(t, str(p)) for t, p in plan]
        [('d', '2015-01-31'), ('m', '2015-02')]
    """
    return plan_cover(time_range, tables, exists).require_complete(name)


def partitions_by_period(
    parts: Sequence[tuple[str, TimePartition]],
) -> dict[UpdatePeriod, list[TimeRange]]:
    """Group cover parts into merged ranges per update period (for display and tests)."""
    grouped: dict[UpdatePeriod, list[TimeRange]] = {}
    for _, partition in parts:
        grouped.setdefault(partition.period, []).append(partition.range)
    return {p: merge_ranges(rs) for p, rs in sorted(grouped.items())}
