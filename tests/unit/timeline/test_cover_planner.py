"""The cover planner: the seed's coverage table, the right-hand fix, errors, call counts."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qbeast_connect.exceptions import UncoverableRangeError
from qbeast_connect.timeline import (
    EndsAndHolesTimeline,
    PartitionTimeline,
    TimelineOracle,
    TimePartition,
    TimeRange,
    UpdatePeriod,
    cover,
    plan_cover,
)
from qbeast_connect.timeline.cover import partitions_by_period

Y, Q, M, W, D, H, MI = (
    UpdatePeriod.YEARLY,
    UpdatePeriod.QUARTERLY,
    UpdatePeriod.MONTHLY,
    UpdatePeriod.WEEKLY,
    UpdatePeriod.DAILY,
    UpdatePeriod.HOURLY,
    UpdatePeriod.MINUTELY,
)
SEED_RANGE = TimeRange.of("2015-01-29T06:00:00Z", "2015-03-01T06:00:00Z")
# data present around the seed range, at each granularity
SPAN = TimeRange.of("2015-01-01", "2015-04-01")


def timeline(
    period: UpdatePeriod, span: TimeRange = SPAN, missing: Iterable[str] = ()
) -> PartitionTimeline:
    t = EndsAndHolesTimeline(period)
    t.add_all(span.partitions(period))
    for text in missing:
        t.drop(TimePartition.parse(text, period))
    return t


def ranges(*pairs: str) -> list[str]:
    """'a..b' (canonical strings, b exclusive) -> merged range strings."""
    out = []
    for pair in pairs:
        a, b = pair.split("..")
        out.append(str(TimeRange(TimePartition.parse(a).start, TimePartition.parse(b).start)))
    return out


def shape(parts: list[tuple[str, TimePartition]]) -> dict[str, list[str]]:
    return {p.value: [str(r) for r in rs] for p, rs in partitions_by_period(parts).items()}


# One row per line of the seed's coverage table for [2015-01-29T06, 2015-03-01T06).
SEED_TABLE = [
    pytest.param(
        {"monthly": [M], "daily": [D], "hourly": [H]},
        {},
        {
            "monthly": ranges("2015-02..2015-03"),
            "daily": ranges("2015-01-30..2015-02-01"),
            "hourly": ranges("2015-01-29-06..2015-01-30-00", "2015-03-01-00..2015-03-01-06"),
        },
        id="all-rollups-present",
    ),
    pytest.param(
        {"hourly": [H]},
        {},
        {"hourly": ranges("2015-01-29-06..2015-03-01-06")},
        id="hourly-only",
    ),
    pytest.param(
        {"monthly": [M], "hourly": [H]},
        {},
        {
            "monthly": ranges("2015-02..2015-03"),
            "hourly": ranges("2015-01-29-06..2015-02-01-00", "2015-03-01-00..2015-03-01-06"),
        },
        id="monthly-and-hourly",
    ),
    pytest.param(
        {"daily": [D], "hourly": [H]},
        {},
        {
            "daily": ranges("2015-01-30..2015-03-01"),
            "hourly": ranges("2015-01-29-06..2015-01-30-00", "2015-03-01-00..2015-03-01-06"),
        },
        id="daily-and-hourly",
    ),
    pytest.param(
        {"daily": [D], "hourly": [H]},
        {"daily": ["2015-02-10"]},
        {
            "daily": ranges("2015-01-30..2015-02-10", "2015-02-11..2015-03-01"),
            "hourly": ranges(
                "2015-01-29-06..2015-01-30-00",
                "2015-02-10-00..2015-02-11-00",
                "2015-03-01-00..2015-03-01-06",
            ),
        },
        id="one-day-missing-falls-back-to-hourly",
    ),
]


@pytest.mark.parametrize(("tables", "missing", "expected"), SEED_TABLE)
def test_seed_coverage_table(
    tables: dict[str, list[UpdatePeriod]],
    missing: dict[str, list[str]],
    expected: dict[str, list[str]],
) -> None:
    timelines = {
        name: {p: timeline(p, missing=missing.get(name, ())) for p in periods}
        for name, periods in tables.items()
    }
    parts = cover(SEED_RANGE, tables, TimelineOracle(timelines))
    assert shape(parts) == expected
    assert [p for _, p in parts] == sorted(p for _, p in parts)  # time order
    assert all(table == p.period.value for table, p in parts)  # each from its own table


def test_right_hand_remainder_is_covered() -> None:
    """The seed's pseudo-code covered the left remainder twice and never the right one."""
    parts = cover(SEED_RANGE, {"d": [D], "h": [H]}, lambda *_: True)
    assert str(parts[-1][1]) == "2015-03-01-05"
    assert parts[-1][1].end == SEED_RANGE.end


