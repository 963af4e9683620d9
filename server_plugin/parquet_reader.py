"""The plugin's parquet reader: table files opened with the plugin's storage, decoded with
pyarrow in the server's Python workers.

Both Python data sources that read table files use it: the ``format("qbeast")`` scan
(:mod:`server_plugin.format_read`, which picks the files with the index) and the
plugin-internal ``qbeast_files`` source (:mod:`server_plugin.files_source`, which reads the
files the client picked, on object stores the server's Spark cannot open). The files are
packed into read partitions of about :data:`PARTITION_BYTES`, and every batch is conformed
to the table schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from server_plugin.delta.storage import Storage

#: Files are packed into read partitions of about this many bytes.
PARTITION_BYTES = 64 * 1024 * 1024
#: Rows per Arrow batch a read task yields.
BATCH_ROWS = 65_536
#: Columns a read's schema may end with to get each row's file (its key as the read was
#: given it) and its position in that file (what a deletion vector lists), for rows
#: changed through deletion vectors (:mod:`qbeast_connect.merge`).
FILE_COLUMN = "_qbeast_file"
ROW_COLUMN = "_qbeast_row"

__all__ = [
    "BATCH_ROWS",
    "FILE_COLUMN",
    "PARTITION_BYTES",
    "ROW_COLUMN",
    "ParquetFilesReader",
    "conform_batch",
    "deleted_rows",
    "drop_rows",
    "pack_partitions",
    "relabel",
    "sampled_rows",
    "typed_partition_values",
]


def pack_partitions(
    files: Sequence[tuple[str, int]], target_bytes: int = PARTITION_BYTES
) -> list[tuple[str, ...]]:
    """Group ``(path, size)`` in order into partitions of about ``target_bytes`` each.

    A file is never split; a file at least ``target_bytes`` large gets its own partition.
    """
    out: list[tuple[str, ...]] = []
    current: list[str] = []
    used = 0
    for path, size in files:
        if current and used + size > target_bytes:
            out.append(tuple(current))
            current, used = [], 0
        current.append(path)
        used += size
    if current:
        out.append(tuple(current))
    return out


def typed_partition_values(
    schema: StructType, partition_values: Mapping[str, str | None]
) -> dict[str, object]:
    """A file's partition values (the log's strings) as values of their columns' types in
    ``schema``, keyed by the lower-cased column name; columns not in ``schema`` are left out.

    Raises:
        CorruptLogError: a value is not of its column's type.
    """
    from qbeast_connect.rules.partition_values import partition_value

    types = {f.name.lower(): f.dataType.jsonValue() for f in schema.fields}
    return {
        key.lower(): partition_value(text, types[key.lower()], key)
        for key, text in partition_values.items()
        if key.lower() in types
    }


def conform_batch(
    batch: pa.RecordBatch,
    target: pa.Schema,
    partition_values: Mapping[str, object] | None = None,
) -> pa.RecordBatch:
    """The batch with exactly the ``target`` columns and types.

    Columns are matched by name, then case-insensitively (the first match wins). A partition
    column takes its value from ``partition_values`` (lower-cased name -> typed value, see
    :func:`typed_partition_values`), whatever the file holds: the log is the truth. Other
    columns missing from the file are null.
    """
    import pyarrow as pa

    lowered: dict[str, int] = {}
    for i, name in enumerate(batch.schema.names):
        lowered.setdefault(name.lower(), i)
    partitions = partition_values or {}
    arrays = []
    for field in target:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            index = lowered.get(field.name.lower(), -1)
        if field.name.lower() in partitions:
            value = partitions[field.name.lower()]
            arrays.append(pa.array([value] * batch.num_rows, field.type))
        elif index >= 0:
            column = batch.column(index)
            arrays.append(column if column.type.equals(field.type) else column.cast(field.type))
        else:
            arrays.append(pa.nulls(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def relabel(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """The batch's columns under ``target``'s names, nested field names too: every column
    already has its target type up to field names (physical -> logical names of a
    column-mapped table), so each is a zero-copy view. (An Arrow cast would match nested
    fields by name and give nulls.)"""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [column.view(field.type) for column, field in zip(batch.columns, target, strict=True)],
        schema=target,
    )


def deleted_rows(storage: Storage, vector: Mapping[str, Any]) -> npt.NDArray[np.uint64]:
    """The sorted row indexes a file's ``deletionVector`` (its JSON object) deletes."""
    from server_plugin.delta.deletion_vectors import (
        DeletionVectorDescriptor,
        read_deletion_vector,
    )

    return read_deletion_vector(storage, DeletionVectorDescriptor.from_json(vector))


