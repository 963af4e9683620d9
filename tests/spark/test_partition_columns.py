"""Partition columns of a partitioned Delta table read through qbeast-connect.

Delta keeps a partition column's values in the log (``add.partitionValues``), not in the
data files. Both readers (``QbeastTable`` and ``spark.read.format("qbeast")``) must return
them typed as the schema says, identical to what delta-rs reads, and filters on them must
give exact answers.
"""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import qbeast_connect as qc
from tests.spark.helpers import deltalake_table, row_digest, spark_digest

UTC = dt.UTC

# every value of a partition column, cycled over the rows (6 partitions in all); None is a
# null partition
STRINGS = ["a b", "x/y:z%", "", None, "ünï", "z"]
INTS = [1, 2, -3]
DATES = [dt.date(2024, 2, 29), dt.date(1999, 12, 31)]
TIMES = [
    dt.datetime(2024, 1, 1, 12, 30, 5, 123456, tzinfo=UTC),
    dt.datetime(2020, 6, 1, tzinfo=UTC),
]
BOOLS = [True, False, None]
DECIMALS = [Decimal("1.50"), Decimal("12.30")]  # delta-rs cannot write negative ones

SPELLED = ["a b", "x/y:z%", None, "z", "q=r", "s"]

PARTITIONS = ["p_str", "p_int", "p_date", "p_ts", "p_bool", "p_dec"]


def _partitioned_delta_table(path: str, rows: int = 60) -> pa.Table:
    from deltalake import write_deltalake

    data = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "x": pa.array([i * 0.5 for i in range(rows)], pa.float64()),
            "p_str": pa.array([STRINGS[i % len(STRINGS)] for i in range(rows)], pa.string()),
            "p_int": pa.array([INTS[i % len(INTS)] for i in range(rows)], pa.int32()),
            "p_date": pa.array([DATES[i % len(DATES)] for i in range(rows)], pa.date32()),
            "p_ts": pa.array(
                [TIMES[i % len(TIMES)] for i in range(rows)], pa.timestamp("us", "UTC")
            ),
            "p_bool": pa.array([BOOLS[i % len(BOOLS)] for i in range(rows)], pa.bool_()),
            "p_dec": pa.array(
                [DECIMALS[i % len(DECIMALS)] for i in range(rows)], pa.decimal128(10, 2)
            ),
        }
    )
    write_deltalake(path, data, partition_by=PARTITIONS)
    return data


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("partition_columns") / "partitioned")
    _partitioned_delta_table(path)
    return path


def _readers(spark: Any, path: str) -> dict[str, Any]:
    return {
        "format(qbeast)": spark.read.format("qbeast").load(path),
        "QbeastTable": qc.QbeastTable.forPath(spark, path).read(),
    }


def test_partition_column_values_survive_qbeast_read(spark: Any, partitioned: str) -> None:
    expected = deltalake_table(partitioned)
    assert expected.num_rows == 60
    # delta-rs writes an empty string partition as null: the log cannot tell them apart
    assert expected.column("p_str").null_count == 20
    assert expected.column("p_int").null_count == 0
    nulls = {c: expected.column(c).null_count for c in PARTITIONS}
    for name, df in _readers(spark, partitioned).items():
        got = df.toArrow()
        assert (name, {c: got.column(c).null_count for c in PARTITIONS}) == (name, nulls)
        assert row_digest(got) == row_digest(expected), name


@pytest.mark.parametrize(
    ("where", "arrow_filter"),
    [
        ("p_int = 2", lambda t: pc.equal(t["p_int"], 2)),
        ("p_str = 'a b'", lambda t: pc.equal(t["p_str"], "a b")),
        ("p_str is null", lambda t: pc.is_null(t["p_str"])),
        (
            "p_date < date'2000-01-01'",
            lambda t: pc.less(t["p_date"], pa.scalar(dt.date(2000, 1, 1))),
        ),
        (
            "p_ts = timestamp'2024-01-01 12:30:05.123456Z'",
            lambda t: pc.equal(t["p_ts"], pa.scalar(TIMES[0], pa.timestamp("us", "UTC"))),
        ),
        ("p_bool", lambda t: pc.fill_null(t["p_bool"], False)),
        ("p_dec > 2 and x < 20", lambda t: pc.and_(pc.greater(t["p_dec"], 2), pc.less(t["x"], 20))),
    ],
)
def test_filters_on_partition_columns_are_exact(
    spark: Any, partitioned: str, where: str, arrow_filter: Any
) -> None:
    full = deltalake_table(partitioned)
    expected = full.filter(arrow_filter(full))
    assert 0 < expected.num_rows < full.num_rows
    table = qc.QbeastTable.forPath(spark, partitioned)
    assert spark_digest(table.filter(where)) == row_digest(expected), where
    fmt = spark.read.format("qbeast").load(partitioned).where(where)
    assert spark_digest(fmt) == row_digest(expected), where


def test_partition_values_come_from_the_log_not_the_directory_names(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A table partitioned by string, int and date columns, whose directories spell the log's
    values (one Spark scan), and a copy whose directory ``p_int=2`` was renamed to
    ``p_int=7`` with the log's paths following it: the log still says 2."""
    from deltalake import write_deltalake

    base = tmp_path_factory.mktemp("partition_dirs")
    rows = 30
    data = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            # delta-rs writes "" and non-ASCII values in directories Spark reads otherwise
            "p_str": pa.array([SPELLED[i % len(SPELLED)] for i in range(rows)], pa.string()),
            "p_int": pa.array([INTS[i % len(INTS)] for i in range(rows)], pa.int32()),
            "p_date": pa.array([DATES[i % len(DATES)] for i in range(rows)], pa.date32()),
        }
    )
    spelled = str(base / "spelled")
    write_deltalake(spelled, data, partition_by=["p_str", "p_int", "p_date"])
    expected = deltalake_table(spelled)
    lying = base / "lying"
    shutil.copytree(spelled, lying)
    for directory in list(lying.glob("*/p_int=2")):
        directory.rename(directory.with_name("p_int=7"))
    for log in (lying / "_delta_log").glob("*.json"):
        log.write_text(log.read_text().replace("/p_int=2/", "/p_int=7/"))
    assert deltalake_table(str(lying)).column("p_int").to_pylist().count(2) == 10
    # the first is read in one scan, from the directory names; the second is not
    assert [_spelled(spelled), _spelled(str(lying))] == [True, False]
    for path in (spelled, str(lying)):
        for name, df in _readers(spark, path).items():
            assert row_digest(df.toArrow()) == row_digest(expected), (path, name)
        assert spark_digest(qc.QbeastTable.forPath(spark, path).filter("p_int = 2")) == row_digest(
            expected.filter(pc.equal(expected["p_int"], 2))
        )


def _spelled(path: str) -> bool:
    """Whether Spark's reader takes this table's partition values from directory names."""
    import json

    from pyspark.sql.types import StructType

    from qbeast_connect.paths import resolve_table_file
    from qbeast_connect.spark.files import _directories_spell_values
    from server_plugin.delta.log_reader import read_snapshot
    from server_plugin.delta.storage import storage_for

    snapshot = read_snapshot(storage_for(path))
    schema = StructType.fromJson(json.loads(snapshot.metadata.schema_string))
    adds = list(snapshot.files.values())
    located = [resolve_table_file(path, a.path) for a in adds]
    return _directories_spell_values(schema, path, located, [dict(a.partition_values) for a in adds])
