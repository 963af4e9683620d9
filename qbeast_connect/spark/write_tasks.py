"""How many tasks the write job of a large input runs, and how its input is narrowed to them.

The plugin's write task sets rows aside by file group when they do not fit its buffer
(``server_plugin.group_spill``), so it writes one file per file group however many rows
it streams: a table's file count is ``write tasks x file groups``. An input of many
partitions is therefore narrowed with ``coalesce`` to one write task per core of the
server (no shuffle: each task reads several input splits in turn) rather than shuffled
by file group (``write.group_by_file``), whose hash shuffle cost the JVM about as much
as the parquet write itself. Servers with many cores would multiply the files; beyond
``DIRECT_WRITE_MAX_TASKS`` cores the shuffle stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qbeast_connect.spark.errors import translate_errors

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DIRECT_WRITE_MAX_TASKS", "narrowed_tasks", "server_cores"]

#: Most write tasks a narrowed (unshuffled) write runs; more cores keep the shuffle.
DIRECT_WRITE_MAX_TASKS = 8

_cores: dict[str, int] = {}


def server_cores(spark: SparkSession) -> int:
    """The server's default parallelism (its cores), asked once per session: the partitions
    of a ``range`` without a partition count (one small job)."""
    key = str(getattr(spark, "session_id", id(spark)))
    found = _cores.get(key)
    if found is None:
        from pyspark.sql import functions as F

        with translate_errors():
            parts = spark.range(0, 1 << 12).groupBy(F.spark_partition_id()).count().collect()
        found = _cores[key] = max(1, len(parts))
    return found


def narrowed_tasks(input_partitions: int, cores: int) -> int | None:
    """Write tasks for an input of ``input_partitions`` non-empty partitions on a server
    of ``cores`` cores: one per core (never more than the partitions), or None when the
    server has too many cores for an unshuffled write to keep its files few."""
    if cores > DIRECT_WRITE_MAX_TASKS:
        return None
    return max(1, min(input_partitions, cores))


def narrow(df: DataFrame, tasks: int) -> DataFrame:
    """``df`` read by ``tasks`` write tasks, each streaming several input splits."""
    return df.coalesce(tasks)
