"""The JVM-only cube assignment (qbeast_connect.spark.native_assign) agrees with the
Python writer's, row by row: weight, cube, file group and Z-order key; and the native
write's files and block statistics hold exactly the rows and blocks the Python writer
would give them."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import numpy as np
import pytest

from qbeast_connect.index.assignment import CubeAssigner
from qbeast_connect.index.block_order import morton_keys
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.index.normalize import normalize
from qbeast_connect.spark.native_assign import (
    NativeAssignment,
    block_stats,
    cube_key,
    estimate_index,
    write_native,
)

COLUMNS = ["i", "x", "day", "price", "ts"]


def _mixed(spark: Any, rows: int = 6_000) -> Any:
    """Nulls in every column, negative numbers, NaN, ±infinity and -0.0, dates before 1970
    and after, decimals, timestamps with microseconds."""
    return spark.range(rows).selectExpr(
        "id",
        "CASE WHEN id % 97 = 0 THEN NULL ELSE cast(id * 7919 % 2001 - 1000 AS int) END AS i",
        "CASE WHEN id % 89 = 0 THEN NULL WHEN id % 301 = 0 THEN double('NaN') "
        "WHEN id % 401 = 0 THEN double('Infinity') WHEN id % 503 = 0 THEN double('-Infinity') "
        "WHEN id % 607 = 0 THEN -0.0D ELSE (id * 104729 % 10007) / 3.7D - 1300 END AS x",
        "CASE WHEN id % 83 = 0 THEN NULL "
        "ELSE date_add(date'1969-06-01', cast(id * 31 % 2500 AS int)) END AS day",
        "CASE WHEN id % 79 = 0 THEN NULL "
        "ELSE cast((id * 6151 % 100003) / 100.0 - 400 AS decimal(12,2)) END AS price",
        "CASE WHEN id % 73 = 0 THEN NULL ELSE timestamp_micros("
        "1600000000000000 + (id * 48271 % 99991) * 1234567 - 50000000000) END AS ts",
    )


def _types(df: Any) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in df.schema.fields}


@pytest.fixture(scope="module")
def planned(spark: Any, tmp_path_factory: Any) -> tuple[Any, NativeAssignment]:
    df = _mixed(spark)
    path = str(tmp_path_factory.mktemp("native") / "table")
    revision, weights, layout, _ = estimate_index(
        df, path, {"columnsToIndex": ",".join(COLUMNS), "cubeSize": 40}
    )
    return df, NativeAssignment(revision, weights, layout, _types(df))


def _python_side(na: NativeAssignment, table: Any) -> dict[str, np.ndarray]:
    names = list(na.revision.column_names)
    columns = [table.column(n) for n in names]
    points = normalize(na.revision.transformations, columns)
    weights = spark_hash_columns(columns)
    cube_weights = {n: na.max_weight(k) for k, n in na.cube_names().items()
                    if k in na.cubes.max_weights}
    assigner = CubeAssigner(na.d, cube_weights)
    depth, coords = assigner.assign(points, weights)
    keys = np.asarray([cube_key(int(k), c.tolist(), na.d) for k, c in zip(depth, coords, strict=True)])
    labels, inverse = assigner.assign_labels(points, weights)
    groups = na.layout.groups(inverse, labels, weights)
    return {"weight": weights, "cube": keys, "group": groups,
            "z": morton_keys(points).astype(np.int64), "depth": depth}


def test_native_assignment_matches_python_writer_row_by_row(planned: Any) -> None:
    from pyspark.sql import functions as F

    df, na = planned
    assigned = na.assign(df).select(
        "id", *COLUMNS, "_qw", "_qcube", "_qz",
        na.group(F.col("_qcube"), F.col("_qw"), salted=False).alias("g"),
    )
    table = assigned.orderBy("id").toArrow()
    assert table.num_rows == 6_000
    py = _python_side(na, table)
    # the data exercises what it should: nulls, non-finite doubles, several levels and groups
    assert all(table.column(c).null_count > 0 for c in COLUMNS)
    assert len(set(py["depth"].tolist())) >= 3
    assert len(set(py["cube"].tolist())) >= 20
    np.testing.assert_array_equal(table.column("_qw").to_numpy(), py["weight"])
    np.testing.assert_array_equal(table.column("_qcube").to_numpy(), py["cube"])
    np.testing.assert_array_equal(table.column("g").to_numpy(), py["group"])
    np.testing.assert_array_equal(table.column("_qz").to_numpy(), py["z"])


def test_native_cube_per_row_with_ties_at_the_max_weight(spark: Any, planned: Any) -> None:
    """A row whose weight equals its cube's max weight stays in that cube (``w <= W``)."""
    from pyspark.sql import functions as F

    _, na = planned
    base = _mixed(spark, 200)
    table = na.assign(base).orderBy("id").toArrow()
    py = _python_side(na, table)
    # shift each row's weight onto the max weight of its cube's parent path: use the root's
    root_key = cube_key(0, [0] * na.d, na.d)
    root_max = na.cubes.max_weights[root_key]
    coords = [F.lit(0.5)] * na.d
    tie = base.limit(1).select(na.cube(coords, F.lit(root_max)).alias("c")).collect()[0]["c"]
    above = base.limit(1).select(na.cube(coords, F.lit(root_max + 1)).alias("c")).collect()[0]["c"]
    assert tie == root_key
    assert above != root_key
    assert Counter(table.column("_qcube").to_pylist()) == Counter(py["cube"].tolist())


