"""Tables whose files carry deletion vectors: log replay, checkpoints, reads and vacuum.

A logical file is the pair (path, deletion vector): Delta's DELETE replaces ``add(p)`` by
``remove(p)`` + ``add(p, dv)`` in one commit, in either order, and a later DELETE replaces
``add(p, dv1)`` by ``remove(p, dv1)`` + ``add(p, dv2)``. The vector rides along through our
checkpoints, the plugin's reader leaves its rows out, and vacuum keeps the vector files
live files name.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType
from test_deletion_vectors import dv_file, encode, z85_encode

from server_plugin.commands import vacuum
from server_plugin.delta.checkpoint import read_checkpoint, write_checkpoint
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.protocol import check_writable
from server_plugin.delta.storage import LocalStorage
from server_plugin.parquet_reader import BATCH_ROWS, ParquetFilesReader

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors"],
    "writerFeatures": ["deletionVectors"],
}


def _inline(rows: list[int]) -> dict[str, Any]:
    """An inline deletion vector of ``rows`` (all below 65,536)."""
    data = encode([(0, [("array", 0, sorted(rows))])])
    padded = data + b"\0" * (-len(data) % 4)
    return {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(padded),
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


def _on_disk(table: Path, rows: list[int]) -> dict[str, Any]:
    """A deletion vector of ``rows`` in a UUID-named file under the table root."""
    import uuid

    ident = uuid.uuid4()
    data = encode(
        [(0, [("array", k, sorted(r & 0xFFFF for r in rows if r >> 16 == k)) for k in _keys(rows)])]
    )
    (offset,) = dv_file(table, f"deletion_vector_{ident}.bin", [data])
    return {
        "storageType": "u",
        "pathOrInlineDv": z85_encode(ident.bytes),
        "offset": offset,
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


def _keys(rows: list[int]) -> list[int]:
    return sorted({r >> 16 for r in rows})


def _add(path: str, dv: dict[str, Any] | None = None, size: int = 1) -> dict[str, Any]:
    add: dict[str, Any] = {
        "path": path,
        "partitionValues": {},
        "size": size,
        "modificationTime": 1,
        "dataChange": True,
    }
    if dv is not None:
        add["deletionVector"] = dv
    return {"add": add}


def _remove(path: str, dv: dict[str, Any] | None = None) -> dict[str, Any]:
    remove: dict[str, Any] = {
        "path": path,
        "deletionTimestamp": int(time.time() * 1000),
        "dataChange": True,
    }
    if dv is not None:
        remove["deletionVector"] = dv
    return {"remove": remove}


def _log(table: Path, commits: list[list[dict[str, Any]]]) -> LocalStorage:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    first = [
        {"protocol": PROTOCOL},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": SCHEMA,
                "partitionColumns": [],
                "configuration": {"delta.enableDeletionVectors": "true"},
            }
        },
    ]
    for version, actions in enumerate(commits):
        lines = (first if version == 0 else []) + actions
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    return LocalStorage(table)


def _vector_of(storage: LocalStorage, version: int | None = None) -> dict[str, Any]:
    snapshot = read_snapshot(storage, version)
    return {
        k: (None if a.deletion_vector is None else a.deletion_vector.to_json())
        for k, a in snapshot.files.items()
    }


def test_replay_keys_a_logical_file_by_path_and_vector(tmp_path: Path) -> None:
    dv1, dv2 = _inline([1, 5]), _inline([1, 5, 9])
    storage = _log(
        tmp_path,
        [
            [_add("a.parquet"), _add("b.parquet")],
            # Delta's DELETE: the add of the new pair may come before the remove of the old
            [_add("a.parquet", dv1), _remove("a.parquet")],
            [_remove("a.parquet", dv1), _add("a.parquet", dv2)],
            # a remove of a pair that is gone leaves the live pair alone
            [_remove("a.parquet", dv1)],
            [_remove("b.parquet")],
        ],
    )
    assert _vector_of(storage, 0) == {"a.parquet": None, "b.parquet": None}
    assert _vector_of(storage, 1) == {"a.parquet": dv1, "b.parquet": None}
    assert _vector_of(storage, 2) == {"a.parquet": dv2, "b.parquet": None}
    assert _vector_of(storage, 3) == {"a.parquet": dv2, "b.parquet": None}
    snapshot = read_snapshot(storage, 4)
    assert _vector_of(storage, 4) == {"a.parquet": dv2}
    # every removed pair is a tombstone of its own
    assert sorted(
        (r.path, -1 if r.deletion_vector is None else r.deletion_vector.cardinality)
        for r in snapshot.tombstones.values()
    ) == [("a.parquet", -1), ("a.parquet", 2), ("b.parquet", -1)]
    check_writable(snapshot.protocol, snapshot.metadata)


def test_checkpoints_keep_the_vectors(tmp_path: Path) -> None:
    dv = _inline([0, 7])
    storage = _log(
        tmp_path,
        [[_add("a.parquet"), _add("b.parquet")], [_add("a.parquet", dv), _remove("a.parquet")]],
    )
    snapshot = read_snapshot(storage)
    write_checkpoint(storage, snapshot)
    actions = read_checkpoint(storage, 1)
    adds = {a.path: a for a in actions if type(a).__name__ == "AddFile"}
    removes = [a for a in actions if type(a).__name__ == "RemoveFile"]
    assert adds["a.parquet"].deletion_vector is not None
    assert adds["a.parquet"].deletion_vector.to_json() == dv
    assert adds["b.parquet"].deletion_vector is None
    assert [(r.path, r.deletion_vector) for r in removes] == [("a.parquet", None)]
    # the table read through the checkpoint is the same
    (tmp_path / "_delta_log" / f"{0:020d}.json").unlink()
    (tmp_path / "_delta_log" / f"{1:020d}.json").unlink()
    assert _vector_of(storage) == {"a.parquet": dv, "b.parquet": None}


def _read(table: Path, files: list[tuple[str, dict[str, Any] | None]]) -> list[int]:
    schema = StructType([StructField("id", LongType()), StructField("s", StringType())])
    reader = ParquetFilesReader(
        str(table),
        schema,
        [(name, 1) for name, _dv in files],
        deletion_vectors={name: dv for name, dv in files if dv is not None},
    )
    ids: list[int] = []
    for partition in reader.partitions():
        assert isinstance(partition, InputPartition)
        for batch in reader.read(partition):
            ids += batch.column(0).to_pylist()
    return ids


def test_the_plugin_reader_leaves_out_deleted_rows_across_batches(tmp_path: Path) -> None:
    n = BATCH_ROWS + 5000  # two batches of the reader
    pq.write_table(
        pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "s": ["v"] * n}),
        tmp_path / "big.parquet",
        row_group_size=10_000,
    )
    pq.write_table(pa.table({"id": [10, 11, 12], "s": ["a", "b", "c"]}), tmp_path / "small.parquet")
    deleted = [0, 3, BATCH_ROWS - 1, BATCH_ROWS, BATCH_ROWS + 1, n - 1, 70_000 - 1]
    big = _on_disk(tmp_path, deleted)
    ids = _read(tmp_path, [("big.parquet", big), ("small.parquet", _inline([1]))])
    assert ids == [*sorted(set(range(n)) - set(deleted)), 10, 12]
    assert _read(tmp_path, [("small.parquet", None)]) == [10, 11, 12]
    # every row of a file deleted: nothing is read from it
    assert _read(tmp_path, [("small.parquet", _inline([0, 1, 2]))]) == []


def test_a_vector_that_disagrees_with_the_log_is_refused(tmp_path: Path) -> None:
    from qbeast_connect.exceptions import CorruptLogError

    pq.write_table(pa.table({"id": [1, 2], "s": ["a", "b"]}), tmp_path / "f.parquet")
    wrong = dict(_inline([0]), cardinality=2)
    with pytest.raises(CorruptLogError, match="cardinality 2"):
        _read(tmp_path, [("f.parquet", wrong)])


def test_vacuum_keeps_the_vector_files_live_files_name(tmp_path: Path) -> None:
    for name in ("a.parquet", "b.parquet", "gone.parquet"):
        pq.write_table(pa.table({"id": [1], "s": ["x"]}), tmp_path / name)
    live = _on_disk(tmp_path, [0])
    stale = _on_disk(tmp_path, [0])
    storage = _log(
        tmp_path,
        [
            [_add("a.parquet"), _add("b.parquet"), _add("gone.parquet")],
            [_add("a.parquet", stale), _remove("a.parquet")],
            [_add("a.parquet", live), _remove("a.parquet", stale), _remove("gone.parquet")],
        ],
    )
    assert _vector_of(storage) == {"a.parquet": live, "b.parquet": None}
    past = time.time() - 3600
    for path in tmp_path.iterdir():
        if path.is_file():
            os.utime(path, (past, past))
    (result,) = vacuum(
        {"path": str(tmp_path), "retentionHours": 0, "enforceRetentionDuration": False}
    )
    live_file = f"deletion_vector_{_uuid(live)}.bin"
    stale_file = f"deletion_vector_{_uuid(stale)}.bin"
    assert sorted(json.loads(result[1])["files"]) == sorted(["gone.parquet", stale_file])
    assert (tmp_path / live_file).exists() and not (tmp_path / stale_file).exists()


def _uuid(dv: dict[str, Any]) -> str:
    import uuid

    from server_plugin.delta.deletion_vectors import z85_decode

    return str(uuid.UUID(bytes=z85_decode(dv["pathOrInlineDv"])))
