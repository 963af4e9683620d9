"""Write tasks and the driver-side commit of the ``qbeast_write`` data source."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from qbeast_connect.exceptions import (
    CommitConflictError,
    InvalidOptionError,
    SchemaMismatchError,
    UnsupportedProtocolError,
)
from qbeast_connect.index.partition_trees import EMPTY_TREE, PartitionTree
from qbeast_connect.model.block import Block, tags_for
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.weight import MAX_WEIGHT
from qbeast_connect.rules.auto_compact import run_file_name, run_id_of
from qbeast_connect.rules.column_mapping import (
    COLUMN_MAPPING_MODE,
    ColumnMapping,
    check_indexed_columns,
    column_mapping,
    mapping_mode,
    same_logical_schema,
)
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan
from server_plugin import write_profile
from server_plugin.data_files import (
    arrow_batches,
    delete_files,
    deleted_unless_committed,
    task_files,
)
from server_plugin.delta.actions import AddFile, FrozenMap, Metadata, RemoveFile, Txn
from server_plugin.delta.column_mapping_arrow import physical_table
from server_plugin.delta.committer import (
    commit,
    create_table_actions,
)
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.faults import crash_point
from server_plugin.delta.file_stats import compute_safe_stats
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import Storage, storage_for
from server_plugin.delta.uris import encode_path
from server_plugin.group_spill import GroupSpill
from server_plugin.messages import WriteTaskMessage, WrittenFile
from server_plugin.parquet_statistics import parquet_write_options
from server_plugin.revision_rebase import metadata_commutes, rebase_revisions
from server_plugin.row_deletes import vector_change, vector_file_kept_if_committed
from server_plugin.time_partitions import PartitionCodes, committed_configuration
from server_plugin.timeline_writer import partition_dir

#: Rows a write task buffers before it sets them aside by file group (or, unindexed, writes
#: them out as one file).
FLUSH_ROWS = 4_000_000
#: Arrow bytes a write task buffers, at most, before it writes them out: wide rows flush
#: earlier than ``FLUSH_ROWS`` so that a Python worker's memory does not grow with row width.
FLUSH_BYTES = 512 << 20
#: Rows per parquet row group.
ROW_GROUP_ROWS = 1_000_000
#: Row groups a full block of a cube is cut into (see :func:`row_group_limits`).
ROW_GROUPS_PER_CUBE = 32
#: Most rows of a row group of an indexed file (see :func:`row_group_limits`).
BLOCK_ROW_GROUP_ROWS = 131_072
#: Fewest rows a full block's row groups are cut down to (see :func:`row_group_limits`).
ROW_GROUP_FLOOR = 2_048
#: Fewest rows of a row group that small blocks are gathered into (see :func:`row_group_limits`).
MIN_ROW_GROUP_ROWS = 16_384
#: Data pages a full row group is cut into (see :func:`page_row_limit`).
PAGES_PER_ROW_GROUP = 4
#: Most rows of a data page: pyarrow's own default.
PAGE_ROWS = 20_000
#: Fewest rows of a data page (see :func:`page_row_limit`).
PAGE_FLOOR = 512


def row_group_limits(cube_size: int) -> tuple[int, int]:
    """``(most, least)`` rows of the row groups of an indexed file of this cube size.

    A full block is cut into ``ROW_GROUPS_PER_CUBE`` row groups of consecutive Z-order
    ranges (at most ``BLOCK_ROW_GROUP_ROWS`` rows, at least ``ROW_GROUP_FLOOR``), whose
    statistics let a reader skip inside the cube: 32 parts split every one of three
    indexed dimensions at least once (the Z-order takes one bit of each dimension in
    turn), where 8 parts split one of them only on one side of the first bit of the
    others. Row groups are the finest unit Spark's reader skips bytes by: its page index
    filtering skips the decoding of pages but not their reading (``bench/layout_bench.py``,
    BENCHMARKS.md). Blocks of fewer than ``least`` rows (``MIN_ROW_GROUP_ROWS``, a quarter
    of a cube if less, and never more than ``most``) may share a row group with their
    neighbours.
    """
    most = max(ROW_GROUP_FLOOR, min(BLOCK_ROW_GROUP_ROWS, cube_size // ROW_GROUPS_PER_CUBE))
    least = max(1, min(MIN_ROW_GROUP_ROWS, cube_size // 4, most))
    return most, least


def page_row_limit(cube_size: int) -> int:
    """Most rows of a data page of an indexed file of this cube size.

    A full row group is cut into ``PAGES_PER_ROW_GROUP`` pages of consecutive Z-order
    ranges (at most ``PAGE_ROWS``, at least ``PAGE_FLOOR`` rows): Spark's reader skips the
    decoding of the pages whose page-index bounds miss the filter, one Z-order level below
    the row group's statistics.
    """
    most, _ = row_group_limits(cube_size)
    return max(PAGE_FLOOR, min(PAGE_ROWS, most // PAGES_PER_ROW_GROUP))


class _TaskBuffer:
    """Rows of one write task with their file group, cube and weight, until a flush.

    Rows are buffered as they arrive and written out at a flush with one sort by file
    group, cube and Z-order inside the cube (``qbeast_connect.index.block_order``) and one
    ``take``: each group is then a zero-copy slice written as one file, its blocks in cube
    order, every block but small ones in row groups of its own. A buffer that fills up
    before the task's last row is set aside by file group on local disk
    (:mod:`server_plugin.group_spill`), so a task writes one file per file group however
    many rows it streams.
    """

    def __init__(self, plan: WritePlan, storage: Storage) -> None:
        from qbeast_connect.index.assignment import CubeAssigner

        self.plan = plan
        self.storage = storage
        self.revision = Revision.from_json(plan.revision_json) if plan.revision_json else None
        self.assigner = (
            CubeAssigner(self.revision.dimension_count, plan.cube_weights)
            if self.revision is not None
            else None
        )
        self.labels: list[str] = []
        self.label_ids: dict[str, int] = {}
        #: the partition of every buffered row, for a time-partitioned table
        self.partitions = None if plan.partitioning is None else PartitionCodes(plan.partitioning)
        self.parts: list[np.ndarray] = []
        #: one tree per partition (``WritePlan.partition_trees``): value -> (assigner, tree)
        self.trees: dict[str, tuple[Any, PartitionTree]] = {}
        self.schema: pa.Schema | None = None
        self.batches: list[pa.RecordBatch] = []
        self.groups: list[np.ndarray] = []
        self.cubes: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.keys: list[np.ndarray] = []
        self.rows = 0
        self.bytes = 0
        self.written: list[WrittenFile] = []
        self.spill = GroupSpill()
        #: a column-mapped table's names: files store physical names (and field ids)
        self.mapping = _plan_mapping(plan)

    def add(self, batch: pa.RecordBatch) -> None:
        from qbeast_connect.index.block_order import morton_keys
        from qbeast_connect.index.normalize import normalize
        from qbeast_connect.index.space import check_inside_space

        if self.schema is None:
            self.schema = _data_schema(batch.schema, self.plan)
        self.batches.append(batch.select(self.schema.names))
        codes = None
        if self.partitions is not None:
            codes = self.partitions.codes(batch)
            self.parts.append(codes)
        if self.revision is not None and self.assigner is not None:
            with write_profile.phase("normalize"):
                weights = batch.column(WEIGHT_COLUMN).to_numpy(zero_copy_only=False)
                weights = weights.astype(np.int32, copy=False)
                columns = [batch.column(name) for name in self.revision.column_names]
                points = normalize(self.revision.transformations, columns)
                names = self.revision.column_names
                check_inside_space(self.revision.transformations, names, columns, points)
            with write_profile.phase("assign"):
                if codes is not None and self.plan.partition_trees is not None:
                    groups, cubes = self._assign_per_partition(codes, points, weights)
                else:
                    labels, inverse = self.assigner.assign_labels(points, weights)
                    local = np.array([self._label_id(label) for label in labels], dtype=np.int32)
                    groups = self.plan.layout.groups(inverse, labels, weights)
                    cubes = local[inverse]
                self.groups.append(groups)
                self.cubes.append(cubes)
                self.weights.append(weights)
            with write_profile.phase("morton"):
                self.keys.append(morton_keys(points))
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        if self.rows >= FLUSH_ROWS or self.bytes >= FLUSH_BYTES:
            if self.revision is None or self.partitions is not None:
                self.flush()
            else:
                self._spill()

    def _tree(self, code: int) -> tuple[Any, PartitionTree]:
        """The cube assigner and tree of the partition of ``code``."""
        from qbeast_connect.index.assignment import CubeAssigner

        assert self.partitions is not None and self.revision is not None
        value = self.partitions.labels[code]
        found = self.trees.get(value)
        if found is None:
            tree = (self.plan.partition_trees or {}).get(value, EMPTY_TREE)
            assigner = CubeAssigner(self.revision.dimension_count, tree.cube_weights)
            found = self.trees[value] = (assigner, tree)
        return found

    def _assign_per_partition(
        self, codes: np.ndarray, points: np.ndarray, weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """File group (inside its partition) and cube label id of every row, each
        partition's rows assigned with the partition's own tree."""
        groups = np.zeros(len(codes), dtype=np.int64)
        cubes = np.zeros(len(codes), dtype=np.int32)
        for code in np.unique(codes).tolist():
            rows = np.flatnonzero(codes == code)
            assigner, tree = self._tree(int(code))
            labels, inverse = assigner.assign_labels(points[rows], weights[rows])
            local = np.array([self._label_id(label) for label in labels], dtype=np.int32)
            groups[rows] = tree.layout.groups(inverse, labels, weights[rows])
            cubes[rows] = local[inverse]
        return groups, cubes

    def _max_weight(self, label: str, part: int | None) -> int:
        """The max weight of cube ``label`` in the tree of partition code ``part``."""
        if part is not None and self.plan.partition_trees is not None:
            return int(self._tree(part)[1].cube_weights.get(label, MAX_WEIGHT))
        return int(self.plan.cube_weights.get(label, MAX_WEIGHT))

    def _label_id(self, label: str) -> int:
        found = self.label_ids.get(label)
        if found is None:
            found = self.label_ids[label] = len(self.labels)
            self.labels.append(label)
        return found

    def _take_buffer(self) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The buffered rows with their groups, local cube ids, weights and Z-order keys;
        the buffer is emptied (a table without time partitions)."""
        assert self.schema is not None
        with write_profile.phase("concat"):
            table = pa.Table.from_batches(self.batches, schema=self.schema)
        taken = (
            table,
            np.concatenate(self.groups),
            np.concatenate(self.cubes),
            np.concatenate(self.weights),
            np.concatenate(self.keys),
        )
        self._clear()
        return taken

    def _clear(self) -> None:
        self.batches, self.groups, self.cubes, self.weights = [], [], [], []
        self.parts = []
        self.keys = []
        self.rows = 0
        self.bytes = 0

    def _spill(self) -> None:
        """Set a full buffer aside by file group (:mod:`server_plugin.group_spill`): the
        task still writes one file per file group at its end."""
        if not self.rows or self.schema is None:
            return
        taken = self._take_buffer()
        with write_profile.phase("spill"):
            self.spill.add(*taken)

    def flush(self) -> None:
        """Write the task's rows: one file per file group (one per flush if unindexed, one
        per file group and flush in a time-partitioned table)."""
        if not self.rows and not self.spill:
            return
        if self.revision is None or self.partitions is not None:
            self._flush_partitioned()
            return
        if not self.spill:
            self._write_groups(*self._take_buffer())
            return
        self._spill()
        for group, table, cubes, weights, keys in self.spill.groups():
            groups = np.full(table.num_rows, group, dtype=np.int64)
            self._write_groups(table, groups, cubes, weights, keys)
        self.spill.close()

    def _flush_partitioned(self) -> None:
        """Write the buffered rows now: unindexed rows as one file (one per partition), or
        a time-partitioned table's rows as one file per (partition, file group)."""
        if not self.rows or self.schema is None:
            return
        with write_profile.phase("concat"):
            table = pa.Table.from_batches(self.batches, schema=self.schema)
        parts = np.concatenate(self.parts) if self.parts else None
        if self.revision is None and parts is None:
            self._clear()
            self.written.append(self._write(table, None))
            return
        if self.revision is None:
            assert parts is not None
            self._clear()
            order = np.argsort(parts, kind="stable")
            table = table.take(pa.array(order))
            counts = np.bincount(parts)
            start = 0
            for part in np.flatnonzero(counts).tolist():
                end = start + int(counts[part])
                self.written.append(self._write(table.slice(start, end - start), None, part))
                start = end
            return
        assert parts is not None
        groups = np.concatenate(self.groups)
        local_cubes = np.concatenate(self.cubes)
        weights = np.concatenate(self.weights)
        keys = np.concatenate(self.keys)
        self._clear()
        # one file group per (partition, group): rows of different partitions never share
        # a file
        stride = int(groups.max()) + 1 if len(groups) else 1
        combined = parts * stride + groups.astype(np.int64, copy=False)
        self._write_groups(table, combined, local_cubes, weights, keys, stride)

    def _write_groups(
        self,
        table: pa.Table,
        groups: np.ndarray,
        local_cubes: np.ndarray,
        weights: np.ndarray,
        keys: np.ndarray,
        stride: int | None = None,
    ) -> None:
        """Write one file per file group of these rows, its blocks in cube order; with
        ``stride``, a group is ``partition code * stride + group`` of a time-partitioned
        table."""
        from qbeast_connect.index.assignment import block_summaries
        from qbeast_connect.index.block_order import file_order
        from qbeast_connect.model.cube_id import cube_string_sort_key

        # cubes by CubeId rank: a file's blocks are written in cube order
        by_rank = sorted(
            range(len(self.labels)), key=lambda i: cube_string_sort_key(self.labels[i])
        )
        rank_of = np.empty(len(self.labels), dtype=np.int32)
        rank_of[np.asarray(by_rank, dtype=np.int64)] = np.arange(len(by_rank), dtype=np.int32)
        labels = [self.labels[i] for i in by_rank]
        cubes = rank_of[local_cubes]
        # (group, cube rank, min weight, rows), sorted by group then cube: the row order
        with write_profile.phase("summaries"):
            summaries = block_summaries(groups, cubes, weights)
        with write_profile.phase("sort"):
            order = file_order(groups, cubes, keys)
        with write_profile.phase("take"):
            table = table.take(pa.array(order))
            ordered_weights = np.asarray(weights)[order]
        counts = np.bincount(groups, minlength=int(groups.max()) + 1)
        start = 0
        at = 0
        for group in np.flatnonzero(counts).tolist():
            end = start + int(counts[group])
            in_part = group // stride if stride is not None else None
            blocks = []
            while at < len(summaries) and summaries[at][0] == group:
                _, cube_index, low, count = summaries[at]
                label = labels[cube_index]
                blocks.append(
                    Block(
                        cube_id=label,
                        min_weight=int(low),
                        max_weight=self._max_weight(label, in_part),
                        element_count=int(count),
                    )
                )
                at += 1
            top = int(ordered_weights[start:end].max())
            self.written.append(self._write(table.slice(start, end - start), blocks, in_part, top))
            start = end

    def _write(
        self,
        table: pa.Table,
        blocks: list[Block] | None,
        part: int | None = None,
        max_row_weight: int | None = None,
    ) -> WrittenFile:
        # a write's files carry its run id (rules.auto_compact: the runs compaction tiers)
        run = run_id_of(self.plan.txn_id)
        name = f"{uuid.uuid4()}.parquet" if run is None else run_file_name(run, str(uuid.uuid4()))
        partition_values: dict[str, str | None] | None = None
        if part is not None and self.partitions is not None:
            column = self.partitions.partitioning.column
            value = self.partitions.labels[part]
            name = f"{partition_dir(column, value)}/{name}"
            partition_values = {column: value}
            if self.mapping is not None:
                partition_values = self.mapping.physical_partition_values(partition_values)
        if self.mapping is not None:
            table = physical_table(table, self.mapping)
        with write_profile.phase("options"):
            options = parquet_write_options(table)
        encode = write_profile.phase("parquet")
        with encode, self.storage.open_output(name) as sink:
            if blocks is None:
                pq.write_table(
                    table, sink, compression="snappy", row_group_size=ROW_GROUP_ROWS, **options
                )
            else:
                from qbeast_connect.index.block_order import row_group_bounds

                assert self.revision is not None
                most, least = row_group_limits(self.revision.desired_cube_size)
                sizes = row_group_bounds([b.element_count for b in blocks], most, least)
                pages = page_row_limit(self.revision.desired_cube_size)
                with pq.ParquetWriter(
                    sink, table.schema, compression="snappy", max_rows_per_page=pages, **options
                ) as out:
                    offset = 0
                    for size in sizes:
                        out.write_table(table.slice(offset, size), row_group_size=size)
                        offset += size
        info = self.storage.file_info(name)
        tags = None
        if blocks is not None and self.revision is not None:
            tags = tags_for(self.revision.revision_id, blocks, max_row_weight)
        return WrittenFile(
            path=name,
            size=info.size,
            modification_time=info.mtime_ms,
            stats=_file_stats(table),
            tags=tags,
            num_records=table.num_rows,
            partition_values=partition_values,
        )


