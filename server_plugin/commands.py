"""Table commands that run inside the server: convert to qbeast, vacuum, and deletes
written as deletion vectors (:mod:`server_plugin.row_deletes`).

They are reached through the ``qbeast_command`` data source: the client sends one JSON
command as an option and collects the result rows ``(kind, payload)``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from qbeast_connect.exceptions import (
    InvalidOptionError,
    NotAQbeastTableError,
    QbeastError,
    TableNotFoundError,
)
from qbeast_connect.model.column_spec import parse_columns_to_index
from qbeast_connect.model.revision import staging_revision
from qbeast_connect.rules.columns import check_column_names
from server_plugin.delta.actions import FrozenMap
from server_plugin.delta.committer import add_file_for, commit, create_table_actions
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.deletion_vectors import storage_key as dv_storage_key
from server_plugin.delta.file_stats import compute_safe_stats
from server_plugin.delta.log_reader import latest_version, read_snapshot
from server_plugin.delta.properties import DELETED_FILE_RETENTION, parse_interval_ms
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.snapshot import DeltaSnapshot
from server_plugin.delta.storage import LocalStorage, Storage, storage_for

LAST_REVISION_KEY = "qbeast.lastRevisionID"


def run_command(command: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Run one command and yield its result rows."""
    name = command.get("command")
    if name == "convert":
        yield from convert_to_qbeast(command)
    elif name == "vacuum":
        yield from vacuum(command)
    elif name == "delete_vectors":
        from server_plugin.row_deletes import delete_with_vectors

        yield from delete_with_vectors(command)
    elif name == "vector_bitmaps":
        yield from vector_bitmaps(command)
    else:
        raise InvalidOptionError(
            f"unknown command {name!r}: use convert, vacuum, delete_vectors or vector_bitmaps"
        )


