"""A compaction's row counts from the log (``spark/write_stats.known_statistics``): they
stand for the statistics job's counts per partition."""

from __future__ import annotations

from qbeast_connect.spark.write_stats import known_statistics


def test_known_statistics_count_each_non_empty_file_as_a_partition() -> None:
    assert known_statistics((400, 0, 1600)) == (2000, [400, 1600])
    assert known_statistics(()) == (0, [])


def test_a_compaction_estimates_its_cubes_on_2000_sampled_rows_per_cube() -> None:
    """A write estimates on all of its rows up to 1,000,000, then on a sample of at least
    that many and 2,000 per desired cube. A compaction (``least_rows=0``) keeps only the
    2,000 per cube: its 400,000 rows at cubeSize 50,000 are estimated on 4% of them (the
    job took 0.78-1.34 s of a 3.0-5.3 s compaction reading all of them, 0.35-0.56 s
    sampled)."""
    from qbeast_connect.spark.write import estimation_fraction

    assert estimation_fraction(400_000, 50_000) == 1.0
    assert estimation_fraction(4_000_000, 50_000) == 0.25
    assert estimation_fraction(400_000, 50_000, 0) == 0.04
    assert estimation_fraction(1_600, 1_000, 0) == 1.0  # small cubes: every row
    assert estimation_fraction(0, 50_000, 0) == 1.0
