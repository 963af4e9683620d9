"""Files with deletion vectors read by Spark's own parquet reader (issue #32).

A read of a table whose files carry deletion vectors scans those files with Spark's reader
and leaves out the deleted rows in the query (``qbeast_connect.spark.vector_reads``): a
broadcast join by file to the files' bitmaps, decoded once by the plugin. These tests pin
the rows (against the files read with pyarrow minus their vectors), the plan (Spark's scan,
no Python data source), the cache (one decoding per vector), the table paths and column
names Spark spells its own way, the join key (a file's size, its path when sizes repeat)
and the error for a file without a bitmap.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.spark import vector_reads
from qbeast_connect.spark.vector_reads import read_with_vectors
from tests.spark.helpers import live_adds
from tests.spark.test_row_changes_vectors import VECTORS, _files_minus_vectors, _rows


def _ids(frame: Any) -> list[int]:
    return sorted(r[0] for r in frame.select("id").collect())


def _plan(frame: Any) -> str:
    return str(frame._explain_string(extended=False))


def _vector_table(spark: Any, path: str) -> list[int]:
    """A table with vectors on, 3000 rows in several files, then a delete of every row with
    ``id % 7 = 2`` (vectors in every file); the ids left."""
    qc.write(_rows(spark, 0, 3000), path, columnsToIndex="x,d", cubeSize=500, **VECTORS)
    qc.QbeastTable.forPath(spark, path).delete("id % 7 = 2")
    assert all(a.get("deletionVector") for a in live_adds(path).values())
    return [i for i in range(3000) if i % 7 != 2]


def test_files_with_vectors_are_read_by_spark_and_each_vector_decoded_once(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "spark_reads_vectors")
    expected = _vector_table(spark, path)
    table = qc.QbeastTable.forPath(spark, path)
    frame = table.toDF()
    plan = _plan(frame)
    assert _ids(frame) == expected
    assert sorted(_files_minus_vectors(path).column("id").to_pylist()) == expected
    # Spark's scan of every file, no Python data source: Spark lists the files itself
    assert "qbeast_files" not in plan
    assert len(frame.inputFiles()) == len(live_adds(path))
    # the bitmaps are cached by descriptor: a second read decodes nothing
    descriptors = {
        (path, vector_reads._descriptor_key(a["deletionVector"])) for a in live_adds(path).values()
    }
    assert descriptors <= set(vector_reads._bitmaps)
    fetched: list[Any] = []
    real = vector_reads._fetch_bitmaps

    def counting(spark_: Any, root: str, vectors: Any) -> Any:
        fetched.extend(
            v
            for v in vectors
            if (root, vector_reads._descriptor_key(v)) not in vector_reads._bitmaps
        )
        return real(spark_, root, vectors)

    vector_reads._fetch_bitmaps = counting  # type: ignore[assignment]
    try:
        assert table.filter("x < 300").count() == len(
            [i for i in expected if (i * 7919) % 10007 / 10.0 < 300]
        )
        assert _ids(table.sample(0.5)) == sorted(set(_ids(table.sample(0.5))) & set(expected))
    finally:
        vector_reads._fetch_bitmaps = real  # type: ignore[assignment]
    assert fetched == []


def test_vector_reads_of_a_path_and_columns_spark_spells_its_own_way(
    spark: Any, tmp_path: Path
) -> None:
    # Spark names such a file file:/...%20...%2523...: the join key must be its spelling
    path = str(tmp_path / "odd dir %23 #+ü" / "t a%20b")
    rows = _rows(spark, 0, 1200).withColumnRenamed("s", "a b.c")
    qc.write(rows, path, columnsToIndex="x,d", cubeSize=300, **VECTORS)
    qc.QbeastTable.forPath(spark, path).delete("id % 5 = 1")
    assert all(a.get("deletionVector") for a in live_adds(path).values())
    frame = qc.QbeastTable.forPath(spark, path).toDF()
    assert frame.columns == ["id", "x", "d", "a b.c"]
    assert _ids(frame) == [i for i in range(1200) if i % 5 != 1]
    assert sorted(_files_minus_vectors(path).column("id").to_pylist()) == _ids(frame)
    assert frame.where("`a b.c` = 'k3'").count() == len(
        [i for i in range(1200) if i % 5 != 1 and i % 11 != 0 and i % 23 == 3]
    )


def test_files_are_joined_to_their_bitmaps_by_size_and_by_path_when_sizes_repeat(
    spark: Any, tmp_path: Path
) -> None:
    # a file is joined to its bitmap by its size (a long per row) when no other file read
    # has that size, by its path otherwise: two files of the same bytes but different
    # vectors must each get their own, beside a third of another size
    path = str(tmp_path / "equal_sizes")
    rows = _rows(spark, 0, 600).coalesce(1)
    qc.write(rows, path, columnsToIndex="x,d", cubeSize=5000, **VECTORS)
    table = qc.QbeastTable.forPath(spark, path)
    table.delete("id % 7 = 2")
    qc.write(rows, path, mode="append")
    qc.write(_rows(spark, 1000, 1300).coalesce(1), path, mode="append")
    table.delete("id % 5 = 1")
    adds = list(live_adds(path).values())
    assert len(adds) == 3 and all(a.get("deletionVector") for a in adds)
    assert sorted(Counter(a["size"] for a in adds).values()) == [1, 2]  # two of equal bytes
    frame = qc.QbeastTable.forPath(spark, path).toDF()
    plan = _plan(frame)
    assert "__qbeast_dv_size" in plan and "__qbeast_dv_file" in plan  # both joins
    first = [i for i in range(600) if i % 7 != 2 and i % 5 != 1]
    second = [i for i in range(600) if i % 5 != 1]
    third = [i for i in range(1000, 1300) if i % 5 != 1]
    assert _ids(frame) == sorted(first + second + third)
    assert sorted(_files_minus_vectors(path).column("id").to_pylist()) == _ids(frame)

    # files of distinct sizes: all joined by size, none by path
    other = str(tmp_path / "distinct_sizes")
    expected = _vector_table(spark, other)
    assert len({a["size"] for a in live_adds(other).values()}) == len(live_adds(other))
    frame = qc.QbeastTable.forPath(spark, other).toDF()
    plan = _plan(frame)
    assert "__qbeast_dv_size" in plan and "__qbeast_dv_file" not in plan
    assert _ids(frame) == expected


def test_a_data_column_named_metadata_hides_no_file_metadata(spark: Any, tmp_path: Path) -> None:
    # the delete failed here ([INVALID_EXTRACT_BASE_FIELD_TYPE] Can't extract a value from
    # "_metadata"): F.col("_metadata.row_index") resolved to the data column, not Spark's
    # file metadata, in every read of positions and file names
    path = str(tmp_path / "metadata_column")
    rows = _rows(spark, 0, 800).selectExpr("*", "id * 2 as _metadata")
    qc.write(rows, path, columnsToIndex="x,d", cubeSize=300, **VECTORS)
    table = qc.QbeastTable.forPath(spark, path)
    table.delete("id % 3 = 0")
    assert all(a.get("deletionVector") for a in live_adds(path).values())
    table.update("id % 3 = 1", {"_metadata": "_metadata + 1"})
    frame = qc.QbeastTable.forPath(spark, path).toDF()
    assert "qbeast_files" not in _plan(frame)
    got = sorted((r["id"], r["_metadata"]) for r in frame.select("id", "_metadata").collect())
    assert got == [(i, 2 * i + (i % 3 == 1)) for i in range(800) if i % 3 != 0]


def test_a_rewriting_delete_on_a_table_with_a_metadata_column(spark: Any, tmp_path: Path) -> None:
    # without vectors a delete counts matching rows per file (rows_with_file), through
    # the same file metadata
    path = str(tmp_path / "metadata_column_rewrite")
    rows = _rows(spark, 0, 900).selectExpr("*", "id * 2 as _metadata")
    qc.write(rows, path, columnsToIndex="x,d", cubeSize=300)
    before = set(live_adds(path))
    result = qc.QbeastTable.forPath(spark, path).delete("x < 200 AND id % 4 = 0")
    assert set(live_adds(path)) != before  # files were rewritten, not marked
    assert not any(a.get("deletionVector") for a in live_adds(path).values())
    gone = {i for i in range(900) if (i * 7919) % 10007 / 10.0 < 200 and i % 4 == 0}
    assert result.num_deleted_rows == len(gone)
    frame = qc.QbeastTable.forPath(spark, path).toDF()
    got = sorted((r["id"], r["_metadata"]) for r in frame.select("id", "_metadata").collect())
    assert got == [(i, 2 * i) for i in range(900) if i not in gone]


def test_a_row_of_a_file_without_a_bitmap_fails_the_read(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "unmatched")
    _vector_table(spark, path)
    adds = sorted(live_adds(path).values(), key=lambda a: a["path"])
    schema = qc.QbeastTable.forPath(spark, path).schema
    every = [f"{path}/{a['path']}" for a in adds]

    calls: list[Any] = []

    def scan_of(paths: Any) -> Any:
        # honest when asked for the file's name; then it reads every file, though only the
        # first has a bitmap
        calls.append(paths)
        return spark.read.schema(schema).parquet(*(paths if len(calls) == 1 else every))

    frame = read_with_vectors(spark, path, schema, scan_of, every[:1], [adds[0]["deletionVector"]])
    assert frame is not None
    with pytest.raises(
        Exception, match=r"QBEAST_STORAGE\] no deletion vector was found for the file"
    ):
        frame.count()
    assert json.dumps(adds[0]["deletionVector"])  # the descriptor itself was fine


def test_merge_positions_of_files_with_vectors_come_from_spark(spark: Any, tmp_path: Path) -> None:
    # a merge reads the target with each row's file and position: files with vectors were
    # read by the plugin's reader (every column decoded, BENCHMARKS.md #33: 109 s at sf 1)
    from qbeast_connect.spark.files import rows_with_positions, table_file
    from server_plugin.delta.deletion_vectors import read_deletion_vector
    from server_plugin.delta.log_reader import read_snapshot
    from server_plugin.delta.storage import LocalStorage

    path = str(tmp_path / "merge_positions")
    _vector_table(spark, path)
    table = qc.QbeastTable.forPath(spark, path)
    adds = list(table._state.adds)
    read = rows_with_positions(spark, path, table.schema, [table_file(a) for a in adds])
    assert read is not None
    frame, log_path = read
    assert "qbeast_files" not in _plan(frame)
    got: dict[str, set[int]] = {}
    for row in frame.select("_qbeast_file", "_qbeast_row").collect():
        name = log_path(row[0])
        assert name is not None, row[0]
        got.setdefault(name, set()).add(int(row[1]))
    storage = LocalStorage(path)
    expected = {}
    for add in read_snapshot(storage).files.values():
        rows = pq_rows(Path(path) / add.path)
        assert add.deletion_vector is not None
        gone = set(int(r) for r in read_deletion_vector(storage, add.deletion_vector))
        expected[add.path] = set(range(rows)) - gone
    assert got == expected
    # and a merge on it: updated rows leave through vectors, as before
    source = spark.range(0, 50).selectExpr("id", "-1.0 as x")
    result = (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"x": "s.x"})
        .execute()
    )
    assert result.num_deletion_vectors > 0
    after = {r["id"]: r["x"] for r in qc.QbeastTable.forPath(spark, path).toDF().collect()}
    assert sorted(after) == [i for i in range(3000) if i % 7 != 2]
    assert all(after[i] == -1.0 for i in range(50) if i % 7 != 2)


def pq_rows(file: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(file).metadata.num_rows)


def test_the_bitmap_cache_keeps_to_its_bound(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "bounded_cache")
    expected = _vector_table(spark, path)
    vectors = [a["deletionVector"] for a in live_adds(path).values()]
    assert len(vectors) > 2
    with vector_reads._lock:
        vector_reads._bitmaps.clear()
        vector_reads._cached_bytes = 0
    sizes = [b[2].nbytes for b in vector_reads._fetch_bitmaps(spark, path, vectors)]
    with vector_reads._lock:
        vector_reads._bitmaps.clear()
        vector_reads._cached_bytes = 0
    monkeypatch.setattr(vector_reads, "CACHE_BYTES", max(sizes) + 1)
    assert _ids(qc.QbeastTable.forPath(spark, path).toDF()) == expected
    assert 0 < vector_reads._cached_bytes <= max(sizes) + 1
    assert len(vector_reads._bitmaps) < len(vectors)
    assert vector_reads._cached_bytes == sum(b[2].nbytes for b in vector_reads._bitmaps.values())
    assert _ids(qc.QbeastTable.forPath(spark, path).toDF()) == expected  # fetched again
