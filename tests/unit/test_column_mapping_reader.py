"""The plugin's parquet reader over files of a column-mapped table: physical names in the
files and partition values, logical names in the rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from server_plugin.parquet_reader import ParquetFilesReader


def _field(name: str, physical: str, cid: int, type_: object) -> dict[str, object]:
    return {
        "name": name,
        "type": type_,
        "nullable": True,
        "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": physical},
    }


SCHEMA = StructType.fromJson(
    {
        "type": "struct",
        "fields": [
            _field("id", "col-1", 1, "long"),
            _field(
                "point",
                "col-2",
                2,
                {
                    "type": "struct",
                    "fields": [
                        _field("x", "col-3", 3, "double"),
                        _field("y", "col-4", 4, "double"),
                    ],
                },
            ),
            _field("renamed", "old", 5, "string"),
            _field("part", "col-6", 6, "integer"),
        ],
    }
)


def _read(tmp_path: Path, mode: str | None) -> dict[str, list[object]]:
    reader = ParquetFilesReader(
        str(tmp_path),
        SCHEMA,
        [("f.parquet", 1)],
        partition_values={"f.parquet": {"col-6": "7"}},
        column_mapping_mode=mode,
    )
    rows: dict[str, list[object]] = {}
    for partition in reader.partitions():
        assert isinstance(partition, InputPartition)
        for batch in reader.read(partition):
            for name, values in batch.to_pydict().items():
                rows.setdefault(name, []).extend(values)
    return rows


def test_plugin_reader_reads_physical_columns_under_logical_names(tmp_path: Path) -> None:
    point = pa.struct([("col-3", pa.float64()), ("col-4", pa.float64())])
    pq.write_table(
        pa.table(
            {
                "col-1": pa.array([1, 2], pa.int64()),
                "col-2": pa.array([{"col-3": 1.5, "col-4": -2.0}, None], point),
                "old": ["a", "b"],
                "dropped": [9, 9],  # a dropped column stays in the file, unread
            }
        ),
        tmp_path / "f.parquet",
    )
    assert _read(tmp_path, "name") == {
        "id": [1, 2],
        "point": [{"x": 1.5, "y": -2.0}, None],
        "renamed": ["a", "b"],
        "part": [7, 7],
    }
    # read as if the table had no column mapping, the logical names find nothing
    assert _read(tmp_path, "none") == {
        "id": [None, None],
        "point": [None, None],
        "renamed": [None, None],
        "part": [None, None],
    }
