"""The ``qbeast`` data source run in-process (no Spark server): planning, pruning, writing.

The data source's methods are plain Python; here they run the way Spark's Python workers
run them (``schema`` → ``reader`` → ``pushFilters`` → ``partitions`` → ``read``, and
``writer`` → ``write`` per task → ``commit``), on local tables.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import datasource as ds
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from qbeast_connect.exceptions import (
    InvalidOptionError,
    NotAQbeastTableError,
    SchemaMismatchError,
    TableNotFoundError,
)
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.planning.predicate import (
    And,
    Comparison,
    InList,
    IsNotNull,
    IsNull,
    Not,
)
from server_plugin.format_read import (
    QbeastPushdownReader,
    QbeastScanReader,
    filter_to_predicate,
)
from server_plugin.parquet_reader import conform_batch, pack_partitions
from server_plugin.qbeast_format import QbeastDataSource

SCHEMA = StructType(
    [
        StructField("id", LongType()),
        StructField("x", DoubleType()),
        StructField("k", StringType()),
    ]
)
STATS = json.dumps({"x_min": 0, "x_max": 100})


def _batch(ids: range, *, x_offset: float = 0.0) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "id": pa.array(list(ids), pa.int64()),
            "x": pa.array([float(i % 30) + x_offset for i in ids], pa.float64()),
            "k": pa.array([f"k{i % 7}" for i in ids], pa.string()),
        }
    )


def _write(
    path: str, tasks: list[list[pa.RecordBatch]], *, overwrite: bool = False, **options: str
) -> None:
    """One format("qbeast") write: writer() on the driver, write() per task, commit()."""
    source = QbeastDataSource({"path": path, **options})
    writer = source.writer(SCHEMA, overwrite)
    messages = [writer.write(iter(batches)) for batches in tasks]
    writer.commit(messages)


def _snapshot(path: str) -> QbeastSnapshot:
    from server_plugin.format_read import qbeast_view, read_delta_snapshot

    snap = read_delta_snapshot(path, None)
    assert snap is not None
    return qbeast_view(snap)


def _read(path: str, filters: list[Any] | None = None, **options: str) -> tuple[pa.Table, int]:
    """Rows a read returns before Spark's own filtering, and how many files it opened."""
    source = QbeastDataSource({"path": path, **options})
    schema = source.schema()
    reader = source.reader(schema)
    if filters is not None:
        assert isinstance(reader, QbeastPushdownReader)
        assert list(reader.pushFilters(filters)) == filters  # Spark re-applies every filter
    partitions = reader.partitions()
    files = sum(len(p.value) for p in partitions)
    batches = [b for p in partitions for b in reader.read(p)]
    table = pa.Table.from_batches(batches) if batches else pa.table({})
    return table, files


# --------------------------------------------------------------------------------------
# filters
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spark_filter", "expected"),
    [
        (ds.EqualTo(("x",), 3), Comparison("x", "=", 3)),
        (ds.GreaterThan(("x",), 1.5), Comparison("x", ">", 1.5)),
        (ds.GreaterThanOrEqual(("x",), 2), Comparison("x", ">=", 2)),
        (ds.LessThan(("d",), dt.date(2024, 1, 2)), Comparison("d", "<", dt.date(2024, 1, 2))),
        (ds.LessThanOrEqual(("p",), Decimal("1.5")), Comparison("p", "<=", Decimal("1.5"))),
        (ds.In(("k",), ("a", "b")), InList("k", ("a", "b"))),
        (ds.IsNull(("k",)), IsNull("k")),
        (ds.IsNotNull(("k",)), IsNotNull("k")),
        (ds.EqualNullSafe(("k",), None), IsNull("k")),
        (ds.EqualNullSafe(("k",), "a"), Comparison("k", "=", "a")),
        (ds.Not(ds.EqualTo(("x",), 3)), Not(Comparison("x", "=", 3))),
        (
            ds.StringStartsWith(("k",), "ab"),
            And((Comparison("k", ">=", "ab"), Comparison("k", "<", "ac"))),
        ),
    ],
)
def test_pushed_filters_become_planner_predicates(spark_filter: Any, expected: Any) -> None:
    assert filter_to_predicate(spark_filter) == expected


@pytest.mark.parametrize(
    "spark_filter",
    [
        ds.StringContains(("k",), "a"),
        ds.StringEndsWith(("k",), "a"),
        ds.Not(ds.StringContains(("k",), "a")),  # NOT of "no restriction" must not prune
        ds.EqualTo(("s", "inner"), 1),  # nested field
        ds.EqualTo(("b",), b"\x00"),  # no binary literals in the tree
        ds.In(("k",), ()),
        ds.StringStartsWith(("k",), ""),
    ],
)
def test_filters_pruning_cannot_use_are_ignored(spark_filter: Any) -> None:
    assert filter_to_predicate(spark_filter) is None


