"""Helpers for Spark tests: read tables back independently and compare row multisets."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa


def log_actions(path: str) -> list[tuple[int, dict[str, Any]]]:
    """All actions of the table's JSON commits as (version, action) pairs."""
    out: list[tuple[int, dict[str, Any]]] = []
    log = Path(path) / "_delta_log"
    for file in sorted(log.glob("*.json")):
        version = int(file.name.split(".")[0])
        for line in file.read_text().splitlines():
            if line.strip():
                out.append((version, json.loads(line)))
    return out


def live_adds(path: str, version: int | None = None) -> dict[str, dict[str, Any]]:
    """Live add actions by path, replayed from the JSON commits (no checkpoints needed), of
    the latest version or of ``version``.

    A logical file is the pair (path, deletion vector): a ``remove`` takes away the live
    add of its path only when it names the same vector (Delta's DELETE writes
    ``remove(p)`` and ``add(p, dv)`` in one commit, in either order)."""
    live: dict[str, dict[str, Any]] = {}
    for v, action in log_actions(path):
        if version is not None and v > version:
            break
        if "add" in action:
            live[action["add"]["path"]] = action["add"]
        elif "remove" in action:
            removed = action["remove"]
            current = live.get(removed["path"])
            if current is not None and current.get("deletionVector") == removed.get(
                "deletionVector"
            ):
                del live[removed["path"]]
    return live


def latest_configuration(path: str) -> dict[str, str]:
    """The configuration of the last metaData action."""
    config: dict[str, str] = {}
    for _, action in log_actions(path):
        if "metaData" in action:
            config = action["metaData"]["configuration"]
    return config


def row_digest(table: pa.Table, columns: list[str] | None = None) -> tuple[int, str]:
    """(row count, order-independent digest of the rows) of an Arrow table."""
    cols = columns or table.column_names
    rows = table.select(cols).to_pylist()
    return rows_digest([tuple(r[c] for c in cols) for r in rows])


def row_key(values: tuple[Any, ...]) -> str:
    """The text a row is digested as: its values normalised (datetimes as naive UTC ISO
    text, NaN as ``"NaN"``), in column order."""
    return repr(tuple(_norm(v) for v in values))


def rows_digest(rows: list[tuple[Any, ...]]) -> tuple[int, str]:
    """:func:`row_digest` of rows given as Python value tuples (as Arrow's ``to_pylist``
    gives them): the same digest for the same rows."""
    digests = sorted(hashlib.sha256(row_key(r).encode()).hexdigest() for r in rows)
    return len(rows), hashlib.sha256("".join(digests).encode()).hexdigest()


def _norm(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        if getattr(value, "tzinfo", None) is not None:
            value = value.astimezone(__import__("datetime").timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def spark_digest(df: Any, columns: list[str] | None = None) -> tuple[int, str]:
    """Digest of a Spark DataFrame's rows (collected as Arrow)."""
    return row_digest(df.toArrow(), columns)


def deltalake_table(path: str) -> pa.Table:
    """Read the table with the independent delta-rs reader."""
    from deltalake import DeltaTable

    return DeltaTable(path).to_pyarrow_table()


#: 2024-01-01 00:00:00 UTC, in seconds: the first hour of :func:`hourly_events`.
EVENTS_START = 1_704_067_200


def hourly_events(spark: Any, hour: int) -> Any:
    """400 events of one hour (``event_time`` inside it), users in [0, 1000), and a payload:
    the rows of one hourly append in the compaction and time-ordered append tests."""
    return spark.range(400, numPartitions=1).selectExpr(
        f"timestamp_seconds({EVENTS_START} + {hour} * 3600 + pmod(hash(id, {hour}, 1), 3600)) "
        "AS event_time",
        f"cast(pmod(hash(id, {hour}, 2), 1000) AS int) AS user_id",
        f"concat('event-', {hour}, '-', id) AS payload",
    )
