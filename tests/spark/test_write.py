"""The write path on a real Connect server, checked against the independent deltalake reader."""

from __future__ import annotations

import bisect
import json
import warnings
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.weight import MAX_WEIGHT
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    live_adds,
    log_actions,
    row_digest,
    spark_digest,
)

ROWS = 20_000


def _data(spark: Any, n: int = ROWS, offset: int = 0) -> Any:
    return spark.range(offset, offset + n, numPartitions=3).selectExpr(
        "id",
        "cast(id % 1000 as int) as a",
        "cast(rand(7) * 100 as double) as x",
        "concat('name-', cast(id % 777 as string)) as s",
        "date_add(date'2020-01-01', cast(id % 400 as int)) as d",
        "timestamp_millis(1600000000000 + id * 1000) as ts",
        "cast(id % 97 as decimal(10,2)) as dec",
        "case when id % 11 = 0 then null else cast(id % 13 as bigint) end as nullable",
    )


def _revision(path: str, rid: int) -> Revision:
    return Revision.from_json(latest_configuration(path)[f"qbeast.revision.{rid}"])


def test_write_reads_back_identically_in_deltalake(spark: Any, table_path: str) -> None:
    df = _data(spark)
    result = qc.write(df, table_path, columnsToIndex="a,x,s", cubeSize=2000)
    assert result.version == 0
    assert result.revision_id == 1 and result.new_revision
    assert result.num_rows == ROWS
    phases = ["snapshot", "schema", "statistics", "estimation", "write"]
    assert list(result.timings) == phases
    assert all(result.timings[p] > 0 for p in phases)
    ours = deltalake_table(table_path)
    assert row_digest(ours) == spark_digest(df)

    config = latest_configuration(table_path)
    assert config["qbeast.lastRevisionID"] == "1"
    assert Revision.from_json(config["qbeast.revision.0"]).is_staging
    rev = _revision(table_path, 1)
    assert rev.column_names == ("a", "x", "s")
    assert [t.type_name for t in rev.column_transformers] == ["linear", "linear", "hashing"]
    assert config["columnsToIndex"] == "a,x,s" and config["cubeSize"] == "2000"
    adds = live_adds(table_path)
    assert len(adds) == result.num_files > 1
    total = 0
    for add in adds.values():
        assert add["tags"]["revision"] == "1"
        blocks = decode_blocks(add["tags"]["blocks"])
        assert blocks
        total += sum(b.element_count for b in blocks)
        assert json.loads(add["stats"])["numRecords"] == sum(b.element_count for b in blocks)
    assert total == ROWS


def test_index_invariants_hold_on_written_rows(spark: Any, table_path: str) -> None:
    """Every row sits in the cube its point and weight select; max weights grow downwards."""
    import pyarrow.parquet as pq

    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.index.normalize import normalize

    df = _data(spark, 30_000)
    qc.write(df, table_path, columnsToIndex="a,x", cubeSize=1500)
    rev = _revision(table_path, 1)
    weights_by_cube: dict[str, int] = {}
    adds = live_adds(table_path)
    for add in adds.values():
        for b in decode_blocks(add["tags"]["blocks"]):
            old = weights_by_cube.get(b.cube_id, MAX_WEIGHT)
            weights_by_cube[b.cube_id] = min(old, b.max_weight)
    # parents have smaller max weights than their children
    for cube, w in weights_by_cube.items():
        cid = CubeId.from_string(cube, 2)
        if cid.parent is not None and cid.parent.to_string() in weights_by_cube:
            assert weights_by_cube[cid.parent.to_string()] < w or w == MAX_WEIGHT
    checked = 0
    for name, add in adds.items():
        table = pq.read_table(f"{table_path}/{name}")
        cols = [table.column(c).combine_chunks() for c in rev.column_names]
        points = normalize(rev.transformations, cols)
        weights = spark_hash_columns(cols)
        cubes_in_file = {b.cube_id: b for b in decode_blocks(add["tags"]["blocks"])}
        for point, weight in zip(points.tolist(), weights.tolist(), strict=True):
            # walk from the root: the first cube missing or with w <= W is the row's cube
            cube = CubeId.root(2)
            while cube.to_string() in weights_by_cube and weight > weights_by_cube[cube.to_string()]:
                cube = CubeId.container(point, cube.depth + 1)
            key = cube.to_string()
            assert key in cubes_in_file, f"row of cube {key!r} stored in a file without that block"
            assert cubes_in_file[key].min_weight <= weight
            checked += 1
    assert checked == 30_000


