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


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = qc.session(**{"spark.sql.shuffle.partitions": "4"})
    yield session
    qc.stop()


@pytest.fixture
def table_path(tmp_path: Path) -> str:
    return str(tmp_path / "table")
