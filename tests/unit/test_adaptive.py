"""``adaptive_off``: AQE set aside for a block and put back as it was, also on errors and
when blocks of several threads overlap."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from qbeast_connect.spark.adaptive import ADAPTIVE_KEY, adaptive_off


class _Conf:
    def __init__(self, values: dict[str, str], fail_restore: bool = False) -> None:
        self.values = values
        self.calls: list[tuple[str, Any]] = []
        self.fail_restore = fail_restore

    def get(self, key: str, default: Any = None) -> str | None:
        self.calls.append(("get", key))
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.calls.append(("set", value))
        if self.fail_restore and value != "false":
            raise ConnectionError("server gone")
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.calls.append(("unset", key))
        if self.fail_restore:
            raise ConnectionError("server gone")
        self.values.pop(key, None)


class _Session:
    def __init__(self, conf: _Conf, session_id: str = "s1") -> None:
        self.conf = conf
        self.session_id = session_id


def test_unset_value_is_unset_again() -> None:
    conf = _Conf({})
    with adaptive_off(_Session(conf)):
        assert conf.values[ADAPTIVE_KEY] == "false"
    assert ADAPTIVE_KEY not in conf.values
    assert [c[0] for c in conf.calls] == ["get", "set", "unset"]


def test_explicit_value_is_restored_after_an_error() -> None:
    conf = _Conf({ADAPTIVE_KEY: "true"})
    with pytest.raises(ValueError, match="boom"), adaptive_off(_Session(conf)):
        raise ValueError("boom")
    assert conf.values[ADAPTIVE_KEY] == "true"


def test_a_failed_restore_does_not_hide_the_block_error() -> None:
    conf = _Conf({}, fail_restore=True)
    with pytest.raises(ValueError, match="boom"), adaptive_off(_Session(conf)):
        raise ValueError("boom")
    # without an error in the block, the failed restore is the error
    conf = _Conf({}, fail_restore=True)
    with pytest.raises(ConnectionError), adaptive_off(_Session(conf, "s2")):
        pass


def test_overlapping_blocks_restore_once_at_the_end() -> None:
    conf = _Conf({ADAPTIVE_KEY: "true"})
    session = _Session(conf)
    inside = threading.Barrier(2)
    leave = threading.Event()
    seen: list[str | None] = []

    def first() -> None:
        with adaptive_off(session):
            inside.wait()
            leave.wait()

    thread = threading.Thread(target=first)
    thread.start()
    with adaptive_off(session):
        inside.wait()
        leave.set()
        thread.join()
        # the other block left first: AQE stays off until this one leaves
        seen.append(conf.values.get(ADAPTIVE_KEY))
    assert seen == ["false"]
    assert conf.values[ADAPTIVE_KEY] == "true"
    assert [c[0] for c in conf.calls] == ["get", "set", "set"]