def _plan_mapping(plan: WritePlan) -> ColumnMapping | None:
    if not plan.column_mapping:
        return None
    mode = plan.column_mapping.get("mode", "none")
    return column_mapping({COLUMN_MAPPING_MODE: mode}, plan.column_mapping["schema"])


def resolve_column_mapping(plan: WritePlan) -> WritePlan:
    """The plan with the column mapping of the table it writes (on the server's driver,
    before any task runs): the table's log at ``plan.read_version`` decides.

    On a table with ``delta.columnMapping.mode`` ``name``/``id``, the tasks write physical
    names (:attr:`WritePlan.column_mapping`), the metadata keeps the table's schema with its
    mapping (an overwrite with the same columns keeps it as it is), and the index's columns
    must still be in the schema. The writer does not change such a table's columns: a
    ``mergeSchema`` append that adds columns, or an overwrite with other columns, is
    refused (add the columns with Delta, ``ALTER TABLE ... ADD COLUMNS``, then append).

    Raises:
        SchemaMismatchError: the write would change a column-mapped table's columns.
        UnsupportedProtocolError: the write would change the column mapping mode.
        IndexedColumnMissingError: an indexed column was renamed or dropped.
    """
    if plan.read_version < 0:
        return plan
    base = read_snapshot(storage_for(plan.table_path), plan.read_version).metadata
    mode = mapping_mode(base.configuration)
    if plan.configuration is not None and mapping_mode(plan.configuration) != mode:
        raise UnsupportedProtocolError(
            f"a write to {plan.table_path} would change {COLUMN_MAPPING_MODE} from {mode!r}; "
            "qbeast-connect keeps a table's column mapping as it is"
        )
    if mode == "none":
        return plan
    schema_string = plan.schema_string
    if schema_string is not None and schema_string != base.schema_string:
        if not same_logical_schema(schema_string, base.schema_string):
            raise SchemaMismatchError(
                f"cannot change the columns of {plan.table_path}, a table with Delta column "
                f"mapping ({COLUMN_MAPPING_MODE}={mode}): qbeast-connect writes its columns "
                "as they are. Add columns with Delta (ALTER TABLE delta.`<path>` ADD COLUMNS "
                "(...)) and then append, or write the data to a new table"
            )
        schema_string = base.schema_string
    if plan.revision_json is not None:
        revision = Revision.from_json(plan.revision_json)
        check_indexed_columns(
            revision.revision_id, revision.column_names, base.schema_string, plan.table_path
        )
    return dataclasses.replace(
        plan,
        schema_string=schema_string,
        column_mapping={"mode": mode, "schema": base.schema_string},
    )


