"""The write API: :func:`write`, the builder :func:`writer`, and :class:`WriteResult`.

These validate the options a user gives and hand the write to the Spark pipeline
(:mod:`qbeast_connect.spark.write`); the rules both writers share are in
:mod:`qbeast_connect.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.options import WriteMode, WriteOptions, parse_mode, parse_write_options
from qbeast_connect.spark.auto_compact import compact_after_append
from qbeast_connect.spark.write import run_write
from qbeast_connect.write_plan import WriteResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["DataFrameQbeastWriter", "WriteResult", "write", "writer"]


def write(
    df: DataFrame,
    path: str | None = None,
    *,
    table: str | None = None,
    columnsToIndex: str | None = None,  # noqa: N803 - qbeast-spark option names
    cubeSize: int | None = None,  # noqa: N803
    columnStats: str | Mapping[str, Any] | None = None,  # noqa: N803
    mode: str | None = "errorifexists",
    txnAppId: str | None = None,  # noqa: N803
    txnVersion: int | None = None,  # noqa: N803
    **options: Any,
) -> WriteResult:
    """Index ``df`` on some of its columns and write it as a qbeast table at ``path``.

    Args:
        df: the data (a Spark Connect DataFrame).
        path: the table location, as the server sees it (relative: to the server's
            working directory; see ``qbeast_connect.paths``).
        table: a name in the server's catalog (``"events"``, ``"db.events"``): a table the
            catalog knows is written at its location; a new name needs ``path`` too and
            is registered after the write (``CREATE TABLE name USING qbeast LOCATION``),
            so SQL from any Connect client reads it.
        columnsToIndex: ``"a,b"`` or ``"a:linear,b:hashing,c:quantiles"`` (``hash`` is
            accepted for ``hashing``). Required to create a table; on append it defaults to
            the table's columns.
        cubeSize: desired rows per cube (default 5,000,000 for a new table; on append the
            table's). Stored in the revision as ``desiredCubeSize``.
        columnStats: ``<col>_min``/``<col>_max``/``<col>_quantiles`` that widen (never
            shrink) the indexed space, as JSON text or as a dict.
        mode: ``errorifexists`` (default; also None), ``append``, ``overwrite`` or ``ignore``.
        txnAppId: with ``txnVersion``, makes the write idempotent: a pair already committed
            makes the write a no-op, also when it was committed by a write still running
            when this one started (a retry after a client died).
        txnVersion: see ``txnAppId``; an integer in ``[0, 2**63-1]``.
        **options: other options: ``userMetadata``, ``mergeSchema``, ``delta.*`` table
            properties, and ``partitionBy="<time column>:<update period>"`` (e.g.
            ``"event_time:daily"``): a time-partitioned table, one Delta partition per
            period in the column ``<time column>_partition``, its partition timeline in
            the table properties (see ``qbeast_connect.rules.time_partitioning``); appends
            keep the table's partitioning. Unknown options are rejected.

    Returns:
        A :class:`WriteResult`.

    Raises:
        InvalidOptionError: bad options (reported before any Spark job runs), neither
            ``path`` nor ``table``, or a ``path`` that is not the named table's location.
        TableNotFoundError: a ``table`` the catalog does not know, without ``path``.
        TableAlreadyExistsError: ``errorifexists`` and a table exists at ``path``.
        SchemaMismatchError: appending data whose schema differs from the table's.
        RevisionConflictError: appending with other indexed columns than the table's.
        CommitConflictError: a concurrent commit made this write unsafe.

    Example:
        >>> qc.write(df, "/tmp/t", columnsToIndex="x,y", cubeSize=100_000)  # doctest: +SKIP
    """
    raw: dict[str, Any] = dict(options)
    for key, value in (
        ("columnsToIndex", columnsToIndex),
        ("cubeSize", cubeSize),
        ("columnStats", columnStats),
        ("txnAppId", txnAppId),
        ("txnVersion", txnVersion),
    ):
        if value is not None:
            raw[key] = value
    return _write_named(df, path, table, parse_mode(mode), parse_write_options(raw))


def _write_named(
    df: DataFrame, path: str | None, table: str | None, mode: WriteMode, options: WriteOptions
) -> WriteResult:
    """Run the write at ``path`` or at the location of the catalog table ``table``."""
    from qbeast_connect.spark.named_tables import register_table, write_target

    register = False
    if table is not None:
        path, register = write_target(df.sparkSession, table, path)
    if path is None:
        raise InvalidOptionError("qc.write needs the table's path, or table='<name>'")
    result = run_write(df, path, mode, options, compact=compact_after_append)
    if register:
        assert table is not None
        register_table(df.sparkSession, table, path)
    return result


class DataFrameQbeastWriter:
    """A ``DataFrameWriter``-style builder for :func:`write`.

    Example:
        >>> w = qc.writer(df).mode("append")  # doctest: +SKIP
        >>> w.option("columnsToIndex", "x,y").save(path)  # doctest: +SKIP
    """

    def __init__(self, df: DataFrame) -> None:
        self._df = df
        self._mode = "errorifexists"
        self._options: dict[str, Any] = {}

    def mode(self, mode: str | None) -> DataFrameQbeastWriter:
        """Set the save mode (``errorifexists``, ``append``, ``overwrite``, ``ignore``;
        None is the default)."""
        self._mode = parse_mode(mode)
        return self

    def option(self, key: str, value: Any) -> DataFrameQbeastWriter:
        """Set one write option."""
        self._options[key] = value
        return self

    def options(self, **options: Any) -> DataFrameQbeastWriter:
        """Set several write options."""
        self._options.update(options)
        return self

    def save(self, path: str) -> WriteResult:
        """Run the write."""
        return _write_named(
            self._df, path, None, parse_mode(self._mode), parse_write_options(self._options)
        )

    def saveAsTable(self, name: str, path: str | None = None) -> WriteResult:  # noqa: N802
        """Run the write into the catalog table ``name`` (a new name needs ``path``, see
        :func:`write`)."""
        return _write_named(
            self._df, path, name, parse_mode(self._mode), parse_write_options(self._options)
        )


def writer(df: DataFrame) -> DataFrameQbeastWriter:
    """Start a builder-style write of ``df`` (``.mode(...).option(...).save(path)``)."""
    return DataFrameQbeastWriter(df)
