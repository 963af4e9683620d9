"""Update periods: canonical strings, truncation, ordinals, ISO weeks, ordering."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.timeline import UpdatePeriod
from qbeast_connect.timeline.update_period import to_utc

T = datetime(2015, 1, 29, 6, 30, 45, 123456, tzinfo=UTC)

CANONICAL = [
    (UpdatePeriod.MINUTELY, "2015-01-29-06-30", datetime(2015, 1, 29, 6, 30, tzinfo=UTC)),
    (UpdatePeriod.HOURLY, "2015-01-29-06", datetime(2015, 1, 29, 6, tzinfo=UTC)),
    (UpdatePeriod.DAILY, "2015-01-29", datetime(2015, 1, 29, tzinfo=UTC)),
    (UpdatePeriod.WEEKLY, "2015-W05", datetime(2015, 1, 26, tzinfo=UTC)),
    (UpdatePeriod.MONTHLY, "2015-01", datetime(2015, 1, 1, tzinfo=UTC)),
    (UpdatePeriod.QUARTERLY, "2015-Q1", datetime(2015, 1, 1, tzinfo=UTC)),
    (UpdatePeriod.YEARLY, "2015", datetime(2015, 1, 1, tzinfo=UTC)),
]


@pytest.mark.parametrize(
    ("period", "text", "start"), CANONICAL, ids=[c[0].value for c in CANONICAL]
)
def test_canonical_string_truncation_and_parse(
    period: UpdatePeriod, text: str, start: datetime
) -> None:
    assert period.format(T) == text
    assert period.truncate(T) == start
    assert period.parse(text) == start
    assert UpdatePeriod.detect(text) is period
    assert period.start_of(period.ordinal(T)) == start
    assert period.is_boundary(start) and not period.is_boundary(start + timedelta(microseconds=1))
    assert period.ceil(start) == start
    assert period.ceil(start + timedelta(microseconds=1)) == period.start_of(period.ordinal(T) + 1)


@pytest.mark.parametrize(
    ("when", "week"),
    [
        (datetime(2014, 12, 29, tzinfo=UTC), "2015-W01"),  # Monday of ISO week 1 of 2015
        (datetime(2014, 12, 28, 23, 59, tzinfo=UTC), "2014-W52"),
        (datetime(2016, 1, 3, 23, 59, tzinfo=UTC), "2015-W53"),  # 2015 has 53 ISO weeks
        (datetime(2016, 1, 4, tzinfo=UTC), "2016-W01"),
        (datetime(1970, 1, 1, tzinfo=UTC), "1970-W01"),
        (datetime(1969, 12, 28, tzinfo=UTC), "1969-W52"),
    ],
)
def test_weekly_uses_iso_weeks(when: datetime, week: str) -> None:
    assert UpdatePeriod.WEEKLY.format(when) == week
    start = UpdatePeriod.WEEKLY.parse(week)
    assert start.weekday() == 0 and start <= when < start + timedelta(days=7)


@pytest.mark.parametrize(
    ("month", "quarter"),
    [(1, "Q1"), (3, "Q1"), (4, "Q2"), (6, "Q2"), (7, "Q3"), (10, "Q4"), (12, "Q4")],
)
def test_quarters(month: int, quarter: str) -> None:
    assert UpdatePeriod.QUARTERLY.format(datetime(2015, month, 15, tzinfo=UTC)) == f"2015-{quarter}"


@pytest.mark.parametrize(
    ("period", "text"),
    [
        (UpdatePeriod.DAILY, "2015-02-30"),
        (UpdatePeriod.DAILY, "2015-1-29"),
        (UpdatePeriod.DAILY, "2015-01-29 "),
        (UpdatePeriod.HOURLY, "2015-01-29-24"),
        (UpdatePeriod.MINUTELY, "2015-01-29-06-60"),
        (UpdatePeriod.WEEKLY, "2015-W54"),
        (UpdatePeriod.WEEKLY, "2014-W53"),  # 2014 has 52 ISO weeks
        (UpdatePeriod.WEEKLY, "2015-W5"),
        (UpdatePeriod.MONTHLY, "2015-13"),
        (UpdatePeriod.QUARTERLY, "2015-Q5"),
        (UpdatePeriod.YEARLY, "15"),
        (UpdatePeriod.YEARLY, "2015-01"),
    ],
)
def test_parse_rejects_non_canonical(period: UpdatePeriod, text: str) -> None:
    with pytest.raises(InvalidOptionError, match=period.value):
        period.parse(text)


def test_formats_are_distinct_so_strings_name_their_period() -> None:
    for period in UpdatePeriod:
        assert UpdatePeriod.detect(period.example) is period
    assert UpdatePeriod.detect("not-a-time") is None


def test_ordering_finest_first_and_names() -> None:
    assert list(UpdatePeriod) == sorted(UpdatePeriod, reverse=True)[::-1]
    assert UpdatePeriod.MINUTELY < UpdatePeriod.HOURLY < UpdatePeriod.DAILY < UpdatePeriod.WEEKLY
    assert UpdatePeriod.WEEKLY < UpdatePeriod.MONTHLY < UpdatePeriod.QUARTERLY < UpdatePeriod.YEARLY
    assert max(UpdatePeriod) is UpdatePeriod.YEARLY
    assert UpdatePeriod.from_name(" Hourly ") is UpdatePeriod.HOURLY
    assert UpdatePeriod.from_name(UpdatePeriod.DAILY) is UpdatePeriod.DAILY
    with pytest.raises(InvalidOptionError, match="minutely, hourly, daily"):
        UpdatePeriod.from_name("fortnightly")
    assert str(UpdatePeriod.MONTHLY) == "monthly"


def test_out_of_range_partitions_are_rejected() -> None:
    with pytest.raises(InvalidOptionError, match="years 1-9999"):
        UpdatePeriod.YEARLY.start_of(10_000)
    with pytest.raises(InvalidOptionError, match="years 1-9999"):
        UpdatePeriod.MONTHLY.start_of(-1)


def test_to_utc_accepts_naive_aware_date_and_iso_strings() -> None:
    plus_one = timezone(timedelta(hours=1))
    expected = datetime(2015, 1, 29, 6, tzinfo=UTC)
    assert to_utc(datetime(2015, 1, 29, 6)) == expected
    assert to_utc(datetime(2015, 1, 29, 7, tzinfo=plus_one)) == expected
    assert to_utc(datetime(2015, 1, 29, 7, tzinfo=plus_one)).tzinfo is UTC
    assert to_utc("2015-01-29T06:00:00Z") == expected
    assert to_utc("2015-01-29T07:00:00+01:00") == expected
    assert to_utc(date(2015, 1, 29)) == datetime(2015, 1, 29, tzinfo=UTC)
    with pytest.raises(InvalidOptionError, match="ISO-8601"):
        to_utc("yesterday")
    with pytest.raises(InvalidOptionError):
        to_utc(12)  # type: ignore[arg-type]


instants = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=300, deadline=None)
@given(when=instants, period=st.sampled_from(list(UpdatePeriod)))
def test_partition_of_an_instant_contains_it(when: datetime, period: UpdatePeriod) -> None:
    n = period.ordinal(when)
    start, end = period.start_of(n), period.start_of(n + 1)
    assert start <= when < end
    text = period.format(when)
    assert period.parse(text) == start
    assert period.parse_ordinal(text) == n
    assert period.format_ordinal(n) == text
    assert period.format_ordinal(n + 1) > text  # zero-padded: text order is time order


@pytest.mark.parametrize(
    ("period", "text", "year"),
    [
        (UpdatePeriod.DAILY, "+10000-01-01", "10000"),
        (UpdatePeriod.HOURLY, "+10000-01-01-05", "10000"),
        (UpdatePeriod.MONTHLY, "-0001-12", "-0001"),
        (UpdatePeriod.YEARLY, "0000", "0000"),
    ],
)
def test_a_partition_string_of_a_year_outside_1_to_9999_says_so(
    period: UpdatePeriod, text: str, year: str
) -> None:
    """Issue 36: Spark spells year 10000 '+10000-01-01', which was refused as 'not a daily
    partition: expected the form ...', as if the string were malformed."""
    with pytest.raises(InvalidOptionError, match=f"year {year}, outside the years 0001 to 9999"):
        period.parse(text)
    with pytest.raises(InvalidOptionError, match="expected the form"):
        period.parse("2015-1-29")