def _file_stats(table: pa.Table) -> str | None:
    with write_profile.phase("stats"):
        return compute_safe_stats(table)


def write_task(plan: WritePlan, iterator: Iterator[Any]) -> WriteTaskMessage:
    """Index and write the rows of one Spark task; return the files written.

    If the task fails, the files it already wrote are deleted before the error propagates.
    """
    if plan.append_task is not None:
        # a one-job small append: the task indexes its rows itself (server_plugin.append_task)
        from server_plugin.append_task import plan_in_task

        plan, rows = plan_in_task(plan, iterator)
        iterator = iter(rows)
    write_profile.start()
    buffer = _TaskBuffer(plan, storage_for(plan.table_path))
    received = 0
    with deleted_unless_committed(buffer.storage, buffer.written):
        try:
            for batch in arrow_batches(write_profile.receiving(iterator)):
                if batch.num_rows:
                    received += batch.num_rows
                    buffer.add(batch)
            buffer.flush()
        finally:
            buffer.spill.close()
    write_profile.finish(received)
    return WriteTaskMessage(files=tuple(buffer.written))


def _data_schema(schema: pa.Schema, plan: WritePlan) -> pa.Schema:
    """The columns a data file stores: not the weight, not a partition column."""
    left_out = {WEIGHT_COLUMN}
    if plan.partitioning is not None:
        left_out.add(plan.partitioning.column)
    return pa.schema([f for f in schema if f.name not in left_out], metadata=None)