def test_inner_cube_sizes_are_near_cube_size_on_uniform_data(spark: Any, table_path: str) -> None:
    df = spark.range(0, 200_000, numPartitions=4).selectExpr(
        "cast(rand(1) * 1000000 as double) as x", "cast(rand(2) * 1000000 as double) as y"
    )
    qc.write(df, table_path, columnsToIndex="x,y", cubeSize=5000)
    counts: dict[str, int] = {}
    maxw: dict[str, int] = {}
    for add in live_adds(table_path).values():
        for b in decode_blocks(add["tags"]["blocks"]):
            counts[b.cube_id] = counts.get(b.cube_id, 0) + b.element_count
            maxw[b.cube_id] = min(maxw.get(b.cube_id, MAX_WEIGHT), b.max_weight)
    inner = [c for c in counts if maxw[c] < MAX_WEIGHT]
    assert len(inner) >= 5
    within = [c for c in inner if 0.7 * 5000 <= counts[c] <= 1.3 * 5000]
    share = len(within) / len(inner)
    print(f"inner cubes within ±30% of cubeSize: {len(within)}/{len(inner)} = {share:.0%}")
    assert share >= 0.8


@pytest.mark.parametrize(
    "columns",
    [
        pytest.param("id:linear,d,ts", id="long-date-timestamp"),
        pytest.param("dec,s:hash", id="decimal-hash-alias"),
        pytest.param("nullable,a", id="nulls-in-indexed-column"),
        pytest.param("s:hashing", id="string-hashing"),
    ],
)
def test_each_transformer_and_type_round_trips(spark: Any, table_path: str, columns: str) -> None:
    df = _data(spark, 5000)
    result = qc.write(df, table_path, columnsToIndex=columns, cubeSize=500)
    assert result.num_rows == 5000
    assert row_digest(deltalake_table(table_path)) == spark_digest(df)


def test_quantiles_need_column_stats(spark: Any, table_path: str) -> None:
    df = _data(spark, 2000)
    with pytest.raises(qc.InvalidOptionError, match="x_quantiles"):
        qc.write(df, table_path, columnsToIndex="x:quantiles", cubeSize=500)
    assert not (live_adds(table_path) if _exists(table_path) else {})
    stats = json.dumps({"x_quantiles": [0.0, 25.0, 50.0, 75.0, 100.0]})
    qc.write(df, table_path, columnsToIndex="x:quantiles", cubeSize=500, columnStats=stats)
    rev = _revision(table_path, 1)
    assert rev.column_transformers[0].type_name == "quantiles"
    assert row_digest(deltalake_table(table_path)) == spark_digest(df)


def _exists(path: str) -> bool:
    import os

    return os.path.isdir(os.path.join(path, "_delta_log"))


def test_modes_append_overwrite_ignore_errorifexists(spark: Any, table_path: str) -> None:
    first = _data(spark, 4000)
    qc.write(first, table_path, columnsToIndex="a,x", cubeSize=1000)
    with pytest.raises(qc.TableAlreadyExistsError):
        qc.write(first, table_path, columnsToIndex="a,x")
    ignored = qc.write(first, table_path, columnsToIndex="a,x", mode="ignore")
    assert ignored.skipped and ignored.version is None
    assert list(ignored.timings) == ["snapshot", "schema"]  # skipped before any Spark job

    inside = _data(spark, 3000, offset=100)  # a in [0, 999], x in [0, 100): same space
    appended = qc.write(inside, table_path, mode="append")
    assert appended.version == 1 and not appended.new_revision and appended.revision_id == 1
    both = first.unionByName(inside)
    assert row_digest(deltalake_table(table_path)) == spark_digest(both)

    outside = _data(spark, 1000).selectExpr(
        "id", "a + 5000 as a", "x", "s", "d", "ts", "dec", "nullable"
    )
    widened = qc.write(outside, table_path, mode="append")
    assert widened.new_revision and widened.revision_id == 2
    rev2 = _revision(table_path, 2)
    assert rev2.transformations[0].max_number >= 5999  # type: ignore[attr-defined]
    all_rows = both.unionByName(outside)
    assert row_digest(deltalake_table(table_path)) == spark_digest(all_rows)
    # only the metadata of commits creating a revision changes
    meta_versions = [v for v, a in log_actions(table_path) if "metaData" in a]
    assert meta_versions == [0, 2]

    replaced = qc.write(_data(spark, 500), table_path, columnsToIndex="x", mode="overwrite",
                        cubeSize=100)
    assert replaced.revision_id == 1
    config = latest_configuration(table_path)
    assert config["qbeast.lastRevisionID"] == "1"
    assert "qbeast.revision.2" not in config
    assert row_digest(deltalake_table(table_path)) == spark_digest(_data(spark, 500))


def test_builder_api(spark: Any, table_path: str) -> None:
    df = _data(spark, 1000)
    result = (
        qc.writer(df).mode("overwrite").option("columnsToIndex", "a").option("cubeSize", 200)
        .save(table_path)
    )
    assert result.version == 0 and result.num_rows == 1000


