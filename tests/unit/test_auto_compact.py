"""The automatic compaction policy (qbeast_connect.rules.auto_compact): its options, which
files are small, when a compaction is due, and which revisions the latest one covers."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from qbeast_connect.exceptions import InvalidOptionError, QbeastError
from qbeast_connect.model.block import Block, IndexFile
from qbeast_connect.model.column_spec import parse_columns_to_index
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.model.transformation import ColumnStats
from qbeast_connect.options import parse_write_options
from qbeast_connect.rules.auto_compact import (
    MIN_FILE_SIZE_DEFAULT,
    MIN_NUM_FILES_DEFAULT,
    AutoCompactSettings,
    Run,
    covers,
    eligible_runs,
    files_to_compact,
    run_file_name,
    run_id_of,
    run_key,
    runs_to_merge,
    settings_of,
    stats_inside_space,
    stored_configuration,
    tier_of,
)

SPECS = parse_columns_to_index("t,user")
TYPES = {"t": "long", "user": "long"}
ON = AutoCompactSettings(enabled=True, min_file_size=1000, min_num_files=3)


def _revisions() -> list[Revision]:
    """Revisions 1..3: ``t`` grows past the space twice (headroom unions the spaces)."""
    rng = random.Random(5)
    stats = {"t": ColumnStats(0, 100), "user": ColumnStats(0, 10)}
    out = [plan_revision(None, SPECS, TYPES, stats, {}, 50, "/t", 1, rng).revision]
    for high in (150, 1000):
        stats = {"t": ColumnStats(0, high), "user": ColumnStats(0, 10)}
        plan = plan_revision(out[-1], SPECS, TYPES, stats, {}, None, "/t", 2, rng)
        assert plan.is_new
        out.append(plan.revision)
    return out


def _file(name: str, revision: int, size: int, cubes: tuple[str, ...] = ("",)) -> IndexFile:
    blocks = [Block(c, -100, 2**31 - 1, 10) for c in cubes]
    return IndexFile(name, size, 0, revision, tuple(blocks), 10)


def _snapshot(files: list[IndexFile], revisions: list[Revision] | None = None) -> QbeastSnapshot:
    revisions = revisions or _revisions()
    config = {f"qbeast.revision.{r.revision_id}": r.to_json() for r in revisions}
    config["qbeast.lastRevisionID"] = str(revisions[-1].revision_id)
    return QbeastSnapshot(config, tuple(files), 7)


def test_options_become_table_properties_and_settings() -> None:
    opts = parse_write_options(
        {"AUTOCOMPACT": True, "autoCompactMinFileSize": "2048", "autoCompactMinNumFiles": 6}
    )
    assert opts.table_properties == {
        "qbeast.autoCompact": "true",
        "qbeast.autoCompact.minFileSize": "2048",
        "qbeast.autoCompact.minNumFiles": "6",
    }
    assert settings_of(opts.table_properties) == AutoCompactSettings(True, 2048, 6)
    # off unless asked for, with the documented defaults
    assert settings_of({}) == AutoCompactSettings(
        False, MIN_FILE_SIZE_DEFAULT, MIN_NUM_FILES_DEFAULT
    )
    assert settings_of({"qbeast.autoCompact": "false"}).enabled is False


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"autoCompact": "sometimes"}, "autoCompact must be true or false"),
        ({"autoCompact": 1}, "autoCompact must be true or false"),
        ({"autoCompactMinFileSize": "32MB"}, "autoCompactMinFileSize must be a positive"),
        ({"autoCompactMinFileSize": 0}, "autoCompactMinFileSize must be a positive"),
        ({"autoCompactMinNumFiles": -2}, "autoCompactMinNumFiles must be a positive"),
        ({"autoCompactMinNumFiles": True}, "autoCompactMinNumFiles must be a positive"),
    ],
)
def test_bad_auto_compact_options_raise_invalid_option_naming_the_fix(
    options: dict[str, object], named: str
) -> None:
    with pytest.raises(InvalidOptionError, match=named) as info:
        parse_write_options(options)
    assert isinstance(info.value, QbeastError)
    assert "e.g." in str(info.value) or "'true'" in str(info.value)


def test_the_latest_revision_covers_the_revisions_headroom_grew_from() -> None:
    revs = _revisions()
    assert covers(revs[2], revs[0]) and covers(revs[2], revs[1]) and covers(revs[2], revs[2])
    # an older revision does not cover a wider one
    assert not covers(revs[0], revs[2])
    # other columns are never covered
    other = plan_revision(
        None,
        parse_columns_to_index("t,user:hashing"),
        {"t": "long", "user": "long"},
        {"t": ColumnStats(0, 1)},
        {},
        50,
        "/t",
        1,
        random.Random(1),
    ).revision
    assert not covers(revs[2], other)


def test_tiers_are_floor_log_fanout_of_the_bytes() -> None:
    assert [tier_of(n, 4) for n in (0, 3, 4, 15, 16, 63, 64, 1023, 1024)] == [
        0,
        0,
        1,
        1,
        2,
        2,
        3,
        4,
        5,
    ]
    # a fan-out below 2 would never move a run up: it counts as 2
    assert tier_of(8, 1) == tier_of(8, 2) == 3


def test_a_writes_files_are_one_run_and_another_file_a_run_of_its_own() -> None:
    assert run_id_of("3f2c1a9e-1111-4222-8333-123456789abc") == "3f2c1a9e1111"
    assert run_id_of("") is None and run_id_of("abc-def") is None
    name = run_file_name("ab12", "u-1")
    assert name == "run-ab12-u-1.parquet"
    assert run_key(name) == run_key("run-ab12-other.parquet") == "run-ab12"
    assert run_key("t_partition=2024-01-01/run-ab12-x.parquet") == "t_partition=2024-01-01/run-ab12"
    assert run_key("0a1b-uuid.parquet") == "0a1b-uuid.parquet"
    assert run_key("run-.parquet") == "run-.parquet"  # no run id: a file of its own


def _runs(*sizes: int) -> list[Run]:
    return [Run(f"r{i}", (f"r{i}",), size) for i, size in enumerate(sizes)]


def test_the_lowest_full_tier_merges_and_cascades_into_the_tier_it_completes() -> None:
    # tiers at k=4: 5 -> 1; 20 -> 2 (16..63); 70 -> 3 (64..255); 300 -> 4
    runs = _runs(5, 20, 20, 20, 70, 70, 70, 300)
    assert runs_to_merge(runs, 4) == ()  # no tier holds 4 runs
    runs.append(Run("new", ("new",), 20))
    chosen = runs_to_merge(runs, 4)
    # the four 20s make 80 (tier 3), the fourth run of tier 3: those three join; 290 is
    # tier 4, which holds one run, so the cascade stops; the 5 and the 300 stay
    assert [r.key for r in chosen] == ["r1", "r2", "r3", "new", "r4", "r5", "r6"]
    assert runs_to_merge(_runs(20, 20, 20, 20, 70, 70), 4) == tuple(_runs(20, 20, 20, 20))
    # the lowest full tier goes first
    assert [r.size for r in runs_to_merge(_runs(70, 70, 70, 70, 2, 2, 2, 2), 4)] == [2, 2, 2, 2]


def test_files_to_compact_picks_whole_runs_of_small_covered_files() -> None:
    files = [
        _file("a.parquet", 3, 20),
        _file("b.parquet", 1, 21),
        _file("c.parquet", 2, 22),
        # one run of 9 + 10 = 19 bytes, tier 2 as the appended files
        _file("run-r1-x.parquet", 3, 9),
        _file("run-r1-y.parquet", 3, 10),
        # a run of 2 x 600 bytes: not small (min_file_size 1000), never rewritten
        _file("run-big-x.parquet", 3, 600),
        _file("run-big-y.parquet", 3, 600),
    ]
    four = AutoCompactSettings(enabled=True, min_file_size=1000, min_num_files=4)
    assert sorted(files_to_compact(_snapshot(files), four)) == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
        "run-r1-x.parquet",
        "run-r1-y.parquet",
    ]
    assert [r.key for r in eligible_runs(_snapshot(files), four)] == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
        "run-r1",
    ]
    # the many files of one write (a first write) are one run: with 3 appended runs in its
    # tier, nothing is due (each file a run of its own would make 8, and rewrite them)
    first = [_file(f"run-w1-{i}.parquet", 3, 20) for i in range(5)]
    appended = [_file(f"run-a{i}-0.parquet", 3, 20) for i in range(3)]
    assert files_to_compact(_snapshot([*first, *appended]), four) == ()
    # three runs in the tier: not due; off: nothing, whatever the files
    assert files_to_compact(_snapshot(files[1:]), four) == ()
    assert files_to_compact(_snapshot(files), AutoCompactSettings()) == ()


def test_the_tiers_of_a_time_partitioned_table_are_counted_per_partition() -> None:
    """Each time partition is a tree of its own: two runs of each of two days fill no tier
    (a table-wide count would see four and merge the days together); a day with four runs
    merges them, whatever the other day holds, and two full days merge in one compaction."""

    def day(date: str, runs: int) -> list[IndexFile]:
        return [
            _file(f"t_partition={date}/run-{date[-2:]}{i}-x.parquet", 3, 20) for i in range(runs)
        ]

    four = AutoCompactSettings(enabled=True, min_file_size=1000, min_num_files=4)
    partitioned = {"qbeast.timePartitioning": '{"timeColumn": "t", "period": "daily"}'}

    def snapshot(files: list[IndexFile], config: dict[str, str]) -> QbeastSnapshot:
        base = _snapshot(files)
        return QbeastSnapshot({**base.configuration, **config}, base.files, base.version)

    two_each = day("2024-01-01", 2) + day("2024-01-02", 2)
    assert files_to_compact(snapshot(two_each, partitioned), four) == ()
    # the same files in a table that is not time-partitioned: one tree, one tier of four
    assert len(files_to_compact(snapshot(two_each, {}), four)) == 4
    one_full = day("2024-01-01", 4) + day("2024-01-02", 3)
    assert sorted(files_to_compact(snapshot(one_full, partitioned), four)) == [
        f"t_partition=2024-01-01/run-01{i}-x.parquet" for i in range(4)
    ]
    both_full = day("2024-01-01", 4) + day("2024-01-02", 5)
    assert len(files_to_compact(snapshot(both_full, partitioned), four)) == 9


def test_a_row_cap_stops_the_cascade_below_it_and_skips_a_tier_over_it() -> None:
    """The plugin's commit holds a compaction's rows in one task (``max_rows``): the lowest
    full tier merges while the next tier it completes would pass the cap; a lowest tier
    over the cap merges nothing (no read that would be declined at every append)."""
    small = [Run(f"s{i}", (f"s{i}",), 10, 400) for i in range(4)]
    middle = [Run(f"m{i}", (f"m{i}",), 40, 1600) for i in range(3)]
    assert len(runs_to_merge([*small, *middle], 4)) == 7
    assert len(runs_to_merge([*small, *middle], 4, max_rows=6_400)) == 7
    assert [r.key for r in runs_to_merge([*small, *middle], 4, max_rows=6_399)] == [
        "s0",
        "s1",
        "s2",
        "s3",
    ]
    assert runs_to_merge([*small, *middle], 4, max_rows=1_599) == ()


def test_a_staging_file_is_eligible_when_its_statistics_prove_it_inside_the_space() -> None:
    """Staging files (revision 0) join the compaction only when the latest revision's space
    provably holds every row: each linear column's minimum and maximum inside its range
    (dates and timestamps in epoch milliseconds, as the index normalizes them), hashed
    columns always; never on missing or unreadable statistics."""
    import json as _json

    def stats(low: object, high: object, column: str = "t", nulls: int = 0) -> str:
        return _json.dumps(
            {
                "numRecords": 10,
                "minValues": {column: low, "user": 0} if low is not None else {"user": 0},
                "maxValues": {column: high, "user": 10} if high is not None else {"user": 10},
                "nullCount": {column: nulls, "user": 0},
            }
        )

    latest = _revisions()[-1]  # t in [0, 1000] (headroom aside), user in [0, 10]
    t = latest.transformations[0]
    assert stats_inside_space(latest, stats(t.min_number, t.max_number))
    assert not stats_inside_space(latest, stats(t.min_number, t.max_number + 1))
    assert not stats_inside_space(latest, stats(t.min_number - 1, t.max_number))
    assert stats_inside_space(latest, stats(None, None, nulls=10))  # NULLs only
    assert not stats_inside_space(latest, stats(None, None, nulls=3))  # no bounds given
    assert not stats_inside_space(latest, None)
    assert not stats_inside_space(latest, "not json")

    day = 86_400_000
    dates = plan_revision(
        None,
        parse_columns_to_index("d"),
        {"d": "date"},
        {"d": ColumnStats(19_723 * day, 19_730 * day)},  # 2024-01-01 .. 2024-01-08
        {},
        50,
        "/t",
        1,
        random.Random(1),
    ).revision
    assert stats_inside_space(dates, stats("2024-01-01", "2024-01-08", "d"))
    assert not stats_inside_space(dates, stats("2023-12-31", "2024-01-08", "d"))
    stamps = plan_revision(
        None,
        parse_columns_to_index("ts"),
        {"ts": "timestamp"},
        {"ts": ColumnStats(1_704_067_200_000, 1_704_070_800_000)},  # one hour
        {},
        50,
        "/t",
        1,
        random.Random(1),
    ).revision
    inside = stats("2024-01-01T00:00:00.000Z", "2024-01-01T01:00:00.000Z", "ts")
    assert stats_inside_space(stamps, inside)
    late = stats("2024-01-01T00:00:00.000Z", "2024-01-01T01:00:00.001Z", "ts")
    assert not stats_inside_space(stamps, late)
    hashed = plan_revision(
        None,
        parse_columns_to_index("s:hashing"),
        {"s": "string"},
        {},
        {},
        50,
        "/t",
        1,
        random.Random(1),
    ).revision
    assert stats_inside_space(hashed, stats("a", "z", "s"))

    files = [
        IndexFile("part-0.parquet", 20, 0, 0, (Block("", -100, 2**31 - 1, 0),), 10),
        IndexFile("part-1.parquet", 20, 0, 0, (Block("", -100, 2**31 - 1, 0),), 10),
    ]
    by_path = {
        "part-0.parquet": stats(t.min_number, t.max_number),
        "part-1.parquet": stats(t.min_number, t.max_number + 1),
    }
    keys = [r.key for r in eligible_runs(_snapshot(files), ON, by_path)]
    assert keys == ["part-0.parquet"]
    assert eligible_runs(_snapshot(files), ON) == []  # without statistics: none


def _simulate(appends: int, size: int, fanout: int) -> tuple[float, int, int, list[int]]:
    """``appends`` appends of ``size`` bytes, each followed by the compaction the policy
    picks: rows rewritten per row appended, compactions, most runs, the sizes left."""
    runs: list[Run] = []
    rewritten = compactions = most = 0
    for i in range(appends):
        runs.append(Run(f"a{i}", (f"a{i}",), size))
        chosen = runs_to_merge(runs, fanout)
        if chosen:
            merged = sum(r.size for r in chosen)
            rewritten += merged
            compactions += 1
            keys = {r.key for r in chosen}
            runs = [r for r in runs if r.key not in keys] + [Run(f"c{i}", (f"c{i}",), merged)]
        most = max(most, len(runs))
    return rewritten / (appends * size), compactions, most, sorted(r.size for r in runs)


def test_write_amplification_is_logarithmic_over_1000_appends() -> None:
    amplification, compactions, most, left = _simulate(1000, 400, 4)
    # each row is rewritten 3.04 times on average (log_4(1000) = 4.98), never the table
    assert amplification == pytest.approx(3.04)
    assert compactions == 250 and most == 14
    assert left == [1600, 1600, 6400, 6400, 25600, 25600, 25600, 102400, 102400, 102400]
    assert sum(left) == 400 * 1000
    # tenfold the appends: the amplification grows by log_4(10) = 1.66 at most, not 10x
    ten, _, most_ten, _ = _simulate(10_000, 400, 4)
    assert 3.04 < ten <= 3.04 + 1.67 and most_ten <= 3 * 8 + 1
    # a wider fan-out rewrites less and keeps more runs
    assert _simulate(1000, 400, 8)[:3] == (pytest.approx(2.288), 125, 21)


def test_files_of_revisions_the_latest_does_not_cover_stay() -> None:
    revs = _revisions()
    # the latest revision is the narrow one: revision 3's rows would widen it
    narrow = Revision(4, 9, "/t", 50, revs[0].column_transformers, revs[0].transformations)
    files = [_file("a", 1, 10), _file("b", 1, 10), _file("c", 3, 10), _file("d", 4, 10)]
    assert files_to_compact(_snapshot(files, [*revs, narrow]), ON) == ("a", "b", "d")
    assert files_to_compact(_snapshot(files[1:], [*revs, narrow]), ON) == ()
    # staging files (revision 0) are left to optimize(0)
    staged = [_file(f"st{i}", 0, 10) for i in range(4)]
    assert files_to_compact(_snapshot(staged), ON) == ()


def _state(files: list[IndexFile], configuration: dict[str, str]) -> SimpleNamespace:
    snapshot = _snapshot(files)
    config = {**snapshot.configuration, **configuration}
    schema = '{"type":"struct","fields":[{"name":"t","type":"long","nullable":true,"metadata":{}}]}'
    return SimpleNamespace(
        exists=True,
        path="/t",
        configuration=config,
        schema_string=schema,
        adds=[{"path": f.path, "size": f.size, "partitionValues": {}} for f in files],
        qbeast=lambda: QbeastSnapshot(config, tuple(files), 7),
    )


def test_a_compaction_that_loses_a_conflict_gives_up_once_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The append has landed: a compaction that a concurrent commit beats is not retried,
    raises nothing, and the append's result reports it."""
    from qbeast_connect.exceptions import CommitConflictError
    from qbeast_connect.spark import auto_compact as job

    on = {"qbeast.autoCompact": "true"}
    files = [_file(f"s{i}", 3, 500) for i in range(4)]
    calls: list[dict[str, object]] = []

    def beaten(*args: object, **kwargs: object) -> None:
        calls.append({"paths": args[3], **kwargs})
        raise CommitConflictError("a concurrent commit removed a file this one reads")

    monkeypatch.setattr(job, "load_table_state", lambda spark, path: _state(files, on))
    monkeypatch.setattr(job, "read_table_files", lambda *args: "rows")
    monkeypatch.setattr(job, "index_staging", beaten)
    result = job.compact_after_append(None, "/t", on)  # type: ignore[arg-type]
    assert result is not None and result.skipped == "conflict" and result.version is None
    assert len(calls) == 1 and calls[0]["paths"] == ["s0", "s1", "s2", "s3"]
    assert calls[0]["keep_revision"] is True
    assert calls[0]["commit_tags"] == {"qbeast.autoCompaction": "true"}
    # off, or not due: no state is even read
    monkeypatch.setattr(job, "load_table_state", lambda spark, path: pytest.fail("read"))
    assert job.compact_after_append(None, "/t", {}) is None  # type: ignore[arg-type]


