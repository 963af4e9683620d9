"""The plugin's parquet reader opens table files as Spark reads them, or refuses them by
name: a missing data or vector file is a DataFileMissingError, INT96 timestamps past 2262
read (Delta's "end of time" 9999-12-31), and a legacy-calendar file with a date before
1582-10-15 (which Spark rebases) is refused. Found by reading delta-rs's test tables
(``bench/delta_corpus.py``): before, all three failed with pyarrow's or Python's own
errors from inside a read task.
"""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import LongType, StructField, StructType, TimestampType
from test_deletion_vectors import z85_encode

from qbeast_connect.exceptions import DataFileMissingError, UnsupportedInputError
from server_plugin.parquet_reader import ParquetFilesReader

SCHEMA = StructType([StructField("id", LongType()), StructField("ts", TimestampType())])
UTC = dt.UTC


def _read(root: Path, files: list[str], vectors: dict[str, Any] | None = None) -> list[Any]:
    reader = ParquetFilesReader(
        str(root), SCHEMA, [(f, 1) for f in files], deletion_vectors=vectors
    )
    rows: list[Any] = []
    for partition in reader.partitions():
        assert isinstance(partition, InputPartition)
        for batch in reader.read(partition):
            rows += batch.to_pylist()
    return rows


def _int96_file(path: Path, stamps: list[dt.datetime], legacy: bool = False) -> None:
    table = pa.table(
        {
            "id": pa.array(range(len(stamps)), pa.int64()),
            "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
        }
    )
    if legacy:
        table = table.replace_schema_metadata({"org.apache.spark.legacyDateTime": ""})
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)


def test_a_missing_data_file_is_named(tmp_path: Path) -> None:
    _int96_file(tmp_path / "here.parquet", [dt.datetime(2020, 1, 1, tzinfo=UTC)])
    assert len(_read(tmp_path, ["here.parquet"])) == 1
    with pytest.raises(DataFileMissingError, match=r"lists the file gone\.parquet, which is not"):
        _read(tmp_path, ["here.parquet", "gone.parquet"])


def test_a_missing_deletion_vector_file_is_named(tmp_path: Path) -> None:
    _int96_file(tmp_path / "f.parquet", [dt.datetime(2020, 1, 1, tzinfo=UTC)])
    ident = uuid.uuid4()
    vector = {
        "storageType": "u",
        "pathOrInlineDv": z85_encode(ident.bytes),
        "offset": 1,
        "sizeInBytes": 10,
        "cardinality": 1,
    }
    with pytest.raises(DataFileMissingError, match=f"deletion_vector_{ident}.bin"):
        _read(tmp_path, ["f.parquet"], {"f.parquet": vector})


def test_int96_timestamps_past_2262_read_as_spark_reads_them(tmp_path: Path) -> None:
    stamps = [
        dt.datetime(9999, 12, 31, tzinfo=UTC),
        dt.datetime(2022, 1, 1, 12, 30, 0, 123456, tzinfo=UTC),
        dt.datetime(1, 1, 1, tzinfo=UTC),
    ]
    _int96_file(tmp_path / "f.parquet", stamps)
    assert [r["ts"] for r in _read(tmp_path, ["f.parquet"])] == stamps


def test_a_legacy_calendar_file_reads_unless_it_holds_days_spark_rebases(tmp_path: Path) -> None:
    modern = [dt.datetime(1582, 10, 15, tzinfo=UTC), dt.datetime(9999, 12, 31, tzinfo=UTC)]
    _int96_file(tmp_path / "modern.parquet", modern, legacy=True)
    assert [r["ts"] for r in _read(tmp_path, ["modern.parquet"])] == modern
    old = [dt.datetime(2000, 1, 1, tzinfo=UTC), dt.datetime(1500, 3, 1, tzinfo=UTC)]
    _int96_file(tmp_path / "old.parquet", old, legacy=True)
    with pytest.raises(UnsupportedInputError, match=r"old\.parquet .*legacy hybrid calendar.*'ts'"):
        _read(tmp_path, ["old.parquet"])
    # the same values in a file written in the proleptic Gregorian calendar read as stored
    _int96_file(tmp_path / "gregorian.parquet", old)
    assert [r["ts"] for r in _read(tmp_path, ["gregorian.parquet"])] == old