def _written_files(messages: Iterable[Any]) -> list[WrittenFile]:
    return task_files(messages, WriteTaskMessage)


def _values(files: Sequence[WrittenFile], columns: Sequence[str]) -> list[str | None]:
    """The partition values of ``files`` in the (one) time partition column."""
    if not columns:
        return []
    return [(f.partition_values or {}).get(columns[0]) for f in files]


def commit_write(plan: WritePlan, messages: Sequence[Any]) -> int:
    """Commit the files the tasks wrote as one Delta transaction; return the version."""
    storage = storage_for(plan.table_path)
    files = _written_files(messages)
    now = int(time.time() * 1000)
    actions: list[Any] = []
    new_table = plan.read_version < 0
    removed: list[str] = []
    base = None
    partitioning = plan.partitioning
    pcols = () if partitioning is None else (partitioning.column,)
    if new_table:
        if plan.schema_string is None:
            raise InvalidOptionError("a write that creates a table needs a schema")
        config = committed_configuration(
            partitioning, plan.configuration, None, True, _values(files, pcols)
        )
        actions.extend(
            create_table_actions(plan.schema_string, dict(config or {}), partition_columns=pcols)
        )
    else:
        base = read_snapshot(storage, plan.read_version)
        mode = mapping_mode(base.metadata.configuration)
        planned = plan.column_mapping or {}
        if planned.get("mode", "none") != mode or (
            mode != "none" and planned.get("schema") != base.metadata.schema_string
        ):
            raise CommitConflictError(
                f"the column mapping of {plan.table_path} at version {plan.read_version} is "
                "not the one the write's files were written with; retry the write"
            )
        config = committed_configuration(
            partitioning,
            plan.configuration,
            base,
            plan.mode == "overwrite",
            _values(files, pcols),
        )
        if config is not None or plan.schema_string is not None:
            old = base.metadata
            configuration = old.configuration
            if config is not None:
                configuration = FrozenMap(dict(config))
            actions.append(
                dataclasses.replace(
                    old,
                    schema_string=plan.schema_string or old.schema_string,
                    configuration=configuration,
                    partition_columns=(
                        pcols if (pcols and plan.mode == "overwrite") else old.partition_columns
                    ),
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
                    # the logical file is (path, deletion vector): a remove without the
                    # vector would leave the file live
                    deletion_vector=add.deletion_vector,
                )
            )
    vectors = None
    if plan.vector_rows:
        if base is None:
            raise InvalidOptionError("a write that creates a table has no rows to mark deleted")
        vectors = vector_change(storage, base, plan.vector_rows, now)
        actions.extend(vectors.actions)
        removed.extend(vectors.paths)
    if plan.txn_app_id is not None and plan.txn_version is not None:
        actions.append(Txn(app_id=plan.txn_app_id, version=int(plan.txn_version), last_updated=now))
    for f in files:
        actions.append(
            AddFile(
                path=f.path if f.partition_values is None else encode_path(f.path),
                partition_values=dict(f.partition_values or {}),
                size=f.size,
                modification_time=f.modification_time,
                data_change=plan.data_change,
                stats=f.stats,
                tags=f.tags,
            )
        )
    changes_metadata = new_table or config is not None or plan.schema_string is not None
    blind = not changes_metadata and not removed and plan.mode == "append" and plan.data_change
    # An append or an optimize reads only the files it removes and the revision it indexes
    # with; when its metaData change only adds revisions, it commutes with concurrent
    # appends and is rebased over concurrent revisions (server_plugin.revision_rebase).
    new_metadata = next((a for a in actions if isinstance(a, Metadata)), None)
    commutes = (
        base is not None
        and plan.mode == "append"
        and metadata_commutes(base.metadata, new_metadata)
    )
    read_set = TransactionReadSet(
        read_version=plan.read_version,
        read_whole_table=not blind and not commutes,
        read_files=frozenset(removed),
        removed_files=frozenset(removed),
        app_ids=frozenset({plan.txn_app_id} if plan.txn_app_id else set()),
        changes_metadata=changes_metadata,
        changes_protocol=new_table,
        is_blind_append=blind,
        data_change_only_false=not plan.data_change,
        metadata_commutes=commutes,
    )
    parameters: dict[str, Any] = (
        dict(plan.operation_parameters)
        if plan.operation_parameters is not None
        else {"mode": "Overwrite" if plan.mode == "overwrite" else "Append"}
    )
    extra: dict[str, Any] = {}
    if plan.user_metadata is not None:
        extra["userMetadata"] = plan.user_metadata
    tags = dict(plan.commit_tags or {})
    if plan.hooks:
        from server_plugin.hooks import run_hooks

        tags.update(run_hooks(plan.hooks, actions))
    if tags:
        extra["tags"] = tags
    crash_point("after_files")
    with deleted_unless_committed(storage, files), vector_file_kept_if_committed(storage, vectors):
        version = commit(
            storage,
            actions,
            read_set,
            operation=plan.operation,
            operation_parameters=parameters,
            is_blind_append=blind,
            snapshot=base,
            extra_commit_info=extra,
            txn_id=plan.txn_id or None,
            rebase=rebase_revisions if commutes else None,
            # counted by the tasks: files holding NaN or infinities have no stats
            num_output_rows=sum(f.num_records for f in files),
        )
    crash_point("after_commit")
    return version


def abort_write(plan: WritePlan, messages: Sequence[Any], *, remove_dirs: bool = False) -> None:
    """Delete the files written by tasks of a failed write (they were never committed),
    and with ``remove_dirs`` the empty directories it created (a failed first write)."""
    storage = storage_for(plan.table_path)
    delete_files(storage, [f.path for f in _written_files(messages)])
    if remove_dirs:
        from server_plugin.locations import remove_created_dirs

        remove_created_dirs(storage)
