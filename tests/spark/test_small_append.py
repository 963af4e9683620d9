"""Small appends run one job: the write task computes the index of its rows itself
(``server_plugin.append_task``) instead of the statistics and estimation jobs.

The index they build must be the one the three-job path builds: the same cube max weights,
blocks and files, the same rows read back by ``deltalake``, and the format's invariants on
every row.
"""

from __future__ import annotations

from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.weight import MAX_WEIGHT
from qbeast_connect.spark import small_append
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    live_adds,
    row_digest,
    spark_digest,
)

BASE_ROWS = 20_000
APPEND_ROWS = 500
APPENDS = 4
CUBE_SIZE = 2_000


def _rows(spark: Any, start: int, n: int, partitions: int) -> Any:
    # deterministic rows whose indexed values always lie inside the base's space
    return spark.range(start, start + n, numPartitions=partitions).selectExpr(
        "id",
        "cast((id * 7919) % 10000 as double) as x",
        "cast((id * 31) % 1000 as int) as y",
        "concat('r', cast(id as string)) as s",
    )


def _cube_summary(path: str) -> dict[str, tuple[int, int, int]]:
    """Cube -> (M(c), rows, smallest row weight) over the live blocks."""
    out: dict[str, tuple[int, int, int]] = {}
    for add in live_adds(path).values():
        for b in decode_blocks(add["tags"]["blocks"]):
            w, n, low = out.get(b.cube_id, (MAX_WEIGHT, 0, MAX_WEIGHT))
            out[b.cube_id] = (min(w, b.max_weight), n + b.element_count, min(low, b.min_weight))
    return out


def _check_rows_in_their_cubes(path: str) -> int:
    """Every stored row can sit in a block of its file as the format requires (spec §5.9):
    a cube on the row's path, with ``block.minWeight <= weight``, and ``weight > M(a)`` for
    every ancestor ``a`` (rows stop at the first cube whose ``M`` they do not exceed)."""
    import pyarrow.parquet as pq

    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.index.normalize import normalize

    config = latest_configuration(path)
    revision = Revision.from_json(config[f"qbeast.revision.{config['qbeast.lastRevisionID']}"])
    d = revision.dimension_count
    max_weights = {c: v[0] for c, v in _cube_summary(path).items()}
    checked = 0
    for name, add in live_adds(path).items():
        if add["tags"]["revision"] != str(revision.revision_id):
            continue
        table = pq.read_table(f"{path}/{name}")
        cols = [table.column(c).combine_chunks() for c in revision.column_names]
        points = normalize(revision.transformations, cols)
        weights = spark_hash_columns(cols)
        blocks = {b.cube_id: b for b in decode_blocks(add["tags"]["blocks"])}
        for point, weight in zip(points.tolist(), weights.tolist(), strict=True):
            cube = CubeId.root(d)
            while True:
                key = cube.to_string()
                block = blocks.get(key)
                if block is not None and block.min_weight <= weight:
                    break
                assert key in max_weights and weight > max_weights[key], (
                    f"row with weight {weight} has no block of its file it may sit in"
                )
                cube = CubeId.container(point, cube.depth + 1)
            checked += 1
    return checked


def _append_series(spark: Any, path: str) -> list[dict[str, float]]:
    # compaction off: each append is the commit after the one before
    qc.write(_rows(spark, 0, BASE_ROWS, 2), path, columnsToIndex="x,y", cubeSize=CUBE_SIZE,
             autoCompact="false")
    timings = []
    for i in range(APPENDS):
        start = BASE_ROWS + i * APPEND_ROWS
        result = qc.write(_rows(spark, start, APPEND_ROWS, 1), path, mode="append")
        assert result.num_rows == APPEND_ROWS and result.version == i + 1
        assert result.revision_id == 1 and not result.new_revision
        timings.append(result.timings)
    return timings


def _file_blocks(path: str) -> list[list[tuple[str, int, int, int]]]:
    """The blocks (cube, min weight, max weight, rows) of each live file, sorted: the
    index's files whatever their names."""
    out = []
    for add in live_adds(path).values():
        blocks = decode_blocks(add["tags"]["blocks"])
        out.append(sorted((b.cube_id, b.min_weight, b.max_weight, b.element_count)
                          for b in blocks))
    return sorted(out)


def _visible_files(path: str) -> set[str]:
    import os

    return {f for f in os.listdir(path) if f.endswith(".parquet")}


