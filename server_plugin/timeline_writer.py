"""The ``qbeast_timeline_write`` data source: time-partitioned Delta tables with timelines.

Tables written here are plain Delta tables partitioned by one string column whose values
are canonical time partition strings (``2015-01-29-06``, ``2015-02``...). Each write task
writes the rows of each partition value to ``<col>=<value>/<uuid>.parquet`` (Hive
escaping, partition column left out of the file). The driver-side ``commit`` reads the
snapshot at the plan's read version, updates the partition timelines and commits the data
files, the removed files and the ``metaData`` carrying the new timelines in ONE Delta
commit, so the timelines never disagree with the table.

The plan comes from :mod:`qbeast_connect.timeline.writer`
(:class:`~qbeast_connect.timeline.plan.TimelineWritePlan`).
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from qbeast_connect.exceptions import (
    InvalidOptionError,
    TableNotFoundError,
)
from qbeast_connect.rules.partition_values import HIVE_DEFAULT_PARTITION
from qbeast_connect.timeline.partition import TimePartition
from qbeast_connect.timeline.plan import TIMELINE_WRITE_FORMAT, TimelineWritePlan
from qbeast_connect.timeline.timeline import (
    configured_impl,
    migrate_timeline,
    new_timeline,
    write_timelines,
)
from qbeast_connect.timeline.update_period import UpdatePeriod
from server_plugin.data_files import (
    arrow_batches,
    delete_files,
    deleted_unless_committed,
    task_files,
)
from server_plugin.delta.actions import AddFile, FrozenMap, Metadata, RemoveFile
from server_plugin.delta.committer import (
    commit,
    create_table_actions,
)
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.file_stats import compute_safe_stats
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.snapshot import DeltaSnapshot
from server_plugin.delta.storage import Storage, storage_for
from server_plugin.delta.storage.scope import storage_scope
from server_plugin.delta.uris import encode_path, normalize_path
from server_plugin.parquet_statistics import parquet_write_options
from server_plugin.revision_rebase import metadata_commutes, rebase_revisions
from server_plugin.time_partitions import current_timelines

__all__ = [
    "PartitionFile",
    "QbeastTimelineWriteSource",
    "TimelineTaskMessage",
    "abort_timeline_write",
    "commit_timeline_write",
    "hive_escape",
    "partition_dir",
    "write_partition_file",
    "write_timeline_task",
]

#: Rows of one partition buffered by a task before they are written as one file.
ROWS_PER_FILE = 1_000_000
_HIVE_ESCAPED = frozenset(
    [chr(c) for c in range(0x01, 0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "[", "]", "^"]
)


def hive_escape(value: str) -> str:
    """Escape a partition column name or value for a Hive-style directory name.

    Characters U+0001-U+001F, ``" # % ' * / : = ? \\ { [ ] ^`` and U+007F become ``%XX``
    (uppercase hex), as Spark and the Delta spec do. Canonical time partition strings
    need no escaping.
    """
    return "".join(f"%{ord(ch):02X}" if ch in _HIVE_ESCAPED else ch for ch in value)


def partition_dir(column: str, value: str | None) -> str:
    """``<column>=<value>`` with Hive escaping (null -> ``__HIVE_DEFAULT_PARTITION__``)."""
    escaped = HIVE_DEFAULT_PARTITION if value is None or value == "" else hive_escape(value)
    return f"{hive_escape(column)}={escaped}"


@dataclass(frozen=True)
class PartitionFile:
    """One data file written by a task, with everything its ``add`` action needs.

    Attributes:
        path: physical path relative to the table root (``<col>=<value>/<uuid>.parquet``).
        value: the partition value (canonical time partition string).
        size: bytes on storage.
        modification_time: epoch milliseconds.
        stats: Delta statistics JSON (data columns only), or None.
        num_records: rows in the file.
    """

    path: str
    value: str
    size: int
    modification_time: int
    stats: str | None
    num_records: int


@dataclass(frozen=True)
class TimelineTaskMessage(WriterCommitMessage):
    """What one write task reports: the files it wrote (possibly none)."""

    files: tuple[PartitionFile, ...]


def write_partition_file(
    storage: Storage, column: str, value: str, table: pa.Table
) -> PartitionFile:
    """Write ``table`` (data columns only) as a new file of partition ``value``."""
    rel = f"{partition_dir(column, value)}/{uuid.uuid4()}.parquet"
    with storage.open_output(rel) as sink:
        pq.write_table(table, sink, compression="snappy", **parquet_write_options(table))
    info = storage.file_info(rel)
    return PartitionFile(
        path=rel,
        value=value,
        size=info.size,
        modification_time=info.mtime_ms,
        stats=compute_safe_stats(table),
        num_records=table.num_rows,
    )


class _TaskFiles:
    """Buffers a task's rows per partition value and writes them as files."""

    def __init__(self, storage: Storage, column: str, period: UpdatePeriod) -> None:
        self.storage = storage
        self.column = column
        self.period = period
        self.pending: dict[str, list[pa.RecordBatch]] = {}
        self.rows: dict[str, int] = {}
        self.checked: set[str] = set()
        self.written: list[PartitionFile] = []

    def check(self, value: str) -> None:
        if value in self.checked:
            return
        self.period.parse(value)  # InvalidOptionError names the expected form
        self.checked.add(value)

    def add(self, value: str, data: pa.RecordBatch) -> None:
        self.check(value)
        self.pending.setdefault(value, []).append(data)
        self.rows[value] = self.rows.get(value, 0) + data.num_rows
        if self.rows[value] >= ROWS_PER_FILE:
            self.flush(value)

    def flush(self, value: str) -> None:
        batches = self.pending.pop(value, [])
        self.rows.pop(value, None)
        if batches:
            table = pa.Table.from_batches(batches)
            self.written.append(write_partition_file(self.storage, self.column, value, table))

    def finish(self) -> tuple[PartitionFile, ...]:
        for value in list(self.pending):
            self.flush(value)
        return tuple(self.written)