def vector_bitmaps(command: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The rows each deletion vector of ``vectors`` (the ``add``'s JSON objects, of the table
    at ``path``) deletes, as :func:`~server_plugin.delta.deletion_vectors.row_bitmap` gives
    them: one ``result`` row per vector, in order, with ``first``, ``last`` and ``words``
    (base64)."""
    import base64

    from server_plugin.delta.deletion_vectors import (
        DeletionVectorDescriptor,
        read_deletion_vector,
        row_bitmap,
    )

    storage = storage_for(str(command["path"]), command.get("storageOptions"))
    for vector in command["vectors"]:
        rows = read_deletion_vector(storage, DeletionVectorDescriptor.from_json(vector))
        first, last, words = row_bitmap(rows)
        payload = {"first": first, "last": last, "words": base64.b64encode(words).decode()}
        yield ("result", json.dumps(payload))


def _qbeast_configuration(command: Mapping[str, Any], columns: list[str]) -> dict[str, str]:
    cube_size = int(command["cubeSize"])
    revision = staging_revision(str(command["path"]), cube_size, columns, int(time.time() * 1000))
    return {
        LAST_REVISION_KEY: "0",
        "qbeast.revision.0": revision.to_json(),
        "columnsToIndex": str(command["columnsToIndex"]),
        "cubeSize": str(cube_size),
        "tableFormat": "delta",
        **{str(k): str(v) for k, v in (command.get("properties") or {}).items()},
    }


def _is_data_file(name: str) -> bool:
    parts = name.split("/")
    if any(p.startswith(("_", ".")) for p in parts):
        return False
    return name.endswith(".parquet")


def convert_to_qbeast(command: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Make a parquet directory or a Delta table a qbeast table (staging revision 0).

    Existing files are not rewritten: they become the staging area, read and sampled in
    full, and indexed by a later ``optimize(0)`` or simply left as they are.
    """
    path = str(command["path"])
    storage = storage_for(path, command.get("storageOptions"))
    columns = [s.name for s in parse_columns_to_index(str(command["columnsToIndex"]))]
    source = str(command.get("sourceFormat", "parquet")).lower()
    version = latest_version(storage)
    if version is not None:
        snapshot = read_snapshot(storage, version)
        config = dict(snapshot.metadata.configuration)
        if LAST_REVISION_KEY in config:
            yield ("result", json.dumps({"version": version, "converted": False}))
            return
        if snapshot.metadata.partition_columns:
            raise InvalidOptionError(
                f"the Delta table at {path} is partitioned by "
                f"{list(snapshot.metadata.partition_columns)}; qbeast tables cannot be "
                "partitioned: rewrite it unpartitioned first"
            )
        _check_columns(columns, snapshot.metadata.schema_string, path)
        config.update(_qbeast_configuration(command, columns))
        metadata = _replace_configuration(snapshot.metadata, config)
        new_version = _commit_conversion(storage, command, [metadata], version, snapshot)
        yield ("result", json.dumps({"version": new_version, "converted": True}))
        return
    if source == "delta":
        raise TableNotFoundError(f"no Delta table at {path} (sourceFormat='delta')")
    if source != "parquet":
        raise InvalidOptionError(f"sourceFormat must be 'parquet' or 'delta', got {source!r}")
    from server_plugin.locations import check_new_table_location

    # the parquet files become the table's: never inside another table's directory
    check_new_table_location(storage, existing_files=True)
    files = [f for f in storage.list_files_recursive("") if _is_data_file(f.name)]
    if not files:
        raise TableNotFoundError(f"no parquet files under {path} to convert")
    partitioned = sorted({f.name.split("/")[0] for f in files if "/" in f.name})
    if partitioned:
        raise InvalidOptionError(
            f"the parquet directory {path} has subdirectories ({', '.join(partitioned[:3])}); "
            "partitioned sources cannot be converted to qbeast: rewrite them unpartitioned"
        )
    schema = None
    adds = []
    for info in files:
        table = _read_parquet(storage, info.name, path)
        if schema is None:
            schema = table.schema
        elif not table.schema.equals(schema, check_metadata=False):
            raise InvalidOptionError(
                f"parquet file {info.name} has schema {table.schema} but {files[0].name} has "
                f"{schema}; all files of a converted directory must share one schema"
            )
        adds.append(add_file_for(storage, info.name, stats=compute_safe_stats(table)))
    assert schema is not None
    schema_string = arrow_schema_to_delta(schema)
    _check_columns(columns, schema_string, path)
    actions = [
        *create_table_actions(schema_string, _qbeast_configuration(command, columns)),
        *adds,
    ]
    new_version = _commit_conversion(storage, command, actions, -1, None)
    yield ("result", json.dumps({"version": new_version, "converted": True, "files": len(adds)}))


def _commit_conversion(
    storage: Storage,
    command: Mapping[str, Any],
    actions: list[Any],
    read_version: int,
    snapshot: DeltaSnapshot | None,
) -> int:
    """Commit a conversion; ``read_version`` -1 creates the table (a parquet directory).

    Converting a Delta table changes only its metadata; a parquet directory becomes a new
    table whose protocol and files are all written by this commit.
    """
    new_table = read_version < 0
    return commit(
        storage,
        actions,
        TransactionReadSet(
            read_version=read_version,
            read_whole_table=new_table,
            read_files=frozenset(),
            removed_files=frozenset(),
            app_ids=frozenset(),
            changes_metadata=True,
            changes_protocol=new_table,
            is_blind_append=False,
            data_change_only_false=False,
        ),
        operation="CONVERT TO QBEAST",
        operation_parameters={"columnsToIndex": command["columnsToIndex"]},
        snapshot=snapshot,
    )


def _read_parquet(storage: Storage, name: str, path: str) -> pa.Table:
    """Read one file of a directory being converted; a file that is not parquet is refused."""
    try:
        with storage.open_input(name) as handle:
            return pq.read_table(handle)
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, QbeastError):
            raise
        raise InvalidOptionError(
            f"cannot convert {path}: {name} is not a readable parquet file ({exc}); "
            "remove or replace it, then convert again"
        ) from None