def drop_rows(batch: pa.RecordBatch, deleted: npt.NDArray[np.uint64], start: int) -> pa.RecordBatch:
    """``batch`` without the rows whose index in the file (``start`` + position) is in
    ``deleted`` (sorted): one vectorized mask per batch, no loop over rows."""
    import numpy as np
    import pyarrow as pa

    n = batch.num_rows
    lo, hi = np.searchsorted(deleted, [start, start + n])
    if lo == hi:
        return batch
    keep = np.ones(n, dtype=bool)
    keep[(deleted[lo:hi] - np.uint64(start)).astype(np.int64)] = False
    return batch.filter(pa.array(keep))


def sampled_rows(batch: pa.RecordBatch, columns: Sequence[str], bound: int) -> pa.RecordBatch:
    """The rows of ``batch`` whose weight, Spark's ``hash`` of ``columns`` (matched
    case-insensitively), is below ``bound``: the row filter of a qbeast sample, computed with
    numpy over whole columns."""
    import pyarrow as pa

    from qbeast_connect.index.hashing_np import spark_hash_columns

    by_lower = {name.lower(): i for i, name in enumerate(batch.schema.names)}
    weights = spark_hash_columns([batch.column(by_lower[c.lower()]) for c in columns])
    return batch.filter(pa.array(weights < bound))


def bernoulli_draws(seed: int, key: str) -> np.random.Generator:
    """The random generator of a Bernoulli sample of one file: the same seed and file
    draw the same rows on every read."""
    import zlib

    import numpy as np

    return np.random.default_rng([seed % 2**64, zlib.crc32(key.encode())])


