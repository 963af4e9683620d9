"""The three timeline implementations agree with each other and with a plain set."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.timeline import (
    EndsAndHolesTimeline,
    PartitionTimeline,
    RangesTimeline,
    StoreAllTimeline,
    TimePartition,
    UpdatePeriod,
)
from qbeast_connect.timeline.timeline import IMPLEMENTATIONS, migrate_timeline, new_timeline

IMPLS: list[type[PartitionTimeline]] = [StoreAllTimeline, EndsAndHolesTimeline, RangesTimeline]
DOMAIN = 40


def _hours(*numbers: int) -> list[TimePartition]:
    base = TimePartition.parse("2015-01-29-00")
    return [base.next(n) for n in numbers]


def _state(t: PartitionTimeline) -> tuple[object, ...]:
    return (
        [str(p) for p in t.partitions()],
        t.is_empty(),
        t.latest(),
        t.first(),
        len(t),
        t.is_consistent(),
    )


def test_lens_examples() -> None:
    ends = EndsAndHolesTimeline("hourly")
    ends.add_all(_hours(1, 2, 3, 4, 9, 10))
    props = ends.to_properties()
    assert props["first"] == "2015-01-29-01" and props["latest"] == "2015-01-29-10"
    assert props["holes"] == "2015-01-29-05,2015-01-29-06,2015-01-29-07,2015-01-29-08"
    assert [str(h) for h in ends.holes] == props["holes"].split(",")

    ranges = RangesTimeline(UpdatePeriod.HOURLY)
    ranges.add_all(_hours(1, 2, 3, 5, 6, 9, 11, 15, 16))
    assert [(str(a), str(b)) for a, b in ranges.ranges] == [
        ("2015-01-29-01", "2015-01-29-04"),
        ("2015-01-29-05", "2015-01-29-07"),
        ("2015-01-29-09", "2015-01-29-10"),
        ("2015-01-29-11", "2015-01-29-12"),
        ("2015-01-29-15", "2015-01-29-17"),
    ]
    assert ranges.to_properties() == {
        "ranges": "2015-01-29-01,2015-01-29-04,2015-01-29-05,2015-01-29-07,2015-01-29-09,"
        "2015-01-29-10,2015-01-29-11,2015-01-29-12,2015-01-29-15,2015-01-29-17"
    }
    # adding 4 merges [1,4) and [5,7); dropping 2 splits [1,7)
    assert ranges.add(_hours(4)[0]) and len(ranges.ranges) == 4
    assert ranges.drop(_hours(2)[0]) and [str(a) for a, _ in ranges.ranges][:2] == [
        "2015-01-29-01",
        "2015-01-29-03",
    ]

    store = StoreAllTimeline("hourly")
    store.add_all(_hours(3, 1))
    assert store.to_properties() == {"partitions": "2015-01-29-01,2015-01-29-03"}


@pytest.mark.parametrize("impl", IMPLS, ids=[c.impl_name for c in IMPLS])
def test_interface_basics(impl: type[PartitionTimeline]) -> None:
    t = impl(UpdatePeriod.DAILY)
    assert t.is_empty() and t.isEmpty() and t.latest() is None and t.first() is None
    assert t.is_consistent() and t.isConsistent()
    day = TimePartition.parse("2015-02-10")
    assert t.add(day) and not t.add(day)
    assert t.exists(day) and day in t and TimePartition.parse("2015-02-11") not in t
    assert TimePartition.parse("2015-02-10-00") not in t  # another period: not there
    assert t.latest() == day
    assert t.drop(day) and not t.drop(day) and t.is_empty()
    with pytest.raises(InvalidOptionError, match="holds daily partitions"):
        t.add(TimePartition.parse("2015-02"))
    with pytest.raises(InvalidOptionError, match="expected a TimePartition"):
        t.exists("2015-02-10")  # type: ignore[arg-type]
    t.add(day)
    fresh = impl("daily")
    assert fresh.initFromProperties(t.toProperties())
    assert list(fresh) == [day]
    assert not impl("daily").init_from_properties({})
    assert repr(t) == f"{impl.__name__}(daily, 2015-02-10..2015-02-10, 1 partitions)"


ops = st.lists(
    st.tuples(st.sampled_from(["add", "drop"]), st.integers(min_value=0, max_value=DOMAIN)),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, period=st.sampled_from(list(UpdatePeriod)), base=st.integers(-500, 500))
def test_implementations_agree_with_a_set(
    ops: list[tuple[str, int]], period: UpdatePeriod, base: int
) -> None:
    origin = TimePartition.of(period, "2015-06-15T12:34:00Z").next(base)
    domain = [origin.next(n) for n in range(DOMAIN + 1)]
    timelines = [cls(period) for cls in IMPLS]
    model: set[TimePartition] = set()
    for op, n in ops:
        p = domain[n]
        expected = (p not in model) if op == "add" else (p in model)
        if op == "add":
            model.add(p)
        else:
            model.discard(p)
        for t in timelines:
            assert getattr(t, op)(p) is expected, (type(t).__name__, op, str(p))
            assert t.is_consistent()
    want = sorted(model)
    for t in timelines:
        assert list(t.partitions()) == want
        assert [t.exists(p) for p in domain] == [p in model for p in domain]
        assert t.latest() == (want[-1] if want else None)
        assert t.first() == (want[0] if want else None)
        assert t.is_empty() is (not want)
        assert len(t) == len(want)
        # properties round trip, into the same implementation
        again = type(t)(period)
        assert again.init_from_properties(t.to_properties())
        assert list(again.partitions()) == want and again.is_consistent()
        assert all(isinstance(v, str) for v in t.to_properties().values())
        # and migration into every other implementation
        for name in IMPLEMENTATIONS:
            moved = migrate_timeline(t, name)
            assert moved.impl_name == name and list(moved.partitions()) == want


@pytest.mark.parametrize(
    ("impl", "props"),
    [
        ("EndsAndHoles", {"first": "2015-01-05", "latest": "2015-01-01", "holes": ""}),
        ("EndsAndHoles", {"first": "2015-01-01", "latest": "2015-01-05", "holes": "2015-01-09"}),
        ("EndsAndHoles", {"first": "2015-01-01", "latest": "", "holes": ""}),
        ("EndsAndHoles", {"first": "2015-01", "latest": "2015-01-05", "holes": ""}),
        ("Ranges", {"ranges": "2015-01-01,2015-01-03,2015-01-03,2015-01-05"}),  # not merged
        ("Ranges", {"ranges": "2015-01-05,2015-01-03"}),
        ("Ranges", {"ranges": "2015-01-01"}),
        ("StoreAll", {"partitions": "2015-01-01,tomorrow"}),
    ],
)
def test_malformed_properties_are_rejected(impl: str, props: dict[str, str]) -> None:
    with pytest.raises(MetadataFormatError):
        new_timeline("daily", impl).init_from_properties(props)


def test_unknown_implementation_lists_the_names() -> None:
    with pytest.raises(InvalidOptionError, match="StoreAll, EndsAndHoles, Ranges"):
        new_timeline("daily", "BTree")
    assert type(new_timeline("daily", "ranges")) is RangesTimeline