def test_uncoverable_error_names_every_uncovered_sub_range() -> None:
    timelines = {"d": {D: timeline(D, missing=["2015-02-10", "2015-02-20"])}}
    with pytest.raises(UncoverableRangeError) as info:
        cover(SEED_RANGE, {"d": [D]}, TimelineOracle(timelines), name="sales")
    message = str(info.value)
    assert message.startswith("[QBEAST_UNCOVERABLE_RANGE] fact 'sales' cannot cover")
    uncovered = [
        "[2015-01-29T06:00:00Z, 2015-01-30T00:00:00Z)",
        "[2015-02-10T00:00:00Z, 2015-02-11T00:00:00Z)",
        "[2015-02-20T00:00:00Z, 2015-02-21T00:00:00Z)",
        "[2015-03-01T00:00:00Z, 2015-03-01T06:00:00Z)",
    ]
    for text in uncovered:
        assert text in message
    assert [str(r) for r in info.value.uncovered] == uncovered
    plan = plan_cover(SEED_RANGE, {"d": [D]}, TimelineOracle(timelines))
    assert not plan.complete and len(plan.parts) == 28


def test_error_lists_ten_ranges_then_counts() -> None:
    with pytest.raises(UncoverableRangeError, match="and 5 more"):
        cover(
            TimeRange.of("2015-01-01", "2015-01-31"),
            {"d": [D]},
            lambda _t, _p, part: part.start.day % 2 == 0,
        )


def test_seed_naive_call_count_for_a_year_with_no_partitions() -> None:
    year = TimeRange.of("2015-01-01", "2016-01-01")
    plan = plan_cover(year, {"t": [Y, M, D, H, MI]}, lambda *_: False)
    assert plan.existence_checks == 1 + 12 + 365 + 365 * 24 + 365 * 24 * 60 == 534_738
    assert [str(r) for r in plan.uncovered] == [str(year)]


def test_each_table_is_asked_in_order_and_the_first_holder_serves() -> None:
    calls: list[tuple[str, str]] = []

    def exists(table: str, period: UpdatePeriod, part: TimePartition) -> bool:
        calls.append((table, str(part)))
        return table == "b"

    parts = cover(TimeRange.of("2015-01-01", "2015-01-03"), {"a": [D], "b": [D], "c": [H]}, exists)
    assert [(t, str(p)) for t, p in parts] == [("b", "2015-01-01"), ("b", "2015-01-02")]
    assert calls == [
        ("a", "2015-01-01"),
        ("b", "2015-01-01"),
        ("a", "2015-01-02"),
        ("b", "2015-01-02"),
    ]


def test_weeks_and_quarters_do_not_need_to_nest() -> None:
    rng = TimeRange.of("2015-01-01", "2015-07-01")
    tables = {"q": [Q], "w": [W], "d": [D]}
    timelines = {
        "q": {Q: timeline(Q, rng, missing=["2015-Q2"])},
        "w": {W: timeline(W, TimeRange.of("2014-12-29", "2015-08-03"))},
        "d": {D: timeline(D, rng)},
    }
    parts = cover(rng, tables, TimelineOracle(timelines))
    assert shape(parts) == {
        "daily": [
            "[2015-04-01T00:00:00Z, 2015-04-06T00:00:00Z)",
            "[2015-06-29T00:00:00Z, 2015-07-01T00:00:00Z)",
        ],
        "weekly": ["[2015-04-06T00:00:00Z, 2015-06-29T00:00:00Z)"],
        "quarterly": ["[2015-01-01T00:00:00Z, 2015-04-01T00:00:00Z)"],
    }


def test_unaligned_range_edges_are_uncoverable() -> None:
    rng = TimeRange.of("2015-01-01T00:30:00Z", "2015-01-01T03:00:00Z")
    plan = plan_cover(rng, {"h": [H]}, lambda *_: True)
    assert [str(r) for r in plan.uncovered] == ["[2015-01-01T00:30:00Z, 2015-01-01T01:00:00Z)"]
    assert cover(TimeRange.of("2015-01-01", "2015-01-01"), {"h": [H]}, lambda *_: True) == []


NESTED = [MI, H, D, M, Y]


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(0, 3 * 24 * 60),
    length=st.integers(0, 3 * 24 * 60),
    present=st.dictionaries(
        st.sampled_from(NESTED), st.frozensets(st.integers(0, 80), max_size=60), max_size=5
    ),
)
def test_cover_is_exact_and_prefers_the_coarsest(
    start: int, length: int, present: dict[UpdatePeriod, frozenset[int]]
) -> None:
    """Random holes around a month boundary: the parts tile the range exactly, each part
    exists, and no existing coarser partition inside the range contains a chosen part."""
    origin = TimePartition.parse("2015-01-30-00-00")
    rng = TimeRange(origin.next(start).start, origin.next(start + length).start)
    tables = {p.value: [p] for p in NESTED}
    have: dict[UpdatePeriod, set[TimePartition]] = {}
    for period, offsets in present.items():
        base = TimePartition.of(period, origin.start).prev(40)
        have[period] = {base.next(n) for n in offsets}
    plan = plan_cover(rng, tables, lambda _t, period, part: part in have.get(period, set()))
    parts = [p for _, p in plan.parts]
    assert all(p in have[p.period] for p in parts)
    # tiling: parts and uncovered ranges are disjoint and their union is the range
    pieces = sorted([(p.start, p.end) for p in parts] + [(r.start, r.end) for r in plan.uncovered])
    cursor = rng.start
    for a, b in pieces:
        assert a == cursor
        cursor = b
    assert cursor == rng.end
    for p in parts:
        for coarser in (q for q in NESTED if q > p.period):
            container = TimePartition.of(coarser, p.start)
            inside = rng.start <= container.start and container.end <= rng.end
            assert not (inside and container in have.get(coarser, set())), (p, container)
