"""One Spark Connect server for the whole test session.

``qbeast_connect.session()`` starts an embedded local Connect server (a child process on a
free port) unless ``SPARK_REMOTE`` points at one. Every test gets its own table directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)


#: Each call's deadline in the tests: the embedded server ends every result stream after
#: 10 s, so a call left unanswered this long is a hang. Twice this (the call, then its
#: retry) stays under the suite's per-test timeout (pyproject.toml), so a hang fails its
#: test with a ServerUnavailableError instead of stopping the run.
CALL_TIMEOUT_S = 90


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = qc.session(call_timeout=CALL_TIMEOUT_S, **{"spark.sql.shuffle.partitions": "4"})
    yield session
    qc.stop()


@pytest.fixture
def table_path(tmp_path: Path) -> str:
    return str(tmp_path / "table")
