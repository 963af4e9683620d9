"""Turn the table paths users give into the canonical location the server agrees on.

Relative paths are relative to the working directory of the Spark server's driver, as for
Spark's own ``df.write.parquet("events")``; with the embedded server of
``qbeast_connect.session()`` that is the directory the client process was in when the
server started. The directory is asked from the plugin once per session (one tiny query);
absolute paths and URIs need no query. See :mod:`qbeast_connect.paths`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from qbeast_connect.paths import is_relative, qualify
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.formats import SNAPSHOT_FORMAT

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

__all__ = ["catalog_table_location", "server_working_dir", "table_location"]

_lock = threading.Lock()
_workdirs: dict[Any, str | None] = {}


def server_working_dir(spark: SparkSession | Any) -> str | None:
    """The working directory of the server's driver (None when the server cannot tell)."""
    key = getattr(spark, "session_id", None) or id(spark)
    with _lock:
        if key in _workdirs:
            return _workdirs[key]
    reader = spark.read.format(SNAPSHOT_FORMAT).option("what", "workdir")
    with translate_errors():
        rows = reader.load().collect()
    found = str(rows[0]["payload"]) if rows and rows[0]["kind"] == "workdir" else ""
    workdir = found or None
    with _lock:
        _workdirs[key] = workdir
    return workdir


def table_location(spark: SparkSession | Any, path: str) -> str:
    """The canonical location of ``path`` (see :func:`qbeast_connect.paths.qualify`).

    Raises:
        InvalidOptionError: the path cannot be used, or it is relative and the server does
            not report its working directory (pass an absolute path then).
    """
    if isinstance(path, str) and is_relative(path) and path.strip():
        return qualify(path, server_working_dir(spark))
    return qualify(path)


#: The field metadata key in which the plugin records a catalog table's location (the
#: plugin's ``server_plugin.catalog_tables.LOCATION_METADATA_KEY``).
CATALOG_LOCATION_KEY = "qbeast.location"


def catalog_table_location(spark: SparkSession | Any, name: str) -> str:
    """The location of the table ``name`` in the server's catalog: recorded in its schema
    (a ``CREATE TABLE ... USING qbeast LOCATION`` table), else the ``Location`` that
    ``DESCRIBE TABLE EXTENDED`` reports (a Delta or parquet table).

    Raises:
        InvalidOptionError: an empty name.
        TableNotFoundError: no such table, or one without a location.
    """
    from qbeast_connect.exceptions import InvalidOptionError, TableNotFoundError

    if not isinstance(name, str) or not name.strip():
        raise InvalidOptionError(f"a table name must be a non-empty string, not {name!r}")
    try:
        with translate_errors():
            schema = spark.table(name).schema
    except Exception as exc:
        raise TableNotFoundError(
            f"no table {name!r} in the catalog ({str(exc).splitlines()[0][:200]}); create it "
            f"with CREATE TABLE {name} USING qbeast LOCATION '<path of a qbeast table>'"
        ) from None
    for field in schema.fields:
        value = (field.metadata or {}).get(CATALOG_LOCATION_KEY)
        if isinstance(value, str) and value:
            return value
    with translate_errors():
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    for row in rows:
        if str(row[0]).strip() == "Location" and row[1]:
            return str(row[1]).strip()
    raise TableNotFoundError(
        f"table {name!r} of the catalog has no location qbeast-connect can read; create it "
        f"with CREATE TABLE {name} USING qbeast LOCATION '<path of a qbeast table>'"
    )
