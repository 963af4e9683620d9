"""Action dataclasses and the commit-file JSON codec."""

from __future__ import annotations

import json
import pickle

import pytest

from qbeast_connect.exceptions import CorruptLogError, InvalidOptionError
from server_plugin.delta.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    FrozenMap,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    action_from_json,
    action_to_json_line,
    decode_commit,
    encode_commit,
)
from server_plugin.delta.uris import encode_path, normalize_path

ADD = AddFile(
    path="p=a%20b/part-0.parquet",
    partition_values={"p": "a b"},
    size=123,
    modification_time=1700000000000,
    data_change=True,
    stats='{"numRecords":3}',
    tags={"revision": "1", "blocks": '[{"cubeId":""}]'},
)

ALL_ACTIONS = [
    CommitInfo({"timestamp": 1, "operation": "WRITE", "operationParameters": {"mode": "Append"}}),
    Protocol(1, 2),
    Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "appendOnly")),
    Metadata(
        id="abc",
        schema_string='{"type":"struct","fields":[]}',
        partition_columns=("p",),
        configuration={"delta.appendOnly": "true"},
        created_time=5,
        name="n",
        description="d",
    ),
    ADD,
    RemoveFile("x.parquet", 10, True, True, {"p": None}, 5, None),
    RemoveFile("y.parquet"),
    Txn("app", 3, 99),
    Txn("app2", 1),
    DomainMetadata("dom", "{}", False),
]


@pytest.mark.parametrize("action", ALL_ACTIONS, ids=lambda a: type(a).__name__)
def test_round_trip(action: object) -> None:
    line = action_to_json_line(action)  # type: ignore[arg-type]
    assert "\n" not in line
    obj = json.loads(line)
    assert len(obj) == 1
    assert action_from_json(obj) == action


def test_protocol_1_2_has_no_feature_lists() -> None:
    assert (
        action_to_json_line(Protocol(1, 2))
        == '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}'
    )


def test_actions_are_hashable_and_picklable() -> None:
    for action in ALL_ACTIONS:
        hash(action)
        assert pickle.loads(pickle.dumps(action)) == action
    with pytest.raises(TypeError):
        ADD.tags["x"] = "y"  # type: ignore[index]
    assert FrozenMap({"a": "1"}) == {"a": "1"}


def test_encode_commit_puts_commit_info_first_one_action_per_line() -> None:
    data = encode_commit([ADD, Txn("a", 1), CommitInfo({"operation": "WRITE"})])
    lines = data.decode("utf-8").split("\n")
    assert lines[-1] == "" and all(lines[:-1])
    assert [next(iter(json.loads(line))) for line in lines[:-1]] == ["commitInfo", "add", "txn"]
    with pytest.raises(InvalidOptionError):
        encode_commit([CommitInfo({}), CommitInfo({})])


def test_no_nan_tokens() -> None:
    with pytest.raises(InvalidOptionError, match="NaN"):
        encode_commit([CommitInfo({"x": float("nan")})])
    with pytest.raises(InvalidOptionError, match="strict JSON"):
        encode_commit([AddFile("a", {}, 1, 1, True, '{"numRecords":1,"minValues":{"x":NaN}}')])
    with pytest.raises(InvalidOptionError):
        encode_commit([CommitInfo({"x": float("inf")})])


def test_output_is_valid_utf8() -> None:
    data = encode_commit([AddFile("é/中.parquet", {}, 1, 1, True, None, {"k": "😀"})])
    assert "中" in data.decode("utf-8")
    with pytest.raises(InvalidOptionError, match="Unicode"):
        encode_commit([AddFile("bad\udc80", {}, 1, 1)])


def test_decode_tolerates_blank_lines_missing_newline_unknown_actions_and_fields() -> None:
    data = (
        b'\n{"commitInfo":{"operation":"WRITE"}}\n\n'
        b'{"cdc":{"path":"c","partitionValues":{},"size":1,"dataChange":false}}\n'
        b'{"futureAction":{"x":1}}\n'
        b'{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":2,'
        b'"dataChange":true,"newField":{"y":2},"baseRowId":null}}\n   \n'
        b'{"txn":{"appId":"q","version":7}}'
    )
    actions = decode_commit(data, source="_delta_log/00000000000000000003.json")
    assert actions == [
        CommitInfo({"operation": "WRITE"}),
        AddFile("a", {}, 1, 2, True),
        Txn("q", 7),
    ]


def test_decode_names_the_file_on_bad_json() -> None:
    with pytest.raises(CorruptLogError, match=r"00000000000000000007\.json line 2"):
        decode_commit(
            b'{"txn":{"appId":"a","version":1}}\n{"add": {',
            source="_delta_log/00000000000000000007.json",
        )
    with pytest.raises(CorruptLogError, match="UTF-8"):
        decode_commit(b"\xff\xfe", source="x.json")
    with pytest.raises(CorruptLogError, match="path"):
        decode_commit(b'{"add":{"size":1}}', source="x.json")


@pytest.mark.parametrize(
    ("physical", "encoded"),
    [
        ("part-0.parquet", "part-0.parquet"),
        ("p=a b%3Ac/part-0.parquet", "p=a%20b%253Ac/part-0.parquet"),
        ("p=x#y?z/f.parquet", "p=x%23y%3Fz/f.parquet"),
        ("x:y/f.parquet", "x%3Ay/f.parquet"),
        ("p=é/f.parquet", "p=%C3%A9/f.parquet"),
    ],
)
def test_path_codec(physical: str, encoded: str) -> None:
    assert encode_path(physical) == encoded
    assert normalize_path(encoded) == physical


def test_normalize_path_resolves_absolute_uris_under_the_root() -> None:
    root = "file:///data/my%20table"
    assert normalize_path("file:///data/my%20table/a%20b.parquet", root) == "a b.parquet"
    assert normalize_path("file:/data/my table/x/y.parquet", root) == "x/y.parquet"
    assert normalize_path("/data/my%20table/z.parquet", root) == "z.parquet"
    assert normalize_path("./a//b.parquet", root) == "a/b.parquet"
    assert normalize_path("s3://bucket/other.parquet", root) == "s3://bucket/other.parquet"


def test_remove_from_add_copies_fields() -> None:
    rem = ADD.to_remove(1234)
    assert rem.path == ADD.path and rem.size == ADD.size and rem.deletion_timestamp == 1234
    assert rem.extended_file_metadata is True and rem.data_change is True
    assert ADD.to_remove(1, data_change=False).data_change is False
