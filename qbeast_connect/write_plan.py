"""The contract between the client's write planner and the server plugin's writer, and
what a write reports back.

The client decides everything that needs global knowledge (the revision, the cube max
weights, the layout of rows into file groups, the metadata to commit) and ships it to
the server as one JSON option. Write tasks only apply it to their rows; the driver-side
commit only turns it, plus the tasks' files, into Delta actions. The write then reports
a :class:`WriteResult`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from qbeast_connect.index.layout import FileLayout
from qbeast_connect.index.partition_trees import PartitionTree, trees_from_json, trees_to_json
from qbeast_connect.plan_codec import plan_to_json, reading_plan
from qbeast_connect.rules.auto_compact import AutoCompaction
from qbeast_connect.rules.time_partitioning import TimePartitioning

#: The namespace of every column qbeast adds to rows for its own bookkeeping (the weight,
#: the file group, the estimation's columns, the writer's spill fields, ...): each such name
#: starts with this prefix, and no column of a written table may start with it in any case
#: (Spark resolves names case-insensitively), so adding or dropping one of ours can never
#: touch a user's column. :func:`is_internal_name` tells them apart.
INTERNAL_PREFIX = "_qbeast"
#: Name of the helper column carrying the row weight (Spark ``hash`` of the indexed columns).
WEIGHT_COLUMN = f"{INTERNAL_PREFIX}Weight"


def is_internal_name(name: str) -> bool:
    """Whether ``name`` lies in qbeast's internal column namespace (:data:`INTERNAL_PREFIX`,
    compared case-insensitively as Spark compares column names)."""
    return name.lower().startswith(INTERNAL_PREFIX.lower())


@dataclass(frozen=True)
class WritePlan:
    """Everything the server needs to write and commit one qbeast write.

    Attributes:
        table_path: table location as the user gave it.
        mode: ``append`` or ``overwrite`` (``errorifexists``/``ignore`` are settled earlier).
        read_version: the table version the plan was made against; -1 for a new table.
        revision_json: JSON of the revision rows are indexed with (None: unindexed write).
        cube_weights: cube string -> max weight, for the point-to-cube rule.
        layout: which file group every row goes to (weight band, then run of cubes).
        configuration: the full ``metaData.configuration`` to commit, or None to keep it.
        schema_string: Delta schema JSON to commit with the metadata (None: keep).
        txn_app_id: idempotent-write application id, or None.
        txn_version: idempotent-write version, or None.
        txn_id: unique id of this write, recorded as ``commitInfo.txnId``.
        user_metadata: ``commitInfo.userMetadata``, or None.
        operation: Delta operation name for ``commitInfo``.
        operation_parameters: ``commitInfo.operationParameters`` (None: the write's mode).
        data_change: False for writes that only rearrange rows (optimize).
        remove_paths: files this write removes (optimize); overwrite removes all files.
        vector_rows: rows that leave their files through deletion vectors in this commit
            (a row-level change on a table with vectors on): log path -> the rows'
            positions, as :func:`~qbeast_connect.plan_codec.encode_row_positions` writes them.
        commit_tags: ``commitInfo.tags`` given directly.
        hooks: pre-commit hook options: ``<name>`` -> hook id, ``<name>.arg`` -> argument.
            Hook ids name hooks the server allows (built-ins or entry points); the outputs
            of the hooks become ``commitInfo.tags``.
        append_task: for a one-job small append, what its single write task needs to
            compute ``cube_weights`` and ``layout`` itself from the rows it holds
            (``server_plugin.append_task``); None otherwise.
        partitioning: the table's time partitioning after this write (the rows carry its
            partition column; each file holds one partition's rows), or None.
        partition_trees: for an indexed write to a time-partitioned table, the cube max
            weights and layout of every partition written (each partition is a tree of
            its own; ``cube_weights`` and ``layout`` are then unused), or None.
        column_mapping: for a table with Delta column mapping, ``{"mode": "name"|"id",
            "schema": <the table's schemaString>}``: the tasks write physical names (and
            field ids). Filled in by the server from the log at ``read_version``
            (``server_plugin.writer.resolve_column_mapping``), never by the client.
    """

    table_path: str
    mode: Literal["append", "overwrite"]
    read_version: int
    revision_json: str | None
    cube_weights: Mapping[str, int] = field(default_factory=dict)
    layout: FileLayout = field(default_factory=FileLayout.single)
    configuration: Mapping[str, str] | None = None
    schema_string: str | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None
    txn_id: str = ""
    user_metadata: str | None = None
    operation: str = "WRITE"
    operation_parameters: Mapping[str, str] | None = None
    data_change: bool = True
    remove_paths: tuple[str, ...] = ()
    vector_rows: Mapping[str, str] = field(default_factory=dict)
    commit_tags: Mapping[str, str] | None = None
    hooks: Mapping[str, str] = field(default_factory=dict)
    append_task: Mapping[str, Any] | None = None
    partitioning: TimePartitioning | None = None
    partition_trees: Mapping[str, PartitionTree] | None = None
    column_mapping: Mapping[str, str] | None = None

    def to_json(self) -> str:
        """Serialize for the ``plan`` option of the write data source."""
        data: dict[str, Any] = {
            "tablePath": self.table_path,
            "mode": self.mode,
            "readVersion": self.read_version,
            "revision": self.revision_json,
            "cubeWeights": dict(self.cube_weights),
            "layout": self.layout.to_json_value(),
            "configuration": None if self.configuration is None else dict(self.configuration),
            "schemaString": self.schema_string,
            "txnAppId": self.txn_app_id,
            "txnVersion": self.txn_version,
            "txnId": self.txn_id,
            "userMetadata": self.user_metadata,
            "operation": self.operation,
            "operationParameters": (
                None if self.operation_parameters is None else dict(self.operation_parameters)
            ),
            "dataChange": self.data_change,
            "removePaths": list(self.remove_paths),
            "vectorRows": dict(self.vector_rows),
            "commitTags": None if self.commit_tags is None else dict(self.commit_tags),
            "hooks": dict(self.hooks),
            "appendTask": None if self.append_task is None else dict(self.append_task),
            "partitioning": (
                None if self.partitioning is None else self.partitioning.to_json_value()
            ),
            "partitionTrees": trees_to_json(self.partition_trees),
            "columnMapping": None if self.column_mapping is None else dict(self.column_mapping),
        }
        return plan_to_json(data)

    @classmethod
    def from_json(cls, text: str) -> WritePlan:
        """Parse the ``plan`` option.

        Raises:
            InvalidOptionError: the text is not a write plan.
        """
        with reading_plan("write plan"):
            data = json.loads(text)
            return cls(
                table_path=str(data["tablePath"]),
                mode=data["mode"],
                read_version=int(data["readVersion"]),
                revision_json=data["revision"],
                cube_weights={str(k): int(v) for k, v in data["cubeWeights"].items()},
                layout=FileLayout.from_json_value(data["layout"]),
                configuration=data["configuration"],
                schema_string=data["schemaString"],
                txn_app_id=data["txnAppId"],
                txn_version=data["txnVersion"],
                txn_id=str(data["txnId"]),
                user_metadata=data["userMetadata"],
                operation=str(data["operation"]),
                operation_parameters=data.get("operationParameters"),
                data_change=bool(data["dataChange"]),
                remove_paths=tuple(data["removePaths"]),
                vector_rows={str(k): str(v) for k, v in data.get("vectorRows", {}).items()},
                commit_tags=data["commitTags"],
                hooks={str(k): str(v) for k, v in data.get("hooks", {}).items()},
                append_task=data.get("appendTask"),
                partitioning=(
                    None
                    if data.get("partitioning") is None
                    else TimePartitioning.from_json_value(data["partitioning"])
                ),
                partition_trees=trees_from_json(data.get("partitionTrees")),
                column_mapping=data.get("columnMapping"),
            )


@dataclass(frozen=True)
class WriteResult:
    """What a write did.

    Attributes:
        path: the table location.
        version: the committed Delta version; None when nothing was committed.
        skipped: True when the write was skipped (``ignore`` mode on an existing table, or a
            ``txnAppId``/``txnVersion`` pair already committed).
        reason: why it was skipped.
        revision_id: the revision the rows were indexed with.
        new_revision: whether this write created that revision.
        num_files: data files added.
        num_rows: rows written.
        timings: wall seconds of the write's phases, in order: ``snapshot`` (loading the
            table state), ``schema`` (what remains of analysing the input, which runs
            during ``snapshot``), ``declined`` (a one-job small append whose task declined
            the rows; the regular jobs then ran), ``statistics`` and ``estimation`` (the
            two small Spark jobs), ``materialize`` (only for an input that is not
            deterministic or that changed during the write: computing it once, see
            ``write_input``) and ``write`` (the job that writes the files and commits).
            Phases a write did not need are absent. Reading the commit back is not
            timed: it happens on first access (``commit_loader``).
        compaction: the automatic compaction that followed an append to a table with
            ``autoCompact`` on (:mod:`qbeast_connect.rules.auto_compact`): files removed
            and added in a commit of its own, or why it was skipped; None when none was due.
        commit_loader: for a write that committed, what reads its commit back (a query
            to the server). ``version``, ``revision_id``, ``num_files`` and ``num_rows``
            come from it on the first access of any of them, so a write whose caller
            does not look at them makes no query after its job.
    """

    path: str
    version: int | None
    skipped: bool = False
    reason: str | None = None
    revision_id: int | None = None
    new_revision: bool = False
    num_files: int = 0
    num_rows: int = 0
    timings: Mapping[str, float] = field(default_factory=dict)
    compaction: AutoCompaction | None = None
    commit_loader: Callable[[], Mapping[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )

    def __getattribute__(self, name: str) -> Any:
        if name in _COMMIT_FIELDS:
            load = object.__getattribute__(self, "commit_loader")
            if load is not None:
                for key, value in load().items():
                    object.__setattr__(self, key, value)
                object.__setattr__(self, "commit_loader", None)
        return object.__getattribute__(self, name)


#: The fields of a :class:`WriteResult` its ``commit_loader`` fills in.
_COMMIT_FIELDS = frozenset({"version", "revision_id", "num_files", "num_rows"})
