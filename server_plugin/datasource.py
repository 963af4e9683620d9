"""The plugin's Python Data Sources.

* ``qbeast_snapshot`` (reader): serves a table's Delta log state to the client as rows
  ``(kind, payload)``, so the client never touches storage.
* ``qbeast_write`` (writer): write tasks assign rows to cubes and write one parquet file
  per file group; the driver-side ``commit`` turns the files into one Delta commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from qbeast_connect.exceptions import InvalidOptionError
from server_plugin.delta.storage.scope import storage_scope

PLUGIN_VERSION = "0.1.0"


def _require(options: Mapping[str, str], key: str) -> str:
    value = options.get(key)
    if value is None or value == "":
        raise InvalidOptionError(f"option '{key}' is required")
    return value


def _whole_number(text: str | None, key: str) -> int | None:
    """An optional option holding a whole number >= 0 (a version or epoch milliseconds)."""
    if text in (None, ""):
        return None
    value = str(text).strip()
    if not value.isdigit():
        raise InvalidOptionError(f"option '{key}' must be a whole number >= 0, got {text!r}")
    return int(value)


def _snapshot_rows(options: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """The snapshot rows the options ask for (see ``server_plugin/snapshot_rows.py``)."""
    from server_plugin.snapshot_rows import snapshot_rows

    return snapshot_rows(
        _require(options, "path"),
        version=_whole_number(options.get("versionAsOf"), "versionAsOf"),
        timestamp_ms=_whole_number(options.get("timestampAsOf"), "timestampAsOf"),
        since=options.get("since") or None,
        use_cache=options.get("cache", "true") != "false",
    )


class _SnapshotReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], workdir: str | None = None) -> None:
        # Spark's CaseInsensitiveDict: keep it, a plain dict copy would lose the case folding
        self.options = options
        self.workdir = workdir

    def read(self, partition: Any) -> Iterator[tuple[str, str]]:
        with storage_scope(self.options):
            yield from self._read()

    def _read(self) -> Iterator[tuple[str, str]]:
        if self.options.get("probe") == "true":
            yield ("plugin", json.dumps({"version": PLUGIN_VERSION}))
            return
        if self.options.get("what") == "workdir":
            yield ("workdir", self.workdir or "")
            return
        from server_plugin.snapshot_rows import history_rows

        path = _require(self.options, "path")
        what = self.options.get("what", "snapshot")
        if what == "history":
            yield from history_rows(path, _whole_number(self.options.get("limit"), "limit"))
        elif what in ("snapshot", "state"):
            yield from _snapshot_rows(self.options)
        else:
            raise InvalidOptionError(f"unknown 'what' option {what!r}: use snapshot or history")


class _RowSource(DataSource):
    """A plugin-internal reader whose rows are ``(kind, payload)`` strings."""

    format_name: ClassVar[str]

    @classmethod
    def name(cls) -> str:
        return cls.format_name

    def schema(self) -> StructType | str:
        return "kind string, payload string"


class QbeastSnapshotSource(_RowSource):
    """Reads a table's log state as ``(kind, payload)`` rows (plugin-internal format)."""

    format_name = "qbeast_snapshot"

    def schema(self) -> StructType | str:
        if self.options.get("what") == "state":
            # the answer rides on the schema: analysing the query is the whole round trip
            from server_plugin.snapshot_rows import state_schema

            limit = _whole_number(self.options.get("stateLimit"), "stateLimit")
            with storage_scope(self.options):
                rows = _snapshot_rows(self.options)
                return state_schema(rows) if limit is None else state_schema(rows, limit)
        return super().schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        workdir = None
        if self.options.get("what") == "workdir":
            # driver-side: the driver JVM's directory, which relative paths mean in Spark
            from server_plugin.locations import server_working_dir

            workdir = server_working_dir()
        return _SnapshotReader(self.options, workdir)


class _CommandReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = options

    def read(self, partition: Any) -> Iterator[tuple[str, str]]:
        from server_plugin.commands import run_command

        with storage_scope(self.options):
            yield from run_command(json.loads(_require(self.options, "command")))


class QbeastCommandSource(_RowSource):
    """Runs one table command (convert, vacuum) in the server (plugin-internal format)."""

    format_name = "qbeast_command"

    def reader(self, schema: StructType) -> DataSourceReader:
        return _CommandReader(self.options)


class _IndexWriter(DataSourceArrowWriter):
    def __init__(
        self, options: Mapping[str, str], created_root: bool = False, plan_json: str = ""
    ) -> None:
        # the plan as the server resolved it (the table's column mapping filled in)
        self.options = {**options, "plan": plan_json} if plan_json else options
        # the write creates the table's directory: a failed write removes it again
        self.created_root = created_root

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.writer import write_task

        plan = WritePlan.from_json(_require(self.options, "plan"))
        with storage_scope(self.options):
            return write_task(plan, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.writer import commit_write

        plan = WritePlan.from_json(_require(self.options, "plan"))
        with storage_scope(self.options):
            commit_write(plan, messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.writer import abort_write

        plan = WritePlan.from_json(_require(self.options, "plan"))
        with storage_scope(self.options):
            abort_write(plan, messages, remove_dirs=self.created_root)


class QbeastWriteSource(DataSource):
    """Writes rows planned by the client into a qbeast table (plugin-internal format)."""

    @classmethod
    def name(cls) -> str:
        return "qbeast_write"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if "plan" not in self.options:
            raise InvalidOptionError(
                "format 'qbeast_write' is internal to qbeast-connect: use qbeast_connect.write()"
            )
        from qbeast_connect.write_plan import WritePlan
        from server_plugin.hooks import parse_hooks
        from server_plugin.locations import prepare_location
        from server_plugin.writer import resolve_column_mapping

        plan = WritePlan.from_json(self.options["plan"])
        # fail before any task writes a file when a hook is not allowed here
        parse_hooks(plan.hooks)
        # ... or when a new table's location holds other files or lies in another table
        with storage_scope(self.options):
            created_root = prepare_location(plan.table_path, new_table=plan.read_version < 0)
            plan = resolve_column_mapping(plan)
        return _IndexWriter(self.options, created_root, plan.to_json())


__all__ = ["QbeastCommandSource", "QbeastSnapshotSource", "QbeastWriteSource"]
