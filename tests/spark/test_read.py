"""The read path: sampling and filter pruning on real tables, checked against full scans."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import live_adds, spark_digest

N = 60_000


@pytest.fixture(scope="module")
def indexed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    """A two-revision table: 60k rows, then an append that widens the space of ``a``."""
    path = str(tmp_path_factory.mktemp("read") / "t")
    base = spark.range(0, N, numPartitions=4).selectExpr(
        "id",
        "cast(rand(11) * 1000 as double) as x",
        "cast(id % 5000 as int) as a",
        "concat('c', cast(id % 50 as string)) as c",
        "case when id % 17 = 0 then null else cast(rand(3) * 100 as double) end as n",
    )
    qc.write(base, path, columnsToIndex="x,a,c", cubeSize=2000)
    extra = spark.range(N, N + 6000, numPartitions=2).selectExpr(
        "id",
        "cast(rand(12) * 1000 as double) as x",
        "cast(5000 + id % 3000 as int) as a",
        "concat('c', cast(id % 50 as string)) as c",
        "cast(null as double) as n",
    )
    result = qc.write(extra, path, mode="append")
    assert result.new_revision and result.revision_id == 2
    return path, base.unionByName(extra)


def _full(spark: Any, path: str) -> Any:
    """The whole table read without the index (every live file)."""
    files = [f"{path}/{p}" for p in live_adds(path)]
    return spark.read.parquet(*files)


def test_toDF_returns_every_row(spark: Any, indexed: tuple[str, Any]) -> None:
    path, data = indexed
    table = qc.QbeastTable.forPath(spark, path)
    df = table.toDF()
    assert spark_digest(df) == spark_digest(data)
    assert len(df.inputFiles()) == len(live_adds(path))
    assert table.revisionIDs() == [0, 1, 2] and table.lastRevisionID() == 2
    assert table.indexedColumns() == ["x", "a", "c"] and table.cubeSize() == 2000


@pytest.mark.parametrize("fraction", [0.01, 0.05, 0.2, 0.5])
def test_sample_is_exactly_the_rows_below_the_weight(
    spark: Any, indexed: tuple[str, Any], fraction: float
) -> None:
    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    sample = table.sample(fraction)
    threshold = weight_from_fraction(fraction)
    expected = _full(spark, path).filter(f"hash(x, a, c) < {threshold}")
    count, digest = spark_digest(sample)
    assert (count, digest) == spark_digest(expected)
    total = N + 6000
    sigma = math.sqrt(total * fraction * (1 - fraction))
    assert abs(count - fraction * total) <= 3 * sigma
    assert spark_digest(table.sample(fraction)) == (count, digest)  # deterministic
    if fraction < 2000 / N:  # below the root cube's share only root-cube files are read
        assert len(sample.inputFiles()) < len(live_adds(path))


def test_sample_skips_the_weight_filter_only_on_files_wholly_inside_it(
    spark: Any, indexed: tuple[str, Any]
) -> None:
    """Files written by weight band record their largest row weight
    (``qbeastConnect.maxRowWeight``): a sample at a band edge (1/2) reads its files with no
    ``hash`` filter, one that cuts a band (0.2) keeps it; both return exactly the rows
    below their threshold (``test_sample_is_exactly_the_rows_below_the_weight``)."""
    from qbeast_connect.model.block import MAX_ROW_WEIGHT_TAG

    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    adds = live_adds(path)
    assert adds and all(MAX_ROW_WEIGHT_TAG in (a.get("tags") or {}) for a in adds.values())
    at_edge = table.sample(0.5)._explain_string(extended=False)
    inside = table.sample(0.2)._explain_string(extended=False)
    assert "hash(" not in at_edge
    assert "hash(" in inside
    for fraction in (0.5, 0.2):
        threshold = weight_from_fraction(fraction)
        expected = _full(spark, path).filter(f"hash(x, a, c) < {threshold}")
        assert spark_digest(table.sample(fraction)) == spark_digest(expected)


def test_sample_reads_fewer_bytes_than_the_table(spark: Any, indexed: tuple[str, Any]) -> None:
    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    small = table.explainScan(fraction=0.01)
    assert small.selected_bytes < 0.5 * small.total_bytes
    assert set(table.sample(0.01).inputFiles()) == {
        "file://" + f if f.startswith("/") else f for f in small.files
    }


def _random_predicate(rng: random.Random) -> str:
    kind = rng.choice(["x", "a", "xa", "or", "c", "in", "null", "notx"])
    lo = rng.uniform(0, 950)
    hi = lo + rng.uniform(1, 80)
    alo = rng.randint(0, 7500)
    if kind == "x":
        return f"x >= {lo:.3f} AND x < {hi:.3f}"
    if kind == "a":
        return f"a BETWEEN {alo} AND {alo + rng.randint(0, 400)}"
    if kind == "xa":
        return f"x > {lo:.3f} AND x <= {hi:.3f} AND a < {alo}"
    if kind == "or":
        return f"(x < {lo / 10:.3f}) OR (a > {7990 - rng.randint(0, 100)})"
    if kind == "c":
        return f"c = 'c{rng.randint(0, 60)}' AND x < {hi:.3f}"
    if kind == "in":
        return f"a IN ({alo}, {alo + 7}, {alo + 1000})"
    if kind == "null":
        return f"n IS NULL AND x < {hi:.3f}"
    return f"NOT (x >= {lo:.3f})"


def test_random_filters_equal_a_full_scan(spark: Any, indexed: tuple[str, Any]) -> None:
    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    full = _full(spark, path)
    total_files = len(live_adds(path))
    rng = random.Random(2024)
    selective = 0
    for _ in range(12):
        predicate = _random_predicate(rng)
        fraction = rng.choice([None, None, 0.3, 0.7])
        got = table.read(where=predicate, fraction=fraction)
        expected = full.filter(predicate)
        if fraction is not None:
            expected = expected.filter(f"hash(x, a, c) < {weight_from_fraction(fraction)}")
        assert spark_digest(got) == spark_digest(expected), predicate
        if len(got.inputFiles()) < total_files:
            selective += 1
    assert selective >= 6


def test_column_filters_prune_like_sql(spark: Any, indexed: tuple[str, Any]) -> None:
    from pyspark.sql import functions as F

    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    column = (F.col("x") < 20) & F.col("a").between(100, 900)
    text = "x < 20 AND a BETWEEN 100 AND 900"
    assert sorted(table.filter(column).inputFiles()) == sorted(table.filter(text).inputFiles())
    assert spark_digest(table.filter(column)) == spark_digest(_full(spark, path).filter(text))
    assert len(table.filter(column).inputFiles()) < len(live_adds(path))


def test_unindexed_column_filters_use_file_statistics(spark: Any, indexed: tuple[str, Any]) -> None:
    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    # revision 2 rows have id >= N: file stats on the unindexed id column skip revision 1
    scan = table.explainScan(where=f"id >= {N}")
    assert scan.plan.skipped_by_stats > 0
    got = table.filter(f"id >= {N}")
    assert got.count() == 6000


def test_time_travel(spark: Any, indexed: tuple[str, Any]) -> None:
    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    assert table.read(versionAsOf=0).count() == N
    assert table.version() == 1
    old = qc.QbeastTable.forPath(spark, path, versionAsOf=0)
    assert old.revisionIDs() == [0, 1]


def test_bad_fraction_and_missing_table(spark: Any, indexed: tuple[str, Any], tmp_path: Path) -> None:
    path, _ = indexed
    table = qc.QbeastTable.forPath(spark, path)
    for bad in (0, -0.5, 1.5, float("nan")):
        with pytest.raises(qc.InvalidOptionError, match="fraction"):
            table.sample(bad)
    with pytest.raises(qc.TableNotFoundError):
        qc.QbeastTable.forPath(spark, str(tmp_path / "nothing"))
