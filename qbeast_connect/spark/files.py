"""Reading selected files of a table: the one call the API makes to open table files.

The API layer (``QbeastTable``, ``TimelineFact``) plans which files of a table a read
needs; :func:`read_table_files` turns them into a DataFrame. Which reader opens them is
decided by :func:`reader_for`, once per session and URI scheme (a local path never asks):

* ``"spark-parquet"``: Spark's own parquet reader, whenever Spark can open the storage;
* ``"qbeast-plugin"``: for ``s3://``/``s3a://`` tables on a server without Hadoop's S3
  connector, the plugin's ``qbeast_files`` source (:mod:`server_plugin.files_source`) opens
  the files with its own storage and decodes them with pyarrow in the server's workers.

:class:`qbeast_connect.table.ScanExplanation` reports the choice.
"""

from __future__ import annotations

import json
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast_connect.paths import resolve_table_file, spark_literal_path
from qbeast_connect.rules.partition_values import HIVE_DEFAULT_PARTITION
from qbeast_connect.spark.scan_metadata import file_metadata, spark_file_key
from qbeast_connect.spark.storage_options import with_storage_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.types import StructType

#: The reader names reported in scan explanations.
SPARK_READER = "spark-parquet"
PLUGIN_READER = "qbeast-plugin"
#: Object-store schemes the plugin's own storage can read.
PLUGIN_SCHEMES = frozenset({"s3", "s3a"})
#: Above this many paths (a session setting, default 32) Spark checks the paths of a read
#: with a distributed listing job: one task per path, a whole job in every query.
LISTING_THRESHOLD_CONF = "spark.sql.sources.parallelPartitionDiscovery.threshold"
#: Spark's default for :data:`LISTING_THRESHOLD_CONF`.
SPARK_LISTING_THRESHOLD = 32
#: The threshold a read of many table files raises the session's to (see
#: :func:`check_paths_on_driver`).
DRIVER_LISTING_PATHS = 100_000
#: Schemes whose per-file status call is cheap (no network round trip per file to an
#: object store): the driver checks a read's files faster than a listing job would.
DRIVER_LISTING_SCHEMES = frozenset({None, "file", "hdfs", "viewfs"})

__all__ = [
    "PLUGIN_READER",
    "PLUGIN_SCHEMES",
    "SPARK_READER",
    "TableFile",
    "answer_input_files",
    "check_paths_on_driver",
    "matching_row_indexes",
    "matching_rows_per_file",
    "read_files",
    "read_table_files",
    "reader_for",
    "rows_with_file",
    "rows_with_positions",
]

#: One file of a table to read: its path as the log names it, its size in bytes, its
#: partition values and its deletion vector (the JSON object, or None), all from the log's
#: ``add`` action.
TableFile = tuple[str, int, Mapping[str, "str | None"], "Mapping[str, Any] | None"]


def table_file(add: Mapping[str, Any]) -> TableFile:
    """The :data:`TableFile` of a log ``add`` (size 0, no partition values and no deletion
    vector when the action does not give them)."""
    vector = add.get("deletionVector")
    return (
        str(add.get("path")),
        int(add.get("size") or 0),
        dict(add.get("partitionValues") or {}),
        dict(vector) if isinstance(vector, Mapping) else None,
    )


_known: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
_registered: weakref.WeakSet[Any] = weakref.WeakSet()
_driver_listing: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()

_NO_CONNECTOR = (
    "No FileSystem for scheme",
    "S3AFileSystem not found",
    "ClassNotFoundException",
    "UnsupportedFileSystemException",
)


def _scheme(path: str) -> str | None:
    head, sep, _ = path.partition("://")
    return head.lower() if sep and head.isalnum() else None


