"""Building and configuring qbeast-connect's SQL extension (``spark/sql_extension.py``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from qbeast_connect.exceptions import MissingDependencyError
from qbeast_connect.spark import sql_extension
from qbeast_connect.spark.delta_jvm import with_server_conf


def test_the_jar_is_compiled_once_and_cached(tmp_path: Path) -> None:
    jar = sql_extension.extension_jar(tmp_path)
    assert jar.parent == tmp_path and jar == sql_extension.jar_path(tmp_path)
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
    assert {
        "META-INF/MANIFEST.MF",
        "io/qbeast/connect/QbeastConnectExtensions.class",
        "io/qbeast/connect/QbeastSampleRule.class",
    } <= names
    stamp = jar.stat().st_mtime_ns
    assert sql_extension.extension_jar(tmp_path) == jar
    assert jar.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [jar.name]  # no staging folder left


def test_the_jar_name_follows_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sql_extension.jar_path(tmp_path)
    sources = tmp_path / "src"
    for source in sql_extension.SOURCES_DIR.rglob("*.java"):
        copy = sources / source.relative_to(sql_extension.SOURCES_DIR)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(source.read_text() + "\n// changed\n")
    monkeypatch.setattr(sql_extension, "SOURCES_DIR", sources)
    assert sql_extension.jar_path(tmp_path) != before


def test_without_javac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql_extension, "find_javac", lambda: None)
    monkeypatch.setenv("QBEAST_CONNECT_JARS", str(tmp_path / "none"))  # no jar built before
    with pytest.raises(MissingDependencyError, match="javac.*openjdk-17-jdk-headless"):
        sql_extension.extension_jar(tmp_path / "none")
    conf = {"spark.jars": "/mine.jar"}
    assert sql_extension.server_conf(conf, None) == conf  # auto: left out
    assert sql_extension.server_conf(conf, False) == conf
    with pytest.raises(MissingDependencyError, match="javac"):
        sql_extension.server_conf(conf, True)
    assert not (tmp_path / "none").exists() or not any((tmp_path / "none").iterdir())


def test_a_failed_compilation_names_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "src" / "io" / "qbeast" / "connect"
    broken.mkdir(parents=True)
    (broken / "Broken.java").write_text("package io.qbeast.connect; class Broken { int x = ; }")
    monkeypatch.setattr(sql_extension, "SOURCES_DIR", tmp_path / "src")
    with pytest.raises(MissingDependencyError, match=r"could not compile(.|\n)*Broken\.java"):
        sql_extension.extension_jar(tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*.jar"))


def test_the_extension_is_listed_after_the_users_own(tmp_path: Path) -> None:
    conf = {"spark.sql.extensions": "my.Ext", "spark.jars": "/a.jar", "spark.x": "1"}
    merged = sql_extension.with_sql_extension(conf, tmp_path)
    assert merged["spark.sql.extensions"] == f"my.Ext,{sql_extension.EXTENSION_CLASS}"
    assert merged["spark.jars"] == f"/a.jar,{sql_extension.jar_path(tmp_path)}"
    assert merged["spark.x"] == "1"
    assert sql_extension.with_sql_extension(merged, tmp_path) == merged  # once each
    both = with_server_conf({"spark.jars": "/a.jar,/b.jar"}, {"spark.jars": "/b.jar,/c.jar"})
    assert both["spark.jars"] == "/a.jar,/b.jar,/c.jar"
