"""Deletion vectors we write: the bitmap encoder, the vector file, and the ``delete_vectors``
command's commit (issue #33: deletes that write vectors instead of rewriting files).

The encoder is checked against the decoder and against the independent test encoder of
``test_deletion_vectors`` (byte for byte); the command's tables are read back by our log
reader and plugin reader here, and by ``deltalake`` and Delta's JVM in the Spark and
integration tests.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_deletion_vectors import encode, z85_encode

from qbeast_connect.exceptions import (
    CommitConflictError,
    InvalidOptionError,
    UnsupportedProtocolError,
)
from qbeast_connect.plan_codec import decode_row_positions, encode_row_positions
from server_plugin.commands import run_command
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.deletion_vectors import (
    decode_bitmap,
    encode_bitmap,
    read_deletion_vector,
    write_deletion_vectors,
)
from server_plugin.delta.deletion_vectors import z85_encode as product_z85
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.storage import LocalStorage


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [0],
        [5, 1, 5, 4095, 65535, 65536],
        list(range(0, 200_000, 3)),  # bitmap containers (21,846 values per 65,536)
        [3, (1 << 32) + 7, (2 << 32)],  # high keys 0, 1 and 2
        list(range(10_000)),
    ],
)
def test_encoded_rows_decode_to_the_same_sorted_set(rows: list[int]) -> None:
    data = encode_bitmap(rows)
    assert decode_bitmap(data).tolist() == sorted(set(rows))


def test_the_encoding_is_the_portable_format_byte_for_byte() -> None:
    arrays = [0, 1, 5, 4095]
    dense = list(range(0, 65536, 7))  # 9,363 values: a bitmap container
    rows = arrays + [(1 << 16) | v for v in dense]
    assert encode_bitmap(rows) == encode([(0, [("array", 0, arrays), ("bitmap", 1, dense)])])
    # a row of high key 2 only: the keys below it are written as empty bitmaps, as Delta does
    assert encode_bitmap([(2 << 32) | 9]) == (encode([(0, []), (1, []), (2, [("array", 0, [9])])]))


def test_negative_and_huge_row_indexes_are_refused() -> None:
    with pytest.raises(ValueError, match="row indexes"):
        encode_bitmap([-1])
    with pytest.raises(ValueError, match="row indexes"):
        encode_bitmap([1 << 41])


def test_z85_encoding_inverts_the_decoder() -> None:
    data = bytes(range(40))
    assert product_z85(data) == z85_encode(data)


def test_a_vector_file_holds_every_vector_with_its_offset_and_checksum(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    sets = [np.array([1, 2, 3]), np.arange(0, 70_000, 2), np.array([7])]
    descriptors = write_deletion_vectors(storage, sets)
    assert len({d.path_or_inline_dv for d in descriptors}) == 1
    assert [d.cardinality for d in descriptors] == [3, 35_000, 1]
    assert descriptors[0].offset == 1
    for rows, descriptor in zip(sets, descriptors, strict=True):
        assert read_deletion_vector(storage, descriptor).tolist() == rows.tolist()
    (name,) = [p.name for p in tmp_path.iterdir()]
    assert name == f"{descriptors[0].file_path()}"


def test_row_positions_survive_the_command_encoding() -> None:
    rows = [9, 2, 2, 1 << 33, 0]
    assert decode_row_positions(encode_row_positions(rows)) == [0, 2, 9, 1 << 33]
    with pytest.raises(InvalidOptionError, match="malformed row positions"):
        decode_row_positions("not base64!")


# -- the delete_vectors command on a small table -------------------------------------------

_SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
)


def _table(tmp_path: Path, *, vectors: bool = True, rows_per_file: int = 10) -> Path:
    """A two-file table: ``a.parquet`` ids 0-9, ``b.parquet`` ids 10-19."""
    table = tmp_path / "t"
    (table / "_delta_log").mkdir(parents=True)
    adds = []
    for i, name in enumerate(("a.parquet", "b.parquet")):
        ids = list(range(i * rows_per_file, (i + 1) * rows_per_file))
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), table / name)
        stats = {"numRecords": len(ids), "minValues": {"id": ids[0]}, "maxValues": {"id": ids[-1]}}
        adds.append(
            {
                "add": {
                    "path": name,
                    "partitionValues": {},
                    "size": (table / name).stat().st_size,
                    "modificationTime": 1,
                    "dataChange": True,
                    "stats": json.dumps(stats),
                    "tags": {"revision": "1", "blocks": "[]"},
                }
            }
        )
    protocol: dict[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
    configuration = {}
    if vectors:
        protocol = {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
        configuration = {"delta.enableDeletionVectors": "true"}
    metadata = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": _SCHEMA,
        "partitionColumns": [],
        "configuration": configuration,
    }
    lines = [{"protocol": protocol}, {"metaData": metadata}, *adds]
    (table / "_delta_log" / f"{0:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in lines) + "\n"
    )
    return table


def _delete(table: Path, files: dict[str, list[int]], read_version: int = 0) -> dict[str, Any]:
    command = {
        "command": "delete_vectors",
        "path": str(table),
        "readVersion": read_version,
        "predicate": "id IN (...)",
        "files": {p: encode_row_positions(r) for p, r in files.items()},
        "txnId": f"t-{time.time_ns()}",
    }
    ((kind, payload),) = list(run_command(command))
    assert kind == "result"
    return dict(json.loads(payload))


def _live(table: Path) -> dict[str, list[int]]:
    storage = LocalStorage(table)
    snapshot = read_snapshot(storage)
    out = {}
    for add in snapshot.files.values():
        ids = pq.read_table(table / add.path)["id"].to_pylist()
        gone = (
            set()
            if add.deletion_vector is None
            else set(read_deletion_vector(storage, add.deletion_vector).tolist())
        )
        out[add.path] = [v for i, v in enumerate(ids) if i not in gone]
    return out


def test_a_delete_marks_rows_in_vectors_and_keeps_the_files(tmp_path: Path) -> None:
    table = _table(tmp_path)
    result = _delete(table, {"a.parquet": [1, 3], "b.parquet": [0]})
    assert result == {"version": 1, "deletedRows": 3, "removedFiles": 0, "vectorFiles": 2}
    assert _live(table) == {
        "a.parquet": [0, 2, 4, 5, 6, 7, 8, 9],
        "b.parquet": list(range(11, 20)),
    }
    commit = [json.loads(line) for line in (table / "_delta_log" / f"{1:020d}.json").open()]
    info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
    assert info["operation"] == "DELETE"
    adds = [a["add"] for a in commit if "add" in a]
    assert {a["path"] for a in adds} == {"a.parquet", "b.parquet"}
    # the tags stay; the statistics still bound the rows, no longer tightly
    assert all(a["tags"] == {"revision": "1", "blocks": "[]"} for a in adds)
    assert all(json.loads(a["stats"])["tightBounds"] is False for a in adds)
    # the files themselves are untouched: one new file, the vectors
    names = sorted(p.name for p in table.iterdir() if p.is_file())
    assert names[:2] == ["a.parquet", "b.parquet"] and names[2].startswith("deletion_vector_")


def test_a_second_delete_joins_the_old_vector_and_counts_only_new_rows(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _delete(table, {"a.parquet": [1, 3]})
    result = _delete(table, {"a.parquet": [3, 4]}, read_version=1)
    assert result["deletedRows"] == 1
    assert _live(table)["a.parquet"] == [0, 2, 5, 6, 7, 8, 9]
    # the remove names the old logical file (path and its vector)
    commit = [json.loads(line) for line in (table / "_delta_log" / f"{2:020d}.json").open()]
    (remove,) = [a["remove"] for a in commit if "remove" in a]
    assert remove["deletionVector"]["cardinality"] == 2
    # rows deleted already: nothing to commit
    assert _delete(table, {"a.parquet": [1]}, read_version=2) == {
        "version": None,
        "deletedRows": 0,
    }


def test_a_file_whose_every_row_is_deleted_is_removed(tmp_path: Path) -> None:
    table = _table(tmp_path)
    result = _delete(table, {"b.parquet": list(range(10)), "a.parquet": [0]})
    assert result["removedFiles"] == 1 and result["deletedRows"] == 11
    assert set(_live(table)) == {"a.parquet"}


def test_a_table_without_vectors_enabled_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    table = _table(tmp_path, vectors=False)
    with pytest.raises(UnsupportedProtocolError, match="does not enable deletion vectors"):
        _delete(table, {"a.parquet": [1]})
    assert not list(table.glob("deletion_vector_*"))


def test_a_file_removed_meanwhile_is_a_conflict_and_the_vector_file_goes(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _delete(table, {"a.parquet": [1]})
    with pytest.raises(CommitConflictError):
        _delete(table, {"a.parquet": [2]}, read_version=0)  # a.parquet changed at version 1
    assert len(list(table.glob("deletion_vector_*"))) == 1


def test_a_table_created_with_vectors_enabled_lists_the_feature() -> None:
    from server_plugin.delta.committer import create_table_actions
    from server_plugin.delta.protocol import DEFAULT_PROTOCOL, VECTORS_PROTOCOL

    protocol, _ = create_table_actions(_SCHEMA, {"delta.enableDeletionVectors": "true"})
    assert protocol == VECTORS_PROTOCOL
    assert protocol.reader_features == protocol.writer_features == ("deletionVectors",)
    for config in ({}, {"delta.enableDeletionVectors": "false"}):
        assert create_table_actions(_SCHEMA, config)[0] == DEFAULT_PROTOCOL


def test_a_vector_on_a_table_without_the_feature_is_refused(tmp_path: Path) -> None:
    import dataclasses

    from server_plugin.delta.committer import commit

    table = _table(tmp_path, vectors=False)
    storage = LocalStorage(table)
    snapshot = read_snapshot(storage)
    add = next(iter(snapshot.files.values()))
    (vector,) = write_deletion_vectors(storage, [np.array([1])])
    with pytest.raises(UnsupportedProtocolError, match="does not list the deletionVectors"):
        commit(
            storage,
            [add.to_remove(1), dataclasses.replace(add, deletion_vector=vector)],
            TransactionReadSet(read_version=0),
            operation="DELETE",
            operation_parameters={},
        )
    assert read_snapshot(storage).version == 0
