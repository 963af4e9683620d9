"""Facts: named sets of time-partitioned tables at different update periods.

A fact's tables hold the same data at several granularities (rollups): for example an
hourly table, a daily table and a monthly table. :meth:`Fact.cover` finds, for a time
range, the coarsest existing partitions that cover it, and :meth:`Fact.read` reads
exactly those partitions as one DataFrame.

Every existence check is answered from memory: a fact loads each table's metadata once
(its Delta snapshot, through the server plugin) and keeps the timelines and the file
list of that snapshot. :meth:`Fact.refresh` returns a fact that loads them again.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError, TableNotFoundError
from qbeast_connect.planning.file_planner import plan_files, stats_by_path
from qbeast_connect.planning.predicate import Predicate, from_sql, quote_identifier
from qbeast_connect.spark.balance import balanced_column
from qbeast_connect.spark.columns import from_column, session_time_zone
from qbeast_connect.spark.files import read_table_files, table_file
from qbeast_connect.spark.snapshot import TableState, load_table_state
from qbeast_connect.timeline.cover import CoverPlan, TimelineOracle, plan_cover
from qbeast_connect.timeline.partition import TimePartition, TimeRange
from qbeast_connect.timeline.timeline import PartitionTimeline
from qbeast_connect.timeline.update_period import UpdatePeriod
from qbeast_connect.timeline.writer import timelines_of_state

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.connect.session import SparkSession

__all__ = ["Fact"]

TimeLike = datetime | date | str


class Fact:
    """A named set of tables, each with the update periods it holds.

    Args:
        spark: the Spark Connect session.
        name: the fact's name (used in messages).
        tables: table path -> its update periods (``UpdatePeriod`` or names). When
            several tables hold a partition, the first one in this order serves it.
        partitionColumn: the time partition column shared by the tables.

    Example:
        >>> fact = Fact(spark, "sales", tables={
        ...     "/data/sales_monthly": ["monthly"],
        ...     "/data/sales_daily": ["daily"],
        ...     "/data/sales_hourly": ["hourly"],
        ... }, partitionColumn="dt")  # doctest: +SKIP
        >>> fact.cover("2015-01-29T06:00:00Z", "2015-03-01T06:00:00Z")  # doctest: +SKIP
        [('/data/sales_hourly', TimePartition(hourly, '2015-01-29-06')), ...]
    """

    def __init__(
        self,
        spark: SparkSession,
        name: str,
        tables: Mapping[str, Iterable[UpdatePeriod | str]],
        partitionColumn: str,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidOptionError("a fact needs a non-empty name")
        if not isinstance(partitionColumn, str) or not partitionColumn:
            raise InvalidOptionError("a fact needs its time partition column (partitionColumn)")
        if not isinstance(tables, Mapping) or not tables:
            raise InvalidOptionError(
                "a fact needs tables: a mapping of table path -> update periods, e.g. "
                "{'/data/hourly': ['hourly']}"
            )
        normalized: dict[str, tuple[UpdatePeriod, ...]] = {}
        for path, periods in tables.items():
            if isinstance(periods, str | UpdatePeriod):
                raise InvalidOptionError(
                    f"the update periods of table {path!r} must be a list, e.g. ['daily']"
                )
            resolved = tuple(sorted({UpdatePeriod.from_name(p) for p in periods}))
            if not resolved:
                raise InvalidOptionError(f"table {path!r} of fact {name!r} has no update period")
            normalized[path] = resolved
        self._spark = spark
        self._name = name
        self._tables = normalized
        self._column = partitionColumn
        self._states: dict[str, TableState] = {}
        self._timelines: dict[str, dict[UpdatePeriod, PartitionTimeline]] = {}
        self._metadata_loads = 0

    # -- properties --------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The fact's name."""
        return self._name

    @property
    def tables(self) -> dict[str, tuple[UpdatePeriod, ...]]:
        """Table path -> update periods, finest first."""
        return dict(self._tables)

    @property
    def partition_column(self) -> str:
        """The time partition column."""
        return self._column

    @property
    def update_periods(self) -> tuple[UpdatePeriod, ...]:
        """All update periods of the fact's tables, finest first."""
        return tuple(sorted({p for ps in self._tables.values() for p in ps}))

    @property
    def metadata_loads(self) -> int:
        """How many table metadata loads this fact has made (at most one per table)."""
        return self._metadata_loads

    def refresh(self) -> Fact:
        """A new fact over the same tables that will load their latest metadata."""
        return Fact(self._spark, self._name, self._tables, partitionColumn=self._column)

    def __repr__(self) -> str:
        tables = ", ".join(
            f"{path}: [{', '.join(p.value for p in periods)}]"
            for path, periods in self._tables.items()
        )
        return f"Fact({self._name!r}, {{{tables}}}, partitionColumn={self._column!r})"

    # -- metadata --------------------------------------------------------------------------

    def _load(self, path: str) -> TableState:
        state = self._states.get(path)
        if state is not None:
            return state
        state = load_table_state(self._spark, path)
        self._metadata_loads += 1
        if not state.exists:
            raise TableNotFoundError(f"table {path} of fact {self._name!r} does not exist")
        columns = list(state.metadata.get("partitionColumns") or [])
        if self._column not in columns:
            raise InvalidOptionError(
                f"table {path} of fact {self._name!r} is partitioned by {columns}, not by "
                f"{self._column!r}"
            )
        found = timelines_of_state(state)
        self._timelines[path] = {
            period: timeline
            for (column, period), timeline in found.items()
            if column == self._column
        }
        self._states[path] = state
        return state

    def timelines(self, path: str) -> dict[UpdatePeriod, PartitionTimeline]:
        """The timelines of one of the fact's tables, per update period (loads it once)."""
        if path not in self._tables:
            raise InvalidOptionError(f"{path!r} is not a table of fact {self._name!r}")
        self._load(path)
        return dict(self._timelines[path])

    # -- planning ----------------------------------------------------------------------

    def plan(self, start: TimeLike, end: TimeLike) -> CoverPlan:
        """The cover plan of ``[start, end)``, complete or not (never raises for holes).

        Args:
            start: first instant (datetime, date or ISO-8601 string; naive means UTC).
            end: first instant after the range.
        """
        rng = TimeRange.of(start, end)
        for path in self._tables:
            self._load(path)
        return plan_cover(rng, self._tables, TimelineOracle(self._timelines))

    def cover(self, start: TimeLike, end: TimeLike) -> list[tuple[str, TimePartition]]:
        """The ``(table path, partition)`` pairs covering ``[start, end)``, in time order.

        Coarser partitions are preferred; a missing partition falls back to finer ones.

        Raises:
            UncoverableRangeError: some sub-range has no covering partition in any table;
                the message names the uncovered sub-ranges.
            TableNotFoundError: a table of the fact does not exist.
        """
        return self.plan(start, end).require_complete(self._name)

    def files(
        self, start: TimeLike, end: TimeLike, where: Column | str | None = None
    ) -> dict[str, list[str]]:
        """Table path -> the files (log paths) :meth:`read` opens for ``[start, end)``.

        The files of the covering partitions; with ``where``, only those the qbeast index
        (time-partitioned qbeast tables: cubes inside each partition) and the file
        statistics cannot rule out.

        Raises:
            UncoverableRangeError: see :meth:`cover`.
        """
        chosen = self._files(start, end, where)
        return {path: [str(a["path"]) for a in adds] for path, adds in chosen.items()}

    def _files(
        self, start: TimeLike, end: TimeLike, where: Column | str | None
    ) -> dict[str, list[Mapping[str, Any]]]:
        parts = self.cover(start, end)
        wanted: dict[str, set[str]] = {}
        for path, partition in parts:
            wanted.setdefault(path, set()).add(str(partition))
        predicate = None if where is None else _predicate(where)
        out: dict[str, list[Mapping[str, Any]]] = {}
        for path in self._tables:
            state = self._load(path)
            values = wanted.get(path)
            if not values:
                continue
            selected = [
                add
                for add in state.adds
                if (add.get("partitionValues") or {}).get(self._column) in values
            ]
            if predicate is not None and selected:
                keep = set(_pruned_paths(self._spark, state, predicate))
                selected = [add for add in selected if str(add.get("path")) in keep]
            out[path] = selected
        return out

    def read(self, start: TimeLike, end: TimeLike, where: Column | str | None = None) -> DataFrame:
        """One DataFrame with the rows of exactly the partitions of :meth:`cover`.

        The files come from the loaded Delta snapshots (never from a directory listing);
        the partition column is rebuilt from the partition directories as a string.

        Args:
            start: first instant of the range.
            end: first instant after it.
            where: an optional filter (Column or SQL string), applied to the rows; it also
                prunes files (see :meth:`files`), which never changes the answer.

        Raises:
            UncoverableRangeError: see :meth:`cover`.
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType

        chosen = self._files(start, end, where)
        frames: list[DataFrame] = []
        first_schema: StructType | None = None
        for path in self._tables:
            state = self._load(path)
            schema = StructType.fromJson(_json(state.schema_string))
            if first_schema is None:
                first_schema = schema
            selected = chosen.get(path)
            if not selected:
                continue
            frame = read_table_files(
                self._spark,
                state.path,  # the canonical location (relative paths resolved)
                schema,
                [table_file(a) for a in selected],
                state.configuration,
            )
            frame = frame.select(*[quote_identifier(n) for n in schema.fieldNames()])
            if where is not None:
                frame = frame.filter(
                    F.expr(where) if isinstance(where, str) else balanced_column(where)
                )
            frames.append(frame)
        if not frames:
            assert first_schema is not None
            return self._spark.createDataFrame([], first_schema)
        return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _predicate(where: Column | str) -> Predicate:
    if isinstance(where, str):
        return from_sql(where)
    return from_column(where)


def _pruned_paths(spark: SparkSession, state: TableState, predicate: Predicate) -> tuple[str, ...]:
    """The files of ``state`` a read filtered by ``predicate`` must open."""
    schema: object = state.schema_string or {}
    plan = plan_files(
        state.qbeast(),
        predicate,
        None,
        file_stats=stats_by_path(state.adds, state.configuration, schema),
        schema=schema,
        time_zone=session_time_zone(spark),
    )
    return plan.paths


def _json(text: str | None) -> dict[str, object]:
    import json

    if text is None:
        return {"type": "struct", "fields": []}
    value = json.loads(text)
    assert isinstance(value, dict)
    return value