@pytest.mark.parametrize("shuffle", [True, False], ids=["one_file_per_group", "no_shuffle"])
def test_native_write_files_and_blocks_match_python_assignment(
    spark: Any, planned: Any, tmp_path: Any, shuffle: bool
) -> None:
    df, na = planned
    staging = str(tmp_path / "staging")
    write_native(df, na, staging, shuffle=shuffle)
    files = sorted(
        os.path.join(root, f)
        for root, _, names in os.walk(staging)
        for f in names
        if f.endswith(".parquet")
    )
    blocks = block_stats(spark, staging, na)
    table = df.orderBy("id").toArrow()
    py = _python_side(na, table)
    groups = set(py["group"].tolist())
    if shuffle:  # one file per file group
        assert len(files) == len(groups)
    else:  # one directory per file group, one file per group and input partition
        assert {os.path.basename(os.path.dirname(f)) for f in files} == {
            f"_qgroup={g}" for g in groups
        }
    # every row once, unchanged
    back = spark.read.parquet(staging).drop("_qgroup")
    assert back.count() == 6_000
    assert back.selectExpr("sum(hash(*))").collect()[0][0] == df.selectExpr(
        "sum(hash(*))").collect()[0][0]
    # blocks: per cube the rows and least weight of the Python assignment
    names = na.cube_names()
    expected_count: Counter[str] = Counter()
    expected_min: dict[str, int] = {}
    for key, w in zip(py["cube"].tolist(), py["weight"].tolist(), strict=True):
        expected_count[names[key]] += 1
        expected_min[names[key]] = min(expected_min.get(names[key], w), w)
    got_count: Counter[str] = Counter()
    got_min: dict[str, int] = {}
    for _, cube, low, _, n in blocks:
        got_count[cube] += n
        got_min[cube] = min(got_min.get(cube, low), low)
    assert got_count == expected_count
    assert got_min == expected_min
    # every file holds the rows of one file group (the Python writer's group of each row)
    from pyspark.sql import functions as F

    located = back.select("id", F.input_file_name().alias("f")).orderBy("id").toArrow()
    assert located.column("id").to_pylist() == table.column("id").to_pylist()
    per_file: dict[str, set[int]] = {}
    for file, g in zip(located.column("f").to_pylist(), py["group"].tolist(), strict=True):
        per_file.setdefault(file, set()).add(g)
    assert len(per_file) == len(files)
    assert all(len(g) == 1 for g in per_file.values())