def write_timeline_task(plan: TimelineWritePlan, iterator: Iterator[Any]) -> TimelineTaskMessage:
    """Write the rows of one Spark task, one file per partition value; return the files."""
    storage = storage_for(plan.table_path)
    batches = arrow_batches(iterator)
    if plan.operation != "write":
        if any(batch.num_rows for batch in batches):
            raise InvalidOptionError(f"a timeline {plan.operation} takes no rows")
        return TimelineTaskMessage(files=())
    assert plan.period is not None
    files = _TaskFiles(storage, plan.column, UpdatePeriod.from_name(plan.period))
    with deleted_unless_committed(storage, files.written):
        for batch in batches:
            if batch.num_rows == 0:
                continue
            index = batch.schema.get_field_index(plan.column)
            if index < 0:
                raise InvalidOptionError(
                    f"the rows have no partition column {plan.column!r}; "
                    f"columns are {batch.schema.names}"
                )
            values = batch.column(index)
            if values.null_count:
                raise InvalidOptionError(
                    f"partition column {plan.column!r} holds {values.null_count} null(s); "
                    "every row needs a time"
                )
            if not pa.types.is_string(values.type) and not pa.types.is_large_string(values.type):
                values = pc.cast(values, pa.string())
            data = batch.select([i for i in range(batch.num_columns) if i != index])
            encoded = values.dictionary_encode()
            labels = encoded.dictionary.to_pylist()
            if len(labels) == 1:
                files.add(str(labels[0]), data)
                continue
            codes = encoded.indices.to_numpy(zero_copy_only=False)
            order = np.argsort(codes, kind="stable")
            sorted_codes = codes[order]
            starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_codes)) + 1))
            ends = np.concatenate((starts[1:], [len(order)]))
            for start, end in zip(starts, ends, strict=True):
                rows = pa.array(order[start:end])
                files.add(str(labels[int(sorted_codes[start])]), data.take(rows))
        return TimelineTaskMessage(files=files.finish())


# --------------------------------------------------------------------------- commit


def _written(messages: Iterable[Any]) -> list[PartitionFile]:
    return task_files(messages, TimelineTaskMessage)


