"""Named qbeast tables in a Spark catalog, from SQL text sent by any Connect client.

What Spark 4.2 shows a Python data source of a catalog table (probed, see
``docs/remote.md``, "Named tables"):

* ``CREATE [OR REPLACE] TABLE t USING qbeast [OPTIONS (...)] [LOCATION '...']`` *without* a
  column list asks the source for the schema, with the catalog's options: ``provider``,
  ``location``/``path`` (absent for a managed table), ``owner``, and every OPTIONS and
  TBLPROPERTIES key (lower-cased, the OPTIONS once more with an ``option.`` prefix).
* Every later ``SELECT``, ``INSERT INTO`` and ``INSERT OVERWRITE`` of ``t`` creates the
  source with *no* options, but with the schema the catalog kept, field metadata included.
* ``CREATE TABLE t (columns) ...`` and ``CREATE TABLE t ... AS SELECT`` never ask for the
  schema: no Python code runs before the first read or write, which then gets no options
  and no metadata. Nothing tells the source where such a table lives, so its reads and
  writes are refused (:func:`location_unknown_error`), unless the server runs
  qbeast-connect's SQL extension: its catalog rule gives every read and write the
  catalog's location as ``path`` and the table's OPTIONS, listing their keys in
  :data:`CATALOG_KEYS_OPTION` so that CREATE's own (``schema``) are dropped here.

So the schema call records the location and the table's write options (``columnsToIndex``,
``cubeSize``, ``columnStats``, ...) in the metadata of the schema's first field, which the
catalog hands back to every read and write (:func:`catalog_view`). A new table's columns
come in the option ``schema`` (:mod:`qbeast_connect.rules.ddl_schema`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import StructType

from qbeast_connect.exceptions import (
    InvalidOptionError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from qbeast_connect.rules.ddl_schema import ddl_schema_json
from server_plugin.delta.storage.scope import storage_settings

__all__ = [
    "CATALOG_KEYS_OPTION",
    "CATALOG_PARTITIONS_OPTION",
    "LOCATION_METADATA_KEY",
    "OPTIONS_METADATA_KEY",
    "SCHEMA_OPTION",
    "catalog_view",
    "check_catalog_partitioning",
    "check_declared_schema",
    "create_location",
    "declared_schema",
    "is_catalog_create",
    "location_unknown_error",
    "new_table_error",
    "recorded_schema",
    "table_write_options",
]

#: The field metadata key that carries a catalog table's location.
LOCATION_METADATA_KEY = "qbeast.location"
#: The field metadata key that carries the write options given to ``CREATE TABLE`` (JSON).
OPTIONS_METADATA_KEY = "qbeast.options"
#: The option of ``CREATE TABLE ... USING qbeast`` that declares a new table's columns.
SCHEMA_OPTION = "schema"

#: Keys of the catalog's options that are not write options of the table.
_CATALOG_KEYS = frozenset(
    {
        "path",
        "location",
        "provider",
        "owner",
        "comment",
        "collation",
        "external",
        "is_managed_location",
        SCHEMA_OPTION,
    }
)

_CREATE_FORM = (
    "CREATE TABLE name USING qbeast OPTIONS (schema 'id BIGINT, x DOUBLE', columnsToIndex "
    '\'id,x\', columnStats \'{"id_min": 0, "id_max": 1000, "x_min": 0, "x_max": 1}\') '
    "LOCATION '<path>'"
)


def is_catalog_create(options: Mapping[str, str]) -> bool:
    """Whether the schema call comes from ``CREATE TABLE`` (Spark then adds ``provider``)."""
    return bool(options.get("provider"))


def create_location(options: Mapping[str, str]) -> str:
    """The ``LOCATION`` of a ``CREATE TABLE`` (unresolved).

    Raises:
        UnsupportedOperationError: a managed table (no ``LOCATION``): Spark does not tell a
            Python data source where the catalog keeps it.
    """
    location = options.get("location") or options.get("path")
    if not location or not str(location).strip():
        raise UnsupportedOperationError(
            "CREATE TABLE ... USING qbeast needs LOCATION '<path>': Spark does not tell a "
            "Python data source where the catalog keeps a managed table, so qbeast tables in "
            f"the catalog are external; e.g. {_CREATE_FORM}"
        )
    return str(location)


def table_write_options(options: Mapping[str, str]) -> dict[str, str]:
    """The write options among a ``CREATE TABLE``'s catalog options: not the catalog's own
    keys, not their ``option.``-prefixed copies, not object-store settings (credentials
    stay out of the catalog: give them in the server's configuration)."""
    return {
        key: str(value)
        for key, value in options.items()
        if key.lower() not in _CATALOG_KEYS
        and not key.lower().startswith("option.")
        and not storage_settings({key: value})
    }


def declared_schema(options: Mapping[str, str]) -> StructType | None:
    """The columns the option ``schema`` declares (None without the option)."""
    text = options.get(SCHEMA_OPTION)
    if text is None:
        return None
    return StructType.fromJson(json.loads(ddl_schema_json(str(text))))


def _shape(schema: StructType) -> list[tuple[str, str]]:
    return [(f.name.lower(), f.dataType.simpleString()) for f in schema.fields]


def check_declared_schema(declared: StructType | None, table: StructType, path: str) -> None:
    """Raise unless the declared columns are the existing table's (names, types, order)."""
    if declared is not None and _shape(declared) != _shape(table):
        raise SchemaMismatchError(
            f"option schema declares {_describe(declared)}, but the table at {path} has "
            f"{_describe(table)}: drop the option schema to use the table as it is"
        )


def _describe(schema: StructType) -> str:
    return "(" + ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields) + ")"


