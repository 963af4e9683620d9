"""The progress line: formatting, switching on and off, and the handler protocol."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pytest

from qbeast_connect import progress
from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.progress import StageProgress, format_stages, progress_enabled, set_progress


@dataclass
class Stage:  # the fields of pyspark.sql.connect.shell.progress.StageInfo
    stage_id: int
    num_tasks: int
    num_completed_tasks: int
    num_bytes_read: int = 0
    done: bool = False


@pytest.fixture(autouse=True)
def _default_setting(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    set_progress(None)
    yield
    set_progress(None)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_the_first_unfinished_stage() -> None:
    stages = [Stage(4, 200, 120), Stage(2, 10, 10, done=True), Stage(7, 5, 0)]
    assert format_stages(stages) == "stage 2/3: 120/200 tasks"
    assert format_stages([Stage(1, 8, 8, done=True)]) == "stage 1/1: 8/8 tasks"
    assert format_stages([]) is None


def test_default_is_on_only_for_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert progress_enabled(Tty()) is True
    assert progress_enabled(io.StringIO()) is False
    monkeypatch.setenv(progress.ENV_VAR, "0")
    assert progress_enabled(Tty()) is False
    monkeypatch.setenv(progress.ENV_VAR, "on")
    assert progress_enabled(io.StringIO()) is True
    set_progress(False)  # the session-level switch wins over the environment
    assert progress_enabled(io.StringIO()) is False
    with pytest.raises(InvalidOptionError):
        set_progress("yes")  # type: ignore[arg-type]


def test_the_handler_rewrites_one_line_and_clears_it() -> None:
    out = Tty()
    handler = StageProgress(out)
    handler(stages=[Stage(1, 200, 120)], inflight_tasks=4, operation_id="op", done=False)
    handler(stages=[Stage(1, 200, 120)], inflight_tasks=4, operation_id="op", done=False)
    handler(
        stages=[Stage(1, 200, 200, done=True), Stage(2, 5, 1)],
        inflight_tasks=1,
        operation_id="op",
        done=False,
    )
    handler(stages=[], inflight_tasks=0, operation_id="op", done=True)
    text = out.getvalue()
    assert text.count("stage 1/1: 120/200 tasks") == 1  # unchanged lines are not rewritten
    assert "\rstage 2/2: 1/5 tasks" in text
    assert text.endswith("\r" + " " * len("stage 1/1: 120/200 tasks") + "\r")
    assert "\n" not in text


def test_a_quiet_handler_prints_nothing() -> None:
    out = Tty()
    set_progress(False)
    StageProgress(out)(stages=[Stage(1, 2, 1)], inflight_tasks=1, operation_id=None, done=False)
    assert out.getvalue() == ""


def test_attach_registers_once() -> None:
    class Session:
        def __init__(self) -> None:
            self.handlers: list[Any] = []

        def registerProgressHandler(self, handler: Any) -> None:
            self.handlers.append(handler)

    session = Session()
    first = progress.attach(session)
    assert progress.attach(session) is first and session.handlers == [first]
    assert progress.attach(object()) is None
