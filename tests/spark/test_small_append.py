"""Small appends run one domain job instead of the statistics and estimation jobs.

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
    qc.write(_rows(spark, 0, BASE_ROWS, 2), path, columnsToIndex="x,y", cubeSize=CUBE_SIZE)
    timings = []
    for i in range(APPENDS):
        start = BASE_ROWS + i * APPEND_ROWS
        result = qc.write(_rows(spark, start, APPEND_ROWS, 1), path, mode="append")
        assert result.num_rows == APPEND_ROWS and result.version == i + 1
        assert result.revision_id == 1 and not result.new_revision
        timings.append(result.timings)
    return timings


def test_small_append_builds_the_same_index_with_one_job(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    combined = str(tmp_path / "combined")
    three_jobs = str(tmp_path / "three_jobs")

    for timings in _append_series(spark, combined):
        assert "statistics" not in timings and "estimation" not in timings, timings
        assert "domains" in timings and "weights" in timings
    with monkeypatch.context() as patch:
        patch.setattr(small_append, "may_use", lambda *_: False)
        for timings in _append_series(spark, three_jobs):
            assert "statistics" in timings and "estimation" in timings
            assert "domains" not in timings

    # the same cubes, max weights, row counts and smallest weights on both paths
    ours, theirs = _cube_summary(combined), _cube_summary(three_jobs)
    assert ours == theirs
    assert any(w < MAX_WEIGHT for w, _, _ in ours.values())  # a real tree, not one cube
    assert sum(n for _, n, _ in ours.values()) == BASE_ROWS + APPENDS * APPEND_ROWS
    assert len(live_adds(combined)) == len(live_adds(three_jobs))

    expected = spark_digest(_rows(spark, 0, BASE_ROWS + APPENDS * APPEND_ROWS, 2))
    assert row_digest(deltalake_table(combined)) == expected
    assert row_digest(deltalake_table(three_jobs)) == expected
    assert _check_rows_in_their_cubes(combined) == BASE_ROWS + APPENDS * APPEND_ROWS


def test_small_append_outside_the_space_runs_the_estimation_job(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, BASE_ROWS, 2), table_path, columnsToIndex="x,y", cubeSize=CUBE_SIZE)
    wider = _rows(spark, BASE_ROWS, APPEND_ROWS, 1).selectExpr("id", "x + 5000 as x", "y", "s")
    result = qc.write(wider, table_path, mode="append")
    assert result.new_revision and result.revision_id == 2
    assert "domains" in result.timings and "weights" not in result.timings
    assert "statistics" in result.timings and "estimation" in result.timings
    expected = spark_digest(_rows(spark, 0, BASE_ROWS, 2).unionByName(wider))
    assert row_digest(deltalake_table(table_path)) == expected
    assert _check_rows_in_their_cubes(table_path) == APPEND_ROWS  # revision 2 holds the append


def test_append_with_a_partition_above_the_group_cube_size_runs_the_estimation_job(
    spark: Any, table_path: str
) -> None:
    qc.write(_rows(spark, 0, BASE_ROWS, 2), table_path, columnsToIndex="x,y", cubeSize=CUBE_SIZE)
    big = _rows(spark, BASE_ROWS, CUBE_SIZE + 500, 1)  # one local tree would fill a cube
    result = qc.write(big, table_path, mode="append")
    assert not result.new_revision and result.num_rows == CUBE_SIZE + 500
    assert "domains" in result.timings and "weights" not in result.timings
    assert "statistics" in result.timings and "estimation" in result.timings
    expected = spark_digest(_rows(spark, 0, BASE_ROWS + CUBE_SIZE + 500, 2))
    assert row_digest(deltalake_table(table_path)) == expected
    assert _check_rows_in_their_cubes(table_path) == BASE_ROWS + CUBE_SIZE + 500