def new_table_error(path: str) -> TableNotFoundError:
    """No table at a ``CREATE TABLE``'s location and no option ``schema``."""
    return TableNotFoundError(
        f"no table at {path}: to create a new qbeast table there, declare its columns in "
        f"the option schema (Spark does not show a column list to a Python data source), "
        f"e.g. {_CREATE_FORM}"
    )


def recorded_schema(
    schema: StructType, location: str, write_options: Mapping[str, str]
) -> StructType:
    """``schema`` with the location and the write options in its first field's metadata."""
    if not schema.fields:
        raise InvalidOptionError("a qbeast table in the catalog needs at least one column")
    out = StructType.fromJson(schema.jsonValue())
    first = out.fields[0]
    extra: dict[str, Any] = {LOCATION_METADATA_KEY: location}
    if write_options:
        extra[OPTIONS_METADATA_KEY] = json.dumps(dict(sorted(write_options.items())))
    first.metadata = {**(first.metadata or {}), **extra}
    return out


def _recorded(schema: StructType | None) -> tuple[str | None, dict[str, str]]:
    for field in schema.fields if schema is not None else ():
        metadata = field.metadata or {}
        location = metadata.get(LOCATION_METADATA_KEY)
        if isinstance(location, str) and location:
            raw = metadata.get(OPTIONS_METADATA_KEY)
            try:
                written = json.loads(raw) if isinstance(raw, str) else {}
            except ValueError:
                written = {}
            options = {str(k): str(v) for k, v in written.items()} if written else {}
            return location, options
    return None, {}


def _without_records(schema: StructType) -> StructType:
    out = StructType.fromJson(schema.jsonValue())
    for field in out.fields:
        metadata = field.metadata or {}
        if LOCATION_METADATA_KEY in metadata or OPTIONS_METADATA_KEY in metadata:
            field.metadata = {
                k: v
                for k, v in metadata.items()
                if k not in (LOCATION_METADATA_KEY, OPTIONS_METADATA_KEY)
            }
    return out


def catalog_view(
    options: Mapping[str, str], schema: StructType | None
) -> tuple[Mapping[str, str], StructType | None]:
    """The options and schema of a read or write, seen through the catalog's records.

    A catalog table's read or write gets no options: ``path`` and the write options come
    from what ``CREATE TABLE`` recorded in the schema (options given to the read or write
    itself win). The schema comes back without those records, so a write never copies
    them into the Delta log.
    """
    options = _without_create_keys(options)
    location, recorded = _recorded(schema)
    if location is None or schema is None:
        return options, schema
    merged: dict[str, str] = {**recorded, **{k: v for k, v in options.items()}}
    if not options.get("path"):
        merged["path"] = location
    return merged, _without_records(schema)


#: The option in which the server's SQL extension lists the keys it took from the catalog
#: table's OPTIONS (``QbeastCatalogRule.CATALOG_KEYS``, ``qbeast_connect/spark/jvm``).
CATALOG_KEYS_OPTION = "qbeastCatalogKeys"


#: The option in which the SQL extension passes a catalog table's ``PARTITIONED BY`` columns.
CATALOG_PARTITIONS_OPTION = "qbeastCatalogPartitionColumns"


def check_catalog_partitioning(options: Mapping[str, str]) -> None:
    """Refuse a write to a catalog table declared ``PARTITIONED BY``: a qbeast table's
    partitions are time partitions of the ``partitionBy`` option, and writing the table
    unpartitioned would drop what the ``CREATE`` asked for without a word.

    Raises:
        UnsupportedOperationError: the catalog table has ``PARTITIONED BY`` columns.
    """
    columns = next(
        (v for k, v in options.items() if k.lower() == CATALOG_PARTITIONS_OPTION.lower()), None
    )
    if columns:
        raise UnsupportedOperationError(
            f"the catalog table is PARTITIONED BY ({columns}), and qbeast tables are not "
            "partitioned by column values: drop the table and create it without PARTITIONED "
            "BY; for time partitions give OPTIONS (partitionBy '<time column>:<period>', e.g. "
            "'ts:daily')"
        )


def _without_create_keys(options: Mapping[str, str]) -> Mapping[str, str]:
    """``options`` without the catalog OPTIONS the SQL extension passed on that are not
    the table's (``schema``, object-store settings: as :func:`table_write_options`)."""
    lowered = {k.lower(): k for k in options}
    listed = lowered.get(CATALOG_KEYS_OPTION.lower())
    if listed is None:
        return options
    from_catalog = {k.strip().lower() for k in str(options[listed]).split(",") if k.strip()}
    kept = table_write_options({k: v for k, v in options.items() if k.lower() in from_catalog})
    return {
        k: v
        for k, v in options.items()
        if k != listed and (k.lower() not in from_catalog or k in kept)
    }


def location_unknown_error() -> UnsupportedOperationError:
    """A read or write with neither a path nor a catalog record of the location."""
    return UnsupportedOperationError(
        "format('qbeast') got no table location. For a path: .load(path) or .save(path). For "
        "a table in the catalog: Spark tells a Python data source the location only when "
        "CREATE TABLE asks it for the schema, which it does not for a CREATE with a column "
        "list (use the option schema instead) nor for CREATE TABLE ... AS SELECT (create the "
        f"table, then INSERT INTO name SELECT ...); e.g. {_CREATE_FORM}, or CREATE TABLE name "
        "USING qbeast LOCATION '<path of an existing qbeast table>'"
    )
