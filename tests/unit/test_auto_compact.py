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
    covers,
    files_to_compact,
    settings_of,
    stored_configuration,
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


def test_compaction_is_due_when_enough_small_files_hold_root_rows() -> None:
    small = [_file(f"s{i}", 1 + i % 3, 500) for i in range(3)]
    big = _file("big", 3, 5000)
    deep = _file("deep", 3, 400, cubes=("A", "Aw"))
    # three small files hold root rows: every small file is rewritten, the big one never
    assert files_to_compact(_snapshot([*small, big, deep]), ON) == ("s0", "s1", "s2", "deep")
    # two are not enough (the deep file holds no root rows)
    assert files_to_compact(_snapshot([*small[:2], big, deep]), ON) == ()
    # off: nothing, whatever the files
    assert files_to_compact(_snapshot([*small, big]), AutoCompactSettings()) == ()


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