def _check_schema(schema_string: str, column: str) -> None:
    try:
        fields = json.loads(schema_string)["fields"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidOptionError(f"malformed table schema in the plan: {exc}") from exc
    matching = [f for f in fields if f.get("name") == column]
    if not matching or matching[0].get("type") != "string":
        raise InvalidOptionError(
            f"the time partition column {column!r} must be a string column of the table"
        )


def commit_timeline_write(
    plan: TimelineWritePlan,
    files: Sequence[PartitionFile],
    *,
    now_ms: int | None = None,
) -> int:
    """Commit a timeline write, drop or sync as ONE Delta commit; return the version.

    The timelines start from the ones stored at the plan's read version (or are rebuilt
    from its files when the ``present`` flag is absent or false), then: ``overwrite``
    empties them, ``drop`` removes its partitions, ``write`` adds the partitions of
    ``files``, and ``impls`` changes implementations. The new configuration is committed
    as a ``metaData`` action in the same commit as the ``add``/``remove`` actions. A
    write that adds no new partition to up-to-date timelines commits no ``metaData`` and
    is a blind append.

    Raises:
        TableNotFoundError: a drop or sync of a missing table.
        InvalidOptionError: the table is not partitioned by exactly the plan's column, or
            a value is not a partition of the plan's period.
        CommitConflictError: a concurrent commit changed the table's metadata or files
            this change depends on.
    """
    storage = storage_for(plan.table_path)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    column = plan.column
    new_table = plan.read_version < 0
    base: DeltaSnapshot | None = None
    if new_table:
        if plan.operation != "write":
            raise TableNotFoundError(f"no Delta table at {plan.table_path}")
        if plan.schema_string is None:
            raise InvalidOptionError("a write that creates a table needs a schema")
        _check_schema(plan.schema_string, column)
        old_config: dict[str, str] = {}
    else:
        base = read_snapshot(storage, plan.read_version)
        if tuple(base.partition_columns) != (column,):
            raise InvalidOptionError(
                f"the table at {plan.table_path} is partitioned by "
                f"{list(base.partition_columns)}, not by [{column!r}]; timelines need a table "
                "partitioned by its time partition column only"
            )
        if plan.schema_string is not None:
            _check_schema(plan.schema_string, column)
        old_config = dict(base.configuration)

    timelines = current_timelines(base, column, rebuild=plan.rebuild)
    removes: list[RemoveFile] = []

    def remove_where(keep: Any) -> None:
        assert base is not None
        for add in base.files.values():
            if not keep(add):
                removes.append(add.to_remove(now))

    if plan.mode == "overwrite" and base is not None:
        remove_where(lambda add: False)
        timelines = {p: new_timeline(p, t.impl_name) for p, t in timelines.items()}
    if plan.operation == "drop" and base is not None:
        doomed = set(plan.drop_partitions)
        remove_where(lambda add: add.partition_values.get(column) not in doomed)
        for value in plan.drop_partitions:
            partition = TimePartition.parse(value)
            timeline = timelines.get(partition.period)
            if timeline is not None:
                timeline.drop(partition)
    if plan.operation == "write":
        assert plan.period is not None
        period = UpdatePeriod.from_name(plan.period)
        if period not in timelines:
            timelines[period] = new_timeline(period, configured_impl(old_config, column, period))
        for f in files:
            timelines[period].add(TimePartition.parse(f.value, period))
    config = dict(old_config)
    for period_name, impl in plan.impls.items():
        period = UpdatePeriod.from_name(period_name)
        current = timelines.get(period) or new_timeline(period, impl)
        timelines[period] = migrate_timeline(current, impl)
    new_config = write_timelines(config, column, timelines)

    actions: list[Any] = []
    if new_table:
        assert plan.schema_string is not None
        actions.extend(
            create_table_actions(plan.schema_string, new_config, partition_columns=[column])
        )
        changes_metadata = True
    else:
        assert base is not None
        schema_changed = (
            plan.schema_string is not None and plan.schema_string != base.metadata.schema_string
        )
        changes_metadata = new_config != old_config or schema_changed
        if changes_metadata:
            actions.append(
                dataclasses.replace(
                    base.metadata,
                    schema_string=plan.schema_string or base.metadata.schema_string,
                    configuration=FrozenMap(new_config),
                )
            )
    actions.extend(removes)
    for f in files:
        actions.append(
            AddFile(
                path=encode_path(f.path),
                partition_values={column: f.value},
                size=f.size,
                modification_time=f.modification_time,
                data_change=True,
                stats=f.stats,
            )
        )
    removed = frozenset(normalize_path(r.path, storage.root_uri) for r in removes)
    blind = not changes_metadata and not removes and plan.operation == "write"
    # an append whose timeline change only adds partitions commutes with concurrent appends
    # and is rebased over the ones that added partitions too (server_plugin.timeline_rebase)
    commutes = (
        base is not None
        and plan.operation == "write"
        and plan.mode == "append"
        and not removes
        and metadata_commutes(
            base.metadata, next((a for a in actions if isinstance(a, Metadata)), None)
        )
    )
    read_set = TransactionReadSet(
        read_version=plan.read_version,
        read_whole_table=not blind and not commutes,
        read_files=removed,
        removed_files=removed,
        changes_metadata=changes_metadata,
        changes_protocol=new_table,
        is_blind_append=blind,
        metadata_commutes=commutes,
    )
    operation, parameters = _commit_operation(plan)
    with deleted_unless_committed(storage, files):
        return commit(
            storage,
            actions,
            read_set,
            operation=operation,
            operation_parameters=parameters,
            is_blind_append=blind,
            snapshot=base,
            txn_id=plan.txn_id or None,
            rebase=rebase_revisions if commutes else None,
            # counted by the tasks: files holding NaN or infinities have no stats
            num_output_rows=sum(f.num_records for f in files),
        )


def _commit_operation(plan: TimelineWritePlan) -> tuple[str, dict[str, Any]]:
    if plan.operation == "drop":
        values = ", ".join(f"'{v}'" for v in plan.drop_partitions)
        return "DELETE", {"predicate": [f"{plan.column} IN ({values})"]}
    if plan.operation == "sync":
        return "SET TBLPROPERTIES", {"timelines": plan.column}
    mode = "Overwrite" if plan.mode == "overwrite" else "Append"
    return "WRITE", {"mode": mode, "partitionBy": [plan.column]}


def abort_timeline_write(plan: TimelineWritePlan, messages: Sequence[Any]) -> None:
    """Delete the files written by the tasks of a failed write (never committed)."""
    storage = storage_for(plan.table_path)
    delete_files(storage, [f.path for f in _written(messages)])


# ---------------------------------------------------------------------- data source


def _plan(options: Mapping[str, str]) -> TimelineWritePlan:
    text = options.get("plan")
    if not text:
        raise InvalidOptionError(
            f"format '{TIMELINE_WRITE_FORMAT}' is internal to qbeast-connect: use "
            "qbeast_connect.timeline.write_partitioned()"
        )
    return TimelineWritePlan.from_json(text)


class _TimelineWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], created_root: bool = False) -> None:
        # Spark's CaseInsensitiveDict: keep it, a plain dict copy would lose the case folding
        self.options = options
        # the write creates the table's directory: a failed write removes it again
        self.created_root = created_root

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        with storage_scope(self.options):
            return write_timeline_task(_plan(self.options), iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        with storage_scope(self.options):
            commit_timeline_write(_plan(self.options), _written(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        with storage_scope(self.options):
            abort_timeline_write(_plan(self.options), messages)
            if self.created_root:
                from server_plugin.locations import remove_created_dirs

                remove_created_dirs(storage_for(_plan(self.options).table_path))


class QbeastTimelineWriteSource(DataSource):
    """Writes time-partitioned tables and their timelines (plugin-internal format)."""

    @classmethod
    def name(cls) -> str:
        return TIMELINE_WRITE_FORMAT

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        from server_plugin.locations import prepare_location

        plan = _plan(self.options)
        with storage_scope(self.options):
            created_root = prepare_location(plan.table_path, new_table=plan.read_version < 0)
        return _TimelineWriter(self.options, created_root)
