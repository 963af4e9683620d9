"""A write frees the checkpoint it made of its input itself, once, and never raises for it."""

from __future__ import annotations

from typing import Any

from pyspark.sql.connect.plan import CachedRemoteRelation

from qbeast_connect.spark.write_input import release


class _Client:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.commands: list[Any] = []
        self.is_closed = False

    def execute_command(self, command: Any) -> None:
        self.commands.append(command)
        if self.fail:
            raise RuntimeError("the server is gone")


class _Session:
    def __init__(self, client: _Client) -> None:
        self.client = client


class _Frame:
    def __init__(self, plan: Any, session: _Session) -> None:
        self._plan = plan
        self.sparkSession = session


def _frozen(client: _Client) -> tuple[_Frame, CachedRemoteRelation]:
    session = _Session(client)
    plan = CachedRemoteRelation("relation-1", session)  # type: ignore[arg-type]
    return _Frame(plan, session), plan


def test_release_frees_the_copy_once_and_leaves_nothing_for_del() -> None:
    client = _Client()
    frame, plan = _frozen(client)
    release(frame)  # type: ignore[arg-type]
    assert len(client.commands) == 1
    sent = client.commands[0].remove_cached_remote_relation_command.relation
    assert sent.relation_id == "relation-1"
    assert plan._relation_id is None
    release(frame)  # type: ignore[arg-type]
    plan.__del__()  # what the garbage collector would run: no call left to make
    assert len(client.commands) == 1


def test_release_never_raises_and_still_disarms_del() -> None:
    client = _Client(fail=True)
    frame, plan = _frozen(client)
    release(frame)  # type: ignore[arg-type]
    assert len(client.commands) == 1 and plan._relation_id is None


def test_release_ignores_frames_that_are_not_checkpoints() -> None:
    client = _Client()
    release(_Frame(object(), _Session(client)))  # type: ignore[arg-type]
    assert client.commands == []
