"""Time partitions of a qbeast table: ``partitionBy="event_time:daily"``.

A time-partitioned qbeast table is a Delta table partitioned by ONE string column that
holds the canonical partition string (``2024-01-02`` for daily, see
:mod:`~qbeast_connect.timeline.update_period`) of a time column. The time column itself
stays in the data (it may be indexed); the partition column is derived from it and named
``<time column>_partition``, the same name whatever the period, so that tables of one fact
at several periods share it (``Fact(partitionColumn=...)``).

How partitions relate to the index: the table has ONE revision space (the revisions of
any qbeast table), and inside a revision every partition is a tree of its own, its cubes
sized by the cube size over the partition's rows
(:mod:`~qbeast_connect.index.partition_trees`). The rows of different partitions never
share a file and every block carries its own weights, so sampling by weight is exact in
every partition, and a filter prunes partitions (their time range) and cubes (the tree).

The table keeps its partitioning in ``metaData.configuration`` under
:data:`PARTITIONING_KEY`, and the partition timeline of its column (the keys of
:mod:`~qbeast_connect.timeline.timeline`) in the same commit as the files.

Pure standard library.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.timeline.update_period import UpdatePeriod

__all__ = [
    "PARTITIONING_KEY",
    "PARTITION_SUFFIX",
    "TimePartitioning",
    "parse_partition_by",
    "partition_string_sql",
    "partitioning_of",
]

#: Configuration key holding a table's time partitioning (JSON).
PARTITIONING_KEY = "qbeast.timePartitioning"
#: The partition column is the time column's name followed by this.
PARTITION_SUFFIX = "_partition"


@dataclass(frozen=True)
class TimePartitioning:
    """How a table is cut into time partitions.

    Attributes:
        time_column: the time column (timestamp, date, timestamp_ntz or canonical string).
        period: the update period of the partitions.
        column: the Delta partition column holding the canonical partition strings.
    """

    time_column: str
    period: UpdatePeriod
    column: str

    @classmethod
    def of(cls, time_column: str, period: UpdatePeriod | str) -> TimePartitioning:
        """The partitioning of ``time_column`` by ``period``, its column named by rule."""
        return cls(time_column, UpdatePeriod.from_name(period), time_column + PARTITION_SUFFIX)

    @property
    def text(self) -> str:
        """The ``partitionBy`` text: ``event_time:daily``."""
        return f"{self.time_column}:{self.period.value}"

    def to_json_value(self) -> dict[str, str]:
        """The JSON object stored in the configuration and the write plan."""
        return {
            "timeColumn": self.time_column,
            "period": self.period.value,
            "partitionColumn": self.column,
        }

    @classmethod
    def from_json_value(cls, value: Any) -> TimePartitioning:
        """Decode :meth:`to_json_value`.

        Raises:
            MetadataFormatError: not a time partitioning object.
        """
        try:
            return cls(
                str(value["timeColumn"]),
                UpdatePeriod.from_name(str(value["period"])),
                str(value["partitionColumn"]),
            )
        except (KeyError, TypeError, InvalidOptionError) as exc:
            raise MetadataFormatError(
                f"malformed time partitioning {value!r} ({exc}); rewrite the table with "
                "qbeast_connect.write(..., partitionBy='<time column>:<period>')"
            ) from None


def parse_partition_by(value: object) -> tuple[str, UpdatePeriod]:
    """Parse the ``partitionBy`` option: ``"<time column>:<update period>"``.

    Raises:
        InvalidOptionError: not of that form, or an unknown period.
    """
    text = value.strip() if isinstance(value, str) else ""
    column, sep, period = text.rpartition(":")
    if not sep or not column.strip() or not period.strip():
        raise InvalidOptionError(
            f"option partitionBy must be '<time column>:<update period>', e.g. "
            f"'event_time:daily', got {value!r}"
        )
    return column.strip(), UpdatePeriod.from_name(period.strip())


def partitioning_of(configuration: Mapping[str, str]) -> TimePartitioning | None:
    """The time partitioning a table configuration declares, or None.

    Raises:
        MetadataFormatError: the stored value is malformed.
    """
    text = configuration.get(PARTITIONING_KEY)
    if text is None or text == "":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise MetadataFormatError(
            f"configuration key {PARTITIONING_KEY} is not JSON: {text[:80]!r}"
        ) from None
    return TimePartitioning.from_json_value(value)


def partition_string_sql(column_sql: str, type_name: str, period: UpdatePeriod) -> str:
    """Spark SQL giving the canonical partition string (UTC) of a time column.

    Timestamps are read as instants (independent of the session time zone); dates and
    ``timestamp_ntz`` values as UTC wall-clock times; strings are kept (the writers check
    that they are canonical strings of ``period``).

    Args:
        column_sql: the quoted column.
        type_name: Spark's ``typeName()`` of the column.
        period: the update period.

    Raises:
        InvalidOptionError: the column type is not a timestamp, date or string.
    """
    if type_name == "string":
        return column_sql
    if type_name == "timestamp":
        # an instant -> UTC wall clock, with no session time zone involved
        epoch = "timestamp_ntz'1970-01-01 00:00:00'"
        utc = f"timestampadd(MICROSECOND, unix_micros({column_sql}), {epoch})"
    elif type_name == "timestamp_ntz":
        utc = column_sql
    elif type_name == "date":
        utc = f"cast({column_sql} as timestamp_ntz)"
    else:
        raise InvalidOptionError(
            f"a time partition column must be a timestamp, date or string (a canonical "
            f"partition string such as {period.example!r}); got {type_name}"
        )
    name = period.value
    if name == "minutely":
        return f"date_format({utc}, 'yyyy-MM-dd-HH-mm')"
    if name == "hourly":
        return f"date_format({utc}, 'yyyy-MM-dd-HH')"
    if name == "daily":
        return f"date_format({utc}, 'yyyy-MM-dd')"
    if name == "weekly":
        return (
            f"concat(lpad(cast(extract(YEAROFWEEK FROM {utc}) as string), 4, '0'), '-W', "
            f"lpad(cast(weekofyear({utc}) as string), 2, '0'))"
        )
    if name == "monthly":
        return f"date_format({utc}, 'yyyy-MM')"
    if name == "quarterly":
        return f"concat(date_format({utc}, 'yyyy'), '-Q', cast(quarter({utc}) as string))"
    return f"date_format({utc}, 'yyyy')"