def reader_for(spark: SparkSession, table_path: str) -> str:
    """``"spark-parquet"`` or ``"qbeast-plugin"``: how reads of this table open files.

    Local and other paths always use Spark's parquet reader. For ``s3://``/``s3a://``
    tables the session asks Spark once per scheme whether it can open such paths (it can
    when the server has Hadoop's S3 connector); when it cannot, the plugin reads.
    """
    scheme = _scheme(table_path)
    if scheme not in PLUGIN_SCHEMES:
        return SPARK_READER
    with _lock:
        cached = _known.setdefault(spark, {}).get(scheme)
    if cached is not None:
        return cached
    bucket = table_path.split("://", 1)[1].split("/", 1)[0]
    probe = f"{scheme}://{bucket}/_qbeast_reader_probe_{uuid.uuid4().hex}"
    choice = SPARK_READER
    try:
        spark.read.parquet(probe).schema  # noqa: B018 - analysis opens the filesystem
    except Exception as exc:  # only the message tells what is missing
        if any(marker in str(exc) for marker in _NO_CONNECTOR):
            choice = PLUGIN_READER
    with _lock:
        _known.setdefault(spark, {})[scheme] = choice
    return choice


def check_paths_on_driver(spark: SparkSession, root: str, paths: int) -> bool:
    """Let Spark check the ``paths`` files of one read on the driver, not in a listing job.

    A read names its table files one by one (the log already lists them). Spark checks
    every path of a read before planning it, and above ``LISTING_THRESHOLD_CONF`` paths (32
    by default) it does so with a distributed job of one task per path, in every query,
    before the scan's own job. For tables whose storage answers a file status cheaply
    (:data:`DRIVER_LISTING_SCHEMES`), the session's threshold is raised to
    :data:`DRIVER_LISTING_PATHS` once; object stores keep Spark's setting (one status
    request per file in turn on the driver may cost more than the job). A threshold the
    session already has above that is left alone.

    Returns:
        True when the session now checks ``paths`` paths on the driver.
    """
    if paths <= SPARK_LISTING_THRESHOLD:
        return True
    if _scheme(root) not in DRIVER_LISTING_SCHEMES:
        return False
    with _lock:
        if spark in _driver_listing:
            return paths <= DRIVER_LISTING_PATHS
    try:
        current = int(spark.conf.get(LISTING_THRESHOLD_CONF) or SPARK_LISTING_THRESHOLD)
    except (TypeError, ValueError):
        current = SPARK_LISTING_THRESHOLD
    if current < DRIVER_LISTING_PATHS:
        spark.conf.set(LISTING_THRESHOLD_CONF, str(DRIVER_LISTING_PATHS))
    with _lock:
        _driver_listing.add(spark)
    return paths <= max(current, DRIVER_LISTING_PATHS)


def read_table_files(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    configuration: Mapping[str, str] | None = None,
) -> DataFrame:
    """A DataFrame over ``files`` of the table at ``root``, read by :func:`reader_for`'s
    choice.

    The columns of ``schema`` that are partition columns take each file's values from the
    log (its ``partitionValues``, typed by :mod:`qbeast_connect.rules.partition_values`),
    never from the file, with either reader; Spark's reader reads them from the directory
    names only where those spell exactly the log's values. Other columns missing from a
    file are null.

    Args:
        spark: the session.
        root: the table's canonical location.
        schema: the schema to read the files with (the table's).
        files: ``(log path, size, partition values)`` per file (``{}`` when unpartitioned).
        configuration: the table's ``metaData.configuration``. With Delta column mapping
            (``delta.columnMapping.mode`` ``name``/``id``) the files and the partition
            values name columns by their physical names: they are read with the physical
            schema and the columns renamed (and nested fields cast, which Spark does by
            position) to ``schema``'s logical names.

    Raises:
        UnsafePathError: a log path leaves the table's directory.
        CorruptLogError: a partition value is not of its column's type, or a column of a
            column-mapped table has no physical name.
    """
    from qbeast_connect.rules.column_mapping import column_mapping

    mapping = column_mapping(configuration, schema)
    if mapping is None:
        return _read_table_files(spark, root, schema, files)
    from pyspark.sql.types import StructType

    physical = StructType.fromJson(dict(mapping.physical_schema))
    frame = _read_table_files(spark, root, physical, files)
    return frame.select(*_logical_columns(schema, physical))


