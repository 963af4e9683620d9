"""Bad arguments to reads and table operations raise project errors before Spark is reached.

The table is the reference fixture's log (``tests/fixtures/qbeast_spark_table``); its
session is a stand-in that fails the test if any argument check lets a call through.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import InvalidOptionError, QbeastError
from qbeast_connect.spark.snapshot import TableState

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "qbeast_spark_table" / "_delta_log"


class _NoSpark:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"an invalid argument reached Spark (spark.{name})")


def _table() -> qc.QbeastTable:
    metadata: dict[str, Any] = {}
    protocol: dict[str, Any] = {}
    adds: list[dict[str, Any]] = []
    for path in sorted(LOG.glob("*.json")):
        for line in path.read_text().splitlines():
            action = json.loads(line)
            metadata = action.get("metaData", metadata)
            protocol = action.get("protocol", protocol)
            if "add" in action:
                adds.append(action["add"])
    state = TableState("/fixture", 1, protocol, metadata, tuple(adds))
    return qc.QbeastTable(_NoSpark(), "/fixture", state)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [1.5, 1.0, -1, True, "1", float("nan")])
def test_read_version_as_of_fraction_raises_invalid_option(version: Any) -> None:
    with pytest.raises(InvalidOptionError, match="versionAsOf must be a whole number >= 0"):
        _table().read(versionAsOf=version)


@pytest.mark.parametrize("hours", [float("nan"), float("inf"), -1, "168", None, True])
def test_vacuum_nan_raises_invalid_option(hours: Any) -> None:
    with pytest.raises(InvalidOptionError, match="retentionHours must be a finite number"):
        _table().vacuum(hours)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.vacuum(168, dryRun="yes"), "dryRun must be True or False"),
        (lambda t: t.vacuum(168, enforceRetentionDuration=1), "enforceRetentionDuration"),
        (lambda t: t.history(limit=1.5), "limit must be a whole number >= 1"),
        (lambda t: t.history(limit=0), "limit must be a whole number >= 1"),
        (lambda t: t.optimize(fraction="0.5"), "fraction must be a number in"),
        (lambda t: t.optimize(fraction=float("nan")), "fraction must be a number in"),
        (lambda t: t.optimize(revisionID=1.5), "revisionID must be a revision id"),
        (lambda t: t.optimize(options=["userMetadata"]), "options must be a mapping"),
        (lambda t: t.optimize(files="a.parquet"), "files must be a list"),
        (lambda t: t.explainScan(versionAsOf=0.5), "versionAsOf"),
    ],
)
def test_operation_arguments_raise_invalid_option(call: Any, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        call(_table())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"columnsToIndex": None},
        {"columnsToIndex": "id", "sourceFormat": None},
        {"columnsToIndex": "id", "cubeSize": 1.5},
    ],
)
def test_convert_arguments_raise_project_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(QbeastError):
        qc.convertToQbeast(_NoSpark(), "/somewhere", **kwargs)  # type: ignore[arg-type]
