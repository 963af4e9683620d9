"""One OTree per time partition: every partition's cubes are sized by ``cubeSize`` over its
own rows (``qbeast_connect.index.partition_trees``).

One table of three UTC days with very different row counts (1,600, 500 and 60 events,
cubes of 200 rows) is written from six input partitions (the consolidating write path);
answers and samples are checked against Spark's plain parquet reader and delta-rs.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.weight import MAX_WEIGHT, fraction_from_weight
from qbeast_connect.planning.file_planner import sample_weight_sql
from tests.spark.helpers import deltalake_table, live_adds, row_digest, spark_digest

START = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp())
PCOL = "event_time_partition"
COLUMNS = ["id", "event_time", "user_id"]
CUBE = 200
#: (first id, rows, day offset): partitions far above, above and below the cube size
DAYS = {"2024-01-01": (0, 1600, 0), "2024-01-02": (10_000, 500, 1), "2024-01-03": (20_000, 60, 2)}


def _day_rows(spark: Any, first: int, count: int, day: int, span: int = 86_000) -> Any:
    step = span // count
    return spark.sql(
        f"select id, timestamp_seconds({START + day * 86_400} + (id - {first}) * {step}) "
        f"as event_time, cast((id * 37) % 1000 as int) as user_id "
        f"from range({first}, {first + count})"
    )


def _rows(spark: Any, days: dict[str, tuple[int, ...]]) -> Any:
    frames = [_day_rows(spark, *spec) for spec in days.values()]
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def _trees(path: str) -> dict[str, dict[str, list[tuple[int, int]]]]:
    """partition -> cube -> [(maxWeight, elementCount) of each block]."""
    out: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for add in live_adds(path).values():
        cubes = out.setdefault(add["partitionValues"][PCOL], {})
        for b in decode_blocks(add["tags"]["blocks"]):
            cubes.setdefault(b.cube_id, []).append((b.max_weight, b.element_count))
    return out


@pytest.fixture(scope="module")
def trees_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("partition_trees") / "t")
    df = _rows(spark, DAYS).repartition(6)
    result = qc.write(
        df, path, columnsToIndex="event_time,user_id", cubeSize=CUBE, partitionBy="event_time:daily"
    )
    assert result.num_rows == 2160
    return path


def test_each_time_partition_is_a_tree_sized_by_cube_size(spark: Any, trees_table: str) -> None:
    trees = _trees(trees_table)
    assert sorted(trees) == sorted(DAYS)
    for day, (_, rows, _) in DAYS.items():
        cubes = trees[day]
        assert sum(n for blocks in cubes.values() for _, n in blocks) == rows
        root = sum(n for _, n in cubes[""])
        if rows > CUBE:
            # a root of about cubeSize rows (not cubeSize x partition/table rows), children
            assert 0.6 * CUBE <= root <= 1.2 * CUBE, (day, root)
            assert len(cubes) > 1
            assert all(w < MAX_WEIGHT for w, _ in cubes[""])
        else:
            # fewer rows than a cube: one root block holding them all
            assert list(cubes) == [""] and root == rows
            assert all(w == MAX_WEIGHT for w, _ in cubes[""])
    # each partition's root has its own max weight
    assert trees["2024-01-01"][""][0][0] < trees["2024-01-02"][""][0][0]


def test_partition_trees_answer_exactly(spark: Any, trees_table: str) -> None:
    expected = spark_digest(_rows(spark, DAYS), COLUMNS)
    assert row_digest(deltalake_table(trees_table), COLUMNS) == expected
    table = qc.QbeastTable.forPath(spark, trees_table)
    assert spark_digest(table.read(), COLUMNS) == expected
    where = "user_id < 100 and event_time < timestamp'2024-01-03 00:00:00Z'"
    plain = spark_digest(spark.read.parquet(trees_table).where(where), COLUMNS)
    assert 0 < plain[0] < 2160
    assert spark_digest(table.filter(where), COLUMNS) == plain
    for fraction in (0.05, 0.3):
        by_weight = spark.read.parquet(trees_table).where(
            sample_weight_sql(["event_time", "user_id"], fraction)
        )
        assert spark_digest(table.sample(fraction), COLUMNS) == spark_digest(by_weight, COLUMNS)
    scan = table.explainScan(fraction=0.05)
    assert scan.selected_files < scan.total_files


def test_append_grows_its_partition_tree_and_starts_new_ones(
    spark: Any, trees_table: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    shutil.copytree(trees_table, path)
    # a small append (one job) into the 500-row day grows that day's tree: its root keeps
    # about cubeSize / 530 of the weights (the day's rows), not cubeSize / 2190 (the table's)
    before = live_adds(path)
    small = qc.write(_day_rows(spark, 60_000, 30, 1, 80_000), path, mode="append")
    assert "statistics" not in small.timings  # the one-job path
    new = [a for p, a in live_adds(path).items() if p not in before]
    assert {a["partitionValues"][PCOL] for a in new} == {"2024-01-02"}
    roots = [b for a in new for b in decode_blocks(a["tags"]["blocks"]) if b.cube_id == ""]
    assert roots and all(fraction_from_weight(b.max_weight) >= 0.6 * CUBE / 530 for b in roots), (
        roots
    )
    before = live_adds(path)
    # 1,500 more rows in the 60-row day, inside the revision's space: that day's own tree
    grow = {"g": (30_000, 1500, 2, 80_000)}
    result = qc.write(_rows(spark, grow), path, mode="append")
    assert not result.new_revision
    after = live_adds(path)
    assert set(before) <= set(after)
    new = [a for p, a in after.items() if p not in before]
    assert {a["partitionValues"][PCOL] for a in new} == {"2024-01-03"}
    day3 = _trees(path)["2024-01-03"]
    root = sum(n for _, n in day3[""])
    assert 0.6 * CUBE <= root <= 1.5 * CUBE, root  # about cubeSize rows, old 60 included
    assert len(day3) > 1
    # a new partition of 50 rows next to 400 rows of another day: one root block
    more = {"2024-01-04": (40_000, 50, 3), "more 2024-01-01": (50_000, 400, 0)}
    qc.write(_rows(spark, more), path, mode="append")
    day4 = _trees(path)["2024-01-04"]
    assert list(day4) == [""] and sum(n for _, n in day4[""]) == 50
    assert all(w == MAX_WEIGHT for w, _ in day4[""])
    expected = spark_digest(
        _rows(spark, {**DAYS, "small": (60_000, 30, 1, 80_000), **grow, **more}), COLUMNS
    )
    assert row_digest(deltalake_table(path), COLUMNS) == expected
    table = qc.QbeastTable.forPath(spark, path)
    by_weight = spark.read.parquet(path).where(sample_weight_sql(["event_time", "user_id"], 0.2))
    assert spark_digest(table.sample(0.2), COLUMNS) == spark_digest(by_weight, COLUMNS)
    # optimize of one partition re-indexes it with its own tree
    table.optimize(partition="2024-01-03")
    day3 = _trees(path)["2024-01-03"]
    assert sum(n for blocks in day3.values() for _, n in blocks) == 1560
    assert 0.6 * CUBE <= sum(n for _, n in day3[""]) <= 1.5 * CUBE
    assert row_digest(deltalake_table(path), COLUMNS) == expected
