"""The read side of ``format("qbeast")``: the table's Delta state, pushed filters, the scan.

:class:`QbeastDataSource.reader() <server_plugin.qbeast_format.QbeastDataSource>` returns a
:class:`QbeastPushdownReader` (or a :class:`QbeastScanReader` with ``filterPushdown=false``).
Filters Spark pushes become the planner's predicate tree (:func:`filter_to_predicate`),
:func:`~qbeast_connect.planning.file_planner.plan_files` picks the files on the driver, and
the plugin's one parquet reader (:mod:`server_plugin.parquet_reader`) reads them. Every
filter is still handed back to Spark, which applies it to the rows: pruning never changes an
answer. The snapshot helpers here serve the write side too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StructType

from qbeast_connect.exceptions import InvalidOptionError, TableNotFoundError
from server_plugin.delta.storage.scope import storage_scope, storage_settings
from server_plugin.parquet_reader import ParquetFilesReader

if TYPE_CHECKING:
    from qbeast_connect.model.snapshot import QbeastSnapshot
    from qbeast_connect.planning.predicate import Predicate
    from server_plugin.delta.snapshot import DeltaSnapshot

__all__ = [
    "SAMPLE_OPTION",
    "QbeastPushdownReader",
    "QbeastScanReader",
    "add_dicts",
    "filter_to_predicate",
    "qbeast_view",
    "read_delta_snapshot",
    "sample_columns",
    "sample_fraction",
    "table_sample",
]


def read_delta_snapshot(path: str, version: int | None) -> DeltaSnapshot | None:
    """The Delta snapshot at ``path`` (None when no table exists and no version was asked)."""
    from server_plugin.delta.log_reader import read_snapshot
    from server_plugin.delta.storage import storage_for

    try:
        return read_snapshot(storage_for(path), version)
    except TableNotFoundError:
        if version is not None:
            raise
        return None


def add_dicts(snapshot: DeltaSnapshot) -> list[dict[str, Any]]:
    """The live add actions as JSON dicts (what the client-side snapshot code expects)."""
    from server_plugin.delta.actions import action_to_json

    return [action_to_json(add)["add"] for add in snapshot.files.values()]


def qbeast_view(snapshot: DeltaSnapshot) -> QbeastSnapshot:
    """The qbeast view (revisions, index files, cube statuses) of a Delta snapshot."""
    from qbeast_connect.model.snapshot import QbeastSnapshot

    return QbeastSnapshot.from_delta(
        snapshot.metadata.configuration, add_dicts(snapshot), snapshot.version
    )


# --------------------------------------------------------------------------------------
# filters
# --------------------------------------------------------------------------------------


def _next_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with ``prefix`` (None if none)."""
    last = ord(prefix[-1])
    if last >= 0x10FFFF or 0xD7FF <= last <= 0xDFFF:
        return None
    return prefix[:-1] + chr(last + 1)


