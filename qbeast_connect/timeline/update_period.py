"""Update periods: the granularities at which time-partitioned tables are written.

Every period cuts UTC time into consecutive, gap-free partitions and gives each one a
canonical string, the value stored in the table's partition column:

============  ======================  ==========================================
Period        Canonical string        Partition
============  ======================  ==========================================
minutely      ``2015-01-29-06-30``    one minute
hourly        ``2015-01-29-06``       one hour
daily         ``2015-01-29``          one day (UTC midnight to midnight)
weekly        ``2015-W05``            one ISO-8601 week, Monday to Monday; the year
                                      is the ISO week-year (``2014-12-29`` is in
                                      ``2015-W01``)
monthly       ``2015-02``             one calendar month
quarterly     ``2015-Q1``             Jan-Mar, Apr-Jun, Jul-Sep, Oct-Dec
yearly        ``2015``                one calendar year
============  ======================  ==========================================

The formats differ from each other, so a canonical string also names its period
(:meth:`UpdatePeriod.detect`). Periods are ordered from the finest (minutely) to the
coarsest (yearly). Weeks do not nest in months: the cover planner never assumes that
a coarser partition is a union of finer partitions of the next period, only that each
period tiles time.

Internally each partition is an *ordinal*, an integer that counts partitions of the
period from a fixed origin (minutes/hours/days since 1970-01-01, ISO weeks since Monday
1969-12-29, months/quarters/years since year 0), so timelines work with integers.

Pure standard library: no pyspark, pyarrow or numpy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from enum import Enum

from qbeast_connect.exceptions import InvalidOptionError

__all__ = ["UpdatePeriod", "to_utc"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_MONDAY = datetime(1969, 12, 29, tzinfo=UTC)  # ISO week origin
_MINUTE = timedelta(minutes=1)
_HOUR = timedelta(hours=1)
_DAY = timedelta(days=1)
_WEEK = timedelta(weeks=1)


def to_utc(value: datetime | date | str) -> datetime:
    """Return ``value`` as an aware UTC datetime.

    Args:
        value: an aware datetime (converted to UTC); a naive datetime (taken as UTC); a
            date (its UTC midnight); or an ISO-8601 string such as ``2015-01-29T06:00:00Z``
            or ``2015-01-29`` (a string without offset is UTC).

    Returns:
        The instant as a ``datetime`` with ``tzinfo=timezone.utc``.

    Raises:
        InvalidOptionError: the value is of another type or an unparsable string.
    """
    if isinstance(value, datetime):
        if value.tzinfo is UTC:
            return value
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError as exc:
            raise InvalidOptionError(
                f"cannot read {value!r} as a time: use ISO-8601, e.g. '2015-01-29T06:00:00Z'"
            ) from exc
        return to_utc(parsed)
    raise InvalidOptionError(
        f"expected a datetime, date or ISO-8601 string, got {type(value).__name__}"
    )


def _floor_div(value: datetime, origin: datetime, step: timedelta) -> int:
    return (value - origin) // step


def _fmt_fields(t: datetime, count: int) -> str:
    """The first ``count`` of year, month, day, hour and minute, zero-padded, joined by ``-``."""
    fields = (f"{t.year:04d}", f"{t.month:02d}", f"{t.day:02d}", f"{t.hour:02d}", f"{t.minute:02d}")
    return "-".join(fields[:count])


def _fmt_week(t: datetime) -> str:
    iso = t.date().isocalendar()
    return f"{iso.year:04d}-W{iso.week:02d}"


def _fmt_quarter(t: datetime) -> str:
    return f"{t.year:04d}-Q{(t.month - 1) // 3 + 1}"


def _utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def _parse_week(m: re.Match[str]) -> datetime:
    d = date.fromisocalendar(int(m["y"]), int(m["w"]), 1)
    return _utc(d.year, d.month, d.day)


_PATTERNS: dict[str, tuple[re.Pattern[str], Callable[[re.Match[str]], datetime]]] = {
    "minutely": (
        re.compile(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})-(?P<h>\d{2})-(?P<mi>\d{2})"),
        lambda m: _utc(int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"]), int(m["mi"])),
    ),
    "hourly": (
        re.compile(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})-(?P<h>\d{2})"),
        lambda m: _utc(int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"])),
    ),
    "daily": (
        re.compile(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})"),
        lambda m: _utc(int(m["y"]), int(m["m"]), int(m["d"])),
    ),
    "weekly": (re.compile(r"(?P<y>\d{4})-W(?P<w>\d{2})"), _parse_week),
    "monthly": (
        re.compile(r"(?P<y>\d{4})-(?P<m>\d{2})"),
        lambda m: _utc(int(m["y"]), int(m["m"]), 1),
    ),
    "quarterly": (
        re.compile(r"(?P<y>\d{4})-Q(?P<q>[1-4])"),
        lambda m: _utc(int(m["y"]), (int(m["q"]) - 1) * 3 + 1, 1),
    ),
    "yearly": (re.compile(r"(?P<y>\d{4})"), lambda m: _utc(int(m["y"]), 1, 1)),
}

_EXAMPLES = {
    "minutely": "2015-01-29-06-30",
    "hourly": "2015-01-29-06",
    "daily": "2015-01-29",
    "weekly": "2015-W05",
    "monthly": "2015-02",
    "quarterly": "2015-Q1",
    "yearly": "2015",
}

_NOMINAL_SECONDS = {
    "minutely": 60,
    "hourly": 3_600,
    "daily": 86_400,
    "weekly": 7 * 86_400,
    "monthly": 30 * 86_400,
    "quarterly": 91 * 86_400,
    "yearly": 365 * 86_400,
}


class UpdatePeriod(Enum):
    """A time granularity; members are ordered from the finest to the coarsest.

    Example:
        >>> UpdatePeriod.DAILY.format(UpdatePeriod.DAILY.truncate(to_utc("2015-01-29T06:30")))
        '2015-01-29'
        >>> UpdatePeriod.from_name("Hourly") < UpdatePeriod.DAILY
        True
    """

    MINUTELY = "minutely"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    QUARTERLY = "quarterly"
    YEARLY = "yearly"

    # -- ordering ----------------------------------------------------------------------

    @property
    def rank(self) -> int:
        """Position from the finest (0, minutely) to the coarsest (6, yearly)."""
        return _RANK[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, UpdatePeriod):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, UpdatePeriod):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, UpdatePeriod):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, UpdatePeriod):
            return NotImplemented
        return self.rank >= other.rank

    def __str__(self) -> str:
        return self.value

    @property
    def nominal_seconds(self) -> int:
        """Typical length in seconds (months count 30 days); for display only."""
        return _NOMINAL_SECONDS[self.value]

    @property
    def example(self) -> str:
        """An example canonical partition string of this period."""
        return _EXAMPLES[self.value]

    # -- names -------------------------------------------------------------------------

    @classmethod
    def from_name(cls, name: UpdatePeriod | str) -> UpdatePeriod:
        """Return the period called ``name`` (case-insensitive: ``"HOURLY"``, ``"hourly"``).

        Raises:
            InvalidOptionError: the name is not a period; the message lists the accepted ones.
        """
        if isinstance(name, UpdatePeriod):
            return name
        if isinstance(name, str):
            key = name.strip().lower()
            for member in cls:
                if member.value == key:
                    return member
        raise InvalidOptionError(
            f"unknown update period {name!r}: use one of {', '.join(m.value for m in cls)}"
        )

    @classmethod
    def detect(cls, text: str) -> UpdatePeriod | None:
        """Return the period whose canonical format ``text`` has, or None."""
        for member in cls:
            pattern, _ = _PATTERNS[member.value]
            if pattern.fullmatch(text):
                return member
        return None

    # -- arithmetic ----------------------------------------------------------------------

    def ordinal(self, when: datetime) -> int:
        """Number of the partition containing the UTC instant ``when`` (see module doc)."""
        return _ORDINAL[self](to_utc(when))

    def start_of(self, ordinal: int) -> datetime:
        """Start (UTC) of the partition numbered ``ordinal``.

        Raises:
            InvalidOptionError: the partition lies outside the years 1-9999.
        """
        try:
            return _START[self](ordinal)
        except (OverflowError, ValueError) as exc:
            raise InvalidOptionError(
                f"{self.value} partition number {ordinal} is outside the supported years 1-9999"
            ) from exc

    def truncate(self, when: datetime) -> datetime:
        """Start of the partition containing ``when`` (floor)."""
        return self.start_of(self.ordinal(when))

    def ceil(self, when: datetime) -> datetime:
        """``when`` if it is a partition boundary, else the start of the next partition."""
        t = to_utc(when)
        n = self.ordinal(t)
        start = self.start_of(n)
        return start if start == t else self.start_of(n + 1)

    def is_boundary(self, when: datetime) -> bool:
        """Whether ``when`` is the start of a partition of this period."""
        t = to_utc(when)
        return self.truncate(t) == t

    # -- strings -------------------------------------------------------------------------

    def format(self, when: datetime) -> str:
        """Canonical string of the partition containing ``when``."""
        return _FORMAT[self](self.truncate(when))

    def format_ordinal(self, ordinal: int) -> str:
        """Canonical string of the partition numbered ``ordinal``."""
        return self.format(self.start_of(ordinal))

    def parse(self, text: str) -> datetime:
        """Start (UTC) of the partition whose canonical string is ``text``.

        Only the exact canonical spelling is accepted (``2015-1-29`` and ``2015-02-30``
        are rejected), so a partition has exactly one string.

        Raises:
            InvalidOptionError: ``text`` is not a canonical string of this period.
        """
        pattern, build = _PATTERNS[self.value]
        match = pattern.fullmatch(text) if isinstance(text, str) else None
        if match is not None:
            try:
                start = build(match)
            except ValueError:
                start = None
            if start is not None and self.format(start) == text:
                return start
        year = _OUT_OF_RANGE_YEAR.match(text) if isinstance(text, str) else None
        if year is not None:
            raise InvalidOptionError(
                f"{text!r} is the {self.value} partition of a time in year "
                f"{year.group(1).lstrip('+')}, "
                "outside the years 0001 to 9999 that time partitions cover (their strings "
                "have four-digit years): the time column holds such a value; filter those "
                "rows out or correct them before writing"
            )
        raise InvalidOptionError(
            f"{text!r} is not a {self.value} partition: expected the form {self.example!r}"
        )

    def parse_ordinal(self, text: str) -> int:
        """Ordinal of the partition whose canonical string is ``text``."""
        return self.ordinal(self.parse(text))


_RANK = {member: i for i, member in enumerate(UpdatePeriod)}

#: The year of a partition string of a time outside years 1 to 9999, as Spark spells it
#: (``+10000-01-01``, ``-0001-12-31``, ``0000-06-01``).
_OUT_OF_RANGE_YEAR = re.compile(r"^([+-]\d+|\d{5,}|0000)(?:-|$)")


def _quarter_start(ordinal: int) -> datetime:
    year, quarter0 = divmod(ordinal, 4)
    return _utc(year, quarter0 * 3 + 1, 1)


def _month_start(ordinal: int) -> datetime:
    year, month0 = divmod(ordinal, 12)
    return _utc(year, month0 + 1, 1)


_ORDINAL: dict[UpdatePeriod, Callable[[datetime], int]] = {
    UpdatePeriod.MINUTELY: lambda t: _floor_div(t, _EPOCH, _MINUTE),
    UpdatePeriod.HOURLY: lambda t: _floor_div(t, _EPOCH, _HOUR),
    UpdatePeriod.DAILY: lambda t: _floor_div(t, _EPOCH, _DAY),
    UpdatePeriod.WEEKLY: lambda t: _floor_div(t, _EPOCH_MONDAY, _WEEK),
    UpdatePeriod.MONTHLY: lambda t: t.year * 12 + t.month - 1,
    UpdatePeriod.QUARTERLY: lambda t: t.year * 4 + (t.month - 1) // 3,
    UpdatePeriod.YEARLY: lambda t: t.year,
}

_START: dict[UpdatePeriod, Callable[[int], datetime]] = {
    UpdatePeriod.MINUTELY: lambda n: _EPOCH + n * _MINUTE,
    UpdatePeriod.HOURLY: lambda n: _EPOCH + n * _HOUR,
    UpdatePeriod.DAILY: lambda n: _EPOCH + n * _DAY,
    UpdatePeriod.WEEKLY: lambda n: _EPOCH_MONDAY + n * _WEEK,
    UpdatePeriod.MONTHLY: _month_start,
    UpdatePeriod.QUARTERLY: _quarter_start,
    UpdatePeriod.YEARLY: lambda n: _utc(n, 1, 1),
}

_FORMAT: dict[UpdatePeriod, Callable[[datetime], str]] = {
    UpdatePeriod.MINUTELY: lambda t: _fmt_fields(t, 5),
    UpdatePeriod.HOURLY: lambda t: _fmt_fields(t, 4),
    UpdatePeriod.DAILY: lambda t: _fmt_fields(t, 3),
    UpdatePeriod.WEEKLY: _fmt_week,
    UpdatePeriod.MONTHLY: lambda t: _fmt_fields(t, 2),
    UpdatePeriod.QUARTERLY: _fmt_quarter,
    UpdatePeriod.YEARLY: lambda t: _fmt_fields(t, 1),
}