def _logical_columns(schema: StructType, physical: StructType) -> list[Any]:
    """The columns of ``physical`` (a column-mapped table's stored schema) renamed to
    ``schema``'s logical names; nested fields are cast, which Spark does by position."""
    from pyspark.sql import functions as F

    from qbeast_connect.planning.predicate.sql_render import quote_identifier

    columns = []
    for logical, stored in zip(schema.fields, physical.fields, strict=True):
        column = F.col(quote_identifier(stored.name))
        if stored.dataType != logical.dataType:
            column = column.cast(logical.dataType)
        columns.append(column.alias(logical.name))
    return columns


def _read_table_files(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
) -> DataFrame:
    """:func:`read_table_files` of files whose column names are ``schema``'s."""
    located = [resolve_table_file(root, f[0]) for f in files]
    if reader_for(spark, root) != SPARK_READER:
        # an object store the server's Spark cannot open: the plugin reads
        return _plugin_read(spark, root, schema, located, files)
    whole = [i for i, f in enumerate(files) if not f[3]]
    frames = []
    if whole:
        frames.append(
            _spark_read(spark, root, schema, [located[i] for i in whole], [files[i] for i in whole])
        )
    rest = [i for i, f in enumerate(files) if f[3]]
    if rest:
        frames.append(_read_with_vectors(spark, root, schema, located, files, rest))
    return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])


def _read_with_vectors(
    spark: SparkSession,
    root: str,
    schema: StructType,
    located: Sequence[str],
    files: Sequence[TableFile],
    chosen: Sequence[int],
) -> DataFrame:
    """The files ``chosen`` (indexes into ``located``/``files``, each with a deletion
    vector) without their deleted rows: Spark reads them (:mod:`.vector_reads`) when they
    have no partition values, else the plugin does."""
    paths = [located[i] for i in chosen]
    marked = [files[i] for i in chosen]
    if not any(f[2] for f in marked):
        frame = _spark_read_with_vectors(spark, root, schema, paths, marked)
        if frame is not None:
            return frame
    return _plugin_read(spark, root, schema, paths, marked)


def _spark_read_with_vectors(
    spark: SparkSession,
    root: str,
    stored: StructType,
    located: Sequence[str],
    files: Sequence[TableFile],
    positions: tuple[str, str] | None = None,
) -> DataFrame | None:
    """:func:`~.vector_reads.read_with_vectors` of ``files`` (each with a deletion vector,
    no partition values) at ``located``, under ``stored`` (the names the files store)."""
    from qbeast_connect.spark.vector_reads import read_with_vectors

    check_paths_on_driver(spark, root, len(located))

    def scan_of(some: Sequence[str]) -> DataFrame:
        return _spark_parquet(spark, stored, some)

    vectors = [f[3] or {} for f in files]
    return read_with_vectors(spark, root.rstrip("/"), stored, scan_of, located, vectors, positions)


def _log_paths(
    root: str, files: Sequence[TableFile]
) -> tuple[list[str], Callable[[str | None], str | None]]:
    """The locations of ``files`` as Spark is given them, and the function turning a name
    Spark reports (``_metadata.file_path``) into the file's log path (None for a name that
    is no file of ``files``)."""
    located = [resolve_table_file(root, f[0]) for f in files]
    by_key: dict[str, str] = {}
    for logged, location in zip((f[0] for f in files), located, strict=True):
        by_key.setdefault(spark_file_key(location), logged)

    def log_path(name: str | None) -> str | None:
        return None if name is None else by_key.get(spark_file_key(name))

    return located, log_path


