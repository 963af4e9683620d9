"""The embedded server's class archive (issue 34: a notebook's first cell is fast)."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from qbeast_connect.exceptions import QbeastError
from qbeast_connect.spark import class_archive
from qbeast_connect.spark import server as server_module
from qbeast_connect.spark.class_archive import ArchivePlan, archive_key, plan, with_java_options
from qbeast_connect.spark.server import LocalConnectServer, _spark_home, find_java, free_port


def _fake_java(folder: Path, exit_code: int) -> str:
    """A ``java`` that exits with ``exit_code`` (0: the archive loads; else it aborted)."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\nexit {exit_code}\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return str(java)


@pytest.fixture
def spark_home(tmp_path: Path) -> str:
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"jar")
    return str(jars.parent)


def test_without_an_archive_the_server_writes_one_and_with_it_maps_it(
    tmp_path: Path, spark_home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(class_archive.ENV_VAR, raising=False)
    java = _fake_java(tmp_path / "jdk", 0)
    first = plan(java, spark_home, {}, tag="1-2", directory=tmp_path / "cache")
    assert first is not None and first.pending is not None and not first.path.exists()
    assert first.java_options == [f"-XX:ArchiveClassesAtExit={first.pending}"]
    first.pending.write_bytes(b"archive")
    assert first.publish(exited_cleanly=True)
    assert first.path.read_bytes() == b"archive" and not first.pending.exists()
    second = plan(java, spark_home, {}, tag="3-4", directory=tmp_path / "cache")
    assert second == ArchivePlan(java, first.path, None)
    assert second.java_options == [f"-XX:SharedArchiveFile={first.path}"]


@pytest.mark.parametrize(("cleanly", "java_exit"), [(False, 0), (True, 134)])
def test_an_archive_is_published_only_whole(
    tmp_path: Path, spark_home: str, cleanly: bool, java_exit: int
) -> None:
    """A JVM killed while writing, or an archive a trial JVM aborts on, is never shared:
    a truncated archive makes every later JVM abort."""
    java = _fake_java(tmp_path / "jdk", java_exit)
    written = plan(java, spark_home, {}, tag="1-2", directory=tmp_path / "cache")
    assert written is not None and written.pending is not None
    written.pending.write_bytes(b"half an archive")
    assert not written.publish(exited_cleanly=cleanly)
    assert not written.path.exists() and not written.pending.exists()


def test_the_archive_belongs_to_one_java_and_one_set_of_jars(
    tmp_path: Path, spark_home: str
) -> None:
    java = _fake_java(tmp_path / "jdk", 0)
    other_java = _fake_java(tmp_path / "jdk2", 0)
    key = archive_key(java, spark_home, {})
    assert archive_key(java, spark_home, {}) == key
    assert archive_key(other_java, spark_home, {}) != key
    assert archive_key(java, spark_home, {"spark.driver.extraClassPath": "/x.jar"}) != key
    (Path(spark_home) / "jars" / "delta.jar").write_bytes(b"jar")
    assert archive_key(java, spark_home, {}) != key


@pytest.mark.parametrize("value", ["0", "off", "false", "no"])
def test_the_archive_can_be_turned_off(
    tmp_path: Path, spark_home: str, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(class_archive.ENV_VAR, value)
    assert plan(find_java(), spark_home, {}, tag="1", directory=tmp_path) is None


def test_archive_options_follow_the_callers_jvm_options() -> None:
    conf = {class_archive.JAVA_OPTIONS_CONF: "-Dx=1", "a": "b"}
    merged = with_java_options(conf, ["-XX:SharedArchiveFile=/c/s.jsa"])
    assert merged == {
        "a": "b",
        class_archive.JAVA_OPTIONS_CONF: "-Dx=1 -XX:SharedArchiveFile=/c/s.jsa",
    }
    assert with_java_options({}, ["-Y"]) == {class_archive.JAVA_OPTIONS_CONF: "-Y"}


def test_server_command_carries_the_archive_options(tmp_path: Path) -> None:
    server = LocalConnectServer(conf={class_archive.JAVA_OPTIONS_CONF: "-Dmine=1"}, port=1)
    assert not any("SharedArchiveFile" in arg for arg in server.command())
    archive = tmp_path / "s.jsa"
    server.archive = ArchivePlan(find_java(), archive, None)
    option = f"{class_archive.JAVA_OPTIONS_CONF}=-Dmine=1 -XX:SharedArchiveFile={archive}"
    assert option in server.command()
    assert _spark_home() in server.command()[0]


def test_stale_pending_archives_are_removed(tmp_path: Path, spark_home: str) -> None:
    java = _fake_java(tmp_path / "jdk", 0)
    folder = tmp_path / "cache"
    folder.mkdir()
    old, new = folder / "spark-x.jsa.9-9.tmp", folder / "spark-y.jsa.8-8.tmp"
    old.write_bytes(b"a")
    new.write_bytes(b"b")
    hours_ago = old.stat().st_mtime - 2 * class_archive.STALE_TMP_S
    os.utime(old, (hours_ago, hours_ago))
    plan(java, spark_home, {}, tag="1-2", directory=folder)
    assert not old.exists() and new.exists()


_STAND_IN = """
import socket, sys, time
if sys.argv[2] == "archive":
    sys.exit(134)  # as a JVM aborts on an archive it cannot map
with socket.socket() as server:
    server.bind(("127.0.0.1", int(sys.argv[1])))
    server.listen()
    time.sleep(60)
"""


def test_a_server_that_dies_starting_with_the_archive_starts_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "spark-x.jsa"
    archive.write_bytes(b"an archive this JVM cannot map")
    used = ArchivePlan(find_java(), archive, None)
    monkeypatch.setattr(class_archive, "plan", lambda *_, **__: used)

    def command(self: LocalConnectServer) -> list[str]:
        mode = "archive" if self.archive is not None else "plain"
        return [sys.executable, "-c", _STAND_IN, str(self.port), mode]

    monkeypatch.setattr(LocalConnectServer, "command", command)
    server = LocalConnectServer(log_path=str(tmp_path / "log"))
    try:
        server.start(timeout=30)
        assert server.is_running() and server.archive is None
        assert not archive.exists()
    finally:
        server.stop()


_TAKEN = """
import socket, sys, time
with socket.socket() as server:
    try:
        server.bind(("127.0.0.1", int(sys.argv[1])))
    except OSError:  # Spark's words when its Connect port is in use
        print(f"java.net.BindException: Failed to bind to address /127.0.0.1:{sys.argv[1]}")
        sys.exit(1)
    server.listen()
    time.sleep(60)
"""


def test_a_server_whose_chosen_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port is chosen free, then the JVM binds it 10-20 s later; another process may take
    it between the two. The suite's Delta JVM server failed so while a standalone cluster
    started beside it (BindException, every test of the Delta JVM files in error). A port
    the server chose is chosen again; a port the user gave is not."""
    monkeypatch.setattr(class_archive, "plan", lambda *_, **__: None)

    def command(self: LocalConnectServer) -> list[str]:
        return [sys.executable, "-c", _TAKEN, str(self.port)]

    monkeypatch.setattr(LocalConnectServer, "command", command)
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", 0))
        taken = thief.getsockname()[1]
        monkeypatch.setattr(server_module, "free_port", iter([taken, free_port()]).__next__)
        server = LocalConnectServer(log_path=str(tmp_path / "log"))
        assert server.port == taken
        try:
            server.start(timeout=30)
            assert server.is_running() and server.port != taken
        finally:
            server.stop()
        given = LocalConnectServer(port=taken, log_path=str(tmp_path / "given"))
        with pytest.raises(QbeastError, match="exited with code 1"):
            given.start(timeout=30)
