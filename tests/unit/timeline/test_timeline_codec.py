"""Timelines in a Delta configuration: keys, present flag, rebuild, migration."""

from __future__ import annotations

import pytest

from qbeast_connect.exceptions import MetadataFormatError
from qbeast_connect.timeline import (
    EndsAndHolesTimeline,
    RangesTimeline,
    StoreAllTimeline,
    TimePartition,
    UpdatePeriod,
)
from qbeast_connect.timeline.timeline import (
    build_timelines,
    column_timelines,
    configured_impl,
    impl_key,
    present_key,
    read_timelines,
    table_timelines,
    timelines_present,
    write_timelines,
)

H, D = UpdatePeriod.HOURLY, UpdatePeriod.DAILY


def _days(*texts: str) -> list[TimePartition]:
    return [TimePartition.parse(t) for t in texts]


def test_key_scheme() -> None:
    assert impl_key("dt", H) == "qbeast.timeline.dt.hourly.impl"
    assert present_key("dt") == "qbeast.timeline.dt.present"
    # dots and percent signs in column names are escaped so keys stay unambiguous
    assert impl_key("a.b%c", D) == "qbeast.timeline.a%2Eb%25c.daily.impl"


def test_write_then_read_round_trip_keeps_other_keys() -> None:
    daily = EndsAndHolesTimeline(D)
    daily.add_all(_days("2015-01-01", "2015-01-02", "2015-01-04"))
    hourly = RangesTimeline(H)
    hourly.add_all(_days("2015-01-03-00", "2015-01-03-01"))
    config = write_timelines({"delta.appendOnly": "false"}, "dt", {D: daily, H: hourly})
    assert config == {
        "delta.appendOnly": "false",
        "qbeast.timeline.dt.present": "true",
        "qbeast.timeline.dt.daily.impl": "EndsAndHoles",
        "qbeast.timeline.dt.daily.first": "2015-01-01",
        "qbeast.timeline.dt.daily.latest": "2015-01-04",
        "qbeast.timeline.dt.daily.holes": "2015-01-03",
        "qbeast.timeline.dt.hourly.impl": "Ranges",
        "qbeast.timeline.dt.hourly.ranges": "2015-01-03-00,2015-01-03-02",
    }
    assert timelines_present(config, "dt") and not timelines_present(config, "other")
    back = read_timelines(config, "dt")
    assert set(back) == {D, H}
    assert type(back[D]) is EndsAndHolesTimeline and type(back[H]) is RangesTimeline
    assert list(back[D]) == list(daily) and list(back[H]) == list(hourly)


def test_migration_removes_stale_keys() -> None:
    daily = EndsAndHolesTimeline(D)
    daily.add_all(_days("2015-01-01", "2015-01-03"))
    config = write_timelines({}, "dt", {D: daily})
    store = StoreAllTimeline(D)
    store.add_all(daily)
    migrated = write_timelines(config, "dt", {D: store})
    assert migrated == {
        "qbeast.timeline.dt.present": "true",
        "qbeast.timeline.dt.daily.impl": "StoreAll",
        "qbeast.timeline.dt.daily.partitions": "2015-01-01,2015-01-03",
    }


def test_impl_key_changed_by_hand_converts_the_stored_state() -> None:
    """LENS-489: a single timeline migrates without listing the table's files."""
    daily = EndsAndHolesTimeline(D)
    daily.add_all(_days("2015-01-01", "2015-01-03"))
    config = write_timelines({}, "dt", {D: daily})
    config[impl_key("dt", D)] = "Ranges"
    back = read_timelines(config, "dt")[D]
    assert type(back) is RangesTimeline and list(back) == list(daily)
    assert configured_impl(config, "dt", D) == "Ranges"
    config[impl_key("dt", D)] = "StoreAll"
    config["qbeast.timeline.dt.daily.first"] = "junk"
    with pytest.raises(MetadataFormatError):
        read_timelines(config, "dt")


def test_build_from_file_values_splits_periods_and_uses_configured_impls() -> None:
    values = ["2015-01-01", "2015-01-01", "2015-01-03", "2015-01-02-05", None, "2015-02"]
    config = {impl_key("dt", H): "StoreAll", impl_key("dt", UpdatePeriod.YEARLY): "Ranges"}
    built = build_timelines(values, config, "dt")
    assert set(built) == {D, H, UpdatePeriod.MONTHLY, UpdatePeriod.YEARLY}
    assert type(built[H]) is StoreAllTimeline
    assert type(built[D]) is EndsAndHolesTimeline
    assert built[UpdatePeriod.YEARLY].is_empty()  # configured, no files yet
    assert [str(p) for p in built[D]] == ["2015-01-01", "2015-01-03"]
    with pytest.raises(MetadataFormatError, match="'Spain'"):
        build_timelines(["2015-01-01", "Spain"], {}, "dt")


def test_column_timelines_prefers_stored_and_rebuilds_without_the_flag() -> None:
    stored = EndsAndHolesTimeline(D)
    stored.add(TimePartition.parse("2015-01-01"))
    config = write_timelines({}, "dt", {D: stored})
    files = ["2015-01-01", "2015-01-02"]  # disagrees on purpose: the flag says trust config
    assert [str(p) for p in column_timelines(config, "dt", files)[D]] == ["2015-01-01"]  # type: ignore[index]
    config[present_key("dt")] = "false"
    rebuilt = column_timelines(config, "dt", files)
    assert rebuilt is not None and [str(p) for p in rebuilt[D]] == files
    del config[present_key("dt")]
    assert column_timelines(config, "dt", files) is not None
    # corrupt stored state: the files are the truth
    config[present_key("dt")] = "true"
    config["qbeast.timeline.dt.daily.latest"] = "garbage"
    rebuilt = column_timelines(config, "dt", files)
    assert rebuilt is not None and [str(p) for p in rebuilt[D]] == files


def test_table_timelines_skip_non_time_columns() -> None:
    rows = [
        {"country": "ES", "dt": "2015-01-01"},
        {"country": "FR", "dt": "2015-01-02-03"},
    ]
    found = table_timelines({}, ["country", "dt"], rows)
    assert set(found) == {("dt", D), ("dt", H)}