def test_one_job_append_writes_the_blocks_the_three_job_path_writes(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_job = str(tmp_path / "one_job")
    three_jobs = str(tmp_path / "three_jobs")

    for timings in _append_series(spark, one_job):
        assert "statistics" not in timings and "estimation" not in timings, timings
        assert "declined" not in timings and "result" not in timings, timings
        assert set(timings) == {"snapshot", "schema", "write"}, timings
    with monkeypatch.context() as patch:
        patch.setattr(small_append, "may_use", lambda *_: False)
        for timings in _append_series(spark, three_jobs):
            assert "statistics" in timings and "estimation" in timings

    # the same files, each with exactly the same blocks (cube, weights, rows) on both paths
    assert _file_blocks(one_job) == _file_blocks(three_jobs)
    ours, theirs = _cube_summary(one_job), _cube_summary(three_jobs)
    assert ours == theirs
    assert any(w < MAX_WEIGHT for w, _, _ in ours.values())  # a real tree, not one cube
    assert sum(n for _, n, _ in ours.values()) == BASE_ROWS + APPENDS * APPEND_ROWS
    assert len(live_adds(one_job)) == len(live_adds(three_jobs))
    assert _visible_files(one_job) == set(live_adds(one_job))

    expected = spark_digest(_rows(spark, 0, BASE_ROWS + APPENDS * APPEND_ROWS, 2))
    assert row_digest(deltalake_table(one_job)) == expected
    assert row_digest(deltalake_table(three_jobs)) == expected
    assert _check_rows_in_their_cubes(one_job) == BASE_ROWS + APPENDS * APPEND_ROWS


def test_one_job_append_of_many_partitions_is_coalesced_into_one_task(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, BASE_ROWS, 2), table_path, columnsToIndex="x,y", cubeSize=CUBE_SIZE)
    result = qc.write(_rows(spark, BASE_ROWS, APPEND_ROWS, 3), table_path, mode="append")
    assert set(result.timings) == {"snapshot", "schema", "write"}, result.timings
    assert result.version == 1 and result.num_rows == APPEND_ROWS and result.num_files == 1
    expected = spark_digest(_rows(spark, 0, BASE_ROWS + APPEND_ROWS, 2))
    assert row_digest(deltalake_table(table_path)) == expected
    assert _check_rows_in_their_cubes(table_path) == BASE_ROWS + APPEND_ROWS


def test_small_append_outside_the_space_falls_back_to_the_regular_jobs(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, BASE_ROWS, 2), table_path, columnsToIndex="x,y", cubeSize=CUBE_SIZE)
    before = _visible_files(table_path)
    wider = _rows(spark, BASE_ROWS, APPEND_ROWS, 1).selectExpr("id", "x + 5000 as x", "y", "s")
    result = qc.write(wider, table_path, mode="append")
    assert "declined" in result.timings
    assert "statistics" in result.timings and "estimation" in result.timings
    # one commit (the declined attempt committed nothing) and no file of it left behind
    assert result.version == 1 and result.new_revision and result.revision_id == 2
    assert [h["version"] for h in qc.QbeastTable.forPath(spark, table_path).history()] == [1, 0]
    assert _visible_files(table_path) == set(live_adds(table_path))
    assert before <= _visible_files(table_path)
    expected = spark_digest(_rows(spark, 0, BASE_ROWS, 2).unionByName(wider))
    assert row_digest(deltalake_table(table_path)) == expected
    assert _check_rows_in_their_cubes(table_path) == APPEND_ROWS  # revision 2 holds the append


def test_append_with_a_partition_above_the_group_cube_size_falls_back_to_the_regular_jobs(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, BASE_ROWS, 2), table_path, columnsToIndex="x,y", cubeSize=CUBE_SIZE)
    big = _rows(spark, BASE_ROWS, CUBE_SIZE + 500, 1)  # one local tree would fill a cube
    result = qc.write(big, table_path, mode="append")
    assert "declined" in result.timings
    assert "statistics" in result.timings and "estimation" in result.timings
    assert not result.new_revision and result.num_rows == CUBE_SIZE + 500
    assert result.version == 1
    assert _visible_files(table_path) == set(live_adds(table_path))
    expected = spark_digest(_rows(spark, 0, BASE_ROWS + CUBE_SIZE + 500, 2))
    assert row_digest(deltalake_table(table_path)) == expected
    assert _check_rows_in_their_cubes(table_path) == BASE_ROWS + CUBE_SIZE + 500


def test_write_result_reads_its_commit_on_first_access(
    spark: Any, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qbeast_connect.spark import commits

    # compaction off: the appends' commits follow each other, with no compaction's read-back
    qc.write(_rows(spark, 0, BASE_ROWS, 2), table_path, columnsToIndex="x,y", cubeSize=CUBE_SIZE,
             autoCompact="false")
    searched: list[str] = []
    find = commits.find_commit

    def counting(*args: Any) -> Any:
        searched.append(args[2])
        return find(*args)

    monkeypatch.setattr("qbeast_connect.spark.write.find_commit", counting)
    results = [
        qc.write(_rows(spark, BASE_ROWS + i * 10, 10, 1), table_path, mode="append")
        for i in range(commits.SEARCH_DEPTH + 2)
    ]
    assert searched == []  # no read-back after the jobs
    # the first result is read after SEARCH_DEPTH + 1 newer commits: still found
    assert [r.version for r in results] == list(range(1, commits.SEARCH_DEPTH + 3))
    assert [r.num_rows for r in results] == [10] * (commits.SEARCH_DEPTH + 2)
    assert all(r.num_files == 1 and r.revision_id == 1 for r in results)
    assert len(searched) == len(results)
    assert results[0].version == 1 and len(searched) == len(results)  # read once


def test_one_job_attempt_reads_few_rows_of_an_input_of_unknown_size(spark: Any) -> None:
    small = small_append.SMALL_APPEND_MAX_ROWS
    unknown = small_append.UNKNOWN_SIZE_MAX_ROWS
    local = spark.createDataFrame([(i, float(i)) for i in range(50)], "id long, x double")
    assert small_append.max_rows_for(local) == small
    assert small_append.max_rows_for(local.where("x > 3").select("id", "x")) == small
    assert small_append.max_rows_for(_rows(spark, 0, 10**6, 2).limit(500)) == small
    assert small_append.max_rows_for(_rows(spark, 0, 10**6, 2).limit(small + 1)) == unknown
    assert small_append.max_rows_for(_rows(spark, 0, 10, 1)) == unknown  # a scan: unknown
    assert small_append.max_rows_for(local.union(local)) == unknown
