"""LocalStorage: path safety, put-if-absent atomicity, listing."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from qbeast_connect.exceptions import InvalidOptionError, StorageError, UnsafePathError
from server_plugin.delta.storage import LocalStorage, storage_for


@pytest.mark.parametrize(
    "bad",
    [
        "../x",
        "a/../../x",
        "a/..",
        "/etc/passwd",
        "s3://bucket/key",
        "file:///etc/passwd",
        "c:evil",
        "a\\..\\b",
        "a\x00b",
        "",
    ],
    ids=[
        "dotdot",
        "nested-dotdot",
        "trailing-dotdot",
        "absolute",
        "s3",
        "file-uri",
        "scheme-like",
        "backslash",
        "nul",
        "empty",
    ],
)
def test_resolve_rejects_paths_escaping_the_root(tmp_path: Path, bad: str) -> None:
    storage = LocalStorage(tmp_path)
    with pytest.raises(UnsafePathError):
        storage.read_bytes(bad)


def test_resolve_accepts_nested_relative_paths(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    assert storage.resolve("a/./b//c.parquet") == str(tmp_path / "a" / "b" / "c.parquet")
    assert storage.resolve("") == str(tmp_path)
    assert storage.resolve("p=a b%3Ac/x") == str(tmp_path / "p=a b%3Ac" / "x")


def test_put_if_absent_creates_once_and_never_overwrites(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "t")
    assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"first\n") is True
    assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"second\n") is False
    assert storage.read_bytes("_delta_log/00000000000000000000.json") == b"first\n"
    # temp files are always cleaned up
    assert sorted(os.listdir(tmp_path / "t" / "_delta_log")) == ["00000000000000000000.json"]


def test_put_if_absent_refuses_filesystems_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = LocalStorage(tmp_path)

    def no_link(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    with pytest.raises(StorageError, match="hard link"):
        storage.put_if_absent("_delta_log/00000000000000000000.json", b"x")
    assert os.listdir(tmp_path / "_delta_log") == []  # no temp, no partial file


def test_put_atomic_overwrites(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.put_atomic("_delta_log/_last_checkpoint", b"1")
    storage.put_atomic("_delta_log/_last_checkpoint", b"2")
    assert storage.read_bytes("_delta_log/_last_checkpoint") == b"2"
    assert os.listdir(tmp_path / "_delta_log") == ["_last_checkpoint"]


def test_listing(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    assert storage.list_prefix("_delta_log") == []
    storage.put_atomic("_delta_log/b.json", b"12")
    storage.put_atomic("_delta_log/a.json", b"1")
    storage.put_atomic("_delta_log/_sidecars/s.parquet", b"123")
    storage.put_atomic("p=1/f.parquet", b"1234")
    names = [(f.name, f.size) for f in storage.list_prefix("_delta_log")]
    assert names == [("a.json", 1), ("b.json", 2)]  # non-recursive, no directories
    assert [f.name for f in storage.list_prefix("_delta_log", start_after="a.json")] == ["b.json"]
    recursive = {f.name: f.size for f in storage.list_files_recursive()}
    assert recursive == {
        "_delta_log/a.json": 1,
        "_delta_log/b.json": 2,
        "_delta_log/_sidecars/s.parquet": 3,
        "p=1/f.parquet": 4,
    }
    info = storage.file_info("p=1/f.parquet")
    assert info.size == 4 and info.mtime_ms > 0
    with pytest.raises(FileNotFoundError):
        storage.file_info("missing")
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("missing")
    storage.delete("p=1/f.parquet")
    storage.delete("p=1/f.parquet")  # idempotent
    assert not storage.exists("p=1/f.parquet")


def test_open_output_never_overwrites(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    with storage.open_output("d/x.parquet") as f:
        f.write(b"abc")
    with pytest.raises(FileExistsError), storage.open_output("d/x.parquet"):
        pass
    assert storage.read_bytes("d/x.parquet") == b"abc"


def test_storage_for(tmp_path: Path) -> None:
    assert storage_for(str(tmp_path)).root == str(tmp_path)
    assert storage_for(tmp_path.as_uri()).root == str(tmp_path)
    spaced = tmp_path / "a b"
    assert storage_for(spaced.as_uri()).root == str(spaced)
    for uri in ("gs://b/t", "abfss://c@a.dfs.core.windows.net/t"):  # s3: test_delta_s3.py
        with pytest.raises(InvalidOptionError, match="not supported"):
            storage_for(uri)
    with pytest.raises(InvalidOptionError):
        storage_for("file://otherhost/t")