def test_timestamp_filter_values_are_kept_as_utc() -> None:
    moment = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
    predicate = filter_to_predicate(ds.GreaterThan(("ts",), moment))
    assert predicate == Comparison("ts", ">", moment)


# --------------------------------------------------------------------------------------
# partitions and batches
# --------------------------------------------------------------------------------------


def test_files_are_packed_into_partitions_in_order() -> None:
    files = [("a", 10), ("b", 10), ("c", 25), ("d", 1), ("e", 40)]
    assert pack_partitions(files, target_bytes=30) == [("a", "b"), ("c", "d"), ("e",)]
    assert pack_partitions([], target_bytes=30) == []
    assert pack_partitions([("big", 100), ("s", 1)], target_bytes=30) == [("big",), ("s",)]


def test_batches_are_conformed_to_the_table_schema() -> None:
    target = pa.schema([("id", pa.int64()), ("X", pa.float64()), ("new", pa.string())])
    batch = pa.RecordBatch.from_pydict(
        {"x": pa.array([1.0, 2.0]), "id": pa.array([1, 2], pa.int32()), "extra": [0, 0]}
    )
    out = conform_batch(batch, target)
    assert out.schema.equals(target)
    assert out.to_pydict() == {"id": [1, 2], "X": [1.0, 2.0], "new": [None, None]}


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------


def test_read_returns_the_table_schema_and_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(
        path,
        [[_batch(range(0, 300))], [_batch(range(300, 600))]],
        columnsToIndex="x,k",
        columnStats=STATS,
    )
    source = QbeastDataSource({"path": path})
    assert source.schema().fieldNames() == ["id", "x", "k"]
    rows, files = _read(path)
    assert rows.num_rows == 600 and files == 2
    assert sorted(rows.column("id").to_pylist()) == list(range(600))


def test_pushed_filters_skip_files_by_statistics(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    # three tasks, three files, disjoint ranges of x
    tasks = [[_batch(range(i * 100, i * 100 + 100), x_offset=30.0 * i)] for i in range(3)]
    _write(path, tasks, columnsToIndex="x,k", columnStats=STATS)
    rows, files = _read(path, [ds.LessThan(("x",), 25.0)])
    assert files == 1 and rows.num_rows == 100  # Spark then keeps the x < 25 ones
    _, files = _read(path, [ds.GreaterThanOrEqual(("x",), 30.5), ds.LessThan(("x",), 55.0)])
    assert files == 1
    _, files = _read(path, [ds.In(("x",), (5.0, 65.0))])
    assert files == 2
    _, files = _read(path, [ds.EqualTo(("x",), 500.0)])
    assert files == 0
    _, files = _read(path, [ds.StringContains(("k",), "3")])
    assert files == 3
    # without pushdown every file is read
    source = QbeastDataSource({"path": path, "filterPushdown": "false"})
    reader = source.reader(source.schema())
    assert type(reader) is QbeastScanReader
    assert sum(len(p.value) for p in reader.partitions()) == 3


def test_version_as_of_reads_an_older_version(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, [[_batch(range(0, 100))]], columnsToIndex="x,k", columnStats=STATS)
    _write(path, [[_batch(range(100, 250))]])
    assert _read(path)[0].num_rows == 250
    assert _read(path, versionAsOf="0")[0].num_rows == 100
    with pytest.raises(InvalidOptionError, match="versionAsOf"):
        QbeastDataSource({"path": path, "versionAsOf": "first"}).schema()


def test_reading_a_missing_table_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError, match="format\\('qbeast'\\)"):
        QbeastDataSource({"path": str(tmp_path / "none")}).schema()
    with pytest.raises(InvalidOptionError, match="load\\(path\\)"):
        QbeastDataSource({}).schema()


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------