def rows_with_file(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    column: str,
) -> tuple[DataFrame, Callable[[str | None], str | None]] | None:
    """The rows of ``files`` with ``column`` naming each row's file (Spark's
    ``_metadata.file_path``), and the function turning such a name into the file's log
    path (None for a name that is no file of ``files``). None when rows cannot be told
    apart by file: a file with a deletion vector or partition values, or a reader other
    than Spark's (the caller then treats every file as concerned)."""

    if not files or reader_for(spark, root) != SPARK_READER:
        return None
    if any(f[3] or f[2] for f in files):
        return None
    located, log_path = _log_paths(root, files)
    check_paths_on_driver(spark, root, len(located))
    frame = _spark_parquet(spark, schema, located)
    tagged = frame.select("*", file_metadata(frame, "file_path").alias(column))
    return tagged, log_path


def _stored_schema(schema: StructType, configuration: Mapping[str, str] | None) -> StructType:
    """The schema a table's files store: ``schema`` itself, or its physical names under
    Delta column mapping."""
    from pyspark.sql.types import StructType

    from qbeast_connect.rules.column_mapping import column_mapping

    mapping = column_mapping(configuration, schema)
    return schema if mapping is None else StructType.fromJson(dict(mapping.physical_schema))


def _spark_positions(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    configuration: Mapping[str, str] | None,
) -> tuple[DataFrame, Callable[[str | None], str | None]] | None:
    """Spark's read of every row ``files`` hold (deleted or not) under ``schema``'s names,
    with each row's file (``_qbeast_file``) and position (``_qbeast_row``), and the function
    turning a file name into its log path. None when positions
    cannot be read: partition values (not in the files) or a reader other than Spark's."""

    from server_plugin.parquet_reader import FILE_COLUMN, ROW_COLUMN

    if not files or reader_for(spark, root) != SPARK_READER or any(f[2] for f in files):
        return None
    stored = _stored_schema(schema, configuration)
    located, log_path = _log_paths(root, files)
    check_paths_on_driver(spark, root, len(located))
    scan = _spark_parquet(spark, stored, located)
    frame = scan.select(
        *_logical_columns(schema, stored),
        file_metadata(scan, "file_path").alias(FILE_COLUMN),
        file_metadata(scan, "row_index").alias(ROW_COLUMN),
    )
    return frame, log_path


def _no_file(name: str | None) -> str | None:
    """No log path for any name (a read without Spark-read files)."""
    return None