class ParquetFilesReader(DataSourceReader):
    """Reads files of one table through the plugin's storage.

    The reader is pickled to the executors before :meth:`partitions` runs, so it keeps
    only small state; each partition carries the storage keys it reads.

    Args:
        root: the table location.
        schema: the schema of the rows to return; when it ends with :data:`FILE_COLUMN`
            and :data:`ROW_COLUMN`, each row gets its file's key and its position in it.
        files: ``(storage key, size)`` of every file to read, in order.
        partition_values: storage key -> the file's partition values (from the log).
        storage_options: object-store settings the client sent with the read (None: the
            server's own).
        column_mapping_mode: the table's ``delta.columnMapping.mode``: with ``name`` or
            ``id`` the files (and ``partition_values``) name columns by the physical names
            in ``schema``'s field metadata; the rows are returned under ``schema``'s
            logical names.
        sample: ``(indexed columns, weight bound)``: only the rows whose weight (Spark's
            ``hash`` of those columns) is below the bound are returned, the rows of a
            qbeast ``sample(f)``; None returns every row.
        bernoulli: ``(fraction, seed)``: each row is kept with that probability, drawn from
            a generator seeded by the seed and the file (a ``TABLESAMPLE`` of a table with
            no qbeast metadata, handed to the source by the server's SQL extension).
    """

    def __init__(
        self,
        root: str,
        schema: StructType,
        files: Sequence[tuple[str, int]] = (),
        partition_values: Mapping[str, Mapping[str, str | None]] | None = None,
        storage_options: Mapping[str, str] | None = None,
        deletion_vectors: Mapping[str, Mapping[str, Any]] | None = None,
        column_mapping_mode: str | None = None,
        sample: tuple[Sequence[str], int] | None = None,
        bernoulli: tuple[float, int] | None = None,
    ) -> None:
        self.root = root
        self.schema = schema
        self.files = [(str(key), int(size)) for key, size in files]
        self.partition_values = {k: dict(v) for k, v in (partition_values or {}).items() if v}
        self.storage_options = dict(storage_options) if storage_options else None
        self.deletion_vectors = {k: dict(v) for k, v in (deletion_vectors or {}).items()}
        self.column_mapping_mode = column_mapping_mode
        self.sample = None if sample is None else (tuple(sample[0]), int(sample[1]))
        self.bernoulli = None if bernoulli is None else (float(bernoulli[0]), int(bernoulli[1]))

    def selected(self) -> list[tuple[str, int]]:
        """``(storage key, size)`` of every file the read opens (subclasses may plan them)."""
        return self.files

    def partitions(self) -> list[InputPartition]:
        # runs on the driver after selected(): each read partition carries its files'
        # partition values, since the executors hold a copy of the reader made before
        selected = self.selected()
        return [
            InputPartition(
                tuple(
                    (key, self.partition_values.get(key), self.deletion_vectors.get(key))
                    for key in group
                )
            )
            for group in pack_partitions(selected)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import numpy as np
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from server_plugin.delta.storage import storage_for
        from server_plugin.parquet_files import check_calendar, legacy_calendar, open_parquet

        entries = partition.value or ()
        if not entries:
            return
        from qbeast_connect.rules.column_mapping import COLUMN_MAPPING_MODE, column_mapping

        storage = storage_for(self.root, self.storage_options)
        names = self.schema.fieldNames()
        positions = names[-2:] == [FILE_COLUMN, ROW_COLUMN]
        table_schema = StructType(self.schema.fields[:-2]) if positions else self.schema
        logical = to_arrow_schema(table_schema, timezone="UTC")
        stored = table_schema
        mapping = column_mapping(
            {COLUMN_MAPPING_MODE: self.column_mapping_mode or "none"}, table_schema
        )
        if mapping is not None:
            stored = StructType.fromJson(dict(mapping.physical_schema))
        target = to_arrow_schema(stored, timezone="UTC")
        wanted = {name.lower() for name in target.names}
        for key, strings, vector in entries:
            values = typed_partition_values(stored, strings or {})
            deleted = None if vector is None else deleted_rows(storage, vector)
            draws = None if self.bernoulli is None else bernoulli_draws(self.bernoulli[1], key)
            with open_parquet(storage, key, self.root) as parquet:
                legacy = legacy_calendar(parquet)
                columns = [
                    n
                    for n in parquet.schema_arrow.names
                    if n.lower() in wanted and n.lower() not in values
                ]
                start = 0
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
                    rows = batch.num_rows
                    if legacy:
                        check_calendar(batch, key)
                    if positions:  # dropped and sampled with the rows
                        index = pa.array(np.arange(start, start + rows, dtype=np.int64))
                        batch = batch.append_column(ROW_COLUMN, index)
                    if deleted is not None:
                        batch = drop_rows(batch, deleted, start)
                    start += rows
                    if batch.num_rows:
                        out = conform_batch(batch, target, values)
                        out = out if mapping is None else relabel(out, logical)
                        if positions:
                            n = out.num_rows
                            out = out.append_column(
                                FILE_COLUMN, pa.array([key] * n, pa.string())
                            ).append_column(ROW_COLUMN, batch.column(ROW_COLUMN))
                        if self.sample is not None:
                            out = sampled_rows(out, *self.sample)
                        if draws is not None and self.bernoulli is not None:
                            keep = draws.random(out.num_rows) < self.bernoulli[0]
                            out = out.filter(pa.array(keep))
                        if out.num_rows:
                            yield out