def test_a_new_table_with_column_stats_puts_every_row_in_the_root(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(
        path,
        [[_batch(range(0, 500))], [_batch(range(500, 800))]],
        columnsToIndex="x,k",
        columnStats=STATS,
        cubeSize="100",
    )
    snap = _snapshot(path)
    assert snap.last_revision_id == 1 and sorted(snap.revisions) == [0, 1]
    revision = snap.revisions[1]
    assert revision.column_names == ("x", "k") and revision.desired_cube_size == 100
    assert [str(c) for c in snap.cube_statuses(1)] == [""]
    assert sum(f.element_count for f in snap.files_of(1)) == 800


def test_append_uses_the_cubes_of_the_latest_revision(tmp_path: Path) -> None:
    import dataclasses

    from qbeast_connect.index.assignment import CubeAssigner
    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.model.revision import Revision
    from qbeast_connect.model.weight import MAX_WEIGHT
    from qbeast_connect.write_plan import WEIGHT_COLUMN
    from server_plugin.qbeast_format import plan_format_write
    from server_plugin.writer import commit_write, write_task

    path = str(tmp_path / "t")
    _write(path, [[_batch(range(0, 10))]], columnsToIndex="x,k", columnStats=STATS)
    # give revision 1 a real tree, as qbeast_connect.write would: a root holding ~30 %
    plan, _ = plan_format_write({"path": path}, SCHEMA, True)
    revision = Revision.from_json(plan.revision_json)
    root_weight = -(2**31) + int(0.3 * 2**32)
    tree = dataclasses.replace(plan, cube_weights={"": root_weight})
    batch = _batch(range(0, 2000))
    weights = spark_hash_columns([batch.column("x"), batch.column("k")])
    message = write_task(tree, iter([batch.append_column(WEIGHT_COLUMN, pa.array(weights))]))
    commit_write(tree, [message])
    before = {str(c): s for c, s in _snapshot(path).cube_statuses(1).items()}
    assert len(before) > 1 and before[""].max_weight == root_weight
    old_files = {f for s in before.values() for f in s.files}

    _write(path, [[_batch(range(2000, 3000))]])
    snap = _snapshot(path)
    assert snap.last_revision_id == 1
    assert sum(f.element_count for f in snap.files_of(1)) == 3000
    # every appended row is in the cube the existing max weights send it to
    assigner = CubeAssigner(2, {c: s.max_weight for c, s in before.items()})
    appended = [f for f in snap.files_of(1) if f.path not in old_files]
    assert appended
    for f in appended:
        table = pq.read_table(os.path.join(path, f.path))
        columns = [table.column("x"), table.column("k")]
        labels, inverse = assigner.assign_labels(
            normalize(revision.transformations, columns), spark_hash_columns(columns)
        )
        assert {labels[i] for i in set(inverse.tolist())} == {b.cube_id for b in f.blocks}
        for b in f.blocks:
            expected = before[b.cube_id].max_weight if b.cube_id in before else MAX_WEIGHT
            assert b.max_weight == expected


def test_creating_without_column_stats_points_to_qbeast_connect_write(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(InvalidOptionError, match="x_min and x_max.*qbeast_connect.write"):
        _write(path, [[_batch(range(10))]], columnsToIndex="x,k")
    with pytest.raises(InvalidOptionError, match="k_quantiles"):
        _write(path, [[_batch(range(10))]], columnsToIndex="x,k:quantiles", columnStats=STATS)
    with pytest.raises(InvalidOptionError, match="columnsToIndex is required"):
        _write(path, [[_batch(range(10))]])
    assert not (tmp_path / "t" / "_delta_log").exists()


def test_rows_outside_the_revision_space_are_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, [[_batch(range(0, 50))]], columnsToIndex="x,k", columnStats=STATS)
    with pytest.raises(InvalidOptionError, match="'x' has value 150.0.*qbeast_connect.write"):
        _write(path, [[_batch(range(0, 50), x_offset=150.0)]])
    # wider columnStats make a new revision instead (rows then start at its root)
    _write(
        path,
        [[_batch(range(0, 50), x_offset=150.0)]],
        columnStats=json.dumps({"x_min": 0, "x_max": 200}),
    )
    snap = _snapshot(path)
    assert snap.last_revision_id == 2
    assert [sum(f.element_count for f in snap.files_of(r)) for r in (1, 2)] == [50, 50]
    assert _read(path)[0].num_rows == 100


def test_append_checks_the_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, [[_batch(range(0, 50))]], columnsToIndex="x,k", columnStats=STATS)
    other = StructType(
        [
            StructField("id", LongType()),
            StructField("x", StringType()),
            StructField("k", StringType()),
        ]
    )
    with pytest.raises(SchemaMismatchError, match="different types: x"):
        QbeastDataSource({"path": path}).writer(other, False)
    with pytest.raises(InvalidOptionError, match="reserved"):
        QbeastDataSource({"path": path}).writer(
            StructType([*SCHEMA.fields, StructField("_qbeastWeight", LongType())]), False
        )
    with pytest.raises(InvalidOptionError, match="unknown option"):
        QbeastDataSource({"path": path, "colunmsToIndex": "x"}).writer(SCHEMA, False)
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.Table.from_batches([_batch(range(5))]), str(plain / "p.parquet"))
    from qbeast_connect.model.revision import staging_revision  # noqa: F401 - documents intent
    from server_plugin.commands import run_command

    list(
        run_command(
            {
                "command": "convert",
                "path": str(plain),
                "columnsToIndex": "x",
                "cubeSize": 10,
                "sourceFormat": "parquet",
            }
        )
    )
    _write(str(plain), [[_batch(range(5, 10))]], columnStats=STATS)
    snap = _snapshot(str(plain))
    assert snap.last_revision_id == 1 and len(snap.staging_files()) == 1
    assert _read(str(plain))[0].num_rows == 10


