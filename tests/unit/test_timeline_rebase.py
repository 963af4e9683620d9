"""Concurrent appends that add time partitions rebase over each other (issue #20).

An append to a time-partitioned qbeast table that adds a partition commits the grown
partition timeline in its ``metaData``. Two such appends from one read version used to
conflict (MetadataChanged); now the loser takes the winner's timeline and adds its own
partitions to it. A winner that removed a partition from the timeline (``drop_partition``,
an overwrite), changed a timeline's implementation or the partition spec still conflicts.
Pure metaData pairs and the driver-side committer on a local table; no Spark.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from qbeast_connect.exceptions import CommitConflictError
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.transformation import ColumnStats
from qbeast_connect.rules.time_partitioning import PARTITIONING_KEY, TimePartitioning
from qbeast_connect.timeline.partition import TimePartition
from qbeast_connect.timeline.timeline import (
    new_timeline,
    present_key,
    read_timelines,
    write_timelines,
)
from qbeast_connect.timeline.update_period import UpdatePeriod
from server_plugin.delta.actions import Action, AddFile, FrozenMap, Metadata
from server_plugin.delta.committer import commit, create_table_actions
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage
from server_plugin.revision_rebase import metadata_commutes, rebase_revisions

PCOL = "event_time_partition"
DAILY = UpdatePeriod.DAILY
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "x", "type": "double", "nullable": True, "metadata": {}},
            {"name": PCOL, "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
WHO = "version 7 (WRITE)"
BASE_DAYS = ("2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04")


def _revision(rid: int, lo: float) -> str:
    planned = plan_revision(
        None,
        (ColumnSpec("x"),),
        {"x": "double"},
        {"x": ColumnStats(min=lo, max=lo + 10.0)},
        {},
        None,
        "/t",
        1_700_000_000_000,
        random.Random(rid),
    )
    return dataclasses.replace(planned.revision, revision_id=rid).to_json()


REVISION_1 = _revision(1, 0.0)


def _config(
    days: Iterable[str],
    impl: str = "EndsAndHoles",
    *,
    partitioning: str = "event_time:daily",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    time_column, period = partitioning.split(":")
    start = {
        "qbeast.revision.1": REVISION_1,
        "qbeast.lastRevisionID": "1",
        "columnsToIndex": "x",
        PARTITIONING_KEY: json.dumps(
            TimePartitioning.of(time_column, period).to_json_value(), sort_keys=True
        ),
        **(extra or {}),
    }
    timeline = new_timeline(DAILY, impl)
    for day in days:
        timeline.add(TimePartition.parse(day, DAILY))
    return write_timelines(start, PCOL, {DAILY: timeline})


def _meta(config: Mapping[str, str], **changes: object) -> Metadata:
    meta = Metadata(
        id="table-1", schema_string=SCHEMA, partition_columns=(PCOL,), configuration=config
    )
    return dataclasses.replace(meta, **changes)  # type: ignore[arg-type]


def _add(day: str, name: str = "f") -> AddFile:
    return AddFile(
        path=f"{PCOL}={day}/{name}.parquet",
        partition_values={PCOL: day},
        size=10,
        modification_time=0,
        data_change=True,
        tags={"revision": "1"},
    )


def _days(config: Mapping[str, str]) -> list[str]:
    return [str(p) for p in read_timelines(config, PCOL)[DAILY]]


def _append(days: Iterable[str], *added: str) -> list[Action]:
    """An append that adds files to ``added`` days (a metaData when one is new)."""
    actions: list[Action] = []
    if not set(added) <= set(days):
        actions.append(_meta(_config([*days, *added])))
    actions.extend(_add(day, f"f{i}") for i, day in enumerate(added))
    return actions


@pytest.mark.parametrize("impl", ["EndsAndHoles", "Ranges", "StoreAll"])
def test_appends_adding_different_days_both_commit_with_the_union_timeline(impl: str) -> None:
    before = _meta(_config(BASE_DAYS, impl))
    winner = _meta(_config([*BASE_DAYS, "2024-01-05"], impl))
    ours_meta = _meta(_config([*BASE_DAYS, "2024-01-08"], impl))
    ours: list[Action] = [ours_meta, _add("2024-01-08")]
    assert metadata_commutes(before, ours_meta)

    rebased = rebase_revisions(ours, before, winner, WHO)
    (meta,) = [a for a in rebased if isinstance(a, Metadata)]
    assert _days(meta.configuration) == [*BASE_DAYS, "2024-01-05", "2024-01-08"]
    assert meta.configuration[f"qbeast.timeline.{PCOL}.daily.impl"] == impl
    assert meta.configuration[present_key(PCOL)] == "true"
    timeline_free = {k: v for k, v in meta.configuration.items() if ".timeline." not in k}
    assert timeline_free == {k: v for k, v in winner.configuration.items() if ".timeline." not in k}
    assert [a for a in rebased if isinstance(a, AddFile)] == [_add("2024-01-08")]


def test_union_never_loses_the_winners_days() -> None:
    # the winner filled a hole and extended both ends; ours added a day inside its range
    before = _meta(_config(["2024-01-03", "2024-01-05"]))
    winner = _meta(_config(["2024-01-01", "2024-01-03", "2024-01-04", "2024-01-05", "2024-01-09"]))
    ours = _append(["2024-01-03", "2024-01-05"], "2024-01-07", "2024-01-03")
    rebased = rebase_revisions(ours, before, winner, WHO)
    (meta,) = [a for a in rebased if isinstance(a, Metadata)]
    assert _days(meta.configuration) == [
        "2024-01-01",
        "2024-01-03",
        "2024-01-04",
        "2024-01-05",
        "2024-01-07",
        "2024-01-09",
    ]
    # the same new day on both sides: the winner's timeline as it is
    same = rebase_revisions(
        _append(BASE_DAYS, "2024-01-05"),
        _meta(_config(BASE_DAYS)),
        _meta(_config([*BASE_DAYS, "2024-01-05"])),
        WHO,
    )
    (meta,) = [a for a in same if isinstance(a, Metadata)]
    assert dict(meta.configuration) == _config([*BASE_DAYS, "2024-01-05"])


def test_append_to_an_existing_day_commutes_with_a_winner_adding_a_day() -> None:
    before = _meta(_config(BASE_DAYS))
    winner = _meta(_config([*BASE_DAYS, "2024-01-05"]))
    ours = _append(BASE_DAYS, "2024-01-02")  # no metaData: the day is in the timeline
    assert rebase_revisions(ours, before, winner, WHO) == ours


def test_new_revision_and_new_day_rebase_together() -> None:
    before = _meta(_config(BASE_DAYS))
    revision_2 = {"qbeast.revision.2": _revision(2, 100.0), "qbeast.lastRevisionID": "2"}
    winner = _meta(_config([*BASE_DAYS, "2024-01-05"], extra=revision_2))
    ours_revision = {"qbeast.revision.2": _revision(2, -100.0), "qbeast.lastRevisionID": "2"}
    ours_add = dataclasses.replace(_add("2024-01-06"), tags=FrozenMap({"revision": "2"}))
    ours: list[Action] = [_meta(_config([*BASE_DAYS, "2024-01-06"], extra=ours_revision)), ours_add]
    rebased = rebase_revisions(ours, before, winner, WHO)
    (meta,) = [a for a in rebased if isinstance(a, Metadata)]
    config = meta.configuration
    assert config["qbeast.lastRevisionID"] == "3"
    assert config["qbeast.revision.2"] == winner.configuration["qbeast.revision.2"]
    assert Revision.from_json(config["qbeast.revision.3"]).revision_id == 3
    assert _days(config) == [*BASE_DAYS, "2024-01-05", "2024-01-06"]
    (add,) = [a for a in rebased if isinstance(a, AddFile)]
    assert add.tags == {"revision": "3"}


@pytest.mark.parametrize(
    "ours_days",
    [(), ("2024-01-02",), ("2024-01-05",)],
    ids=["append-into-dropped-day-no-metadata", "re-adding-dropped-day", "adding-another-day"],
)
def test_append_after_a_concurrent_drop_partition_still_conflicts(
    ours_days: tuple[str, ...],
) -> None:
    before = _meta(_config(BASE_DAYS))
    dropped = _meta(_config(["2024-01-01", "2024-01-03", "2024-01-04"]))  # drop_partition
    ours = _append(BASE_DAYS, "2024-01-02", *ours_days)
    with pytest.raises(CommitConflictError, match=r"version 7 \(WRITE\).*time partitions"):
        rebase_revisions(ours, before, dropped, WHO)


@pytest.mark.parametrize(
    "winner",
    [
        _meta(_config(["2024-01-05"])),  # an overwrite: the old days are gone
        _meta(_config([*BASE_DAYS, "2024-01-05"], "Ranges")),  # implementation changed
        _meta({**_config([*BASE_DAYS, "2024-01-05"]), present_key(PCOL): "false"}),
        _meta(_config([*BASE_DAYS, "2024-01-05"], partitioning="event_time:hourly")),
        _meta(_config([*BASE_DAYS, "2024-01-05"]), partition_columns=("other",)),
        _meta(_config([*BASE_DAYS, "2024-01-05"]), schema_string=SCHEMA + " "),
    ],
    ids=["overwrite", "impl", "present-flag", "partition-spec", "partition-columns", "schema"],
)
def test_winner_changing_more_than_adding_days_still_conflicts(winner: Metadata) -> None:
    before = _meta(_config(BASE_DAYS))
    with pytest.raises(CommitConflictError, match=r"version 7 \(WRITE\)"):
        rebase_revisions(_append(BASE_DAYS, "2024-01-06"), before, winner, WHO)


def test_transaction_dropping_days_does_not_commute() -> None:
    before = _meta(_config(BASE_DAYS))
    assert not metadata_commutes(before, _meta(_config(BASE_DAYS[1:])))
    assert not metadata_commutes(before, _meta(_config(BASE_DAYS, "Ranges")))
    assert metadata_commutes(before, _meta(_config([*BASE_DAYS, "2024-02-01"])))


def _commit(path: str, actions: list[Action], read_version: int, commutes: bool) -> int:
    return commit(
        LocalStorage(path),
        actions,
        TransactionReadSet(
            read_version=read_version, changes_metadata=commutes, metadata_commutes=commutes
        ),
        operation="WRITE",
        operation_parameters={"mode": "Append"},
        verify_files=False,
        rebase=rebase_revisions,
    )


def test_committer_lands_both_appends_of_new_days_from_one_read_version(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    storage = LocalStorage(path)
    created = create_table_actions(SCHEMA, _config(BASE_DAYS), partition_columns=[PCOL])
    assert (
        commit(
            storage,
            [*created, *(_add(d, f"base{i}") for i, d in enumerate(BASE_DAYS))],
            TransactionReadSet(read_version=-1),
            operation="WRITE",
            operation_parameters={},
            verify_files=False,
        )
        == 0
    )
    table_id = read_snapshot(storage).metadata.id

    def append(day: str) -> list[Action]:
        actions = _append(BASE_DAYS, day)
        return [
            dataclasses.replace(a, id=table_id) if isinstance(a, Metadata) else a for a in actions
        ]

    assert _commit(path, append("2024-01-05"), 0, True) == 1
    assert _commit(path, append("2024-01-07"), 0, True) == 2  # lost version 1, rebased
    assert _commit(path, _append(BASE_DAYS, "2024-01-03"), 0, False) == 3  # no metaData
    snap = read_snapshot(storage)
    assert _days(snap.metadata.configuration) == [*BASE_DAYS, "2024-01-05", "2024-01-07"]
    assert {a.partition_values[PCOL] for a in snap.files.values()} == {
        *BASE_DAYS,
        "2024-01-05",
        "2024-01-07",
    }
    assert len(snap.files) == 7

    # drop_partition of 2024-01-05 wins; an append into that day read before it conflicts
    dropped = dataclasses.replace(
        snap.metadata, configuration=FrozenMap(_config([*BASE_DAYS, "2024-01-07"]))
    )
    doomed = snap.files[f"{PCOL}=2024-01-05/f0.parquet"]
    assert (
        commit(
            storage,
            [dropped, doomed.to_remove(0)],
            TransactionReadSet(read_version=3, read_whole_table=True),
            operation="DELETE",
            operation_parameters={},
            verify_files=False,
        )
        == 4
    )
    late: list[Action] = [_add("2024-01-05", "late")]
    with pytest.raises(CommitConflictError, match=r"version 4 \(DELETE\)"):
        _commit(path, late, 3, False)
    assert read_snapshot(storage).version == 4
