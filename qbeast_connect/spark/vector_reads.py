"""Spark's own parquet reader for files with deletion vectors.

A file whose ``add`` carries a deletion vector holds rows the table no longer has. Spark's
parquet reader gives each row's position in its file (``_metadata.row_index``, what a
vector lists) but knows nothing of vectors. Here the deleted rows are left out by the query
itself: one scan of the files with vectors, joined (broadcast) by file to a small local
relation of one row per file, with the file's first and last deleted row and the bitmap of
the deleted rows between them, and a lookup of each row's bit. No Python runs in the query
and Spark reads only the columns the query needs (the plugin's reader, which these reads
replace, decoded every column: ``BENCHMARKS.md``, issue #32).

Two things come from outside the query, once, then from a cache:

* the bitmaps: the client opens no table file, so the plugin decodes the vectors (the
  ``vector_bitmaps`` command). A descriptor names immutable content, so the cache is keyed
  by the table and the descriptor, and bounded in bytes.
* Spark's spelling of each file's path (``_metadata.file_path``) and its size
  (``_metadata.file_size``), asked of Spark in one small job per session and file.

The join key is the file's size where no other file read has the same size, else its path
(the two groups are two scans in one union). A long is hashed per row where a path string
was: at TPC-H sf 1 with 10% of the rows deleted the read took 2.8x the read of the rows
rewritten away when joined by path and 1.6x-1.8x by size (``bench/dv_read_profile.py``,
``BENCHMARKS.md``). A row of a file the join finds no bitmap for fails the query
(``QBEAST_STORAGE``) instead of being kept or dropped.
"""

from __future__ import annotations

import base64
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import PluginVersionMismatchError
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.formats import COMMAND_FORMAT
from qbeast_connect.spark.scan_metadata import file_metadata, spark_file_key
from qbeast_connect.spark.storage_options import with_storage_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["read_with_vectors"]

#: the bitmaps kept on the client, at most this many bytes of words (least recently used
#: go first)
CACHE_BYTES = 256 * 2**20

_PATH, _ROW, _SIZE = "__qbeast_dv_file", "__qbeast_dv_row", "__qbeast_dv_size"
_KEY, _FIRST, _LAST, _WORDS = (
    "__qbeast_dv_key",
    "__qbeast_dv_first",
    "__qbeast_dv_last",
    "__qbeast_dv_words",
)
_HELPERS = {n.lower() for n in (_PATH, _ROW, _SIZE, _KEY, _FIRST, _LAST, _WORDS)}

#: a file's first and last deleted row, and the bitmap's 64-bit words (a numpy array)
Bitmap = tuple[int, int, Any]

_lock = threading.Lock()
_bitmaps: OrderedDict[tuple[str, str], Bitmap] = OrderedDict()
_cached_bytes = 0
#: per session: a file's location -> (Spark's spelling of it, its size in bytes)
_spellings: weakref.WeakKeyDictionary[Any, dict[str, tuple[str, int]]] = weakref.WeakKeyDictionary()


def _descriptor_key(vector: Mapping[str, Any]) -> str:
    return json.dumps(dict(vector), sort_keys=True, separators=(",", ":"))


def _fetch_bitmaps(
    spark: SparkSession, root: str, vectors: Sequence[Mapping[str, Any]]
) -> list[Bitmap]:
    """The bitmaps of ``vectors`` (descriptors of the table at ``root``), from the cache or
    decoded by the plugin in one command for those missing."""
    global _cached_bytes
    keys = [(root, _descriptor_key(v)) for v in vectors]
    with _lock:
        found = {k: _bitmaps[k] for k in keys if k in _bitmaps}
        for k in found:
            _bitmaps.move_to_end(k)
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        command = {
            "command": "vector_bitmaps",
            "path": root,
            "vectors": [json.loads(k[1]) for k in missing],
        }
        reader = with_storage_options(spark.read.format(COMMAND_FORMAT), spark)
        with translate_errors():
            rows = reader.option("command", json.dumps(command)).load().collect()
        payloads = [json.loads(r["payload"]) for r in rows if r["kind"] == "result"]
        if len(payloads) != len(missing):
            raise PluginVersionMismatchError(
                f"the server plugin decoded {len(payloads)} of {len(missing)} deletion "
                "vectors: install the plugin of this client's version on the server"
            )
        import numpy as np

        with _lock:
            for key, payload in zip(missing, payloads, strict=True):
                words = np.frombuffer(base64.b64decode(payload["words"]), dtype="<i8")
                found[key] = (int(payload["first"]), int(payload["last"]), words)
                if words.nbytes <= CACHE_BYTES and key not in _bitmaps:
                    _bitmaps[key] = found[key]
                    _cached_bytes += words.nbytes
            while _cached_bytes > CACHE_BYTES and _bitmaps:
                _, (_, _, words) = _bitmaps.popitem(last=False)
                _cached_bytes -= words.nbytes
    return [found[k] for k in keys]


def _file_names(scan: DataFrame) -> DataFrame:
    return scan.select(file_metadata(scan, "file_path"), file_metadata(scan, "file_size"))