def test_a_delta_table_without_qbeast_metadata_is_not_appended_to(tmp_path: Path) -> None:
    from server_plugin.delta.committer import commit, create_table_actions
    from server_plugin.delta.conflicts import TransactionReadSet
    from server_plugin.delta.schema import arrow_schema_to_delta
    from server_plugin.delta.storage import storage_for

    path = str(tmp_path / "delta")
    schema_string = arrow_schema_to_delta(_batch(range(1)).schema)
    commit(
        storage_for(path),
        create_table_actions(schema_string, {}),
        TransactionReadSet(
            read_version=-1,
            read_whole_table=True,
            read_files=frozenset(),
            removed_files=frozenset(),
            app_ids=frozenset(),
            changes_metadata=True,
            changes_protocol=True,
            is_blind_append=False,
            data_change_only_false=False,
        ),
        operation="CREATE TABLE",
        operation_parameters={},
    )
    with pytest.raises(NotAQbeastTableError, match="convertToQbeast"):
        _write(path, [[_batch(range(5))]])


def test_overwrite_keeps_the_index_space_and_replaces_the_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, [[_batch(range(0, 100))]], columnsToIndex="x,k", columnStats=STATS)
    _write(path, [[_batch(range(0, 40))]], overwrite=True)
    snap = _snapshot(path)
    assert snap.last_revision_id == 1 and len(snap.files) == 1
    assert _read(path)[0].num_rows == 40
    # a new columnsToIndex starts over (a new revision 1 on the new columns)
    _write(
        path,
        [[_batch(range(0, 30))]],
        overwrite=True,
        columnsToIndex="id",
        columnStats=json.dumps({"id_min": 0, "id_max": 1000}),
    )
    snap = _snapshot(path)
    assert snap.revisions[1].column_names == ("id",)
    assert _read(path)[0].num_rows == 30


def test_table_properties_keep_their_delta_spelling(tmp_path: Path) -> None:
    from pyspark.sql.datasource import CaseInsensitiveDict

    path = str(tmp_path / "t")
    options = CaseInsensitiveDict(  # what Spark hands a data source: lower-cased keys
        {
            "path": path,
            "columnsToIndex": "x,k",
            "columnStats": STATS,
            "delta.deletedFileRetentionDuration": "interval 2 days",
            "delta.custom.Thing": "1",
        }
    )
    writer = QbeastDataSource(options).writer(SCHEMA, False)
    writer.commit([writer.write(iter([_batch(range(10))]))])
    config = _snapshot(path).configuration
    assert config["delta.deletedFileRetentionDuration"] == "interval 2 days"
    assert config["delta.custom.thing"] == "1"


def test_txn_version_makes_the_write_idempotent(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for _ in range(2):
        _write(
            path,
            [[_batch(range(0, 10))]],
            columnsToIndex="x,k",
            columnStats=STATS,
            txnAppId="job",
            txnVersion="1",
        )
    assert _read(path)[0].num_rows == 10


# --------------------------------------------------------------------------------------
# static discovery
# --------------------------------------------------------------------------------------


def test_pyspark_qbeast_is_what_spark_static_lookup_registers(tmp_path: Path) -> None:
    """Run the lookup Spark's driver runs (lookup_data_sources.py) in a fresh interpreter,
    with the PYTHONPATH an embedded server gets."""
    from qbeast_connect.spark.server import discovery_pythonpath

    script = (
        "from importlib import import_module\n"
        "from pkgutil import iter_modules\n"
        "from pyspark.sql.datasource import DataSource\n"
        "found = {}\n"
        "for info in iter_modules():\n"
        "    if info.name.startswith('pyspark_'):\n"
        "        mod = import_module(info.name)\n"
        "        if hasattr(mod, 'DefaultSource') and issubclass(mod.DefaultSource, DataSource):\n"
        "            found[mod.DefaultSource.name()] = mod.DefaultSource.__module__\n"
        "print(found)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    extra = discovery_pythonpath()
    if extra:
        env["PYTHONPATH"] = extra
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'qbeast': 'server_plugin.qbeast_format'" in out
