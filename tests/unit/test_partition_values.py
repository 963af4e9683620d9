"""Partition values as the Delta log writes them, typed per column (delta-log.md §4)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from qbeast_connect.exceptions import CorruptLogError
from qbeast_connect.rules.partition_values import partition_value, partition_value_sql
from server_plugin.parquet_reader import conform_batch, typed_partition_values

UTC = dt.UTC


@pytest.mark.parametrize(
    ("text", "data_type", "value"),
    [
        (None, "integer", None),
        ("", "string", None),  # the log cannot tell "" from null
        ("a b/:%", "string", "a b/:%"),
        ("-12", "integer", -12),
        ("9223372036854775807", "long", 2**63 - 1),
        ("7", "byte", 7),
        ("1.5", "double", 1.5),
        ("NaN", "float", "nan"),
        ("12.3", "decimal(10,2)", Decimal("12.30")),
        ("-0.50", "decimal(4,2)", Decimal("-0.50")),
        ("true", "boolean", True),
        ("FALSE", "boolean", False),
        ("2024-02-29", "date", dt.date(2024, 2, 29)),
        ("2024-01-01T12:30:05.123456Z", "timestamp", dt.datetime(2024, 1, 1, 12, 30, 5, 123456, UTC)),
        ("2024-01-01T14:30:05+02:00", "timestamp", dt.datetime(2024, 1, 1, 12, 30, 5, tzinfo=UTC)),
        # the legacy form has no zone: read as UTC, as Delta kernel and delta-rs do
        ("2024-01-01 12:30:05.123456", "timestamp", dt.datetime(2024, 1, 1, 12, 30, 5, 123456, UTC)),
        ("2024-01-01 12:30:05", "timestamp_ntz", dt.datetime(2024, 1, 1, 12, 30, 5)),
        ("ab", "binary", b"ab"),
    ],
)
def test_partition_values_are_typed_as_the_delta_protocol_writes_them(
    text: str | None, data_type: str, value: Any
) -> None:
    got = partition_value(text, data_type)
    if value == "nan":
        assert isinstance(got, float) and got != got
    else:
        assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "data_type"),
    [
        ("x", "integer"),
        ("1.5", "long"),
        ("1.234", "decimal(10,2)"),  # more digits than the scale
        ("123456", "decimal(4,2)"),  # more digits than the precision
        ("yes", "boolean"),
        ("2024-13-01", "date"),
        ("2024-01-01 00:00:00Z", "timestamp_ntz"),
        ("1", {"type": "struct", "fields": []}),
    ],
)
def test_bad_partition_values_are_a_corrupt_log(text: str, data_type: Any) -> None:
    with pytest.raises(CorruptLogError, match="partition"):
        partition_value(text, data_type, "p")


@pytest.mark.parametrize(
    ("text", "data_type", "sql"),
    [
        (None, "date", "CAST(NULL AS DATE)"),
        ("2", "integer", "CAST(2 AS INT)"),
        ("2", "long", "CAST(2 AS BIGINT)"),
        ("1.5", "float", "CAST(1.5D AS FLOAT)"),
        ("12.3", "decimal(10,2)", "CAST('12.30' AS DECIMAL(10,2))"),
        ("it's", "string", "'it\\'s'"),
        ("true", "boolean", "TRUE"),
        ("2024-02-29", "date", "DATE '2024-02-29'"),
        ("2024-01-01 12:30:05.5", "timestamp", "TIMESTAMP '2024-01-01 12:30:05.500000Z'"),
        ("2024-01-01 12:30:05", "timestamp_ntz", "TIMESTAMP_NTZ '2024-01-01 12:30:05'"),
        ("ab", "binary", "X'6162'"),
    ],
)
def test_partition_value_sql_is_a_typed_literal(text: str | None, data_type: str, sql: str) -> None:
    assert partition_value_sql(text, data_type) == sql


def test_plugin_reader_takes_partition_columns_from_the_log() -> None:
    schema = StructType(
        [
            StructField("id", LongType()),
            StructField("P", IntegerType()),
            StructField("d", DateType()),
            StructField("ts", TimestampType()),
            StructField("dec", DecimalType(6, 2)),
            StructField("s", StringType()),
        ]
    )
    target = pa.schema(
        [
            ("id", pa.int64()),
            ("P", pa.int32()),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us", "UTC")),
            ("dec", pa.decimal128(6, 2)),
            ("s", pa.string()),
        ]
    )
    # the file holds a stale value of a partition column: the log wins
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "p": pa.array([9, 9], pa.int32())})
    values = typed_partition_values(
        schema, {"p": "3", "d": "2024-02-29", "ts": "2024-01-01T00:00:00Z", "dec": "1.5", "s": None}
    )
    out = conform_batch(batch, target, values)
    assert out.to_pydict() == {
        "id": [1, 2],
        "P": [3, 3],
        "d": [dt.date(2024, 2, 29)] * 2,
        "ts": [dt.datetime(2024, 1, 1, tzinfo=UTC)] * 2,
        "dec": [Decimal("1.50")] * 2,
        "s": [None, None],
    }


def test_spark_reads_partitions_from_directories_only_where_they_spell_the_log() -> None:
    from qbeast_connect.spark.files import _directories_spell_values

    schema = StructType(
        [StructField("id", LongType()), StructField("s", StringType()), StructField("n", IntegerType())]
    )
    root = "/t"

    def spells(paths: list[str], values: list[dict[str, str | None]], on: StructType = schema) -> bool:
        return _directories_spell_values(on, root, [f"{root}/{p}" for p in paths], values)

    # delta-rs escapes a space, Spark does not: both unescape to the log's value
    assert spells(
        ["s=a%20b%3Ac/n=2/f.parquet", "s=a b%3Ac/n=-3/g.parquet", "s=__HIVE_DEFAULT_PARTITION__/n=1/h.parquet"],
        [{"s": "a b:c", "n": "2"}, {"s": "a b:c", "n": "-3"}, {"s": None, "n": "1"}],
    )
    assert not spells(["s=x/n=7/f.parquet"], [{"s": "x", "n": "2"}])  # the directory lies
    assert not spells(["s=x/f.parquet"], [{"s": "x", "n": "2"}])  # a column has no directory
    assert not spells(["s=x/n=2/extra/f.parquet"], [{"s": "x", "n": "2"}])
    assert not spells(["s=x/n=2/f.parquet", "n=2/s=x/g.parquet"], [{"s": "x", "n": "2"}] * 2)
    assert not spells(["s=%zz/n=2/f.parquet"], [{"s": "%zz", "n": "2"}])  # not an escape
    assert not spells(["s=__HIVE_DEFAULT_PARTITION__/n=2/f.parquet"], [{"s": "__HIVE_DEFAULT_PARTITION__", "n": "2"}])
    assert not spells(["n=2/f.parquet"], [{"n": "2"}], StructType([StructField("n", TimestampType())]))
    assert spells(["s=x/n=2/f.parquet"], [{"s": "x", "n": "2"}])
