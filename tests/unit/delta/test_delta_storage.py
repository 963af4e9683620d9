"""LocalStorage: path safety, put-if-absent atomicity, listing."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from delta_testlib import REPO_ROOT

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


_RACE_WORKER = textwrap.dedent(
    """
    import sys, time
    from server_plugin.delta.storage import LocalStorage
    root, worker, rounds, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    storage = LocalStorage(root)
    payload = (("worker-" + worker + "|") * 20000).encode()
    while time.time() < start:
        pass
    wins = []
    for r in range(rounds):
        if storage.put_if_absent(f"_delta_log/{r:020d}.json", payload):
            wins.append(r)
    print(",".join(map(str, wins)))
    """
)


_READER_WORKER = textwrap.dedent(
    """
    import os, sys, time
    root, rounds, expected = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    log = os.path.join(root, "_delta_log")
    seen = 0
    deadline = time.time() + 50
    while time.time() < deadline:
        names = [n for n in os.listdir(log) if n.endswith(".json")] if os.path.isdir(log) else []
        for name in names:
            with open(os.path.join(log, name), "rb") as f:
                size = len(f.read())
            if size != expected:
                print(f"partial {name}: {size} bytes")
                sys.exit(1)
            seen += 1
        if len(names) == rounds:
            break
    print(seen)
    """
)


def test_put_if_absent_race_has_exactly_one_winner_and_no_partial_file(tmp_path: Path) -> None:
    """Many processes x many rounds race for the same versions (§14.14)."""
    import time

    workers, rounds = 6, 40
    start = time.time() + 1.0
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER_WORKER, str(tmp_path), str(rounds), str(9 * 20000)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE_WORKER, str(tmp_path), str(w), str(rounds), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for w in range(workers)
    ]
    wins: dict[int, list[int]] = {}
    for w, proc in enumerate(procs):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        wins[w] = [int(x) for x in out.strip().split(",") if x]
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, out + err
    assert int(out.strip()) > 0
    storage = LocalStorage(tmp_path)
    for r in range(rounds):
        winners = [w for w, won in wins.items() if r in won]
        assert len(winners) == 1, f"round {r}: winners {winners}"
        data = storage.read_bytes(f"_delta_log/{r:020d}.json")
        assert data == (f"worker-{winners[0]}|" * 20000).encode()
    assert sorted(os.listdir(tmp_path / "_delta_log")) == [f"{r:020d}.json" for r in range(rounds)]