def filter_to_predicate(f: Any) -> Predicate | None:
    """Translate one pushed Spark filter to the planner's predicate tree.

    Returns None for filters pruning cannot use (nested columns, ``LIKE '%x'`` and
    ``'%x%'``, values the tree has no literal for): they prune nothing. The translation
    never matches fewer rows than the filter, so pruning with it is safe.
    """
    from pyspark.sql import datasource as ds

    from qbeast_connect.planning.predicate import (
        Comparison,
        InList,
        IsNotNull,
        IsNull,
        Not,
        and_,
    )

    if isinstance(f, ds.Not):
        child = filter_to_predicate(f.child)
        return None if child is None else Not(child)
    attribute = getattr(f, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1:
        return None
    column = attribute[0]
    value = getattr(f, "value", None)
    ops = {
        ds.EqualTo: "=",
        ds.GreaterThan: ">",
        ds.GreaterThanOrEqual: ">=",
        ds.LessThan: "<",
        ds.LessThanOrEqual: "<=",
    }
    try:
        for cls, op in ops.items():
            if isinstance(f, cls):
                return Comparison(column, op, value)  # type: ignore[arg-type]
        if isinstance(f, ds.EqualNullSafe):
            return IsNull(column) if value is None else Comparison(column, "=", value)
        if isinstance(f, ds.In):
            values = tuple(value or ())
            return InList(column, values) if values else None
        if isinstance(f, ds.IsNull):
            return IsNull(column)
        if isinstance(f, ds.IsNotNull):
            return IsNotNull(column)
        if isinstance(f, ds.StringStartsWith) and isinstance(value, str) and value:
            upper = _next_prefix(value)
            low = Comparison(column, ">=", value)
            return low if upper is None else and_(low, Comparison(column, "<", upper))
    except (InvalidOptionError, TypeError, ValueError):
        return None
    return None


# --------------------------------------------------------------------------------------
# the scan
# --------------------------------------------------------------------------------------


#: The read option of ``format("qbeast")`` that returns the rows of ``sample(fraction)``.
SAMPLE_OPTION = "sampleFraction"


def sample_fraction(options: Mapping[str, str]) -> float | None:
    """The read's ``sampleFraction`` option, checked (None when absent).

    Raises:
        InvalidOptionError: not a number in (0, 1].
    """
    from qbeast_connect.planning.file_planner import validate_fraction

    text = next((v for k, v in options.items() if k.lower() == SAMPLE_OPTION.lower()), None)
    if text is None or str(text).strip() == "":
        return None
    try:
        value = float(str(text).strip())
    except ValueError:
        raise InvalidOptionError(
            f"option {SAMPLE_OPTION} must be a number in (0, 1], got {text!r}"
        ) from None
    return validate_fraction(value)


#: The read options the server's SQL extension adds when it takes a ``TABLESAMPLE`` or
#: ``DataFrame.sample`` off the plan (``qbeast_connect/spark/jvm``, ``QbeastSampleRule``).
TABLE_SAMPLE_OPTION = "tableSampleFraction"
TABLE_SAMPLE_SEED_OPTION = "tableSampleSeed"


def table_sample(options: Mapping[str, str]) -> tuple[float, int] | None:
    """``(fraction, seed)`` of a sample the SQL extension pushed to the read (None: none).

    Raises:
        InvalidOptionError: the options are not a fraction in (0, 1] and an integer seed.
    """
    from qbeast_connect.planning.file_planner import validate_fraction

    lowered = {k.lower(): v for k, v in options.items()}
    text = lowered.get(TABLE_SAMPLE_OPTION.lower())
    if text is None:
        return None
    try:
        fraction, seed = float(text), int(lowered.get(TABLE_SAMPLE_SEED_OPTION.lower(), "0"))
    except ValueError:
        raise InvalidOptionError(
            f"options {TABLE_SAMPLE_OPTION}={text!r} and {TABLE_SAMPLE_SEED_OPTION} must be a "
            "number in (0, 1] and an integer (the server's SQL extension sets them)"
        ) from None
    return validate_fraction(fraction), seed


def sample_columns(qsnap: QbeastSnapshot, path: str) -> tuple[str, ...]:
    """The columns whose hash is a row's weight: the latest revision's indexed columns.

    Raises:
        NotAQbeastTableError: the table has no qbeast metadata, so its rows have no weight.
    """
    if not qsnap.is_qbeast or qsnap.latest_revision is None:
        from qbeast_connect.exceptions import NotAQbeastTableError

        raise NotAQbeastTableError(
            f"option {SAMPLE_OPTION} samples by the qbeast row weight, and the table at {path} "
            "has no qbeast metadata: convert it with qbeast_connect.convertToQbeast(...) first"
        )
    return tuple(qsnap.latest_revision.column_names)


class QbeastScanReader(ParquetFilesReader):
    """Reads the files of a qbeast (or plain Delta) table that the filters cannot rule out.

    The reader is pickled to the executors before :meth:`partitions` runs, so it only keeps
    small state: the location, the version, the schema and the pushed predicates. The files
    are planned in :meth:`partitions` (on the driver) and read by
    :class:`~server_plugin.parquet_reader.ParquetFilesReader`.
    """

    def __init__(
        self,
        path: str,
        version: int | None,
        schema: StructType,
        storage_options: Mapping[str, str] | None = None,
        column_mapping_mode: str | None = None,
        sample: tuple[Sequence[str], float] | None = None,
        bernoulli: tuple[float, int] | None = None,
    ) -> None:
        from qbeast_connect.planning.file_planner import weight_range_for_fraction

        bound = None if sample is None else weight_range_for_fraction(sample[1])[1]
        super().__init__(
            path,
            schema,
            storage_options=storage_settings(storage_options),
            column_mapping_mode=column_mapping_mode,
            sample=None if sample is None or bound is None else (sample[0], bound),
            bernoulli=bernoulli,
        )
        self.version = version
        self.fraction = None if sample is None else sample[1]
        self.predicates: list[Predicate] = []

    @property
    def path(self) -> str:
        """The table location."""
        return self.root

    def predicate(self) -> Predicate | None:
        """The conjunction of the translated filters (None when there is none)."""
        from qbeast_connect.planning.predicate import and_

        return and_(*self.predicates) if self.predicates else None

    def plan(self) -> list[tuple[str, int]]:
        """``(storage key, size)`` of every file the read must open, in snapshot order."""
        from qbeast_connect.planning.file_planner import plan_files, stats_by_path

        with storage_scope(self.storage_options):
            snapshot = read_delta_snapshot(self.path, self.version)
        if snapshot is None:
            raise TableNotFoundError(f"no table at {self.path}")
        adds = add_dicts(snapshot)
        qsnap = qbeast_view(snapshot)
        # Spark pushes filters with literals already of their column's type: no time zone
        # is involved in binding them to the schema.
        stats = stats_by_path(adds, snapshot.metadata.configuration, self.schema)
        plan = plan_files(
            qsnap, self.predicate(), self.fraction, file_stats=stats, schema=self.schema
        )
        keys = {add.path: key for key, add in snapshot.files.items()}
        selected = [(keys[f.path], f.size) for f in plan.files]
        # partitions() packs these with the files (a partition column's values are in the log)
        self.partition_values = {
            key: dict(snapshot.files[key].partition_values)
            for key, _size in selected
            if snapshot.files[key].partition_values
        }
        self.deletion_vectors = {
            key: vector.to_json()
            for key, _size in selected
            if (vector := snapshot.files[key].deletion_vector) is not None
        }
        return selected

    def selected(self) -> list[tuple[str, int]]:
        return self.plan()


class QbeastPushdownReader(QbeastScanReader):
    """:class:`QbeastScanReader` that prunes files with the filters Spark pushes."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:  # noqa: N802 - Spark API
        for f in filters:
            predicate = filter_to_predicate(f)
            if predicate is not None:
                self.predicates.append(predicate)
        # Spark applies every filter again to the rows: pruning stays an optimization
        return list(filters)
