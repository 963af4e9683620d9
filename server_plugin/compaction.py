"""Automatic compaction after a ``format("qbeast")`` append, inside the plugin's commit.

A ``format("qbeast")`` write (``df.write.format("qbeast")``, SQL ``INSERT INTO`` a qbeast
table) commits in the data source's ``commit``, which runs in a Python worker of the
server's driver and cannot start a Spark job. The client's compaction
(:mod:`qbeast_connect.spark.auto_compact`) needs one, so these appends would pile up until a
``qbeast_connect`` client appended or optimized. Here the commit compacts them itself, in
its own process: right after the append's commit it applies the same policy
(:func:`qbeast_connect.rules.auto_compact.files_to_compact`) to the table, reads the chosen
runs' files with the plugin's reader (deletion vectors applied), indexes their rows in
one local tree as a compaction's one-job task does (:mod:`server_plugin.append_task`) and
commits them in place of the files read, tagged ``qbeast.autoCompaction``.

Bounds: the rows merged are capped at
:data:`~qbeast_connect.index.task_params.SMALL_APPEND_MAX_ROWS` (one task's worth, held in
this worker's memory; the cascade stops below the cap, so bigger tiers wait for a client
append or ``optimize``), and tables with column mapping are left to the client path. As
after a client append, the append has committed whatever happens here: a compaction
beaten by a concurrent commit, or failing for any reason, commits nothing, leaves no file
behind and fails nothing.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["compact_after_commit"]


def compact_after_commit(
    table_path: str, storage_options: Mapping[str, str] | None = None
) -> int | None:
    """Compact the table's small runs if its settings ask for it and a compaction is due;
    return the compaction's version, or None when none committed (none due, or it gave
    up: the reason is printed to the worker's stderr, which the server logs)."""
    try:
        return _compact(table_path, storage_options)
    except Exception as error:  # the append has committed: never fail it
        print(
            f"qbeast: the automatic compaction after an append to {table_path} committed "
            f"nothing (the append is committed): {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return None


def _compact(table_path: str, storage_options: Mapping[str, str] | None) -> int | None:
    from pyspark.sql.types import StructType

    from qbeast_connect.index.task_params import SMALL_APPEND_MAX_ROWS, in_task_params
    from qbeast_connect.options import BUFFER_CAPACITY_DEFAULT
    from qbeast_connect.rules.auto_compact import (
        AUTO_COMMIT_TAG,
        files_to_compact,
        settings_of,
        staging_file_stats,
    )
    from qbeast_connect.rules.column_mapping import mapping_mode
    from qbeast_connect.write_plan import WritePlan
    from server_plugin.format_read import add_dicts, qbeast_view, read_delta_snapshot
    from server_plugin.writer import commit_write, write_task

    snapshot = read_delta_snapshot(table_path, None)
    if snapshot is None:
        return None
    configuration = snapshot.metadata.configuration
    settings = settings_of(configuration)
    if not settings.enabled or mapping_mode(configuration) not in (None, "none"):
        return None
    qsnap = qbeast_view(snapshot)
    latest = qsnap.latest_revision
    if latest is None or latest.is_staging or snapshot.metadata.schema_string is None:
        return None
    adds = add_dicts(snapshot)
    stats = staging_file_stats(qsnap, adds, configuration, snapshot.metadata.schema_string)
    paths = files_to_compact(qsnap, settings, max_rows=SMALL_APPEND_MAX_ROWS, file_stats=stats)
    if not paths:
        return None
    keys = {add.path: key for key, add in snapshot.files.items()}
    chosen = [keys[p] for p in paths]
    schema = StructType.fromJson(json.loads(snapshot.metadata.schema_string))
    rows = _rows(table_path, schema, snapshot, chosen, storage_options)
    statuses = qsnap.cube_statuses(latest.revision_id)
    plan = WritePlan(
        table_path=table_path,
        mode="append",
        read_version=snapshot.version,
        revision_json=latest.to_json(),
        txn_id=str(uuid.uuid4()),
        operation="WRITE",
        data_change=False,
        remove_paths=tuple(paths),
        commit_tags={AUTO_COMMIT_TAG: "true"},
        append_task=in_task_params(
            statuses,
            BUFFER_CAPACITY_DEFAULT,
            SMALL_APPEND_MAX_ROWS,
            SMALL_APPEND_MAX_ROWS,
            compaction=latest.desired_cube_size,
        ),
    )
    message = write_task(plan, _weighted(latest.column_names, rows))
    return commit_write(plan, [message])


def _weighted(names: Any, batches: Iterator[Any]) -> Iterator[Any]:
    """The batches with their rows' weights (Spark's ``hash`` of the indexed columns): the
    ones the rows were written with, so every sample keeps its rows. The task checks them
    against the revision's space (``server_plugin.append_task``)."""
    import pyarrow as pa

    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.write_plan import WEIGHT_COLUMN

    for batch in batches:
        if batch.num_rows:
            weights = spark_hash_columns([batch.column(name) for name in names])
            yield batch.append_column(WEIGHT_COLUMN, pa.array(weights, type=pa.int32()))


def _rows(
    root: str,
    schema: Any,
    snapshot: Any,
    keys: list[str],
    storage_options: Mapping[str, str] | None,
) -> Iterator[Any]:
    """The live rows of the files ``keys`` (storage keys), read by the plugin's reader."""
    from server_plugin.parquet_reader import ParquetFilesReader

    reader = ParquetFilesReader(
        root,
        schema,
        [(key, snapshot.files[key].size) for key in keys],
        storage_options=storage_options or None,
        deletion_vectors={
            key: vector.to_json()
            for key in keys
            if (vector := snapshot.files[key].deletion_vector) is not None
        },
    )
    for partition in reader.partitions():
        yield from reader.read(partition)
