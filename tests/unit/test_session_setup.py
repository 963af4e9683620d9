"""What ``qc.session()`` asks of a server once it is connected (issue 34), checked on a
stand-in session that records the calls in order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qbeast_connect.exceptions import PluginVersionMismatchError
from qbeast_connect.spark.plugin_setup import SESSION_CONF
from qbeast_connect.spark.session import register_plugin
from server_plugin.datasource import PLUGIN_VERSION


class _Query:
    def __init__(self, spark: _RecordingSpark, args: tuple[int, ...]) -> None:
        self.spark = spark
        self.args = args

    def select(self, *_: object) -> _Query:
        return self

    def collect(self) -> list[dict[str, str]]:
        self.spark.calls.append(f"probe over range{self.args}")
        return [{"answer": json.dumps(self.spark.answer)}]


class _RecordingSpark:
    def __init__(self, version: str = PLUGIN_VERSION) -> None:
        self.conf = self
        self.dataSource = self
        self.calls: list[str] = []
        self.answer = {"python": "3.11.0", "version": version, "origin": "/site/x.py"}

    def set(self, key: str, _: str) -> None:
        self.calls.append(f"conf {key}")

    def range(self, *args: int) -> _Query:
        return _Query(self, args)

    def register(self, source: Any) -> None:
        self.calls.append(f"register {source.name()}")


def test_setup_runs_one_single_task_query_then_registers() -> None:
    """One query reaches the server's Python workers, over one partition (one worker
    starts: it failed before issue 34, with a partition per core); registration follows."""
    spark = _RecordingSpark()
    register_plugin(spark)  # type: ignore[arg-type]
    assert spark.calls == [
        *(f"conf {key}" for key in SESSION_CONF),
        "probe over range(0, 1, 1, 1)",
        "register qbeast_snapshot",
        "register qbeast_write",
        "register qbeast_command",
        "register qbeast_timeline_write",
        "register qbeast",
    ]


def test_a_plugin_of_another_version_fails_before_anything_is_registered() -> None:
    spark = _RecordingSpark(version="0.0.1")
    with pytest.raises(PluginVersionMismatchError, match="0.0.1"):
        register_plugin(spark)  # type: ignore[arg-type]
    assert not any(call.startswith("register") for call in spark.calls)