def test_a_failing_compaction_never_fails_the_append(monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed property (written by another tool) makes the compaction report the
    error, with a warning, and raise nothing: the append it follows is committed."""
    from qbeast_connect.spark import auto_compact as job

    bad = {"qbeast.autoCompact": "true", "qbeast.autoCompact.minNumFiles": "many"}
    files = [_file(f"s{i}", 3, 500) for i in range(4)]
    monkeypatch.setattr(job, "load_table_state", lambda spark, path: _state(files, bad))
    monkeypatch.setattr(job, "index_staging", lambda *a, **k: pytest.fail("rewrote"))
    with pytest.warns(UserWarning, match="the append is committed"):
        result = job.compact_after_append(None, "/t", {"qbeast.autoCompact": "true"})  # type: ignore[arg-type]
    assert result is not None and result.version is None
    assert result.skipped is not None and result.skipped.startswith("failed: ")
    assert "autoCompactMinNumFiles must be a positive integer" in result.skipped


def test_an_append_given_the_options_keeps_them_with_the_table() -> None:
    table = {"qbeast.lastRevisionID": "2", "delta.appendOnly": "false"}
    props = parse_write_options({"autoCompact": "true", "delta.appendOnly": "true"})
    stored = stored_configuration(table, props.table_properties)
    # only the autoCompact keys are added; other properties keep their existing rules
    assert stored == {**table, "qbeast.autoCompact": "true"}
    assert stored_configuration(stored, props.table_properties) is None  # already kept
    assert stored_configuration(table, {}) is None


def test_a_new_table_stores_auto_compaction_on_and_an_existing_one_keeps_its_own() -> None:
    from qbeast_connect.rules.table_config import write_configuration

    revision = _revisions()[0]
    created = write_configuration({}, revision, None, parse_write_options({}), False)
    assert created["qbeast.autoCompact"] == "true"
    assert settings_of(created) == AutoCompactSettings(
        True, MIN_FILE_SIZE_DEFAULT, MIN_NUM_FILES_DEFAULT
    )
    # a table property turns it off at creation
    off = parse_write_options({"autoCompact": "false"})
    assert write_configuration({}, revision, None, off, False)["qbeast.autoCompact"] == "false"
    # a table created before (no property) stays off, on append and on overwrite
    old = {"qbeast.lastRevisionID": "1", "cubeSize": "50"}
    for appending in (True, False):
        kept = write_configuration(old, revision, None, parse_write_options({}), appending)
        assert "qbeast.autoCompact" not in kept and not settings_of(kept).enabled


def test_index_metrics_show_how_far_the_table_is_from_its_compacted_shape() -> None:
    from qbeast_connect.metrics import compute_index_metrics

    def top(name: str, revision: int, size: int) -> IndexFile:
        return IndexFile(name, size, 0, revision, (Block("", -(2**31), 2**31 - 1, 30),), 30)

    files = [top(f"run-a{i}-0.parquet", 1 + i % 3, 500) for i in range(4)]
    snapshot = _snapshot(files)
    on = QbeastSnapshot({**snapshot.configuration, "qbeast.autoCompact": "true"}, snapshot.files, 7)
    metrics = compute_index_metrics(on)
    assert metrics.auto_compact is True
    assert (metrics.small_runs, metrics.compaction_due_files) == (4, 4)
    assert metrics.revisions_with_files == 3
    # every file holds root rows of least weight: a 1% sample reads them all; one optimized
    # tree of 120 rows (cube size 50) has bands [0, 1/2) and [1/2, 1]: it would read half
    assert (metrics.sample_bytes, metrics.sample_bytes_optimized) == (2000, 1000)
    assert "a compaction of 4 files is due" in str(metrics)
    # a table without the property (created before): off, nothing due, runs still counted
    old = compute_index_metrics(snapshot)
    assert (old.auto_compact, old.small_runs, old.compaction_due_files) == (False, 4, 0)
    assert old.to_dict()["auto_compact"] is False
    # a staging file inside the latest revision's space is counted as the compaction takes
    # it: with the files' statistics only (QbeastTable.getIndexMetrics passes them)
    t = _revisions()[-1].transformations[0]
    staged = IndexFile("part-0.parquet", 500, 0, 0, (Block("", -100, 2**31 - 1, 0),), 30)
    stats = {
        "part-0.parquet": {
            "numRecords": 30,
            "minValues": {"t": t.min_number, "user": 0},
            "maxValues": {"t": t.max_number, "user": 10},
            "nullCount": {"t": 0, "user": 0},
        }
    }
    with_staging = QbeastSnapshot({**on.configuration}, (*on.files, staged), 8)
    assert compute_index_metrics(with_staging).small_runs == 4
    counted = compute_index_metrics(with_staging, None, stats)
    assert (counted.small_runs, counted.compaction_due_files) == (5, 5)
