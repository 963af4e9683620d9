"""Time partitions and half-open time ranges ``[start, end)`` (UTC).

Pure standard library: no pyspark, pyarrow or numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.timeline.update_period import UpdatePeriod, to_utc

__all__ = ["TimePartition", "TimeRange", "format_instant", "merge_ranges"]


def format_instant(when: datetime) -> str:
    """ISO-8601 text of a UTC instant with a ``Z`` suffix (``2015-01-29T06:00:00Z``)."""
    t = to_utc(when)
    text = t.replace(tzinfo=None).isoformat()
    return text + "Z"


@dataclass(frozen=True, slots=True)
class TimePartition:
    """One partition of an update period, e.g. the hour ``2015-01-29-06``.

    Attributes:
        period: the update period.
        start: the partition's first instant (aware UTC, a boundary of ``period``).

    Partitions are hashable and ordered by ``(start, end)``, so partitions of one period
    sort chronologically. ``str(p)`` is the canonical string stored in the table.

    Example:
        >>> p = TimePartition.parse("2015-01-29-06")
        >>> p.period, str(p.next())
        (<UpdatePeriod.HOURLY: 'hourly'>, '2015-01-29-07')
        >>> str(p.range)
        '[2015-01-29T06:00:00Z, 2015-01-29T07:00:00Z)'
    """

    period: UpdatePeriod
    start: datetime
    _ordinal: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.period, UpdatePeriod):
            raise InvalidOptionError(f"period must be an UpdatePeriod, got {self.period!r}")
        start = to_utc(self.start)
        ordinal = self.period.ordinal(start)
        if self.period.start_of(ordinal) != start:
            raise InvalidOptionError(
                f"{format_instant(start)} is not the start of a {self.period.value} partition; "
                "use TimePartition.of(period, when) to get the partition containing a time"
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "_ordinal", ordinal)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def of(cls, period: UpdatePeriod | str, when: datetime | date | str) -> TimePartition:
        """The partition of ``period`` that contains the instant ``when``."""
        p = UpdatePeriod.from_name(period)
        return cls(p, p.truncate(to_utc(when)))

    @classmethod
    def parse(cls, text: str, period: UpdatePeriod | str | None = None) -> TimePartition:
        """Parse a canonical partition string.

        Args:
            text: e.g. ``2015-01-29-06``, ``2015-W05``, ``2015-Q1``.
            period: the expected period; None to detect it from the format.

        Raises:
            InvalidOptionError: ``text`` is not a canonical string (of ``period``).
        """
        if period is None:
            detected = UpdatePeriod.detect(text) if isinstance(text, str) else None
            if detected is None:
                examples = ", ".join(f"{m.example} ({m.value})" for m in UpdatePeriod)
                raise InvalidOptionError(
                    f"{text!r} is not a time partition string; expected one of the forms {examples}"
                )
            p = detected
        else:
            p = UpdatePeriod.from_name(period)
        return cls(p, p.parse(text))

    @classmethod
    def from_ordinal(cls, period: UpdatePeriod, ordinal: int) -> TimePartition:
        """The partition numbered ``ordinal`` of ``period`` (see ``UpdatePeriod.ordinal``)."""
        # start_of() always gives a boundary: skip the checks of __post_init__ (hot path)
        partition = object.__new__(cls)
        object.__setattr__(partition, "period", period)
        object.__setattr__(partition, "start", period.start_of(ordinal))
        object.__setattr__(partition, "_ordinal", ordinal)
        return partition

    # -- properties --------------------------------------------------------------------

    @property
    def ordinal(self) -> int:
        """The partition's number within its period."""
        return self._ordinal

    @property
    def end(self) -> datetime:
        """The first instant after the partition (start of the next one)."""
        return self.period.start_of(self.ordinal + 1)

    @property
    def range(self) -> TimeRange:
        """The partition's time range ``[start, end)``."""
        return TimeRange(self.start, self.end)

    def next(self, n: int = 1) -> TimePartition:
        """The partition ``n`` steps later (earlier when ``n`` is negative)."""
        return TimePartition.from_ordinal(self.period, self.ordinal + n)

    def prev(self, n: int = 1) -> TimePartition:
        """The partition ``n`` steps earlier."""
        return self.next(-n)

    # -- protocol ----------------------------------------------------------------------

    def _key(self) -> tuple[datetime, int]:
        # for one start, a longer period has a higher rank: same order as (start, end)
        return (self.start, self.period.rank)

    def __lt__(self, other: TimePartition) -> bool:
        if not isinstance(other, TimePartition):
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other: TimePartition) -> bool:
        if not isinstance(other, TimePartition):
            return NotImplemented
        return self._key() <= other._key()

    def __gt__(self, other: TimePartition) -> bool:
        if not isinstance(other, TimePartition):
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other: TimePartition) -> bool:
        if not isinstance(other, TimePartition):
            return NotImplemented
        return self._key() >= other._key()

    def __str__(self) -> str:
        return self.period.format(self.start)

    def __repr__(self) -> str:
        return f"TimePartition({self.period.value}, {str(self)!r})"


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open UTC time range ``[start, end)``; empty when ``start == end``.

    Attributes:
        start: first instant in the range (aware UTC).
        end: first instant after the range (aware UTC), ``>= start``.

    Example:
        >>> r = TimeRange.of("2015-01-29T06:00:00Z", "2015-03-01T06:00:00Z")
        >>> str(r.aligned(UpdatePeriod.MONTHLY))
        '[2015-02-01T00:00:00Z, 2015-03-01T00:00:00Z)'
    """

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        start, end = to_utc(self.start), to_utc(self.end)
        if end < start:
            raise InvalidOptionError(
                f"a time range needs start <= end; got [{format_instant(start)}, "
                f"{format_instant(end)})"
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)

    @classmethod
    def of(cls, start: datetime | date | str, end: datetime | date | str) -> TimeRange:
        """Build a range from datetimes, dates or ISO-8601 strings (see ``to_utc``)."""
        return cls(to_utc(start), to_utc(end))

    @property
    def is_empty(self) -> bool:
        """Whether the range holds no instant."""
        return self.start == self.end

    @property
    def duration(self) -> timedelta:
        """``end - start``."""
        return self.end - self.start

    def contains(self, when: datetime) -> bool:
        """Whether the instant lies in ``[start, end)``."""
        t = to_utc(when)
        return self.start <= t < self.end

    def aligned(self, period: UpdatePeriod) -> TimeRange | None:
        """The largest sub-range made of whole partitions of ``period``, or None if none fits.

        It is ``[ceil(start), floor(end))`` on the period's boundaries.
        """
        if self.is_empty:
            return None
        low = period.ceil(self.start)
        high = period.truncate(self.end)
        if low >= high:
            return None
        return TimeRange(low, high)

    def partitions(self, period: UpdatePeriod) -> Iterator[TimePartition]:
        """The partitions of ``period`` that lie entirely inside the range, in order."""
        sub = self.aligned(period)
        if sub is None:
            return
        first = period.ordinal(sub.start)
        last = period.ordinal(sub.end)  # exclusive
        for n in range(first, last):
            yield TimePartition.from_ordinal(period, n)

    def __str__(self) -> str:
        return f"[{format_instant(self.start)}, {format_instant(self.end)})"

    def __repr__(self) -> str:
        return f"TimeRange({self})"


def merge_ranges(ranges: Iterable[TimeRange]) -> list[TimeRange]:
    """Sort ranges and merge the overlapping or touching ones; drop empty ones."""
    out: list[TimeRange] = []
    for r in sorted((r for r in ranges if not r.is_empty), key=lambda r: (r.start, r.end)):
        if out and r.start <= out[-1].end:
            if r.end > out[-1].end:
                out[-1] = TimeRange(out[-1].start, r.end)
        else:
            out.append(r)
    return out
