"""Fuzzing the parsers that read untrusted input: only the project's own errors may escape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qbeast_connect.exceptions import (
    InvalidOptionError,
    MetadataFormatError,
    QbeastError,
    UnsafePathError,
)
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.revision import Revision
from qbeast_connect.options import parse_write_options
from qbeast_connect.planning.predicate import from_sql, to_sql
from qbeast_connect.table import resolve_table_file
from server_plugin.delta.actions import action_from_json, decode_commit
from server_plugin.delta.storage import LocalStorage

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
ACTION_KEYS = ["add", "remove", "metaData", "protocol", "txn", "commitInfo", "cdc", "x"]


@SETTINGS
@given(st.binary(max_size=400))
def test_commit_decoder_on_random_bytes(data: bytes) -> None:
    try:
        decode_commit(data)
    except QbeastError:
        pass


@SETTINGS
@given(st.sampled_from(ACTION_KEYS), json_values)
def test_action_decoder_on_random_json(key: str, value: Any) -> None:
    try:
        action_from_json({key: value})
    except QbeastError:
        pass


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(ACTION_KEYS), json_values), max_size=4))
def test_commit_decoder_on_random_actions(actions: list[tuple[str, Any]]) -> None:
    text = "\n".join(json.dumps({k: v}) for k, v in actions).encode()
    try:
        decode_commit(text)
    except QbeastError:
        pass


@SETTINGS
@given(st.text(max_size=300) | json_values.map(json.dumps))
def test_blocks_decoder(text: str) -> None:
    try:
        decode_blocks(text)
    except MetadataFormatError:
        pass


@SETTINGS
@given(json_values.map(json.dumps) | st.text(max_size=200))
def test_revision_decoder(text: str) -> None:
    try:
        Revision.from_json(text)
    except MetadataFormatError:
        pass


def test_revision_decoder_never_imports_a_class_named_in_the_log() -> None:
    evil = json.dumps(
        {
            "revisionID": 1,
            "timestamp": 1,
            "tableID": "t",
            "desiredCubeSize": 10,
            "columnTransformers": [{"className": "os.system", "columnName": "a"}],
            "transformations": [{"className": "subprocess.Popen"}],
        }
    )
    with pytest.raises(MetadataFormatError):
        Revision.from_json(evil)


@SETTINGS
@given(st.dictionaries(st.text(max_size=25), json_scalars, max_size=6))
def test_option_parser(options: dict[str, Any]) -> None:
    try:
        parse_write_options(options)
    except InvalidOptionError:
        pass


SQL_TOKENS = st.sampled_from(
    ["a", "b", "`x y`", "=", "<", "<=", ">", ">=", "<>", "AND", "OR", "NOT", "(", ")", "IN",
     "BETWEEN", "IS", "NULL", "1", "2.5", "'s'", "DATE '2020-01-01'", ",", "TRUE", "lower(a)",
     "LIKE", "+", "'", "\\", "1e9", "TIMESTAMP '2020-01-01 00:00:00'"]
)


@SETTINGS
@given(st.lists(SQL_TOKENS, max_size=12).map(" ".join) | st.text(max_size=80))
def test_filter_translator(text: str) -> None:
    try:
        predicate = from_sql(text)
    except InvalidOptionError:
        return
    try:
        to_sql(predicate)
    except InvalidOptionError:
        pass


@SETTINGS
@given(st.text(max_size=60))
def test_log_paths_never_escape_the_table(path: str) -> None:
    try:
        resolved = resolve_table_file("/data/table", path)
    except UnsafePathError:
        return
    assert resolved.startswith("/data/table/")
    assert "/../" not in resolved + "/"


@SETTINGS
@given(st.text(max_size=60))
def test_storage_paths_never_escape_the_root(path: str) -> None:
    storage = LocalStorage("/data/table")
    try:
        resolved = storage.resolve(path)
    except (UnsafePathError, InvalidOptionError):
        return
    assert resolved == "/data/table" or resolved.startswith("/data/table/")
    assert "/../" not in resolved + "/"


def test_plugin_refuses_log_paths_outside_the_table(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    for bad in ["../outside.parquet", "/etc/passwd", "a/../../b", "s3://bucket/key"]:
        with pytest.raises((UnsafePathError, InvalidOptionError)):
            storage.read_bytes(bad)