def rows_with_positions(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    configuration: Mapping[str, str] | None = None,
) -> tuple[DataFrame, Callable[[str | None], str | None]] | None:
    """The live rows of ``files`` with two more columns, ``_qbeast_file`` (a name of the
    row's file) and ``_qbeast_row`` (its position in the file, as a deletion vector lists
    it), and the function turning such a name into the file's log path. Spark reads the
    files (``_metadata``), leaving out the rows deletion vectors delete
    (:mod:`.vector_reads`); where it cannot match its names to the files with vectors, the
    plugin reads those. None when positions cannot be read: partition values or a reader
    other than Spark's."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from server_plugin.parquet_reader import FILE_COLUMN, ROW_COLUMN

    if not files or reader_for(spark, root) != SPARK_READER or any(f[2] for f in files):
        return None
    stored = _stored_schema(schema, configuration)
    frames = []
    spark_name: Callable[[str | None], str | None] = _no_file
    plain = [f for f in files if not f[3]]
    if plain:
        read = _spark_positions(spark, root, schema, plain, configuration)
        assert read is not None  # the same checks as above
        frame, spark_name = read
        frames.append(frame)
    prefix = len(root.rstrip("/")) + 1
    marked = [(resolve_table_file(root, f[0])[prefix:], f) for f in files if f[3]]
    keys = {key: f[0] for key, f in marked}
    read_marked = _spark_positions_with_vectors(spark, root, schema, [f for _, f in marked], stored)
    if read_marked is not None:
        frame, marked_name = read_marked
        frames.append(frame)
        marked, keys = [], {}
        spark_name = _either(spark_name, marked_name)
    if marked:
        extended = StructType(
            [
                *stored.fields,
                StructField(FILE_COLUMN, StringType()),
                StructField(ROW_COLUMN, LongType()),
            ]
        )
        entries = [(key, f[1], dict(f[2]), f[3]) for key, f in marked]
        frames.append(
            read_files(spark, root.rstrip("/"), extended, entries).select(
                *_logical_columns(schema, stored), F.col(FILE_COLUMN), F.col(ROW_COLUMN)
            )
        )
    frame = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])

    def log_path(name: str | None) -> str | None:
        if name is None:
            return None
        return keys.get(name) or spark_name(name)

    return frame, log_path


def _either(
    first: Callable[[str | None], str | None], second: Callable[[str | None], str | None]
) -> Callable[[str | None], str | None]:
    """The log path ``first`` gives a name, else the one ``second`` gives."""
    return lambda name: first(name) or second(name)


def _spark_positions_with_vectors(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    stored: StructType,
) -> tuple[DataFrame, Callable[[str | None], str | None]] | None:
    """Spark's read (:mod:`.vector_reads`) of the live rows of ``files`` (each with a
    deletion vector; ``stored`` the names the files store) under ``schema``'s names, with
    ``_qbeast_file`` and ``_qbeast_row``, and the function turning a file name into its log
    path. None when Spark cannot read them so."""
    from pyspark.sql import functions as F

    from server_plugin.parquet_reader import FILE_COLUMN, ROW_COLUMN

    if not files:
        return None
    located, log_path = _log_paths(root, files)
    positions = (FILE_COLUMN, ROW_COLUMN)
    read = _spark_read_with_vectors(spark, root, stored, located, files, positions)
    if read is None:
        return None
    columns = [*_logical_columns(schema, stored), F.col(FILE_COLUMN), F.col(ROW_COLUMN)]
    return read.select(*columns), log_path


def matching_row_indexes(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    condition: Any,
    configuration: Mapping[str, str] | None = None,
) -> dict[str, list[int]] | None:
    """For each of ``files``, the positions (Spark's ``_metadata.row_index``, 0-based,
    counting every row the file holds, deleted or not) of the rows ``condition`` (a
    Column of ``schema``'s names) is TRUE for, by log path, in one Spark job: what a
    deletion vector lists. Files without such a row are absent. None when positions
    cannot be read: partition values (not in the files) or a reader other than Spark's."""
    from pyspark.sql import functions as F

    from server_plugin.parquet_reader import FILE_COLUMN, ROW_COLUMN

    read = _spark_positions(spark, root, schema, files, configuration)
    if read is None:
        return None
    frame, log_path = read
    rows = (
        frame.where(condition)
        .groupBy(FILE_COLUMN)
        .agg(F.sort_array(F.collect_list(ROW_COLUMN)).alias("rows"))
        .collect()
    )
    out: dict[str, list[int]] = {}
    for row in rows:
        path = log_path(row[FILE_COLUMN])
        if path is None:
            return None
        out.setdefault(path, []).extend(int(r) for r in row["rows"])
    return out


def matching_rows_per_file(
    spark: SparkSession,
    root: str,
    schema: StructType,
    files: Sequence[TableFile],
    condition: Any,
) -> dict[str, int] | None:
    """How many rows of each file ``condition`` (a Column) is TRUE for, by log path, in
    one Spark job; files without a matching row are absent. None when that cannot be told
    file by file (see :func:`rows_with_file`, or a file name that names no file of
    ``files``): the caller then treats every file as holding matches."""
    tagged = rows_with_file(spark, root, schema, files, "__qbeast_file")
    if tagged is None:
        return None
    frame, log_path = tagged
    rows = frame.where(condition).groupBy("__qbeast_file").count().collect()
    out: dict[str, int] = {}
    for row in rows:
        path = log_path(row["__qbeast_file"])
        if path is None:
            return None
        out[path] = out.get(path, 0) + int(row["count"])
    return out


def _spark_read(
    spark: SparkSession,
    root: str,
    schema: StructType,
    located: Sequence[str],
    files: Sequence[TableFile],
) -> DataFrame:
    """Spark's parquet read of whole files (no deletion vector), partition values from the
    log."""
    check_paths_on_driver(spark, root, len(located))
    values = [dict(f[2]) for f in files]
    if not any(values):
        return _spark_parquet(spark, schema, located)
    if _directories_spell_values(schema, root, located, values):
        # one scan: Spark reads the same values from the directory names
        return _spark_parquet(spark, schema, located, base_path=root)
    return _read_partitioned(spark, schema, located, values)


def _plugin_read(
    spark: SparkSession,
    root: str,
    schema: StructType,
    located: Sequence[str],
    files: Sequence[TableFile],
) -> DataFrame:
    """The plugin's read (``qbeast_files``) of ``files``, deletion vectors applied."""
    prefix = len(root.rstrip("/")) + 1
    entries = [
        (path[prefix:], f[1], dict(f[2]), f[3]) for path, f in zip(located, files, strict=True)
    ]
    return read_files(spark, root.rstrip("/"), schema, entries)


def _spark_parquet(
    spark: SparkSession, schema: StructType, paths: Sequence[str], base_path: str | None = None
) -> DataFrame:
    """Spark's parquet read of exactly the files ``paths``: the one place table files are
    handed to Spark, each escaped by :func:`~qbeast_connect.paths.spark_literal_path` so
    that no path is expanded as a glob. ``base_path`` (Spark's partition discovery root)
    is not globbed by Spark and is passed as it is."""
    reader = spark.read.schema(schema)
    if base_path is not None:
        reader = reader.option("basePath", base_path)
    return reader.parquet(*[spark_literal_path(p) for p in paths])


def answer_input_files(df: DataFrame, files: Sequence[str]) -> None:
    """Make ``df.inputFiles()`` list ``files``, as Spark does for a read of its own.

    Spark cannot see which files a Python data source opens, so for a read by the plugin
    (``qbeast_files``) it answers ``inputFiles()`` with nothing. ``QbeastTable`` knows the
    files it selected and gives them to the DataFrame it returns. A DataFrame derived
    from it (``select``, ``join``, ...) is Spark's again and answers as Spark does.
    """
    selected = list(files)

    def input_files() -> list[str]:
        return list(selected)

    df.inputFiles = input_files  # type: ignore[method-assign]


#: Partition column types whose values Spark reads from a directory name exactly as
#: :mod:`qbeast_connect.rules.partition_values` reads the log's text (no time zone, no
#: float formatting).
_DIRECTORY_TYPES = frozenset({"string", "byte", "short", "integer", "long", "date", "boolean"})


def _directories_spell_values(
    schema: StructType,
    root: str,
    located: Sequence[str],
    values: Sequence[Mapping[str, str | None]],
) -> bool:
    """Whether Spark's partition discovery (``basePath``) gives exactly the log's partition
    values: every file lies in directories ``col=value/``, one per partition column in the
    same order for all files and nothing else, whose names Spark unescapes to the log's
    column and value (``__HIVE_DEFAULT_PARTITION__`` for null), with column types Spark
    parses from that text as the log's text is read.
    """
    types = {f.name: f.dataType.jsonValue() for f in schema.fields}
    keys = {k for v in values for k in v}
    if any(types.get(k) not in _DIRECTORY_TYPES for k in keys):
        return False
    prefix = root.rstrip("/") + "/"
    order: list[str] | None = None
    for path, file_values in zip(located, values, strict=True):
        if not path.startswith(prefix):
            return False
        directories = path[len(prefix) :].split("/")[:-1]
        columns = []
        for directory in directories:
            name, sep, text = directory.partition("=")
            column, value = _unescape_path_name(name), _unescape_path_name(text)
            if not sep or column is None or value is None or column not in file_values:
                return False
            logged = file_values[column]
            if (value == HIVE_DEFAULT_PARTITION) != (logged is None or logged == "") or (
                value != HIVE_DEFAULT_PARTITION and value != logged
            ):
                return False
            columns.append(column)
        if order is None:
            order = columns
        if columns != order or set(columns) != keys or len(columns) != len(keys):
            return False
    return True


_HEX = frozenset("0123456789abcdefABCDEF")


def _unescape_path_name(text: str) -> str | None:
    """A directory name's text as Spark unescapes it (``%XX`` -> the character), or None
    when a ``%`` is not followed by two hex digits (Spark's reading of it is its own)."""
    out = []
    i = 0
    while i < len(text):
        if text[i] == "%":
            code = text[i + 1 : i + 3]
            if len(code) != 2 or not set(code) <= _HEX:
                return None
            out.append(chr(int(code, 16)))
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _read_partitioned(
    spark: SparkSession,
    schema: StructType,
    located: Sequence[str],
    values: Sequence[Mapping[str, str | None]],
) -> DataFrame:
    """Spark's parquet reads of files of a partitioned table, one per distinct partition,
    each adding its partition columns as typed literals, in one balanced union (for files
    whose directories do not spell their values: one scan per partition costs more)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from qbeast_connect.planning.predicate.sql_render import quote_identifier
    from qbeast_connect.rules.partition_values import partition_value_sql

    keys = {k.lower(): k for v in values for k in v}
    data = StructType([f for f in schema.fields if f.name.lower() not in keys])
    groups: dict[tuple[str | None, ...], list[str]] = {}
    columns = [f for f in schema.fields if f.name.lower() in keys]
    for path, file_values in zip(located, values, strict=True):
        lowered = {k.lower(): v for k, v in file_values.items()}
        groups.setdefault(tuple(lowered.get(f.name.lower()) for f in columns), []).append(path)
    frames = []
    for texts, paths in groups.items():
        literals = {
            f.name: F.expr(partition_value_sql(text, f.dataType.jsonValue(), f.name))
            for f, text in zip(columns, texts, strict=True)
        }
        frame = _spark_parquet(spark, data, paths)
        frames.append(
            frame.select(
                *[
                    literals[f.name].alias(f.name)
                    if f.name in literals
                    else F.col(quote_identifier(f.name))
                    for f in schema.fields
                ]
            )
        )
    return _balanced_union(frames)


def _balanced_union(frames: Sequence[DataFrame]) -> DataFrame:
    """``union`` of the frames (same columns, same order) as a tree of depth log2(n), so a
    read of many partitions stays within Spark Connect's plan nesting limit."""
    if len(frames) == 1:
        return frames[0]
    half = len(frames) // 2
    return _balanced_union(frames[:half]).union(_balanced_union(frames[half:]))


def read_files(
    spark: SparkSession,
    table_path: str,
    schema: StructType,
    files: Sequence[tuple[str, int]]
    | Sequence[tuple[str, int, Mapping[str, str | None]]]
    | Sequence[tuple[str, int, Mapping[str, str | None], Mapping[str, Any] | None]],
) -> DataFrame:
    """A DataFrame over ``files`` of the table read by the plugin (``qbeast_files``).

    Args:
        spark: The session.
        table_path: The table root.
        schema: The table schema.
        files: ``(path relative to the root, size)`` per file, optionally with the file's
            partition values and its deletion vector (the ``add``'s JSON object: the
            rows it marks are left out).
    """
    # imported here, not at the top: a server worker unpickling the source imports
    # server_plugin.files_source first, and through qbeast_connect's package it reaches
    # this module before files_source has finished initializing
    from server_plugin.files_source import FILES_FORMAT, QbeastFilesSource

    with _lock:
        fresh = spark not in _registered
        if fresh:
            _registered.add(spark)
    if fresh:
        spark.dataSource.register(QbeastFilesSource)
    payload = [
        [str(f[0]), int(f[1]), *([dict(f[2])] if len(f) > 2 else [])]
        + ([dict(f[3])] if len(f) > 3 and f[3] else [])
        for f in files
    ]
    return (
        with_storage_options(spark.read.format(FILES_FORMAT), spark)
        .schema(schema)
        .option("path", table_path)
        .option("files", json.dumps(payload, separators=(",", ":")))
        .load()
    )