def test_idempotent_txn(spark: Any, table_path: str) -> None:
    df = _data(spark, 1000)
    qc.write(df, table_path, columnsToIndex="a", txnAppId="job", txnVersion=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = qc.write(df, table_path, mode="append", txnAppId="job", txnVersion=1)
    assert again.skipped and any("already committed" in str(w.message) for w in caught)
    qc.write(df, table_path, mode="append", txnAppId="job", txnVersion=2)
    from deltalake import DeltaTable

    dt = DeltaTable(table_path)
    assert dt.version() == 1
    assert dt.to_pyarrow_table().num_rows == 2000
    assert dt.transaction_version("job") == 2


def test_schema_mismatch_on_append_writes_nothing(spark: Any, table_path: str) -> None:
    qc.write(_data(spark, 500), table_path, columnsToIndex="a")
    other = _data(spark, 500).selectExpr("id", "a", "cast(x as string) as x", "s", "d", "ts",
                                         "dec", "nullable")
    with pytest.raises(qc.SchemaMismatchError, match="x: table double, data string"):
        qc.write(other, table_path, mode="append")
    extra = _data(spark, 500).selectExpr("*", "1 as extra")
    with pytest.raises(qc.SchemaMismatchError, match="mergeSchema"):
        qc.write(extra, table_path, mode="append")
    assert len(log_actions(table_path)) == len([a for a in log_actions(table_path)])
    assert max(v for v, _ in log_actions(table_path)) == 0
    merged = qc.write(extra, table_path, mode="append", mergeSchema=True)
    assert merged.version == 1
    table = deltalake_table(table_path)
    assert "extra" in table.column_names and table.num_rows == 1000


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        pytest.param({"columnsToIndex": "nope"}, qc.InvalidOptionError, "not in the data",
                     id="unknown-column"),
        pytest.param({"columnsToIndex": "a,a"}, qc.InvalidOptionError, "a", id="duplicate-column"),
        pytest.param({"columnsToIndex": "s:linear"}, qc.InvalidOptionError, "linear",
                     id="transformer-misfit"),
        pytest.param({"columnsToIndex": "a", "cubeSize": 0}, qc.InvalidOptionError, "positive",
                     id="cube-size-zero"),
        pytest.param({"columnsToIndex": "a", "cubeSize": "many"}, qc.InvalidOptionError,
                     "integer", id="cube-size-text"),
        pytest.param({"columnsToIndex": "a", "columnStats": "{bad"}, qc.InvalidOptionError,
                     "columnStats", id="malformed-column-stats"),
        pytest.param({"columnsToIndex": "a", "columnStats": '{"a_min": 10, "a_max": 1}'},
                     qc.InvalidOptionError, "min 10 must be less than max 1", id="min-above-max"),
        pytest.param({"columnsToIndex": "a", "cubesiz": 5}, qc.InvalidOptionError,
                     "unknown option", id="unknown-option"),
        pytest.param({}, qc.InvalidOptionError, "columnsToIndex", id="missing-columns"),
        pytest.param({"columnsToIndex": "a", "mode": "sometimes"}, qc.InvalidOptionError,
                     "save mode", id="bad-mode"),
    ],
)
def test_bad_input_is_rejected_and_nothing_is_written(
    spark: Any, table_path: str, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        qc.write(_data(spark, 100), table_path, **kwargs)
    assert not _exists(table_path)


def test_empty_dataframe_creates_revision_zero(spark: Any, table_path: str) -> None:
    empty = _data(spark, 100).limit(0)
    result = qc.write(empty, table_path, columnsToIndex="a,x")
    assert result.version == 0 and result.num_files == 0
    config = latest_configuration(table_path)
    assert config["qbeast.lastRevisionID"] == "0"
    rev0 = Revision.from_json(config["qbeast.revision.0"])
    assert not rev0.is_staging and rev0.transformations == ()
    qc.write(_data(spark, 300), table_path, mode="append")
    config = latest_configuration(table_path)
    assert config["qbeast.lastRevisionID"] == "1"
    assert deltalake_table(table_path).num_rows == 300


def _index_of(path: str) -> tuple[dict[str, tuple[int, int, int]], dict[str, int]]:
    """Per cube (rows, min weight, max weight) over all files, and the files per cube."""
    cubes: dict[str, tuple[int, int, int]] = {}
    files: dict[str, int] = {}
    for add in live_adds(path).values():
        for b in decode_blocks(add["tags"]["blocks"]):
            rows, low, high = cubes.get(b.cube_id, (0, 2**31, b.max_weight))
            assert high == b.max_weight
            cubes[b.cube_id] = (rows + b.element_count, min(low, b.min_weight), high)
            files[b.cube_id] = files.get(b.cube_id, 0) + 1
    return cubes, files


def test_many_input_partitions_are_narrowed_to_one_write_task_per_core(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight input partitions are written by one task per server core, streaming several
    partitions each (no shuffle): one file per file group per task, and the same index as
    the write that shuffles every file group into one task."""
    from qbeast_connect.index.layout import band_edges
    from qbeast_connect.spark import write_tasks

    df = spark.range(0, 24_000, numPartitions=8).selectExpr(
        "id", "cast(rand(9) * 1000 as double) as x", "cast(rand(8) * 1000 as double) as y"
    )
    cores = write_tasks.server_cores(spark)
    tasks = min(8, cores)
    monkeypatch.setattr(write_tasks, "DIRECT_WRITE_MAX_TASKS", max(8, cores))
    narrowed = str(tmp_path / "narrowed")
    result = qc.write(df, narrowed, columnsToIndex="x,y", cubeSize=2000)
    monkeypatch.setattr(write_tasks, "DIRECT_WRITE_MAX_TASKS", 0)  # the shuffle
    shuffled = str(tmp_path / "shuffled")
    qc.write(df, shuffled, columnsToIndex="x,y", cubeSize=2000)

    edges = band_edges(24_000, 2000)  # 1/8, 1/4, 1/2
    assert len(edges) == 3
    groups: dict[str, dict[tuple[str, int], int]] = {}
    for name, path in (("narrowed", narrowed), ("shuffled", shuffled)):
        parts: dict[tuple[str, int], int] = {}
        for add in live_adds(path).values():
            for b in decode_blocks(add["tags"]["blocks"]):
                key = (b.cube_id, bisect.bisect_right(edges, b.min_weight))
                parts[key] = parts.get(key, 0) + 1
        groups[name] = parts
    # shuffled: each (cube, weight band) in one file; narrowed: in one file per task
    assert set(groups["shuffled"].values()) == {1}
    assert max(groups["narrowed"].values()) <= tasks
    shuffled_files = len(live_adds(shuffled))
    assert 8 <= shuffled_files <= 18  # about 24,000 / 2,000 file groups
    if tasks > 1:
        # the rows of every file group are spread over the tasks' input partitions
        assert result.num_files == tasks * shuffled_files
    # the same index: every cube holds the same rows count, min and max weight
    assert _index_of(narrowed)[0] == _index_of(shuffled)[0]
    digest = spark_digest(df)
    assert row_digest(deltalake_table(narrowed)) == digest
    assert row_digest(deltalake_table(shuffled)) == digest
    table = qc.QbeastTable.forPath(spark, narrowed).toDF()
    assert spark_digest(table) == digest
    box = "x BETWEEN 100 AND 300 AND y < 400"
    assert spark_digest(table.filter(box)) == spark_digest(df.filter(box))


def test_partition_keys_match_spark_hash_partitioning(spark: Any) -> None:
    """The keys a consolidating write shuffles by land where the plugin expects: key
    ``partition_keys(n)[p]`` in partition ``p`` of ``repartition(n, key)``."""
    from pyspark.sql import functions as F

    from qbeast_connect.spark.tasks import partition_keys

    n = 23
    keys = partition_keys(n).tolist()
    df = spark.createDataFrame([(k,) for k in keys], "k int").repartition(n, "k")
    rows = df.select("k", F.spark_partition_id().alias("p")).collect()
    assert {r["k"]: r["p"] for r in rows} == {k: p for p, k in enumerate(keys)}


def test_files_with_near_unique_columns_read_back_identically(spark: Any, table_path: str) -> None:
    """Files large enough for the dictionary rule (near-unique columns written plain, the
    others with a dictionary) read back the same rows in Spark and in deltalake."""
    import pyarrow.parquet as pq

    df = spark.range(0, 30_000, numPartitions=2).selectExpr(
        "id",
        "concat('comment ', cast(id * 7919 % 30011 as string)) as note",
        "cast(id % 7 as int) as few",
        "cast(rand(4) * 1000 as double) as x",
        "cast(id * 0.01 as decimal(15, 2)) as price",
    )
    qc.write(df, table_path, columnsToIndex="x,few", cubeSize=50_000)
    adds = live_adds(table_path)
    plain = set()
    for name in adds:
        meta = pq.ParquetFile(f"{table_path}/{name}").metadata
        if meta.num_rows >= 8192:
            chunk = meta.row_group(0)
            plain |= {
                chunk.column(i).path_in_schema
                for i in range(chunk.num_columns)
                if "RLE_DICTIONARY" not in chunk.column(i).encodings
            }
    assert {"id", "note", "x", "price"} <= plain and "few" not in plain
    expected = spark_digest(df)
    assert row_digest(deltalake_table(table_path)) == expected
    # Spark's own parquet reader over the data files
    assert spark_digest(spark.read.parquet(*[f"{table_path}/{p}" for p in adds])) == expected
