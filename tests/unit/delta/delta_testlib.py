"""Shared helpers for the Delta log tests: write data files and commit them."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from server_plugin.delta.actions import Action, AddFile
from server_plugin.delta.committer import add_file_for, commit, create_table_actions
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.file_stats import compute_stats
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.storage import Storage

REPO_ROOT = Path(__file__).resolve().parents[3]


def write_data_file(
    storage: Storage,
    table: pa.Table,
    *,
    subdir: str = "",
    tags: Mapping[str, str] | None = None,
    data_change: bool = True,
    stats_fn: Callable[[pa.Table], str | None] = compute_stats,
) -> AddFile:
    """Write ``table`` as a new parquet file and return its add action (with stats)."""
    name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    rel = f"{subdir}/{name}" if subdir else name
    with storage.open_output(rel) as out:
        pq.write_table(table, out, coerce_timestamps="us", allow_truncated_timestamps=False)
    return add_file_for(storage, rel, stats=stats_fn(table), tags=tags, data_change=data_change)


def qbeast_tags(revision: int = 1) -> dict[str, str]:
    """Tags shaped like the ones qbeast writes."""
    blocks = [{"cubeId": "", "minWeight": -2147483648, "maxWeight": 2147483647, "elementCount": 3}]
    return {"revision": str(revision), "blocks": json.dumps(blocks, separators=(",", ":"))}


def create_table(
    storage: Storage,
    data: pa.Table,
    *,
    configuration: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
    with_data: bool = True,
    stats_fn: Callable[[pa.Table], str | None] = compute_stats,
) -> int:
    """Create a table at version 0, optionally holding ``data`` in one file."""
    actions: list[Action] = [
        *create_table_actions(arrow_schema_to_delta(data.schema), configuration)
    ]
    if with_data:
        actions.append(write_data_file(storage, data, tags=tags, stats_fn=stats_fn))
    return commit(
        storage,
        actions,
        TransactionReadSet(read_version=-1),
        operation="CREATE TABLE",
        operation_parameters={"mode": "ErrorIfExists", "partitionBy": []},
    )


def append(
    storage: Storage,
    data: pa.Table,
    *,
    tags: Mapping[str, str] | None = None,
    extra: Sequence[Action] = (),
    read_version: int | None = None,
    stats_fn: Callable[[pa.Table], str | None] = compute_stats,
) -> int:
    """Blind-append ``data`` as one new file."""
    if read_version is None:
        read_version = read_snapshot(storage).version
    add = write_data_file(storage, data, tags=tags, stats_fn=stats_fn)
    return commit(
        storage,
        [add, *extra],
        TransactionReadSet(read_version=read_version),
        operation="WRITE",
        operation_parameters={"mode": "Append"},
    )


def read_rows(storage: Storage, version: int | None = None) -> pa.Table:
    """Read every live file of our snapshot and concatenate the rows."""
    snapshot = read_snapshot(storage, version)
    schema = snapshot.arrow_schema()
    tables = [pq.read_table(storage.resolve(key)).cast(schema) for key in sorted(snapshot.files)]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)


def sort_rows(table: pa.Table, keys: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts, sorted by ``keys`` (default: all sortable columns) for comparison."""
    rows = [{k: _nan_safe(v) for k, v in row.items()} for row in table.to_pylist()]
    key_names = list(keys) if keys is not None else table.column_names
    return sorted(rows, key=lambda r: tuple(_sort_key(r[k]) for k in key_names))


def _nan_safe(value: Any) -> Any:
    """NaN != NaN would make equal tables compare unequal; use a marker instead."""
    if isinstance(value, float) and value != value:
        return "<NaN>"
    return value


def _sort_key(value: Any) -> tuple[int, str]:
    return (0, "") if value is None else (1, repr(value))


def log_lines(storage: Storage, version: int) -> list[str]:
    """The raw lines of commit ``version``."""
    data = storage.read_bytes(f"_delta_log/{version:020d}.json").decode("utf-8")
    return data.split("\n")


def start_together(commands: Sequence[Sequence[str]], go_file: Path, **popen: Any) -> list[Any]:
    """Start one process per command and release them at the same moment.

    Each process prints ``ready`` once it has imported what it needs and then waits until
    ``go_file`` exists; this touches it when every process is ready. No fixed sleep, so a
    slow interpreter start only delays the race, never skips it.
    """
    procs = [
        subprocess.Popen(
            list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
        )
        for cmd in commands
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            _out, err = proc.communicate(timeout=60)
            raise AssertionError(f"worker did not start: {line!r} {err}")
    go_file.touch()
    return procs
