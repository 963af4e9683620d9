"""Writes to tables named in the server's catalog: ``qc.write(df, table="db.events")``.

A name the catalog knows is written at its location (:func:`catalog_table_location`); a
new name needs a ``path``, and is given to the catalog after the write with
``CREATE TABLE <name> USING qbeast LOCATION '<path>'``, which records the location in the
catalog's schema (``server_plugin.catalog_tables``), so SQL on any Connect client reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError, TableNotFoundError
from qbeast_connect.planning.predicate.sql_render import literal_sql
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.location import catalog_table_location, table_location

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

__all__ = ["check_table_name", "register_table", "write_target"]

_PART = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_NAME = re.compile(rf"^{_PART}(?:\.{_PART}){{0,2}}$")


def check_table_name(name: object) -> str:
    """``name`` if it is a table name (``events``, ``db.events``, ``cat.db.events``, parts
    in backquotes when they need them).

    Raises:
        InvalidOptionError: anything else (it would be pasted into SQL text).
    """
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise InvalidOptionError(
            f"table must be a table name such as 'events' or 'db.events' (parts with other "
            f"characters in backquotes), not {name!r}"
        )
    return name.strip()


def write_target(spark: SparkSession | Any, table: str, path: str | None) -> tuple[str, bool]:
    """Where a write to the table ``table`` goes, and whether the name must be registered
    after it (a name the catalog does not know yet).

    Raises:
        InvalidOptionError: a bad name, or a ``path`` that is not the named table's location.
        TableNotFoundError: a new name without a ``path``.
    """
    name = check_table_name(table)
    try:
        location = catalog_table_location(spark, name)
    except TableNotFoundError:
        if path is None:
            raise TableNotFoundError(
                f"no table {name!r} in the catalog: to create it, give its location too, "
                f"qc.write(df, '<path>', table={name!r}, ...)"
            ) from None
        return path, True
    if path is not None and table_location(spark, path) != table_location(spark, location):
        raise InvalidOptionError(
            f"table {name!r} is at {location}, not at {path}: give one of path and table"
        )
    return location, False


def register_table(spark: SparkSession | Any, table: str, path: str) -> None:
    """Name the qbeast table at ``path`` in the server's catalog."""
    name = check_table_name(table)
    location = table_location(spark, path)
    with translate_errors():
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {name} USING qbeast LOCATION {literal_sql(location)}"
        ).collect()
