"""Opening a table's parquet file the way Spark reads it, or refusing it clearly.

* A file the log lists but storage lacks (deleted or vacuumed by hand, a partial copy of a
  table) is a :class:`~qbeast_connect.exceptions.DataFileMissingError` naming the file, not
  a bare ``FileNotFoundError`` from inside a read task.
* ``INT96`` timestamps (Spark 2/3's default for timestamps) are decoded to microseconds,
  Spark's unit: decoding them to nanoseconds, pyarrow's default, overflows for years past
  2262 (Delta tables hold ``9999-12-31`` as an "end of time").
* Files that Spark wrote in its legacy hybrid (Julian) calendar say so in their footer
  (``org.apache.spark.legacyDateTime``, ``org.apache.spark.legacyINT96``); Spark rebases
  their dates and timestamps before 1582-10-15 into the proleptic Gregorian calendar, per
  time zone. This reader does not: a batch of such a file holding a value before that day
  is refused, since its answer would differ from Spark's. Later values are the same in both
  calendars and read as they are.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import DataFileMissingError, QbeastError, UnsupportedInputError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from server_plugin.delta.storage import Storage

__all__ = ["LEGACY_CALENDAR_KEYS", "check_calendar", "legacy_calendar", "open_parquet"]

#: Footer keys by which Spark marks files written in the hybrid Julian calendar.
LEGACY_CALENDAR_KEYS = (b"org.apache.spark.legacyDateTime", b"org.apache.spark.legacyINT96")
#: The first day of the Gregorian calendar: earlier dates differ between the calendars.
_GREGORIAN_START = dt.date(1582, 10, 15)


def missing_file(key: str, root: str) -> DataFileMissingError:
    return DataFileMissingError(
        f"the table at {root} lists the file {key}, which is not in storage (it was deleted "
        "or vacuumed outside Delta, or the table was copied without it); restore the file, "
        "or time travel to a version that does not list it"
    )


@contextlib.contextmanager
def open_parquet(storage: Storage, key: str, root: str) -> Iterator[pq.ParquetFile]:
    """The parquet file at storage ``key``, INT96 timestamps decoded in microseconds.

    Raises:
        DataFileMissingError: storage has no file at ``key``.
    """
    import pyarrow.parquet as pq

    with contextlib.ExitStack() as stack:
        try:
            source = stack.enter_context(storage.open_input(key))
        except FileNotFoundError as exc:
            if isinstance(exc, QbeastError):
                raise
            raise missing_file(key, root) from None
        yield pq.ParquetFile(source, coerce_int96_timestamp_unit="us")


def legacy_calendar(parquet: pq.ParquetFile) -> bool:
    """Whether Spark wrote ``parquet``'s dates and timestamps in the hybrid calendar."""
    metadata = parquet.schema_arrow.metadata or {}
    return any(key in metadata for key in LEGACY_CALENDAR_KEYS)


def check_calendar(batch: pa.RecordBatch, key: str) -> None:
    """Refuse a batch of a legacy-calendar file holding a date or timestamp before
    1582-10-15 (see the module docs).

    Raises:
        UnsupportedInputError: such a value.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    for field, column in zip(batch.schema, batch.columns, strict=True):
        if pa.types.is_timestamp(field.type) or pa.types.is_date(field.type):
            low: Any = pc.min(column).as_py()
            if low is None:
                continue
            day = low.date() if isinstance(low, dt.datetime) else low
            if day < _GREGORIAN_START:
                raise UnsupportedInputError(
                    f"the file {key} was written by Spark in its legacy hybrid calendar and "
                    f"its column {field.name!r} holds {low}, before 1582-10-15, which Spark "
                    "rebases and this reader does not; read the table with Spark's own "
                    "reader (plain Delta), or rewrite the file with a Spark that writes the "
                    "proleptic Gregorian calendar"
                )
