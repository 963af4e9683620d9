"""A persistent catalog for embedded and CLI servers (issue #34: names outlive a restart).

The restart itself is ``integration/test_catalog_restart.py``; here the settings and the
refusals, none of which starts a server."""

from __future__ import annotations

from pathlib import Path

import pytest

import qbeast_connect as qc
from qbeast_connect import cli
from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.spark.class_archive import JAVA_OPTIONS_CONF
from qbeast_connect.spark.server import persistent_catalog, with_persistent_catalog


def test_the_catalog_settings_put_the_metastore_and_warehouse_in_the_directory(
    tmp_path: Path,
) -> None:
    conf = persistent_catalog(tmp_path / "cat")
    root = (tmp_path / "cat").resolve()
    assert root.is_dir()
    assert conf == {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
        JAVA_OPTIONS_CONF: f"-Dderby.system.home={root}",
    }


def test_a_directory_derby_cannot_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match="contains ';'"):
        persistent_catalog(tmp_path / "a;b")
    assert not (tmp_path / "a;b").exists()


def test_the_users_own_jvm_options_are_kept_beside_the_catalogs(tmp_path: Path) -> None:
    conf = with_persistent_catalog(
        {JAVA_OPTIONS_CONF: "-Xss4m", "spark.sql.warehouse.dir": "/elsewhere"},
        str(tmp_path),
    )
    assert conf[JAVA_OPTIONS_CONF] == f"-Xss4m -Dderby.system.home={tmp_path.resolve()}"
    assert conf["spark.sql.warehouse.dir"] == "/elsewhere"  # the user's setting wins
    assert conf["spark.sql.catalogImplementation"] == "hive"


def test_a_remote_server_keeps_its_own_catalog(tmp_path: Path) -> None:
    # refused before any connection is tried (nothing listens on this port)
    with pytest.raises(InvalidOptionError, match="remote server keeps its own"):
        qc.session("sc://127.0.0.1:9", catalog=str(tmp_path))


def test_the_cli_refuses_a_catalog_directory_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    code = cli.main(["server", "start", "--state-dir", str(state), "--catalog", "/tmp/x;y"])
    assert code == 2
    assert "contains ';'" in capsys.readouterr().err
    assert not (state / cli.STATE_FILE).exists()
