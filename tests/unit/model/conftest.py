"""Shared fixtures of the model tests: the qbeast-spark reference log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

LOG_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "qbeast_spark_table" / "_delta_log"


def read_commits() -> list[list[dict[str, Any]]]:
    """Return the actions of each commit of the reference log, in version order."""
    commits = []
    for path in sorted(LOG_DIR.glob("*.json")):
        with path.open(encoding="utf-8") as f:
            commits.append([json.loads(line) for line in f if line.strip()])
    return commits


@pytest.fixture(scope="session")
def commits() -> list[list[dict[str, Any]]]:
    """Actions per commit of the reference qbeast-spark log."""
    return read_commits()


@pytest.fixture(scope="session")
def configuration(commits: list[list[dict[str, Any]]]) -> dict[str, str]:
    """The last ``metaData.configuration`` of the reference log."""
    conf: dict[str, str] = {}
    for actions in commits:
        for action in actions:
            if "metaData" in action:
                conf = action["metaData"]["configuration"]
    return conf