def _check_columns(columns: list[str], schema_string: str, path: str) -> None:
    # a converted table is written to by optimize and appends: the same names as a write
    check_column_names([f["name"] for f in json.loads(schema_string)["fields"]], path)
    names = {f["name"].lower() for f in json.loads(schema_string)["fields"]}
    missing = [c for c in columns if c.lower() not in names]
    if missing:
        raise InvalidOptionError(
            f"columnsToIndex names {missing}, which the table at {path} does not have; "
            f"its columns are {sorted(names)}"
        )


def _replace_configuration(metadata: Any, configuration: Mapping[str, str]) -> Any:
    import dataclasses

    return dataclasses.replace(metadata, configuration=FrozenMap(dict(configuration)))


def vacuum(command: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Delete files under the table root that the table no longer references.

    A file is deleted only when it is neither live nor a tombstone younger than the
    retention, and its own modification time is older than the retention (which spares
    files of writers that have not committed yet). ``_delta_log`` and hidden files are
    never touched.
    """
    path = str(command["path"])
    storage = storage_for(path, command.get("storageOptions"))
    version = latest_version(storage)
    if version is None:
        raise TableNotFoundError(f"no Delta table at {path} to vacuum")
    snapshot = read_snapshot(storage, version)
    if LAST_REVISION_KEY not in snapshot.metadata.configuration and command.get("qbeastOnly"):
        raise NotAQbeastTableError(f"the table at {path} has no qbeast metadata")
    retention_hours = float(command["retentionHours"])
    if not math.isfinite(retention_hours) or retention_hours < 0:
        raise InvalidOptionError(
            f"retentionHours must be a finite number of hours >= 0, got "
            f"{command['retentionHours']!r}; e.g. 168 keeps one week of removed files"
        )
    retention_ms = int(retention_hours * 3_600_000)
    table_retention = parse_interval_ms(
        snapshot.metadata.configuration.get(DELETED_FILE_RETENTION, "interval 1 week")
    )
    if command.get("enforceRetentionDuration", True) and retention_ms < table_retention:
        raise InvalidOptionError(
            f"retentionHours={command['retentionHours']} is shorter than the table's "
            f"{DELETED_FILE_RETENTION} ({table_retention / 3_600_000:g} hours); readers of "
            "older versions could lose files. Pass enforceRetentionDuration=False to force it"
        )
    now = int(time.time() * 1000)
    cutoff = now - retention_ms
    keep = set(snapshot.files)
    keep |= {p for p, r in snapshot.tombstones.items() if (r.deletion_timestamp or 0) >= cutoff}
    # a tombstone key may carry a deletion vector's id after the path
    keep |= {p.split("\n", 1)[0] for p in keep}
    vectors = [a.deletion_vector for a in snapshot.files.values()] + [
        r.deletion_vector
        for r in snapshot.tombstones.values()
        if (r.deletion_timestamp or 0) >= cutoff
    ]
    keep |= {
        dv_storage_key(dv, storage.root_uri)
        for dv in vectors
        if dv is not None and not dv.is_inline
    }
    deleted: list[str] = []
    for info in _candidate_files(storage):
        if info.name in keep or info.mtime_ms >= cutoff:
            continue
        deleted.append(info.name)
    if not command.get("dryRun"):
        for name in deleted:
            storage.delete(name)
    yield (
        "result",
        json.dumps({"version": version, "dryRun": bool(command.get("dryRun")), "files": deleted}),
    )


def _candidate_files(storage: Storage) -> Iterator[Any]:
    """The files vacuum may delete: not in ``_delta_log``, not hidden, not in the directory
    of a nested table (a subdirectory with its own ``_delta_log``), and not a symbolic link
    (never written by a table writer; it may point anywhere)."""
    listed = storage.list_files_recursive("")
    nested = {
        info.name.rsplit("/_delta_log/", 1)[0] + "/"
        for info in listed
        if "/_delta_log/" in info.name
    }
    for info in listed:
        first = info.name.split("/")[0]
        if first == "_delta_log":
            continue
        parts = info.name.split("/")
        hidden = any(p.startswith((".", "_")) and "=" not in p for p in parts)
        if hidden or any(info.name.startswith(prefix) for prefix in nested):
            continue
        if isinstance(storage, LocalStorage) and os.path.islink(storage.local_path(info.name)):
            continue
        yield info
