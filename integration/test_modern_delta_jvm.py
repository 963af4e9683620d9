"""Modern Delta tables written by Delta's JVM (Delta 4.4), read by our log layer (issue #32).

A table with V2 checkpoints (``delta.checkpointPolicy=v2``, UUID-named checkpoints with
sidecars), a ``timestamp_ntz`` column and type widening (``ALTER TABLE ... CHANGE COLUMN
... TYPE``): at every version our snapshot, read through Spark's parquet reader with the
table schema (``qbeast_connect.spark.files.read_table_files``, the read path of our
tables), holds exactly the rows of Delta's ``versionAsOf`` read. Then we append and write
our own (V2-spec) checkpoint, and Delta reads the result as we do. A clustered table
shows the ``domainMetadata`` Delta keeps.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from server_plugin.delta.checkpoint import write_checkpoint
from server_plugin.delta.committer import add_file_for, commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.file_stats import compute_stats
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _ours(spark: Any, table: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    from pyspark.sql.types import StructType

    from qbeast_connect.spark.files import read_table_files, table_file

    snapshot = read_snapshot(LocalStorage(table), version)
    schema = StructType.fromJson(json.loads(snapshot.metadata.schema_string))
    files = [
        table_file({"path": a.path, "size": a.size, "partitionValues": dict(a.partition_values)})
        for a in snapshot.files.values()
    ]
    if not files:
        return []
    return _rows(read_table_files(spark, str(table), schema, files))


def _delta(spark: Any, table: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return _rows(reader.load(str(table)))


def test_v2_checkpoints_ntz_and_widened_types_read_as_delta_does(
    dspark: Any, tmp_path: Path
) -> None:
    table = tmp_path / "modern"
    name = f"delta.`{table}`"
    dspark.sql(
        f"CREATE TABLE {name} (id BYTE, f FLOAT, d DATE, ts TIMESTAMP_NTZ, m DECIMAL(6,2)) "
        "USING delta TBLPROPERTIES ('delta.checkpointPolicy'='v2', "
        "'delta.checkpointInterval'='2', 'delta.enableTypeWidening'='true', "
        "'delta.checkpoint.writeStatsAsJson'='false')"
    )
    dspark.sql(
        f"INSERT INTO {name} VALUES (1, 1.5, DATE'2020-01-02', "
        "TIMESTAMP_NTZ'2021-01-01 10:00:00.123456', 12.34), (-2, NULL, NULL, NULL, NULL)"
    )
    dspark.sql(f"ALTER TABLE {name} CHANGE COLUMN id TYPE INT")
    dspark.sql(f"ALTER TABLE {name} CHANGE COLUMN f TYPE DOUBLE")
    dspark.sql(
        f"INSERT INTO {name} VALUES (100000, 0.1, DATE'1999-12-31', "
        "TIMESTAMP_NTZ'1970-01-01 00:00:00', 1.5)"
    )
    dspark.sql(f"ALTER TABLE {name} CHANGE COLUMN id TYPE BIGINT")
    dspark.sql(f"ALTER TABLE {name} CHANGE COLUMN m TYPE DECIMAL(10,4)")
    dspark.sql(f"INSERT INTO {name} VALUES (5000000000, 2.5, NULL, NULL, 3.1416)")
    dspark.sql(f"DELETE FROM {name} WHERE id = -2")
    log = table / "_delta_log"
    uuid_named = [p.name for p in log.glob("*.checkpoint.*-*.*")]
    assert uuid_named, sorted(p.name for p in log.iterdir())
    snapshot = read_snapshot(LocalStorage(table))
    features = set(snapshot.protocol.reader_features or ())
    assert {"v2Checkpoint", "timestampNtz", "typeWidening"} <= features, features
    latest = snapshot.version
    for version in range(latest + 1):
        assert _ours(dspark, table, version) == _delta(dspark, table, version), version
    # the newest state comes from Delta's V2 checkpoint (sidecars, when Delta wrote any)
    assert snapshot.checkpoint_version is not None
    assert _ours(dspark, table)[0][0] == 1  # ids sorted by repr: the widened long reads fine

    # we append a file of the table's (widened) types and checkpoint; Delta reads it
    storage = LocalStorage(table)
    arrow = snapshot.arrow_schema()
    data = pa.table(
        {
            "id": pa.array([7], pa.int64()),
            "f": pa.array([7.25], pa.float64()),
            "d": pa.array([dt.date(2024, 2, 29)], pa.date32()),
            "ts": pa.array([dt.datetime(2024, 2, 29, 23, 59, 59, 999999)], pa.timestamp("us")),
            "m": pa.array([None], pa.decimal128(10, 4)),
        },
        schema=pa.schema([pa.field(f.name, f.type) for f in arrow]),
    )
    rel = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    with storage.open_output(rel) as out:
        pq.write_table(data, out, coerce_timestamps="us")
    add = add_file_for(storage, rel, stats=compute_stats(data))
    version = commit(
        storage,
        [add],
        TransactionReadSet(read_version=latest),
        operation="WRITE",
        operation_parameters={"mode": "Append"},
    )
    write_checkpoint(storage, read_snapshot(storage))
    ours = _ours(dspark, table)
    assert ours == _delta(dspark, table, version)
    assert (7, 7.25, dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 23, 59, 59, 999999), None) in ours
    dspark.sql(f"INSERT INTO {name} VALUES (8, 8.0, NULL, NULL, NULL)")
    assert _ours(dspark, table) == _delta(dspark, table)


def test_domain_metadata_of_a_clustered_table(dspark: Any, tmp_path: Path) -> None:
    table = tmp_path / "clustered"
    name = f"delta.`{table}`"
    dspark.sql(f"CREATE TABLE {name} (id BIGINT, k STRING) USING delta CLUSTER BY (id)")
    dspark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    dspark.sql(f"ALTER TABLE {name} CLUSTER BY (k)")
    dspark.sql(f"INSERT INTO {name} VALUES (3, 'c')")
    live: dict[str, str] = {}
    for commit_file in sorted((table / "_delta_log").glob("*.json")):
        for line in commit_file.read_text().splitlines():
            dm = json.loads(line).get("domainMetadata") if line.strip() else None
            if dm is not None:
                if dm.get("removed"):
                    live.pop(dm["domain"], None)
                else:
                    live[dm["domain"]] = dm["configuration"]
    snapshot = read_snapshot(LocalStorage(table))
    got = {k: v.configuration for k, v in snapshot.domain_metadata.items()}
    assert got == live and "delta.clustering" in got
    assert "k" in got["delta.clustering"]
    assert _ours(dspark, table) == _delta(dspark, table)
