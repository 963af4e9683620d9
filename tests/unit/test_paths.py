"""Table locations: one reading of user paths, where tables may be created, what vacuum and
output files may touch (qbeast_connect.paths, server_plugin.locations)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from qbeast_connect import cli
from qbeast_connect.exceptions import InvalidOptionError, QbeastError
from qbeast_connect.paths import check_output_file, enclosing_table, is_relative, qualify
from qbeast_connect.spark.snapshot import TableState
from qbeast_connect.table import QbeastTable
from server_plugin.commands import vacuum
from server_plugin.delta.storage import storage_for
from server_plugin.locations import (
    check_new_table_location,
    prepare_location,
    remove_created_dirs,
    resolve_location,
    server_working_dir,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "qbeast_spark_table"


# -- one reading of user paths ------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("events", "/srv/work/events"),
        ("./a/../events/", "/srv/work/events"),
        ("/data/./t/", "/data/t"),
        ("//data//t", "/data/t"),
        ("file:/data/t", "/data/t"),
        ("file:///data/t/", "/data/t"),
        ("file://localhost/data/my%20t", "/data/my t"),
        ("s3://bucket/t/", "s3://bucket/t"),
        ("s3a://bucket/t", "s3a://bucket/t"),
        ("S3://bucket/t//", "s3://bucket/t"),
    ],
)
def test_qualify_gives_one_canonical_location(given: str, expected: str) -> None:
    assert qualify(given, "/srv/work") == expected


@pytest.mark.parametrize(
    "given",
    ["", "  ", "gs://b/t", "hdfs:///t", "file://host/t", "file:rel/t", "a\x00b", "C:/t", "s3:b/t"],
)
def test_qualify_refuses_what_it_cannot_place(given: str) -> None:
    with pytest.raises(InvalidOptionError):
        qualify(given, "/srv/work")


def test_relative_path_without_a_known_working_directory_is_refused() -> None:
    assert is_relative("events") and not is_relative("/events") and not is_relative("s3://b/t")
    with pytest.raises(InvalidOptionError, match="relative.*absolute path"):
        qualify("events")
    # the plugin's storage never resolves a relative path against a worker's directory
    with pytest.raises(InvalidOptionError, match="relative"):
        storage_for("events")


def test_plugin_resolves_relative_paths_against_the_jvm_not_the_worker() -> None:
    # outside a Spark server there is no java ancestor: the directory is unknown
    assert server_working_dir() is None
    with pytest.raises(InvalidOptionError):
        resolve_location("events")
    assert resolve_location("/data/t/") == "/data/t"


# -- where a new table may be created -------------------------------------------------------


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry below root: relative name -> (size, mtime_ns); links not followed."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            st = full.lstat()
            out[str(full.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_new_table_location_must_be_empty_or_new(tmp_path: Path) -> None:
    check_new_table_location(storage_for(str(tmp_path / "new")))
    (tmp_path / "empty").mkdir()
    check_new_table_location(storage_for(str(tmp_path / "empty")))
    busy = tmp_path / "busy"
    (busy / "sub").mkdir(parents=True)
    (busy / "notes.txt").write_text("mine")
    before = _tree(busy)
    with pytest.raises(InvalidOptionError, match="not empty"):
        check_new_table_location(storage_for(str(busy)))
    assert _tree(busy) == before
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidOptionError, match="not a directory"):
        check_new_table_location(storage_for(str(tmp_path / "file")))


def test_table_inside_another_table_is_refused_by_the_plugin(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / "_delta_log").mkdir(parents=True)
    for inner in (outer / "inner", outer / "a" / "b", outer / "_delta_log" / "x"):
        with pytest.raises(InvalidOptionError, match="inside the table"):
            check_new_table_location(storage_for(str(inner)))
        # converting files in place is refused there too
        with pytest.raises(InvalidOptionError, match="inside the table"):
            check_new_table_location(storage_for(str(inner)), existing_files=True)
    assert not (outer / "inner").exists() and not (outer / "a").exists()


def test_failed_first_write_removes_only_the_directories_it_created(tmp_path: Path) -> None:
    new = tmp_path / "new"
    assert prepare_location(str(new), new_table=True) is True
    (new / "p=1").mkdir(parents=True)  # what tasks of a partitioned write leave
    remove_created_dirs(storage_for(str(new)))
    assert not new.exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    assert prepare_location(str(existing), new_table=True) is False
    assert prepare_location(str(tmp_path / "whatever"), new_table=False) is False
    kept = tmp_path / "kept"
    (kept / "d").mkdir(parents=True)
    (kept / "f.parquet").write_bytes(b"x")
    remove_created_dirs(storage_for(str(kept)))
    assert (kept / "f.parquet").exists() and not (kept / "d").exists()


# -- vacuum stays inside its own table -----------------------------------------------------


def test_vacuum_skips_nested_tables_and_symlinks(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    table = tmp_path / "table"
    write_deltalake(str(table), pa.table({"x": [1, 2, 3]}))
    nested = table / "nested"
    write_deltalake(str(nested), pa.table({"y": [10, 20]}))
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "keep.parquet").write_bytes(b"precious")
    (outside / "dir" / "also.parquet").write_bytes(b"precious too")
    os.symlink(outside / "keep.parquet", table / "link.parquet")
    os.symlink(outside / "dir", table / "linked_dir")
    (table / "orphan.parquet").write_bytes(b"left by a crashed writer")
    old = time.time() - 3 * 24 * 3600
    for dirpath, _dirs, files in os.walk(table):
        for name in files:
            os.utime(Path(dirpath) / name, (old, old), follow_symlinks=False)
        os.utime(dirpath, (old, old))
    outside_before = _tree(outside)
    nested_before = _tree(nested)

    rows = list(
        vacuum({"path": str(table), "retentionHours": 0, "enforceRetentionDuration": False})
    )
    result = json.loads(rows[0][1])
    assert result["files"] == ["orphan.parquet"]
    assert not (table / "orphan.parquet").exists()
    assert _tree(outside) == outside_before
    assert _tree(nested) == nested_before
    assert (table / "link.parquet").is_symlink() and (table / "linked_dir").is_symlink()
    assert DeltaTable(str(nested)).to_pyarrow_table().column("y").to_pylist() == [10, 20]
    assert sorted(DeltaTable(str(table)).to_pyarrow_table().column("x").to_pylist()) == [1, 2, 3]


# -- output files never land inside a table ------------------------------------------------


def test_output_files_inside_a_table_are_refused(tmp_path: Path) -> None:
    table = tmp_path / "t"
    (table / "_delta_log").mkdir(parents=True)
    for inside in ("_delta_log/00000000000000000000.json", "picture.png", "sub/x.png"):
        with pytest.raises(InvalidOptionError, match="inside the table"):
            check_output_file(str(table / inside))
    with pytest.raises(InvalidOptionError, match="table directory"):
        check_output_file(str(table))
    os.symlink(table, tmp_path / "alias")
    with pytest.raises(InvalidOptionError, match="inside the table"):
        check_output_file(str(tmp_path / "alias" / "x.png"))
    assert enclosing_table(str(tmp_path / "alias" / "x.png")) == str(tmp_path / "alias")
    assert enclosing_table(str(table / "sub" / "deeper" / "x")) == str(table)
    assert check_output_file(str(tmp_path / "fine.png")) == str(tmp_path / "fine.png")


def test_viz_output_inside_delta_log_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    table = tmp_path / "table"
    shutil.copytree(FIXTURE, table)
    conf: dict[str, Any] = {}
    adds: dict[str, Any] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if "metaData" in action:
                conf = action["metaData"]
            elif "add" in action:
                adds[action["add"]["path"]] = action["add"]
    state = TableState(str(table), 1, {}, conf, tuple(adds.values()))
    monkeypatch.setattr(cli, "_table", lambda args: QbeastTable(None, str(table), state))  # type: ignore[arg-type]
    commit = table / "_delta_log" / "00000000000000000001.json"
    before = commit.read_bytes()

    assert cli.main(["viz", str(table), "-o", str(commit)]) == 2
    assert "inside the table" in capsys.readouterr().err
    assert commit.read_bytes() == before
    assert sorted(p.name for p in (table / "_delta_log").iterdir()) == [
        "00000000000000000000.json",
        "00000000000000000001.json",
    ]
    # outside the table the same command writes the picture
    out = tmp_path / "index.png"
    assert cli.main(["viz", str(table), "-o", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_location_errors_are_project_errors() -> None:
    for bad in ("", "gs://b/t", "events"):
        with pytest.raises(QbeastError):
            qualify(bad)


def test_qualify_fuzz_only_project_errors_and_absolute_results() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pieces = st.sampled_from(["/", ".", "..", "a", "file:", "s3://", "//", "%20", "\x00", ":"])

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.text(max_size=30), st.lists(pieces, max_size=8).map("".join)))
    def check(text: str) -> None:
        for base in (None, "/srv/work"):
            try:
                out = qualify(text, base)
            except InvalidOptionError:
                continue
            assert out.startswith(("/", "s3://", "s3a://"))
            if out.startswith("/"):
                assert "/../" not in out + "/" and "//" not in out
                assert qualify(out) == out  # canonical: a fixed point

    check()


def test_table_created_meanwhile_is_a_commit_conflict(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from qbeast_connect.exceptions import CommitConflictError

    write_deltalake(str(tmp_path / "t"), pa.table({"x": [1]}))
    with pytest.raises(CommitConflictError, match="concurrent"):
        prepare_location(str(tmp_path / "t"), new_table=True)


def test_leftovers_of_a_failed_first_write_do_not_block_a_retry(tmp_path: Path) -> None:
    root = tmp_path / "t"
    uuid_name = "3f2c1a9e-1111-4222-8333-123456789abc.parquet"
    (root / "dt=2020-01-01").mkdir(parents=True)
    (root / "_delta_log").mkdir()
    (root / uuid_name).write_bytes(b"orphan")
    (root / "dt=2020-01-01" / uuid_name).write_bytes(b"orphan")
    (root / "_delta_log" / ".tmp-3f2c1a9e-1111-4222-8333-123456789abc").write_bytes(b"{}")
    check_new_table_location(storage_for(str(root)))
    for other in ("part-00000.parquet", "dt=2020-01-01/notes.txt", "_delta_log/_last_checkpoint"):
        (root / other).write_bytes(b"x")
        with pytest.raises(InvalidOptionError, match="not empty"):
            check_new_table_location(storage_for(str(root)))
        (root / other).unlink()


def test_spark_literal_path_escapes_exactly_the_hadoop_glob_characters() -> None:
    from qbeast_connect.paths import spark_literal_path

    assert spark_literal_path("/d/t brack[1]/a{b,c}\\x*?.parquet") == (
        "/d/t brack\\[1\\]/a\\{b,c\\}\\\\x\\*\\?.parquet"
    )
    # characters a glob does not use are left alone: the path is unchanged
    for plain in ("/d/t %zz:#;=ü x/f.parquet", "s3a://bucket/k ey/f.parquet"):
        assert spark_literal_path(plain) == plain


def test_a_location_spark_would_glob_with_a_colon_segment_is_refused() -> None:
    from qbeast_connect.exceptions import UnsupportedInputError
    from qbeast_connect.paths import check_spark_readable

    for fine in ("/d/t[1]", "/d/a:b/t", "s3a://bucket/t?x", "/d/t colon:x"):
        check_spark_readable(fine)
    for bad, segment in (("/d/a:b/t[1]", "a:b"), ("/d/[:", "[:"), ("s3a://b/k:y/t*", "k:y")):
        with pytest.raises(UnsupportedInputError, match=f"':' in '{re.escape(segment)}'"):
            check_spark_readable(bad)
