"""A compaction's row counts from the log (``spark/write_stats.known_statistics``): they
stand for the statistics job's counts per partition."""

from __future__ import annotations

from qbeast_connect.spark.write_stats import known_statistics


def test_known_statistics_count_each_non_empty_file_as_a_partition() -> None:
    assert known_statistics((400, 0, 1600)) == (2000, [400, 1600])
    assert known_statistics(()) == (0, [])
