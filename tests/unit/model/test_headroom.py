"""Headroom of a revision grown by an append (qbeast_connect.model.headroom, issue 20)."""

from __future__ import annotations

import random

from qbeast_connect.model.column_spec import parse_columns_to_index
from qbeast_connect.model.headroom import with_headroom
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.transformation import (
    ColumnStats,
    HashTransformation,
    IdentityTransformation,
    LinearTransformation,
    QDataType,
)

HOUR = 3_600_000
DAY = 86_400_000
SPECS = parse_columns_to_index("event_time,user_id")
TYPES = {"event_time": "timestamp", "user_id": "integer"}


def _rng() -> random.Random:
    return random.Random(7)


def _hour(h: int) -> dict[str, ColumnStats]:
    """Statistics of one hour of events: times inside hour ``h``, users 0..99,999."""
    return {
        "event_time": ColumnStats(h * HOUR, h * HOUR + HOUR - 1000),
        "user_id": ColumnStats(0, 99_999),
    }


def _append(latest: Revision | None, stats: dict[str, ColumnStats], **kw: object) -> Revision:
    user = kw.get("user_stats", {})
    plan = plan_revision(latest, SPECS, TYPES, stats, user, 2000, "/t", 1, _rng())  # type: ignore[arg-type]
    return plan.revision


def _bounds(revision: Revision, i: int) -> tuple[object, object]:
    t = revision.transformations[i]
    assert isinstance(t, LinearTransformation)
    return t.min_number, t.max_number


def test_hourly_appends_open_logarithmic_revisions() -> None:
    """100 time-ordered hourly appends open 7 revisions (the reference opens 100): each new
    revision doubles the time span it covers."""
    latest = _append(None, _hour(0))
    opened = [latest.revision_id]
    for h in range(1, 100):
        latest = _append(latest, _hour(h))
        if latest.revision_id != opened[-1]:
            opened.append(latest.revision_id)
    assert opened == list(range(1, 8))
    # opened by the appends of hours 1, 3, 7, 15, 31 and 63, each just past twice the
    # span of the last
    assert _bounds(latest, 0) == (0, 2 * (64 * HOUR - 1000))
    assert _bounds(latest, 1) == (0, 99_999)  # user_id never grew: no headroom


def test_growth_upward_doubles_the_union_span_above() -> None:
    first = _append(None, _hour(0))
    grown = _append(first, _hour(1))
    union_min, union_max = 0, 2 * HOUR - 1000
    assert _bounds(grown, 0) == (union_min, union_min + 2 * (union_max - union_min))
    assert grown.revision_id == 2


def test_growth_downward_is_symmetric() -> None:
    first = _append(None, _hour(10))
    grown = _append(first, _hour(9))
    union_min, union_max = 9 * HOUR, 11 * HOUR - 1000
    assert _bounds(grown, 0) == (union_max - 2 * (union_max - union_min), union_max)


def test_growth_both_ways_extends_both_sides() -> None:
    old = LinearTransformation(10, 20, 15, QDataType.INTEGER)
    new = LinearTransformation(0, 40, 5, QDataType.INTEGER)
    grown = with_headroom(old, old.merge(new, _rng()), _rng())
    assert isinstance(grown, LinearTransformation)
    assert (grown.min_number, grown.max_number) == (-40, 80)


def test_column_stats_bounds_get_no_headroom() -> None:
    first = _append(None, _hour(0))
    user = {"event_time": ColumnStats(0, 10 * HOUR)}
    grown = _append(first, _hour(1), user_stats=user)
    assert _bounds(grown, 0) == (0, 10 * HOUR)


def test_appends_inside_the_headroom_keep_the_revision() -> None:
    first = _append(None, _hour(0))
    grown = _append(first, _hour(1))
    assert _bounds(grown, 0) == (0, 4 * HOUR - 2000)
    assert _append(grown, _hour(2)) is grown
    assert _append(grown, _hour(3)).revision_id == 3  # its last second is past the headroom


def test_bounds_stop_at_the_type_limits() -> None:
    top = 2**31 - 1
    old = LinearTransformation(0, 2**30, 1, QDataType.INTEGER)
    merged = old.merge(LinearTransformation(0, 2**30 + 5, 1, QDataType.INTEGER), _rng())
    grown = with_headroom(old, merged, _rng())
    assert isinstance(grown, LinearTransformation) and grown.max_number == top
    fold = LinearTransformation(0.0, 1e38, 1.0, QDataType.FLOAT)
    fgrown = with_headroom(
        fold, fold.merge(LinearTransformation(0.0, 3e38, 1.0, QDataType.FLOAT), _rng()), _rng()
    )
    assert isinstance(fgrown, LinearTransformation)
    assert fgrown.max_number == float(
        LinearTransformation(0.0, 3.4028234663852886e38, 1.0, QDataType.FLOAT).max_number
    )


def test_dates_stay_whole_days() -> None:
    old = LinearTransformation(0, 10 * DAY, DAY, QDataType.DATE)
    merged = old.merge(LinearTransformation(5 * DAY, 13 * DAY, DAY, QDataType.DATE), _rng())
    grown = with_headroom(old, merged, _rng())
    assert isinstance(grown, LinearTransformation)
    assert (grown.min_number, grown.max_number) == (0, 26 * DAY)
    assert grown.null_value % DAY == 0 or isinstance(grown.null_value, int)


def test_identity_and_other_families() -> None:
    ident = IdentityTransformation(5, QDataType.INTEGER)
    merged = ident.merge(LinearTransformation(5, 9, 6, QDataType.INTEGER), _rng())
    grown = with_headroom(ident, merged, _rng())
    assert isinstance(grown, LinearTransformation)
    assert (grown.min_number, grown.max_number) == (5, 13)  # grew upward only
    # an all-null identity has no side to grow from; hashes are not linear
    empty = IdentityTransformation(None, QDataType.INTEGER)
    assert with_headroom(empty, merged, _rng()) is merged
    hashed = HashTransformation(12)
    assert with_headroom(hashed, hashed, _rng()) is hashed


def test_a_steady_column_finding_a_new_extreme_grows_to_the_union_only() -> None:
    """Hourly events whose user ids keep one range: an append holding a user id a little
    past the extremes seen widens that column to the union, not to twice its span (which
    left a 1% user_id filter reading 1.58x the one-write table's bytes, issue #35); the
    drifting time column keeps its headroom."""
    first = _append(None, {**_hour(0), "user_id": ColumnStats(12, 99_990)})
    pokes_out = {**_hour(1), "user_id": ColumnStats(3, 99_998)}
    grown = _append(first, pokes_out)
    assert grown.revision_id == 2
    assert _bounds(grown, 1) == (3, 99_998)
    assert _bounds(grown, 0) == (0, 2 * (2 * HOUR - 1000))


def test_a_column_that_moves_keeps_its_headroom() -> None:
    first = _append(None, {**_hour(0), "user_id": ColumnStats(0, 1000)})
    # half the data lies past the old space: a drift, not a new extreme
    moved = _append(first, {**_hour(0), "user_id": ColumnStats(500, 1500)})
    assert _bounds(moved, 1) == (0, 3000)
    # a much wider range around the old one: both sides drift
    wider = _append(first, {**_hour(0), "user_id": ColumnStats(-500, 1500)})
    assert _bounds(wider, 1) == (-2500, 3500)
