"""The option ``schema`` of ``CREATE TABLE ... USING qbeast``: DDL text to schema JSON, and
the records a catalog table's schema carries (``server_plugin.catalog_tables``)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import LongType, StructField, StructType

from qbeast_connect.exceptions import (
    InvalidOptionError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from qbeast_connect.rules.ddl_schema import ddl_schema_json
from server_plugin.catalog_tables import (
    LOCATION_METADATA_KEY,
    catalog_view,
    check_declared_schema,
    create_location,
    declared_schema,
    is_catalog_create,
    new_table_error,
    recorded_schema,
    table_write_options,
)


def _fields(text: str) -> list[tuple[str, object, bool, dict[str, object]]]:
    return [
        (f["name"], f["type"], f["nullable"], f["metadata"])
        for f in json.loads(ddl_schema_json(text))["fields"]
    ]


def test_columns_and_types_read_as_spark_does() -> None:
    text = (
        "id BIGINT, `my col` decimal(12,2) NOT NULL COMMENT 'it''s', ts timestamp, "
        "v varchar(3), n DECIMAL, d Date, t TIMESTAMP_NTZ, i int, s smallint, b tinyint"
    )
    assert _fields(text) == [
        ("id", "long", True, {}),
        ("my col", "decimal(12,2)", False, {"comment": "it's"}),
        ("ts", "timestamp", True, {}),
        ("v", "string", True, {}),
        ("n", "decimal(10,0)", True, {}),
        ("d", "date", True, {}),
        ("t", "timestamp_ntz", True, {}),
        ("i", "integer", True, {}),
        ("s", "short", True, {}),
        ("b", "byte", True, {}),
    ]
    # pyspark reads it back as the same schema
    parsed = StructType.fromJson(json.loads(ddl_schema_json("id BIGINT, x DOUBLE")))
    assert parsed.simpleString() == "struct<id:bigint,x:double>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must list the columns"),
        ("id", "has no type"),
        ("id foo", "unknown type 'foo'"),
        ("a int, A int", "named twice"),
        ("a array<int>", "nested type ARRAY"),
        ("a decimal(40,2)", "precision 1..38"),
        ("a int,", "missing after the last ','"),
        ("a int ;", "cannot read ';'"),
        ("a int b", "unexpected 'b'"),
    ],
)
def test_malformed_columns_are_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        ddl_schema_json(text)


_CREATE = {
    "provider": "qbeast",
    "owner": "me",
    "location": "file:/data/ev",
    "path": "file:/data/ev",
    "schema": "id BIGINT",
    "columnstoindex": "id",
    "option.columnstoindex": "id",
    "fs.s3a.secret.key": "hidden",
}


def test_create_options_split_into_location_columns_and_write_options() -> None:
    assert is_catalog_create(_CREATE) and not is_catalog_create({"path": "/data/ev"})
    assert create_location(_CREATE) == "file:/data/ev"
    assert table_write_options(_CREATE) == {"columnstoindex": "id"}  # no secret, no catalog key
    declared = declared_schema(_CREATE)
    assert declared is not None and declared.names == ["id"]
    assert declared_schema({"provider": "qbeast"}) is None
    with pytest.raises(UnsupportedOperationError, match="needs LOCATION"):
        create_location({"provider": "qbeast", "owner": "me"})
    assert "option schema" in str(new_table_error("/data/ev"))
    assert isinstance(new_table_error("/data/ev"), TableNotFoundError)


def test_declared_columns_must_be_the_existing_tables() -> None:
    table = StructType([StructField("id", LongType())])
    check_declared_schema(None, table, "/p")
    check_declared_schema(
        StructType.fromJson(json.loads(ddl_schema_json("ID bigint"))), table, "/p"
    )
    with pytest.raises(SchemaMismatchError, match=r"declares \(id int\)"):
        check_declared_schema(
            StructType.fromJson(json.loads(ddl_schema_json("id INT"))), table, "/p"
        )


def test_reads_and_writes_see_the_recorded_location_and_options() -> None:
    base = StructType([StructField("id", LongType(), metadata={"comment": "c"})])
    recorded = recorded_schema(base, "/data/ev", {"columnstoindex": "id", "cubesize": "10"})
    assert base.fields[0].metadata == {"comment": "c"}  # the input is not changed
    assert recorded.fields[0].metadata[LOCATION_METADATA_KEY] == "/data/ev"
    options, schema = catalog_view({}, recorded)
    assert dict(options) == {"columnstoindex": "id", "cubesize": "10", "path": "/data/ev"}
    assert schema is not None and schema.fields[0].metadata == {"comment": "c"}
    # options of the read or write itself win; a schema without records passes through
    options, _ = catalog_view({"cubesize": "99", "path": "/x"}, recorded)
    assert options["cubesize"] == "99" and options["path"] == "/x"
    assert catalog_view({"path": "/y"}, base) == ({"path": "/y"}, base)
    with pytest.raises(InvalidOptionError, match="at least one column"):
        recorded_schema(StructType([]), "/p", {})


def test_the_extensions_catalog_options_keep_only_the_tables_own() -> None:
    """The SQL extension's catalog rule passes a table's OPTIONS on to every read and write,
    listing their keys: CREATE's own (``schema``) and object-store settings among them are
    dropped, options that did not come from the catalog (a session's storage settings) stay."""
    base = StructType([StructField("id", LongType())])
    options, schema = catalog_view(
        {
            "path": "/data/t",
            "schema": "id BIGINT",
            "columnsToIndex": "id",
            "fs.s3a.secret.key": "from-the-catalog",
            "fs.s3a.access.key": "from-the-session",
            "qbeastCatalogKeys": "schema,columnsToIndex,fs.s3a.secret.key",
        },
        base,
    )
    assert dict(options) == {
        "path": "/data/t",
        "columnsToIndex": "id",
        "fs.s3a.access.key": "from-the-session",
    }
    assert schema == base


def test_a_catalog_table_partitioned_by_columns_is_refused_on_write() -> None:
    from qbeast_connect.exceptions import UnsupportedOperationError
    from server_plugin.catalog_tables import check_catalog_partitioning

    check_catalog_partitioning({"path": "/t", "partitionBy": "ts:daily"})  # time partitions
    with pytest.raises(UnsupportedOperationError, match=r"PARTITIONED BY \(d\).*partitionBy"):
        check_catalog_partitioning({"path": "/t", "qbeastCatalogPartitionColumns": "d"})