def _spelled(
    spark: SparkSession, scan: Callable[[Sequence[str]], DataFrame], located: Sequence[str]
) -> list[tuple[str, int]] | None:
    """Spark's ``_metadata.file_path`` and ``file_size`` of each of ``located``, asked once
    per session and file; None when Spark's names cannot be matched one to one with
    ``located``."""

    with _lock:
        known = _spellings.setdefault(spark, {})
        missing = [p for p in dict.fromkeys(located) if p not in known]
    if missing:
        names = [(r[0], int(r[1])) for r in _file_names(scan(missing)).distinct().collect()]
        by_key: dict[str, list[str]] = {}
        for p in missing:
            by_key.setdefault(spark_file_key(p), []).append(p)
        matched: dict[str, tuple[str, int]] = {}
        for name, size in names:
            owners = by_key.get(spark_file_key(name), [])
            if len(owners) != 1 or owners[0] in matched:
                return None
            matched[owners[0]] = (name, size)
        if len(matched) != len(missing):
            return None  # an empty file gives no row, so no name: the plugin reads
        with _lock:
            known.update(matched)
    return [known[p] for p in located]


def read_with_vectors(
    spark: SparkSession,
    root: str,
    schema: StructType,
    scan_of: Callable[[Sequence[str]], DataFrame],
    located: Sequence[str],
    vectors: Sequence[Mapping[str, Any]],
    positions: tuple[str, str] | None = None,
) -> DataFrame | None:
    """Spark's read of the files ``located`` (as Spark is given them; ``scan_of(paths)`` is
    Spark's parquet read of ``paths`` under ``schema``, the names the files store) without
    the rows their deletion ``vectors`` (one per file) delete, for the table at ``root``;
    with ``positions`` (two column names), also each row's file as Spark names it and its
    position in the file. None when it cannot be done so (a column named like a helper
    column, files Spark's names do not match one to one): the caller reads them with the
    plugin.

    The files whose size no other file of ``located`` has are joined to their bitmaps by
    size, the others by path (module docstring): one scan each, in one union."""
    from collections import Counter

    if any(f.name.lower() in _HELPERS for f in schema.fields):
        return None
    spelled = _spelled(spark, scan_of, located)
    if spelled is None:
        return None
    bitmaps = _fetch_bitmaps(spark, root, vectors)
    sizes = Counter(size for _, size in spelled)
    frames = []
    for by_size in (True, False):
        group = [k for k, (_, size) in enumerate(spelled) if (sizes[size] == 1) == by_size]
        if group:
            keys = [spelled[k][1] if by_size else spelled[k][0] for k in group]
            files = scan_of([located[k] for k in group])
            frames.append(
                _without_deleted(
                    spark, files, schema, by_size, keys, [bitmaps[k] for k in group], positions
                )
            )
    return frames[0] if len(frames) == 1 else frames[0].union(frames[1])


def _without_deleted(
    spark: SparkSession,
    files: DataFrame,
    schema: StructType,
    by_size: bool,
    keys: Sequence[int | str],
    bitmaps: Sequence[Bitmap],
    positions: tuple[str, str] | None,
) -> DataFrame:
    """The rows of the scan ``files`` that their ``bitmaps`` keep, the files joined to them
    by ``keys``: their sizes (``by_size``) or Spark's spellings of their paths."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from qbeast_connect.planning.predicate.sql_render import quote_identifier

    key = _SIZE if by_size else _PATH
    helpers = [file_metadata(files, "row_index").alias(_ROW)]
    if by_size:
        helpers.append(file_metadata(files, "file_size").alias(_SIZE))
    if not by_size or positions is not None:
        helpers.append(file_metadata(files, "file_path").alias(_PATH))
    relation = pa.table(
        {
            _KEY: pa.array(keys, pa.int64() if by_size else pa.string()),
            _FIRST: pa.array([b[0] for b in bitmaps], pa.int64()),
            _LAST: pa.array([b[1] for b in bitmaps], pa.int64()),
            _WORDS: pa.array([b[2] for b in bitmaps], pa.list_(pa.int64())),
        }
    )
    scan = files.select("*", *helpers)
    on = F.col(key) == F.col(_KEY)
    joined = scan.join(F.broadcast(spark.createDataFrame(relation)), on, "left")
    row, first, last = F.col(_ROW), F.col(_FIRST), F.col(_LAST)
    offset = row - first
    word = F.element_at(F.col(_WORDS), F.shiftright(offset, 6).cast("int") + 1)
    deleted = F.bit_get(word, offset.bitwiseAND(F.lit(63)).cast("int")) == 1
    unknown = F.concat(
        F.lit("[QBEAST_STORAGE] no deletion vector was found for the file "),
        F.concat(F.lit("of "), F.col(_SIZE).cast("string"), F.lit(" bytes"))
        if by_size
        else F.col(_PATH),
        F.lit(", which Spark read for a table with deletion vectors; read it again"),
    )
    keep = (
        F.when(F.col(_KEY).isNull(), F.raise_error(unknown))
        .when((row >= first) & (row <= last), ~deleted)
        .otherwise(F.lit(True))
    )
    columns = [F.col(quote_identifier(f.name)) for f in schema.fields]
    if positions is not None:
        columns += [F.col(_PATH).alias(positions[0]), F.col(_ROW).alias(positions[1])]
    return joined.where(keep).select(*columns)
