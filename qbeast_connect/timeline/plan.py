"""The contract between the client and the server plugin's ``qbeast_timeline_write`` source.

The client checks arguments and the table's state, then ships one JSON plan; write tasks
write one parquet file per (task, partition value), and the driver-side commit turns the
files, the partitions to drop and the new timelines into ONE Delta commit.

Pure standard library: no pyspark, pyarrow or numpy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.plan_codec import plan_to_json, reading_plan

__all__ = ["TIMELINE_WRITE_FORMAT", "TimelineOperation", "TimelineWritePlan"]

#: Format name of the server plugin's timeline writer.
TIMELINE_WRITE_FORMAT = "qbeast_timeline_write"

TimelineOperation = Literal["write", "drop", "sync"]
_OPERATIONS = ("write", "drop", "sync")


@dataclass(frozen=True)
class TimelineWritePlan:
    """Everything the server needs for one change of a time-partitioned table.

    Attributes:
        table_path: the table location as the server sees it.
        operation: ``write`` (add rows of ``period`` partitions), ``drop`` (remove the
            files of ``drop_partitions``) or ``sync`` (rewrite the stored timelines only:
            rebuild them from the files and/or change implementations).
        column: the time partition column.
        read_version: table version the plan was made against; -1 creates the table.
        mode: ``append`` or ``overwrite`` (remove every file of the table first).
        period: update period name of the written partitions (``write`` only).
        schema_string: Delta schema JSON to commit (new table, overwrite), else None.
        drop_partitions: canonical strings of the partitions to drop (``drop`` only).
        impls: update period name -> timeline implementation to set (and migrate to).
        rebuild: rebuild the timelines from the table's files even if they are stored.
        txn_id: unique id of this change, recorded as ``commitInfo.txnId``.
    """

    table_path: str
    operation: TimelineOperation
    column: str
    read_version: int
    mode: Literal["append", "overwrite"] = "append"
    period: str | None = None
    schema_string: str | None = None
    drop_partitions: tuple[str, ...] = ()
    impls: Mapping[str, str] = field(default_factory=dict)
    rebuild: bool = False
    txn_id: str = ""

    def __post_init__(self) -> None:
        if self.operation not in _OPERATIONS:
            raise InvalidOptionError(
                f"unknown timeline operation {self.operation!r}: use {', '.join(_OPERATIONS)}"
            )
        if self.mode not in ("append", "overwrite"):
            raise InvalidOptionError(f"unknown timeline write mode {self.mode!r}")
        if self.operation == "write" and not self.period:
            raise InvalidOptionError("a timeline write needs the update period of its rows")
        if not self.column:
            raise InvalidOptionError("a timeline write needs its partition column")

    def to_json(self) -> str:
        """Serialize for the ``plan`` option of the timeline writer."""
        data: dict[str, Any] = {
            "tablePath": self.table_path,
            "operation": self.operation,
            "column": self.column,
            "readVersion": self.read_version,
            "mode": self.mode,
            "period": self.period,
            "schemaString": self.schema_string,
            "dropPartitions": list(self.drop_partitions),
            "impls": dict(self.impls),
            "rebuild": self.rebuild,
            "txnId": self.txn_id,
        }
        return plan_to_json(data)

    @classmethod
    def from_json(cls, text: str) -> TimelineWritePlan:
        """Parse the ``plan`` option.

        Raises:
            InvalidOptionError: the text is not a timeline write plan.
        """
        with reading_plan("timeline write plan"):
            data = json.loads(text)
            return cls(
                table_path=str(data["tablePath"]),
                operation=data["operation"],
                column=str(data["column"]),
                read_version=int(data["readVersion"]),
                mode=data["mode"],
                period=data["period"],
                schema_string=data["schemaString"],
                drop_partitions=tuple(str(v) for v in data["dropPartitions"]),
                impls={str(k): str(v) for k, v in data["impls"].items()},
                rebuild=bool(data["rebuild"]),
                txn_id=str(data["txnId"]),
            )
