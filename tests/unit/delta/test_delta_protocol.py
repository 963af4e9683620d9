"""Protocol gates: what we refuse to read or write, and that the error names the feature."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest
from delta_testlib import append, create_table

from qbeast_connect.exceptions import CorruptLogError, UnsupportedProtocolError
from server_plugin.delta.actions import Metadata, Protocol, encode_commit
from server_plugin.delta.committer import commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.protocol import DEFAULT_PROTOCOL, check_readable, check_writable
from server_plugin.delta.storage import LocalStorage

SCHEMA = '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
META = Metadata(id="t", schema_string=SCHEMA)


@pytest.mark.parametrize(
    ("protocol", "named"),
    [
        (Protocol(3, 7, ("variantType",), ("variantType",)), "variantType"),
        (Protocol(3, 7, ("catalogManaged",), ("catalogManaged",)), "catalogManaged"),
        (Protocol(3, 7, ("someFutureFeature",), ("someFutureFeature",)), "someFutureFeature"),
        (Protocol(3, 7, ("deletionVectors-preview",), ()), "deletionVectors-preview"),
        (Protocol(4, 7, (), ()), "minReaderVersion 4"),
        (Protocol(1, 2, (), None), "readerFeatures"),
        (Protocol(3, 7, None, ()), "readerFeatures"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_read_refused(protocol: Protocol, named: str) -> None:
    with pytest.raises(UnsupportedProtocolError, match=named):
        check_readable(protocol)


@pytest.mark.parametrize(
    "protocol",
    [
        DEFAULT_PROTOCOL,
        Protocol(1, 1),
        Protocol(3, 7, ("vacuumProtocolCheck",), ()),
        Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
        Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)),
        Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",)),
        Protocol(3, 7, ("typeWidening",), ("typeWidening",)),
        Protocol(3, 7, ("typeWidening-preview",), ("typeWidening-preview",)),
        Protocol(2, 5),
        Protocol(2, 6),
        Protocol(3, 7, ("columnMapping",), ("columnMapping",)),
        Protocol(3, 7, ("columnMapping", "deletionVectors"), ("columnMapping", "deletionVectors")),
    ],
)
def test_read_allowed(protocol: Protocol) -> None:
    check_readable(protocol)


@pytest.mark.parametrize(
    ("protocol", "named"),
    [
        (Protocol(1, 3), "minWriterVersion 3"),
        (Protocol(1, 4), "changeDataFeed"),
        (Protocol(1, 6), "identityColumns"),
        (Protocol(2, 6), "identityColumns"),
        (Protocol(1, 8), "minWriterVersion 8"),
        (Protocol(1, 7, None, ("appendOnly", "identityColumns")), "identityColumns"),
        (Protocol(1, 7, None, ("someFutureFeature",)), "someFutureFeature"),
        (Protocol(1, 7, None, ("domainMetadata", "rowTracking")), "rowTracking"),
        (Protocol(1, 7, None, ("clustering",)), "clustering"),
        (Protocol(1, 7, None, None), "writerFeatures"),
        (Protocol(4, 5), "minReaderVersion 4"),  # the read check comes first
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_write_refused(protocol: Protocol, named: str) -> None:
    with pytest.raises(UnsupportedProtocolError, match=named):
        check_writable(protocol, META)


@pytest.mark.parametrize(
    "protocol",
    [
        DEFAULT_PROTOCOL,
        Protocol(1, 1),
        Protocol(1, 7, None, ("appendOnly", "invariants")),
        Protocol(3, 7, (), ("appendOnly", "invariants")),
        Protocol(3, 7, (), ()),
        Protocol(1, 7, None, ("domainMetadata",)),
        Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint", "domainMetadata")),
        Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)),
        Protocol(3, 7, ("typeWidening",), ("typeWidening",)),
        Protocol(1, 5),
        Protocol(2, 5),
        Protocol(3, 7, ("columnMapping",), ("columnMapping",)),
        # Delta 4.4's CREATE TABLE with column mapping
        Protocol(2, 7, None, ("columnMapping", "invariants", "appendOnly")),
        # a (2, 5) table upgraded by enabling deletion vectors: the legacy features listed
        Protocol(
            3,
            7,
            ("columnMapping", "deletionVectors"),
            (
                "appendOnly",
                "invariants",
                "checkConstraints",
                "changeDataFeed",
                "generatedColumns",
                "columnMapping",
                "deletionVectors",
            ),
        ),
    ],
)
def test_write_allowed(protocol: Protocol) -> None:
    check_writable(protocol, META)


def test_write_refuses_metadata_we_cannot_honour() -> None:
    invariant = SCHEMA.replace(
        '"metadata":{}',
        '"metadata":{"delta.invariants":"{\\"expression\\":{\\"expression\\":\\"a > 0\\"}}"}',
    )
    with pytest.raises(UnsupportedProtocolError, match=r"\[a\].*invariants"):
        check_writable(DEFAULT_PROTOCOL, dataclasses.replace(META, schema_string=invariant))
    # column mapping needs the feature in the protocol, and every field mapped
    with pytest.raises(UnsupportedProtocolError, match="columnMapping"):
        check_writable(
            DEFAULT_PROTOCOL,
            dataclasses.replace(META, configuration={"delta.columnMapping.mode": "name"}),
        )
    with pytest.raises(CorruptLogError, match=r"column a has no delta.columnMapping.physicalName"):
        check_writable(
            Protocol(2, 5),
            dataclasses.replace(META, configuration={"delta.columnMapping.mode": "name"}),
        )
    with pytest.raises(UnsupportedProtocolError, match="timestamp_ntz"):
        check_writable(
            DEFAULT_PROTOCOL,
            dataclasses.replace(META, schema_string=SCHEMA.replace('"long"', '"timestamp_ntz"')),
        )
    with pytest.raises(UnsupportedProtocolError, match="partition columns"):
        check_writable(DEFAULT_PROTOCOL, dataclasses.replace(META, partition_columns=("x",)))


def _set_protocol(path: Path, protocol: Protocol) -> None:
    """Rewrite the protocol line of version 0 (simulating a table written elsewhere)."""
    log = path / "_delta_log" / "00000000000000000000.json"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line]
    new = json.loads(encode_commit([protocol]))
    lines = [new if "protocol" in obj else obj for obj in lines]
    log.write_text("".join(json.dumps(obj) + "\n" for obj in lines))


@pytest.mark.parametrize(
    ("protocol", "named"),
    [
        (Protocol(3, 7, ("madeUpFeature",), ("madeUpFeature",)), "madeUpFeature"),
    ],
    ids=["unknown"],
)
def test_reader_refuses_tables_with_unsupported_protocol(
    tmp_path: Path, protocol: Protocol, named: str
) -> None:
    storage = LocalStorage(tmp_path)
    create_table(storage, pa.table({"a": [1]}))
    _set_protocol(tmp_path, protocol)
    with pytest.raises(UnsupportedProtocolError, match=named):
        read_snapshot(storage)


@pytest.mark.parametrize(
    ("protocol", "named"),
    [
        (Protocol(1, 4), "changeDataFeed"),
        (Protocol(1, 7, None, ("rowTracking", "appendOnly")), "rowTracking"),
    ],
    ids=["writer-4", "unknown-writer-feature"],
)
def test_committer_refuses_tables_with_unsupported_writer_protocol(
    tmp_path: Path, protocol: Protocol, named: str
) -> None:
    storage = LocalStorage(tmp_path)
    create_table(storage, pa.table({"a": [1]}))
    _set_protocol(tmp_path, protocol)
    read_snapshot(storage)  # still readable
    with pytest.raises(UnsupportedProtocolError, match=named):
        append(storage, pa.table({"a": [2]}))
    assert not (tmp_path / "_delta_log" / "00000000000000000001.json").exists()


def test_committer_allows_3_7_with_append_only_and_invariants(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    create_table(storage, pa.table({"a": [1]}))
    _set_protocol(tmp_path, Protocol(3, 7, (), ("appendOnly", "invariants")))
    assert append(storage, pa.table({"a": [2]})) == 1


def test_committer_refuses_a_new_table_with_unsupported_protocol(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    with pytest.raises(UnsupportedProtocolError, match="madeUpFeature"):
        commit(
            storage,
            [Protocol(3, 7, ("madeUpFeature",), ("madeUpFeature",)), META],
            TransactionReadSet(-1),
            operation="CREATE TABLE",
            operation_parameters={},
        )
    assert not (tmp_path / "_delta_log").exists() or not list((tmp_path / "_delta_log").iterdir())


MAPPED = (
    '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":'
    '{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}}]}'
)


def test_column_mapping_writable_at_2_5_and_with_the_feature() -> None:
    meta = dataclasses.replace(
        META, schema_string=MAPPED, configuration={"delta.columnMapping.mode": "id"}
    )
    check_writable(Protocol(2, 5), meta)
    check_writable(Protocol(3, 7, ("columnMapping",), ("columnMapping",)), meta)
    with pytest.raises(UnsupportedProtocolError, match="columnMapping"):
        check_writable(Protocol(3, 7, (), ("appendOnly",)), meta)
    with pytest.raises(UnsupportedProtocolError, match="none, name, id"):
        check_writable(
            Protocol(2, 5),
            dataclasses.replace(meta, configuration={"delta.columnMapping.mode": "x"}),
        )


@pytest.mark.parametrize(
    ("configuration", "schema", "named"),
    [
        ({"delta.constraints.positive": "a > 0"}, SCHEMA, "checkConstraints"),
        ({"delta.enableChangeDataFeed": "true"}, SCHEMA, "changeDataFeed"),
        (
            {},
            SCHEMA.replace('"metadata":{}', '"metadata":{"delta.generationExpression":"1"}'),
            "generatedColumns",
        ),
    ],
    ids=["constraints", "cdf", "generated"],
)
def test_writer_5_refused_while_its_other_features_are_used(
    configuration: dict[str, str], schema: str, named: str
) -> None:
    meta = dataclasses.replace(META, schema_string=schema, configuration=configuration)
    with pytest.raises(UnsupportedProtocolError, match=f"minWriterVersion 5 and uses {named}"):
        check_writable(Protocol(2, 5), meta)
    listed = Protocol(1, 7, None, ("checkConstraints", "changeDataFeed", "generatedColumns"))
    with pytest.raises(UnsupportedProtocolError, match=f"writer features .* uses {named}"):
        check_writable(listed, meta)
