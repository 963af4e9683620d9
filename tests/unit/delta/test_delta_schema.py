"""schemaString conversion, checked against what deltalake writes for the same schema."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedProtocolError
from server_plugin.delta.schema import arrow_schema_to_delta, delta_to_arrow_schema

SCHEMAS = {
    "primitives": pa.schema(
        [
            ("b", pa.bool_()),
            ("i8", pa.int8()),
            ("i16", pa.int16()),
            ("i32", pa.int32()),
            ("i64", pa.int64()),
            ("f32", pa.float32()),
            ("f64", pa.float64()),
            ("dec", pa.decimal128(38, 18)),
            ("dec2", pa.decimal128(10, 2)),
            ("s", pa.string()),
            ("bin", pa.binary()),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us", tz="UTC")),
        ]
    ),
    "nullability": pa.schema(
        [pa.field("req", pa.int64(), nullable=False), pa.field("opt", pa.string())]
    ),
    "nested": pa.schema(
        [
            (
                "arr_struct",
                pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ),
            ("map_arr", pa.map_(pa.string(), pa.list_(pa.int64()))),
            (
                "st",
                pa.struct(
                    [
                        pa.field("inner", pa.struct([("z", pa.float64())])),
                        pa.field("req", pa.int64(), nullable=False),
                    ]
                ),
            ),
            ("arr_req", pa.list_(pa.field("element", pa.int64(), nullable=False))),
        ]
    ),
}


def _deltalake_schema_json(path: Path, schema: pa.Schema) -> object:
    deltalake.write_deltalake(str(path), schema.empty_table())
    with open(path / "_delta_log" / "00000000000000000000.json") as f:
        for line in f:
            obj = json.loads(line)
            if "metaData" in obj:
                return json.loads(obj["metaData"]["schemaString"])
    raise AssertionError("no metaData")


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_json_matches_deltalake(tmp_path: Path, name: str) -> None:
    schema = SCHEMAS[name]
    ours = json.loads(arrow_schema_to_delta(schema))
    theirs = _deltalake_schema_json(tmp_path / name, schema)
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_round_trip(name: str) -> None:
    schema = SCHEMAS[name]
    back = delta_to_arrow_schema(arrow_schema_to_delta(schema))
    assert arrow_schema_to_delta(back) == arrow_schema_to_delta(schema)
    assert back.field(0).name == schema.field(0).name


def test_type_variants_map_to_delta_types() -> None:
    schema = pa.schema(
        [
            ("ls", pa.large_string()),
            ("lb", pa.large_binary()),
            ("ts_ns_madrid", pa.timestamp("ns", tz="Europe/Madrid")),
            ("d64", pa.date64()),
            ("ll", pa.large_list(pa.int64())),
        ]
    )
    fields = json.loads(arrow_schema_to_delta(schema))["fields"]
    assert [f["type"] if isinstance(f["type"], str) else f["type"]["type"] for f in fields] == [
        "string",
        "binary",
        "timestamp",
        "date",
        "array",
    ]
    parsed = delta_to_arrow_schema(arrow_schema_to_delta(schema))
    assert parsed.field("ts_ns_madrid").type == pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(
    ("type_", "hint"),
    [
        (pa.timestamp("us"), "UTC"),
        (pa.uint32(), "signed"),
        (pa.dictionary(pa.int32(), pa.string()), "decode"),
        (pa.float16(), "float32"),
        (pa.time64("us"), "supported types"),
        (pa.duration("s"), "supported types"),
        (pa.null(), "cast"),
        (pa.binary(16), "binary"),
        (pa.list_(pa.uint8()), "signed"),
    ],
    ids=str,
)
def test_unsupported_types_are_refused_with_a_fix(type_: pa.DataType, hint: str) -> None:
    with pytest.raises(InvalidOptionError, match=hint):
        arrow_schema_to_delta(pa.schema([("c", type_)]))


def test_duplicate_names_ignoring_case_are_refused() -> None:
    with pytest.raises(InvalidOptionError, match="unique ignoring case"):
        arrow_schema_to_delta(pa.schema([("a", pa.int64()), ("A", pa.int64())]))


def test_reading_tolerates_char_varchar_and_keeps_metadata() -> None:
    text = json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "c", "type": "char(3)", "nullable": True, "metadata": {}},
                {
                    "name": "v",
                    "type": "string",
                    "nullable": True,
                    "metadata": {"__CHAR_VARCHAR_TYPE_STRING": "varchar(10)", "n": 1},
                },
                {"name": "ntz", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
            ],
        }
    )
    schema = delta_to_arrow_schema(text)
    assert schema.field("c").type == pa.string()
    assert schema.field("v").metadata == {b"__CHAR_VARCHAR_TYPE_STRING": b"varchar(10)", b"n": b"1"}
    assert schema.field("ntz").type == pa.timestamp("us")
    with pytest.raises(UnsupportedProtocolError, match="variant"):
        delta_to_arrow_schema(
            '{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}'
        )
