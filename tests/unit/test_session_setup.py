"""What ``qc.session()`` asks of a server once it is connected (issue 34: a notebook's
first cell is fast), checked on a stand-in session that records the calls."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from qbeast_connect.exceptions import PluginVersionMismatchError
from qbeast_connect.spark.plugin_setup import SESSION_CONF
from qbeast_connect.spark.session import register_plugin
from server_plugin.datasource import PLUGIN_VERSION

#: How long the stand-in probe waits for a registration before it answers anyway.
_WAIT_S = 5.0


class _Query:
    def __init__(self, spark: _RecordingSpark) -> None:
        self.spark = spark

    def select(self, *_: object) -> _Query:
        return self

    def collect(self) -> list[dict[str, str]]:
        spark = self.spark
        spark.calls.append("probe")
        # the server's first registration runs a Python process of its own: it should be
        # under way while the probe's query runs, not wait for the probe's answer
        spark.overlapped = spark.registering.wait(_WAIT_S)
        return [{"answer": json.dumps(spark.answer)}]


class _RecordingSpark:
    def __init__(self, version: str = PLUGIN_VERSION) -> None:
        self.conf = self
        self.dataSource = self
        self.calls: list[str] = []
        self.registered: list[str] = []
        self.registering = threading.Event()
        self.overlapped = False
        self.answer = {"python": "3.11.0", "version": version, "origin": "/site/x.py"}

    def set(self, key: str, _: str) -> None:
        self.calls.append(f"conf {key}")

    def range(self, *_: int) -> _Query:
        return _Query(self)

    def register(self, source: Any) -> None:
        self.registering.set()
        self.registered.append(source.name())


def test_sources_are_registered_while_the_plugin_check_runs() -> None:
    spark = _RecordingSpark()
    register_plugin(spark)  # type: ignore[arg-type]
    assert spark.overlapped
    assert spark.calls == [*(f"conf {key}" for key in SESSION_CONF), "probe"]
    assert spark.registered == [
        "qbeast_snapshot",
        "qbeast_write",
        "qbeast_command",
        "qbeast_timeline_write",
        "qbeast",
    ]


def test_a_plugin_of_another_version_still_fails_the_session() -> None:
    spark = _RecordingSpark(version="0.0.1")
    with pytest.raises(PluginVersionMismatchError, match="0.0.1"):
        register_plugin(spark)  # type: ignore[arg-type]
