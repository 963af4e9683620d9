"""Delta's JVM for servers we start (``qbeast_connect.spark.delta_jvm``): the settings a
server gets, the jar cache, and Maven's failures as clear errors. No network: Maven is
replaced by small scripts on ``PATH``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from qbeast_connect.exceptions import MissingDependencyError
from qbeast_connect.spark import delta_jvm


def _fake_mvn(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "mvn"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_the_pom_names_delta_for_our_spark() -> None:
    text = delta_jvm.POM_PATH.read_text()
    assert delta_jvm.delta_version().startswith("4.")
    assert "<artifactId>delta-spark_2.13</artifactId>" in text
    assert "<artifactId>delta-storage</artifactId>" in text
    # only the named jars: Spark, Hadoop, Parquet come with pyspark
    assert text.count("<exclusion><groupId>*</groupId><artifactId>*</artifactId>") == 2
    assert "://" not in text.split("-->", 1)[1].replace("http://maven.apache.org/POM", "").replace(
        "http://www.w3.org/2001/XMLSchema-instance", ""
    ).replace("http://maven.apache.org/xsd", "")  # no registry named


def test_jars_are_fetched_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    # a stand-in for Maven: records the call, puts two jars where it is told
    _fake_mvn(
        tmp_path / "bin",
        f'echo "$@" >> {calls}\n'
        'for a in "$@"; do case "$a" in -DoutputDirectory=*) d="${a#-DoutputDirectory=}";; esac; done\n'
        'touch "$d/delta-spark_2.13-x.jar" "$d/delta-storage-x.jar"\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    cache = tmp_path / "cache"
    first = delta_jvm.delta_jars(cache)
    again = delta_jvm.delta_jars(cache)
    assert first == again
    assert [Path(p).name for p in first] == ["delta-spark_2.13-x.jar", "delta-storage-x.jar"]
    assert all(Path(p).parent == cache / f"delta-{delta_jvm.delta_version()}" for p in first)
    assert len(calls.read_text().splitlines()) == 1  # the second call used the cache
    assert str(delta_jvm.POM_PATH) in calls.read_text()


def test_a_failed_fetch_is_a_clear_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_mvn(tmp_path / "bin", 'echo "[ERROR] Could not resolve io.delta:delta-spark"\nexit 1\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    cache = tmp_path / "cache"
    with pytest.raises(MissingDependencyError, match=r"(?s)exit code 1.*Could not resolve io\.delta"):
        delta_jvm.delta_jars(cache)
    assert list(cache.iterdir()) == []  # no half-filled folder that a later call would trust


def test_no_maven_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    with pytest.raises(MissingDependencyError, match="'mvn' is not on PATH.*apt-get install maven"):
        delta_jvm.delta_jars(tmp_path / "cache")


def test_server_settings_keep_the_users_own(tmp_path: Path) -> None:
    folder = delta_jvm.jars_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "delta-spark_2.13-x.jar").touch()
    (folder / ".complete").touch()
    jar = str((folder / "delta-spark_2.13-x.jar").resolve())
    conf = delta_jvm.with_delta({}, tmp_path)
    assert conf == {"spark.jars": jar, **delta_jvm.DELTA_SESSION_CONF}
    mine = {
        "spark.jars": "/opt/mine.jar",
        "spark.sql.extensions": "com.example.Ext",
        "spark.sql.catalog.spark_catalog": "com.example.Catalog",
    }
    merged = delta_jvm.with_delta(mine, tmp_path)
    assert merged["spark.jars"] == f"/opt/mine.jar,{jar}"
    assert (
        merged["spark.sql.extensions"] == "com.example.Ext,io.delta.sql.DeltaSparkSessionExtension"
    )
    assert merged["spark.sql.catalog.spark_catalog"] == "com.example.Catalog"
    # asked twice, nothing is doubled
    assert delta_jvm.with_delta(merged, tmp_path) == merged
