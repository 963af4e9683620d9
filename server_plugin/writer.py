"""Write tasks and the driver-side commit of the ``qbeast_write`` data source."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast_connect.exceptions import CommitConflictError, InvalidOptionError
from qbeast_connect.model.block import Block, encode_blocks
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.weight import MAX_WEIGHT
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan
from server_plugin.delta.actions import AddFile, FrozenMap, RemoveFile, Txn
from server_plugin.delta.committer import (
    CommitOutcomeUnknownError,
    commit,
    create_table_actions,
)
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.file_stats import compute_safe_stats
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import Storage, storage_for
from server_plugin.messages import WriteTaskMessage, WrittenFile

#: Rows buffered per file group before they are flushed as a parquet row group.
ROW_GROUP_ROWS = 1_000_000


class _GroupFile:
    """One open parquet file of a write task (one per file group)."""

    def __init__(self, storage: Storage, schema: pa.Schema, revision_id: int | None) -> None:
        self.name = f"{uuid.uuid4()}.parquet"
        self.storage = storage
        self.schema = schema
        self.revision_id = revision_id
        self.pending: list[pa.RecordBatch] = []
        self.block_min: dict[str, int] = {}
        self.block_count: dict[str, int] = {}
        self.rows = 0

    def add(self, batch: pa.RecordBatch, cubes: Sequence[str], mins: Sequence[int],
            counts: Sequence[int]) -> None:
        self.pending.append(batch)
        self.rows += batch.num_rows
        for cube, low, count in zip(cubes, mins, counts, strict=True):
            old = self.block_min.get(cube)
            self.block_min[cube] = low if old is None else min(old, low)
            self.block_count[cube] = self.block_count.get(cube, 0) + count

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self.pending, schema=self.schema)


def _arrow_batches(iterator: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    for item in iterator:
        if isinstance(item, pa.RecordBatch):
            yield item
        elif isinstance(item, pa.Table):
            yield from item.to_batches()
        else:  # pragma: no cover - Spark always sends Arrow to an Arrow writer
            raise InvalidOptionError(f"unexpected batch type {type(item).__name__}")


def write_task(plan: WritePlan, iterator: Iterator[Any]) -> WriteTaskMessage:
    """Index and write the rows of one Spark task; return the files written."""
    from qbeast_connect.index.assignment import CubeAssigner, block_summaries, cube_labels, group_rows
    from qbeast_connect.index.normalize import normalize

    storage = storage_for(plan.table_path)
    revision = Revision.from_json(plan.revision_json) if plan.revision_json else None
    assigner = (
        CubeAssigner(revision.dimension_count, plan.cube_weights) if revision is not None else None
    )
    files: dict[int, _GroupFile] = {}
    data_schema: pa.Schema | None = None
    for batch in _arrow_batches(iterator):
        if batch.num_rows == 0:
            continue
        if data_schema is None:
            data_schema = _data_schema(batch.schema)
        data = batch.select([f.name for f in data_schema])
        if revision is None or assigner is None:
            target = files.setdefault(0, _GroupFile(storage, data_schema, None))
            target.add(data, [], [], [])
            continue
        weights = batch.column(WEIGHT_COLUMN).to_numpy(zero_copy_only=False).astype(np.int32)
        columns = [batch.column(name) for name in revision.column_names]
        points = normalize(revision.transformations, columns)
        assigned = assigner.assign(points, weights)
        labels, inverse = cube_labels(assigned, revision.dimension_count)
        groups = group_rows(inverse, labels, plan.cube_groups)
        order = np.argsort(groups, kind="stable")
        sorted_groups = groups[order]
        bounds = np.flatnonzero(np.diff(sorted_groups)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(order)]))
        for start, end in zip(starts, ends, strict=True):
            idx = order[start:end]
            group = int(sorted_groups[start])
            rows_cube = inverse[idx]
            rows_weight = weights[idx]
            summary = block_summaries(np.zeros(len(idx), dtype=np.int32), rows_cube, rows_weight)
            cubes = [labels[int(c)] for _, c, _, _ in summary]
            mins = [int(m) for _, _, m, _ in summary]
            counts = [int(n) for _, _, _, n in summary]
            target = files.get(group)
            if target is None:
                target = files[group] = _GroupFile(storage, data_schema, revision.revision_id)
            target.add(data.take(pa.array(idx)), cubes, mins, counts)
    written = tuple(_finish_file(f, plan) for f in files.values() if f.rows > 0)
    return WriteTaskMessage(files=written)


def _data_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name != WEIGHT_COLUMN], metadata=None)


def _finish_file(group_file: _GroupFile, plan: WritePlan) -> WrittenFile:
    table = group_file.table()
    storage = group_file.storage
    with storage.open_output(group_file.name) as sink:
        pq.write_table(table, sink, compression="snappy", row_group_size=ROW_GROUP_ROWS)
    info = storage.file_info(group_file.name)
    tags: dict[str, str] | None = None
    if group_file.revision_id is not None:
        blocks = [
            Block(
                cube_id=cube,
                min_weight=group_file.block_min[cube],
                max_weight=int(plan.cube_weights.get(cube, MAX_WEIGHT)),
                element_count=group_file.block_count[cube],
            )
            for cube in group_file.block_min
        ]
        tags = {"revision": str(group_file.revision_id), "blocks": encode_blocks(blocks)}
    return WrittenFile(
        path=group_file.name,
        size=info.size,
        modification_time=info.mtime_ms,
        stats=compute_safe_stats(table),
        tags=tags,
        num_records=table.num_rows,
    )


def _written_files(messages: Iterable[Any]) -> list[WrittenFile]:
    out: list[WrittenFile] = []
    for message in messages:
        if isinstance(message, WriteTaskMessage):
            out.extend(message.files)
    return out


def commit_write(plan: WritePlan, messages: Sequence[Any]) -> int:
    """Commit the files the tasks wrote as one Delta transaction; return the version."""
    storage = storage_for(plan.table_path)
    files = _written_files(messages)
    now = int(time.time() * 1000)
    actions: list[Any] = []
    new_table = plan.read_version < 0
    removed: list[str] = []
    base = None
    if new_table:
        if plan.schema_string is None:
            raise InvalidOptionError("a write that creates a table needs a schema")
        actions.extend(
            create_table_actions(plan.schema_string, dict(plan.configuration or {}))
        )
    else:
        base = read_snapshot(storage, plan.read_version)
        if plan.configuration is not None or plan.schema_string is not None:
            old = base.metadata
            configuration = old.configuration
            if plan.configuration is not None:
                configuration = FrozenMap(dict(plan.configuration))
            actions.append(
                dataclasses.replace(
                    old,
                    schema_string=plan.schema_string or old.schema_string,
                    configuration=configuration,
                )
            )
        if plan.mode == "overwrite":
            to_remove = list(base.files.values())
        else:
            wanted = set(plan.remove_paths)
            to_remove = [a for p, a in base.files.items() if p in wanted or a.path in wanted]
            missing = wanted - {a.path for a in to_remove}
            if missing:
                raise CommitConflictError(
                    f"files to rewrite are no longer in the table at version {plan.read_version}: "
                    f"{sorted(missing)[:5]}; reload the table and retry"
                )
        for add in to_remove:
            removed.append(add.path)
            actions.append(
                RemoveFile(
                    path=add.path,
                    deletion_timestamp=now,
                    data_change=plan.data_change,
                    extended_file_metadata=True,
                    partition_values=dict(add.partition_values or {}),
                    size=add.size,
                    tags=None if add.tags is None else dict(add.tags),
                )
            )
    if plan.txn_app_id is not None and plan.txn_version is not None:
        actions.append(Txn(app_id=plan.txn_app_id, version=int(plan.txn_version), last_updated=now))
    for f in files:
        actions.append(
            AddFile(
                path=f.path,
                partition_values={},
                size=f.size,
                modification_time=f.modification_time,
                data_change=plan.data_change,
                stats=f.stats,
                tags=f.tags,
            )
        )
    changes_metadata = new_table or plan.configuration is not None or plan.schema_string is not None
    blind = (
        not changes_metadata and not removed and plan.mode == "append" and plan.data_change
    )
    read_set = TransactionReadSet(
        read_version=plan.read_version,
        read_whole_table=not blind,
        read_files=frozenset(removed),
        removed_files=frozenset(removed),
        app_ids=frozenset({plan.txn_app_id} if plan.txn_app_id else set()),
        changes_metadata=changes_metadata,
        changes_protocol=new_table,
        is_blind_append=blind,
        data_change_only_false=not plan.data_change,
    )
    parameters = {"mode": "Overwrite" if plan.mode == "overwrite" else "Append"}
    extra: dict[str, Any] = {}
    if plan.user_metadata is not None:
        extra["userMetadata"] = plan.user_metadata
    tags = dict(plan.commit_tags or {})
    if plan.hooks:
        from server_plugin.hooks import run_hooks

        tags.update(run_hooks(plan.hooks, actions))
    if tags:
        extra["tags"] = tags
    try:
        return commit(
            storage,
            actions,
            read_set,
            operation=plan.operation,
            operation_parameters=parameters,
            is_blind_append=blind,
            snapshot=base,
            extra_commit_info=extra,
            txn_id=plan.txn_id or None,
        )
    except CommitOutcomeUnknownError:
        raise  # the commit may have landed: its files must stay
    except BaseException:
        _delete_files(storage, [f.path for f in files])
        raise


def abort_write(plan: WritePlan, messages: Sequence[Any]) -> None:
    """Delete the files written by tasks of a failed write (they were never committed)."""
    storage = storage_for(plan.table_path)
    _delete_files(storage, [f.path for f in _written_files(messages)])


def _delete_files(storage: Storage, paths: Iterable[str]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            storage.delete(path)
