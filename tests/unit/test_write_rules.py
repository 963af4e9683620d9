"""The write rules both writers share (``qbeast_connect.rules``): pure functions on plain
values, checked against what Spark itself says where they mirror Spark."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
    VariantType,
    YearMonthIntervalType,
)

from qbeast_connect.exceptions import (
    InvalidOptionError,
    SchemaMismatchError,
    UnsupportedInputError,
)
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.transformation import ColumnStats, QDataType
from qbeast_connect.options import parse_write_options
from qbeast_connect.rules.columns import (
    check_column_names,
    index_types,
    indexed_specs,
    resolve_specs,
    user_column_stats,
)
from qbeast_connect.rules.schema import (
    append_schema,
    column_types,
    nullable_schema_json,
    simple_string,
    spark_type_name,
)
from qbeast_connect.rules.table_config import (
    LAST_REVISION_KEY,
    REVISION_PREFIX,
    write_configuration,
)

ROOT = Path(__file__).resolve().parents[2]

TYPES: list[DataType] = [
    IntegerType(),
    LongType(),
    ShortType(),
    ByteType(),
    FloatType(),
    DoubleType(),
    BooleanType(),
    BinaryType(),
    DateType(),
    TimestampType(),
    TimestampNTZType(),
    NullType(),
    VariantType(),
    DecimalType(10, 2),
    DecimalType(38, 0),
    StringType(),
    StringType("UTF8_LCASE"),
    CharType(5),
    VarcharType(7),
    DayTimeIntervalType(),
    DayTimeIntervalType(1, 2),
    YearMonthIntervalType(),
    YearMonthIntervalType(0, 0),
    ArrayType(IntegerType()),
    MapType(StringType(), ArrayType(LongType(), False)),
    StructType([StructField("a.b", ShortType()), StructField("c", DecimalType(5, 1))]),
]


@pytest.mark.parametrize("data_type", TYPES, ids=lambda t: t.simpleString())
def test_type_names_from_json_match_spark(data_type: DataType) -> None:
    name = data_type.typeName()
    expected = data_type.simpleString() if name == "decimal" else name
    assert spark_type_name(data_type.jsonValue()) == expected
    assert simple_string(data_type.jsonValue()) == data_type.simpleString()


def test_column_types_of_a_schema() -> None:
    schema = StructType(
        [
            StructField("i", IntegerType()),
            StructField("d", DecimalType(12, 3)),
            StructField("day", DateType()),
            StructField("s", StringType()),
            StructField("arr", ArrayType(DoubleType())),
        ]
    )
    assert column_types(schema.json()) == {
        "i": "integer",
        "d": "decimal(12,3)",
        "day": "date",
        "s": "string",
        "arr": "array",
    }


def test_new_table_schema_makes_every_level_nullable() -> None:
    schema = StructType(
        [
            StructField("id", LongType(), nullable=False),
            StructField("tags", ArrayType(StringType(), containsNull=False), nullable=False),
            StructField("m", MapType(StringType(), IntegerType(), valueContainsNull=False)),
            StructField(
                "inner", StructType([StructField("x", DoubleType(), nullable=False)]), False
            ),
        ]
    )
    relaxed = json.loads(nullable_schema_json(schema.json()))
    back = StructType.fromJson(relaxed)
    assert [f.nullable for f in back.fields] == [True, True, True, True]
    assert back["tags"].dataType == ArrayType(StringType(), containsNull=True)
    assert back["m"].dataType == MapType(StringType(), IntegerType(), valueContainsNull=True)
    assert back["inner"].dataType == StructType([StructField("x", DoubleType(), True)])
    # the types themselves are unchanged
    assert [f.dataType.simpleString() for f in back.fields] == [
        f.dataType.simpleString() for f in schema.fields
    ]


TABLE = StructType(
    [StructField("id", LongType()), StructField("x", DoubleType()), StructField("s", StringType())]
)


def test_append_of_the_same_columns_keeps_the_schema() -> None:
    # other case, other nullability and other metadata are the same schema for an append
    meta = {"comment": "c"}
    data = StructType(
        [
            StructField("S", StringType(), nullable=False, metadata=meta),
            StructField("ID", LongType(), nullable=False),
            StructField("x", DoubleType()),
        ]
    )
    assert append_schema(TABLE.json(), data.json(), False, "/t") is None


def test_append_with_another_type_or_missing_column_is_refused() -> None:
    data = StructType([StructField("id", IntegerType()), StructField("x", DoubleType())])
    with pytest.raises(SchemaMismatchError) as caught:
        append_schema(TABLE.json(), data.json(), True, "/t")
    message = str(caught.value)
    assert "id: table bigint, data int" in message
    assert "columns missing from the data: s" in message
    assert "overwrite the table" in message


def test_append_with_new_columns_needs_merge_schema() -> None:
    data = StructType(
        [*TABLE.fields, StructField("extra", ArrayType(IntegerType(), False), False)]
    )
    with pytest.raises(SchemaMismatchError, match="set mergeSchema=true"):
        append_schema(TABLE.json(), data.json(), False, "/t")
    merged = append_schema(TABLE.json(), data.json(), True, "/t")
    assert merged is not None
    back = StructType.fromJson(json.loads(merged))
    assert back.names == ["id", "x", "s", "extra"]
    assert back["extra"].nullable and back["extra"].dataType == ArrayType(IntegerType(), True)


def test_column_names_reserved_or_equal_but_for_case_are_refused() -> None:
    check_column_names(["a", "b", "A_b"], "/t")
    with pytest.raises(InvalidOptionError, match="reserved by qbeast"):
        check_column_names(["a", "_qbeastWeight"], "/t")
    check_column_names(["qbeastGroup", "x_qbeastGroup", "_qbeas"], "/t")
    # the whole internal namespace, in any case: a helper column must never meet a user's
    for name in ("_qbeastGroup", "_QBEASTGROUP", "_qbeastSomethingNew", "_qbeast"):
        with pytest.raises(InvalidOptionError, match=rf"\['{name}'\].*'_qbeast'"):
            check_column_names(["a", name], "/t")


def test_every_internal_column_is_in_the_internal_namespace() -> None:
    from qbeast_connect.spark.estimation import PARTITION_COLUMN
    from qbeast_connect.spark.tasks import GROUP_COLUMN
    from qbeast_connect.write_plan import WEIGHT_COLUMN, is_internal_name
    from server_plugin.group_spill import CUBE_FIELD, KEY_FIELD, WEIGHT_FIELD

    for name in (WEIGHT_COLUMN, GROUP_COLUMN, PARTITION_COLUMN, CUBE_FIELD, KEY_FIELD, WEIGHT_FIELD):
        assert is_internal_name(name), name
    with pytest.raises(UnsupportedInputError, match="differ only in case"):
        check_column_names(["a", "A"], "/t")


def test_specs_resolve_to_the_data_spelling() -> None:
    specs = (ColumnSpec("X"), ColumnSpec("`a.b`", "hashing"), ColumnSpec("`q``t`"))
    resolved = resolve_specs(specs, ["x", "a.b", "q`t"])
    assert resolved == (ColumnSpec("x"), ColumnSpec("a.b", "hashing"), ColumnSpec("q`t"))
    with pytest.raises(InvalidOptionError, match="nested fields cannot be indexed"):
        resolve_specs((ColumnSpec("a"),), ["a.b"])


def _revision(names: list[str], revision_id: int = 1, cube_size: int = 100) -> Revision:
    types = {n: "double" for n in names}
    stats = {n: ColumnStats(min=0.0, max=1.0) for n in names}
    plan = plan_revision(
        None, [ColumnSpec(n) for n in names], types, stats, {}, cube_size, "/t", 1000,
        random.Random(1),
    )
    revision = plan.revision
    assert revision.revision_id == 1
    if revision_id == 1:
        return revision
    return Revision.from_json(
        revision.to_json().replace('"revisionID":1', f'"revisionID":{revision_id}')
    )


def test_indexed_specs_default_to_the_latest_revision() -> None:
    given = (ColumnSpec("y", "linear"),)
    assert indexed_specs(given, _revision(["x"]), "e.g.") == given
    assert indexed_specs((), _revision(["x", "z"]), "e.g.") == (ColumnSpec("x"), ColumnSpec("z"))
    with pytest.raises(InvalidOptionError, match="columnsToIndex is required.*HINT"):
        indexed_specs((), None, "HINT")


def test_index_types_and_user_stats_of_the_indexed_columns() -> None:
    types = {"x": "double", "d": "date", "s": "string", "n": "decimal(10,2)"}
    specs = (ColumnSpec("x"), ColumnSpec("d"), ColumnSpec("s", "hashing"), ColumnSpec("n"))
    assert index_types(specs, types) == {
        "x": QDataType.DOUBLE,
        "d": QDataType.DATE,
        "s": QDataType.STRING,
        "n": QDataType.DECIMAL,
    }
    with pytest.raises(InvalidOptionError, match="not in the data"):
        index_types((ColumnSpec("nope"),), types)
    assert user_column_stats(None, specs, types) == {}
    stats = user_column_stats('{"x_min": -1, "x_max": 5}', specs, types)
    assert stats["x"].min == -1.0 and stats["x"].max == 5.0


def test_configuration_of_a_new_table() -> None:
    revision = _revision(["x", "y"], cube_size=500)
    options = parse_write_options(
        {"columnsToIndex": "x,y:linear", "columnStats": '{"x_min": 0}',
         "delta.checkpointInterval": "4"}
    )
    config = write_configuration({}, revision, None, options, appending=False)
    assert config == {
        f"{REVISION_PREFIX}1": revision.to_json(),
        LAST_REVISION_KEY: "1",
        "columnsToIndex": "x,y:linear",
        "cubeSize": "500",
        "tableFormat": "delta",
        "columnStats": '{"x_min": 0}',
        "delta.checkpointInterval": "4",
        # tables created from issue 35 on compact their small appends (off: autoCompact=false)
        "qbeast.autoCompact": "true",
    }


def test_append_keeps_revisions_and_overwrite_starts_them_over() -> None:
    old = {
        f"{REVISION_PREFIX}0": "staging",
        f"{REVISION_PREFIX}1": "one",
        LAST_REVISION_KEY: "1",
        "columnsToIndex": "x:linear,y",
        "owner": "me",
    }
    revision = _revision(["x", "y"], revision_id=2)
    options = parse_write_options({})
    appended = write_configuration(old, revision, None, options, appending=True)
    assert appended[f"{REVISION_PREFIX}0"] == "staging"
    assert appended[f"{REVISION_PREFIX}1"] == "one"
    assert appended[f"{REVISION_PREFIX}2"] == revision.to_json()
    assert appended[LAST_REVISION_KEY] == "2"
    # without columnsToIndex the option records the revision's columns (qbeast-spark)
    assert appended["columnsToIndex"] == "x,y"
    assert appended["owner"] == "me" and appended["columnStats"] == ""
    staging = _revision(["x", "y"])
    replaced = write_configuration(old, revision, staging, options, appending=False)
    revision_keys = sorted(k for k in replaced if k.startswith(REVISION_PREFIX))
    assert revision_keys == [f"{REVISION_PREFIX}0", f"{REVISION_PREFIX}2"]
    assert replaced[f"{REVISION_PREFIX}0"] == staging.to_json()
    assert replaced["owner"] == "me"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_rules_are_core_and_the_plugin_does_not_import_the_client_transport() -> None:
    core = [*sorted((ROOT / "qbeast_connect" / "rules").glob("*.py"))]
    core += [ROOT / "qbeast_connect" / "options.py", ROOT / "qbeast_connect" / "write_plan.py"]
    for path in core:
        bad = {
            n
            for n in _imports(path)
            if n.split(".")[0] in ("pyspark", "server_plugin", "boto3")
            or n.startswith("qbeast_connect.spark")
        }
        assert not bad, f"{path.name} imports {bad}"
    for path in sorted((ROOT / "server_plugin").rglob("*.py")):
        bad = {n for n in _imports(path) if n.startswith("qbeast_connect.spark")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
