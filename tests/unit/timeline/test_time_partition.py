"""Time partitions and half-open ranges."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.timeline import TimePartition, TimeRange, UpdatePeriod
from qbeast_connect.timeline.partition import merge_ranges


def test_parse_detects_the_period_and_round_trips() -> None:
    for period in UpdatePeriod:
        p = TimePartition.parse(period.example)
        assert p.period is period
        assert str(p) == period.example
        assert TimePartition.parse(period.example, period) == p
        assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(InvalidOptionError, match="not a time partition string"):
        TimePartition.parse("2015/01/29")
    with pytest.raises(InvalidOptionError, match="daily"):
        TimePartition.parse("2015-01", "daily")


def test_of_next_prev_and_range() -> None:
    p = TimePartition.of("hourly", "2015-01-31T23:59:59Z")
    assert str(p) == "2015-01-31-23"
    assert str(p.next()) == "2015-02-01-00"
    assert str(p.prev(24)) == "2015-01-30-23"
    assert p.range == TimeRange.of("2015-01-31T23:00:00Z", "2015-02-01T00:00:00Z")
    assert p.end == datetime(2015, 2, 1, tzinfo=UTC)
    assert str(TimePartition.parse("2015-12").next()) == "2016-01"
    assert str(TimePartition.parse("2015-Q4").next()) == "2016-Q1"
    assert str(TimePartition.parse("2015-W53").next()) == "2016-W01"
    assert repr(p) == "TimePartition(hourly, '2015-01-31-23')"


def test_start_must_be_a_boundary() -> None:
    with pytest.raises(InvalidOptionError, match="not the start of a daily partition"):
        TimePartition(UpdatePeriod.DAILY, datetime(2015, 1, 29, 6, tzinfo=UTC))
    naive = TimePartition(UpdatePeriod.DAILY, datetime(2015, 1, 29))
    assert naive.start.tzinfo is UTC


def test_ordering_and_hashing() -> None:
    a = TimePartition.parse("2015-01-29-06")
    b = TimePartition.parse("2015-01-29-07")
    day = TimePartition.parse("2015-01-29")
    hour0 = TimePartition.parse("2015-01-29-00")
    assert a < b and b > a and a <= a and b >= a
    assert hour0 < day < a  # same start: the shorter period first
    assert sorted([b, day, a, hour0]) == [hour0, day, a, b]
    assert len({a, TimePartition.parse("2015-01-29-06"), b}) == 2
    assert TimePartition.from_ordinal(UpdatePeriod.HOURLY, a.ordinal) == a
    assert hash(TimePartition.from_ordinal(UpdatePeriod.HOURLY, a.ordinal)) == hash(a)


def test_range_alignment_and_partitions() -> None:
    r = TimeRange.of("2015-01-29T06:00:00Z", "2015-03-01T06:00:00Z")
    assert str(r) == "[2015-01-29T06:00:00Z, 2015-03-01T06:00:00Z)"
    assert r.aligned(UpdatePeriod.MONTHLY) == TimeRange.of("2015-02-01", "2015-03-01")
    assert r.aligned(UpdatePeriod.DAILY) == TimeRange.of("2015-01-30", "2015-03-01")
    assert r.aligned(UpdatePeriod.YEARLY) is None
    assert [str(p) for p in r.partitions(UpdatePeriod.MONTHLY)] == ["2015-02"]
    assert len(list(r.partitions(UpdatePeriod.HOURLY))) == 31 * 24
    assert r.aligned(UpdatePeriod.WEEKLY) == TimeRange.of("2015-02-02", "2015-02-23")
    assert r.contains(r.start) and not r.contains(r.end)
    assert r.duration == timedelta(days=31)
    # a 40-day range holding no whole month
    assert TimeRange.of("2015-01-15", "2015-02-24").aligned(UpdatePeriod.MONTHLY) is None
    empty = TimeRange.of("2015-01-01", "2015-01-01")
    assert empty.is_empty and empty.aligned(UpdatePeriod.MINUTELY) is None
    with pytest.raises(InvalidOptionError, match="start <= end"):
        TimeRange.of("2015-01-02", "2015-01-01")


def test_merge_ranges() -> None:
    a = TimeRange.of("2015-01-01", "2015-01-02")
    b = TimeRange.of("2015-01-02", "2015-01-03")
    c = TimeRange.of("2015-01-05", "2015-01-06")
    d = TimeRange.of("2015-01-05T12:00", "2015-01-05T13:00")
    e = TimeRange.of("2015-01-09", "2015-01-09")
    assert merge_ranges([c, b, e, a, d]) == [TimeRange.of("2015-01-01", "2015-01-03"), c]
