"""The command line without a server: parsing, errors, the server state file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from qbeast_connect import cli


def test_every_command_parses() -> None:
    parser = cli.build_parser()
    cases = [
        [
            "server",
            "start",
            "--port",
            "15010",
            "--host",
            "0.0.0.0",
            "--master",
            "local[2]",
            "--log-file",
            "/tmp/l",
            "--conf",
            "a=b",
            "--foreground",
        ],
        ["server", "stop", "--state-dir", "/tmp/s"],
        ["server", "status"],
        ["describe", "/t", "--remote", "sc://h:1"],
        ["metrics", "/t", "--revision", "2", "--json"],
        ["history", "/t", "--limit", "3"],
        ["optimize", "/t", "--revision", "0", "--fraction", "0.5"],
        ["vacuum", "/t", "--retention-hours", "0", "--dry-run"],
        ["convert", "/t", "--columns", "a,b", "--cube-size", "10", "--source-format", "delta"],
        ["viz", "/t", "-o", "i.png", "--fraction", "0.1", "--where", "a < 3"],
        ["describe", "--table", "db.events"],
        ["optimize", "--table", "events", "--revision", "1"],
    ]
    for argv in cases:
        args = parser.parse_args(argv)
        assert callable(args.func)
    args = parser.parse_args(cases[0])
    assert (args.port, args.host, args.conf, args.foreground) == (15010, "0.0.0.0", ["a=b"], True)


@pytest.mark.parametrize(
    "argv",
    [
        ["viz", "/t", "-o", "i.png", "--fraction", "1.5"],
        ["convert", "/t"],  # --columns is required
        ["history", "/t", "--limit", "0"],
        ["server", "start", "--port", "x"],
        [],
    ],
)
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_qbeast_errors_print_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["server", "start", "--state-dir", str(tmp_path), "--conf", "novalue"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "error: --conf takes KEY=VALUE, got 'novalue'\n"


@pytest.mark.parametrize("argv", [["describe"], ["history", "/t", "--table", "events"]])
def test_a_table_is_a_path_or_a_name_not_both(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # refused before any session is started
    assert cli.main(argv) == 2
    assert "exactly one of them" in capsys.readouterr().err


def test_status_and_stop_without_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["server", "status", "--state-dir", str(tmp_path)]) == 1
    assert cli.main(["server", "stop", "--state-dir", str(tmp_path)]) == 0
    # a state file whose process is gone is stale: reported and removed
    state = tmp_path / cli.STATE_FILE
    state.write_text(json.dumps({"pid": 2**22 + 12345, "port": 1, "url": "sc://localhost:1"}))
    assert cli.main(["server", "status", "--state-dir", str(tmp_path)]) == 1
    assert "stale" in capsys.readouterr().out
    assert not state.exists()


def test_a_recycled_pid_is_not_taken_for_the_server(tmp_path: Path) -> None:
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("needs /proc")
    other = subprocess.Popen(["sleep", "30"])  # alive, but not a qbeast-connect server
    try:
        state = tmp_path / cli.STATE_FILE
        state.write_text(json.dumps({"pid": other.pid, "port": 1, "url": "sc://localhost:1"}))
        assert cli.main(["server", "stop", "--state-dir", str(tmp_path)]) == 0
        assert other.poll() is None  # not killed
        assert not state.exists()
    finally:
        other.kill()
        other.wait()


def test_client_urls() -> None:
    assert cli._client_url("0.0.0.0", 15002) == "sc://localhost:15002"
    assert cli._client_url("10.1.2.3", 15002) == "sc://10.1.2.3:15002"
