"""Where the time of a read through deletion vectors goes, issue #32: candidate mechanisms
timed side by side.

Usage: python -m bench.dv_read_profile --sf 0.1,1 --runs 3 --out bench/dv_read_profile.json

The tables are those of ``bench/dv_read_bench.py`` (TPC-H ``lineitem`` written by Delta with
vectors on and off, then ``DELETE ... WHERE l_orderkey % 10 = 3``), built once per scale
factor under ``$QBEAST_BENCH_DIR/out/dvprofile_sf<sf>_{vectors,rewritten}``. Every variant
runs the aggregate of ``bench.common.lineitem_totals``; the variants run round-robin (so
they share the machine's load), and each is reported with the median wall time and the
median CPU seconds of the whole server process tree (JVM and Python workers, which Spark's
own task metrics leave out), and both as ratios to ``rewritten``.

Variants (all but ``nodv_bound`` and ``python_source_only`` give Delta's answer):

* ``rewritten``: ``QbeastTable.toDF()`` of the table with the rows physically removed;
* ``current``: ``QbeastTable.toDF()`` of the table with vectors (today's product path:
  the plugin's pyarrow reader for files with a vector);
* ``nodv_bound``: Spark's parquet read of the vector table's files, vectors ignored (a
  lower bound, wrong answer);
* ``python_source_only``: only the Python data source that decodes the vectors into
  ``file_id << 32 | row_index`` keys (the fixed cost of one Python source per query);
* ``antijoin_path_regex``: the ``s26-dv`` branch's read: Spark's reader, and a broadcast
  anti-join on (``_metadata.file_path`` made a path by a regex and ``url_decode``,
  ``row_index``);
* ``antijoin_long``: one Spark scan per file, keyed ``file_id << 32 | row_index`` (no
  string), broadcast anti-join against the Python source's keys;
* ``antijoin_long_cached``: the same against the keys ``localCheckpoint``-ed once (no
  Python in the query);
* ``scalar_per_file``: as ``bitmap_filter``, the bitmap a scalar subquery of a one-row
  local relation (``DataFrame.scalar()``) instead of a literal.
* ``join_path``: one scan of the files with a vector, broadcast-joined on
  ``_metadata.file_path`` (Spark's own spelling, asked once) to (path, first, last,
  bitmap) rows; the files without one read as they are.
* ``join_path_scalar``: as ``join_path`` with only longs joined: the words of every file
  concatenated in one scalar subquery, each file's offset into them joined.
* ``bitmap_filter``: one Spark scan per file, filtered by the file's vector as a literal
  ``array<bigint>`` bitmap (``bit_get(element_at(...))`` on ``_metadata.row_index``): no
  join, no Python in the query. The vectors are decoded in this process with the plugin's
  decoder (the benchmark runs where the table is; the product's client cannot open table
  files, so it would get them from the server once per vector).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.common import BENCH_DIR, lineitem, lineitem_totals, load_average, machine, save_report
from bench.dv_filter_plans import bitmap_words, keep_row
from bench.dv_read_bench import delete_into_delta_table


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process's descendants (the embedded server and its
    Python workers), including their reaped children."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    frontier, seen = {os.getpid()}, set()
    while frontier:
        frontier = {p for p, (pp, _) in parents.items() if pp in frontier and p not in seen}
        seen |= frontier
    return sum(parents[p][1] for p in seen if p in parents) / ticks


def build(spark: Any, sf: float) -> dict[str, str]:
    """The two Delta tables of scale factor ``sf`` (built when missing)."""
    paths = {e: str(BENCH_DIR / "out" / f"dvprofile_sf{sf}_{e}") for e in ("vectors", "rewritten")}
    source = lineitem(sf)
    for engine, path in paths.items():
        if not os.path.isdir(os.path.join(path, "_delta_log")):
            delete_into_delta_table(spark, source, path, vectors=engine == "vectors")
    return paths


def keys_source() -> Any:
    """A Python data source yielding ``file_id << 32 | row_index`` of every deleted row."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.types import LongType, StructField, StructType

    class KeysReader(DataSourceReader):
        def __init__(self, root: str, vectors: list[Any]) -> None:
            self.root, self.vectors = root, vectors

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(0)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            import numpy as np

            from server_plugin.delta.storage import storage_for
            from server_plugin.parquet_reader import deleted_rows

            storage = storage_for(self.root, None)
            for file_id, vector in self.vectors:
                rows = deleted_rows(storage, vector).astype("int64")
                keys = rows | (np.int64(file_id) << np.int64(32))
                yield pa.RecordBatch.from_arrays([pa.array(keys, pa.int64())], names=["k"])

    class KeysSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "qbeast_dvprofile_keys"

        def schema(self) -> StructType:
            return StructType([StructField("k", LongType(), True)])

        def reader(self, schema: StructType) -> DataSourceReader:
            return KeysReader(self.options["path"], json.loads(self.options["vectors"]))

    return KeysSource


def bitmap_keep(row_index: Any, deleted: Any) -> Any:
    """A Column TRUE for the rows whose ``row_index`` is not in ``deleted`` (sorted): a
    bitmap of the range [first, last] deleted row as one ``array<bigint>`` literal."""
    from pyspark.sql import functions as F
    from pyspark.sql.connect.column import Column as ConnectColumn
    from pyspark.sql.connect.expressions import LiteralExpression
    from pyspark.sql.types import ArrayType, LongType

    if not len(deleted):
        return F.lit(True)
    lo, hi, words = bitmap_words(deleted)
    # one literal (F.lit of a list is an array() of one literal per element)
    bitmap = ConnectColumn(LiteralExpression(words.tolist(), ArrayType(LongType(), False)))
    return keep_row(row_index, F.lit(lo), F.lit(hi), bitmap)


def variants(spark: Any, paths: dict[str, str]) -> dict[str, Callable[[], Any]]:
    from pyspark.sql import functions as F

    import qbeast_connect as qc
    from server_plugin.delta.storage import storage_for
    from server_plugin.parquet_reader import deleted_rows

    table = qc.QbeastTable.forPath(spark, paths["vectors"])
    schema = table.schema
    files = [
        (f"{paths['vectors']}/{a['path']}", a.get("deletionVector")) for a in table._state.adds
    ]
    vectors = [[i, dict(v)] for i, (_, v) in enumerate(files) if v]

    def keys() -> Any:
        return (
            spark.read.format("qbeast_dvprofile_keys")
            .option("path", paths["vectors"])
            .option("vectors", json.dumps(vectors))
            .load()
        )

    cached = keys().localCheckpoint()

    def scan(path: str) -> Any:
        return spark.read.schema(schema).parquet(path)

    def union(frames: list[Any]) -> Any:
        out = frames[0]
        for frame in frames[1:]:
            out = out.union(frame)
        return out

    def antijoin_long(deleted: Any) -> Any:
        frames = [
            scan(f).select("*", (F.lit(i << 32) + F.col("_metadata.row_index")).alias("__k"))
            for i, (f, _) in enumerate(files)
        ]
        right = F.broadcast(deleted.withColumnRenamed("k", "__k"))
        return union(frames).join(right, "__k", "left_anti").drop("__k")

    def antijoin_path_regex() -> Any:
        ids = spark.createDataFrame(
            [(i, f) for i, (f, v) in enumerate(files) if v], "fid long, __p string"
        )
        deleted = keys().select(
            F.shiftright("k", 32).alias("fid"),
            F.col("k").bitwiseAND(F.lit((1 << 32) - 1)).alias("__r"),
        )
        right = deleted.join(ids, "fid").select("__p", "__r")
        path = F.regexp_replace(
            F.col("_metadata.file_path"), r"^[A-Za-z][A-Za-z0-9+.\-]*:(//[^/]*)?", ""
        )
        key = F.url_decode(F.replace(path, F.lit("+"), F.lit("%2B")))
        left = (
            spark.read.schema(schema)
            .parquet(*[f for f, _ in files])
            .select("*", key.alias("__p"), F.col("_metadata.row_index").alias("__r"))
        )
        return left.join(F.broadcast(right), ["__p", "__r"], "left_anti").drop("__p", "__r")

    storage = storage_for(paths["vectors"], None)

    def bitmap_filter() -> Any:
        frames = []
        for f, v in files:
            frame = scan(f)
            if v:
                tagged = frame.select("*", F.col("_metadata.row_index").alias("__r"))
                frame = tagged.where(bitmap_keep(F.col("__r"), deleted_rows(storage, v))).drop(
                    "__r"
                )
            frames.append(frame)
        return union(frames)

    decoded = {f: deleted_rows(storage, v) for f, v in files if v}

    def scalar_per_file() -> Any:
        import pyarrow as pa

        frames = []
        for f, v in files:
            frame = scan(f)
            if v:
                lo, hi, bitmap = bitmap_words(decoded[f])
                one = pa.table({"w": pa.array([bitmap], pa.list_(pa.int64()))})
                carried = spark.createDataFrame(one).scalar()
                frame = frame.where(
                    keep_row(F.col("_metadata.row_index"), F.lit(lo), F.lit(hi), carried)
                )
            frames.append(frame)
        return union(frames)

    marked = [f for f, v in files if v]
    # Spark's spelling of each file's path, and its size: one job
    sizes = {
        r[0]: r[1]
        for r in spark.read.schema(schema)
        .parquet(*marked)
        .select("_metadata.file_path", "_metadata.file_size")
        .distinct()
        .collect()
    }
    by_base = {name.rsplit("/", 1)[1]: name for name in sizes}
    bitmaps = [bitmap_words(decoded[f]) for f in marked]
    spelled = [by_base[f.rsplit("/", 1)[1]] for f in marked]
    size_keys = [sizes[name] for name in spelled]

    def bitmap_relation(file_keys: Any) -> Any:
        """One row per file with a vector: its key ``__p``, first and last deleted row and
        the bitmap's words."""
        import pyarrow as pa

        return spark.createDataFrame(
            pa.table(
                {
                    "__p": file_keys,
                    "__lo": [b[0] for b in bitmaps],
                    "__hi": [b[1] for b in bitmaps],
                    "__w": pa.array([b[2] for b in bitmaps], pa.list_(pa.int64())),
                }
            )
        )

    def concatenated() -> tuple[Any, Any]:
        """Each file's first word in every file's words concatenated, and those words as
        one scalar subquery."""
        import numpy as np
        import pyarrow as pa

        starts = np.cumsum([0] + [len(b[2]) for b in bitmaps])[:-1]
        every = np.concatenate([b[2] for b in bitmaps])
        carried = spark.createDataFrame(
            pa.table({"w": pa.array([every], pa.list_(pa.int64()))})
        ).scalar()
        return starts, carried

    def joined_to(right: Any, key: str = "file_path", how: str = "inner") -> Any:
        """The files with a vector, with each row's file and position, joined to ``right``
        (one row per file, ``__p`` its ``_metadata`` field ``key``: its path as Spark spells
        it, or its size)."""
        left = (
            spark.read.schema(schema)
            .parquet(*marked)
            .select(
                "*",
                F.col(f"_metadata.{key}").alias("__f"),
                F.col("_metadata.row_index").alias("__r"),
            )
        )
        return left.join(F.broadcast(right), F.col("__f") == F.col("__p"), how)

    def with_plain(frame: Any) -> Any:
        plain = [f for f, v in files if not v]
        return frame if not plain else frame.unionByName(spark.read.schema(schema).parquet(*plain))

    def join_path() -> Any:
        joined = joined_to(bitmap_relation(spelled))
        kept = joined.where(keep_row(F.col("__r"), F.col("__lo"), F.col("__hi"), F.col("__w")))
        return with_plain(kept.select(*schema.names))

    def join_size(how: str = "inner", bits: bool = True) -> Any:
        """``join_path`` keyed by ``_metadata.file_size`` (a long) where the sizes of the
        files with a vector are distinct: no string hashed per row."""
        assert len(set(size_keys)) == len(size_keys), "file sizes repeat"
        joined = joined_to(bitmap_relation(size_keys), "file_size", how)
        if bits:
            kept = joined.where(keep_row(F.col("__r"), F.col("__lo"), F.col("__hi"), F.col("__w")))
        else:
            kept = joined.where(F.col("__r") >= F.col("__lo"))
        return with_plain(kept.select(*schema.names))

    def tree_scalar() -> Any:
        """No join: each row's file found by a binary tree of comparisons of its
        ``_metadata.file_size`` (distinct sizes), its bits in every file's words concatenated
        in one scalar subquery, a row of a file of another size failing the query."""
        assert len(set(size_keys)) == len(size_keys), "file sizes repeat"
        order = sorted(range(len(size_keys)), key=lambda i: size_keys[i])
        size = F.col("_metadata.file_size")

        def tree(lo: int, hi: int) -> Any:
            if hi - lo == 1:
                return F.lit(order[lo] + 1)
            mid = (lo + hi) // 2
            return F.when(size < F.lit(size_keys[order[mid]]), tree(lo, mid)).otherwise(
                tree(mid, hi)
            )

        k = tree(0, len(size_keys))
        starts, carried = concatenated()

        def pick(values: list[int]) -> Any:
            return F.element_at(F.array(*[F.lit(int(v)) for v in values]), k)

        row = F.col("_metadata.row_index")
        first, last = pick([b[0] for b in bitmaps]), pick([b[1] for b in bitmaps])
        bit = row - first + pick([64 * int(s) for s in starts])
        word = F.element_at(carried, F.shiftright(bit, 6).cast("int") + 1)
        deleted = F.bit_get(word, bit.bitwiseAND(F.lit(63)).cast("int")) == 1
        keep = (
            F.when(size != pick(size_keys), F.raise_error(F.lit("unknown file")))
            .when((row >= first) & (row <= last), ~deleted)
            .otherwise(F.lit(True))
        )
        kept = spark.read.schema(schema).parquet(*marked).where(keep)
        return with_plain(kept.select(*schema.names))

    def join_path_scalar() -> Any:
        """``join_path`` with only longs in the joined relation: every file's words
        concatenated into one array, a scalar subquery, and each file's offset into it."""
        import pyarrow as pa

        starts, carried = concatenated()
        right = spark.createDataFrame(
            pa.table(
                {
                    "__p": spelled,
                    # row r's bit is bit (r - lo + 64 * start) of the concatenated words
                    "__base": [b[0] - 64 * int(s) for b, s in zip(bitmaps, starts, strict=True)],
                    "__lo": [b[0] for b in bitmaps],
                    "__hi": [b[1] for b in bitmaps],
                }
            )
        )
        joined = joined_to(right)
        row = F.col("__r")
        inside = (row >= F.col("__lo")) & (row <= F.col("__hi"))
        kept = joined.where(~inside | keep_row(row, F.col("__base"), F.lit(2**62), carried))
        return with_plain(kept.select(*schema.names))

    return {
        "rewritten": lambda: qc.QbeastTable.forPath(spark, paths["rewritten"]).toDF(),
        "current": lambda: qc.QbeastTable.forPath(spark, paths["vectors"]).toDF(),
        "nodv_bound": lambda: spark.read.schema(schema).parquet(*[f for f, _ in files]),
        "python_source_only": lambda: keys().select(
            F.col("k").alias("l_extendedprice"), F.col("k").alias("l_quantity")
        ),
        "antijoin_path_regex": antijoin_path_regex,
        "antijoin_long": lambda: antijoin_long(keys()),
        "antijoin_long_cached": lambda: antijoin_long(cached),
        "bitmap_filter": bitmap_filter,
        "scalar_per_file": scalar_per_file,
        "join_path": join_path,
        "join_path_scalar": join_path_scalar,
        "join_size": join_size,
        "tree_scalar": tree_scalar,
        "join_size_left": lambda: join_size("left"),
        "join_size_nobits": lambda: join_size(bits=False),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="0.1,1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated variant names")
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session(delta=True, connect_timeout=None, retry_timeout=None)
    spark.dataSource.register(keys_source())
    report: dict[str, Any] = {
        "machine": machine(),
        "runs": args.runs,
        "load_before": load_average(),
    }
    for sf in (float(s) for s in args.sf.split(",")):
        chosen = variants(spark, build(spark, sf))
        if args.only:
            chosen = {
                k: v for k, v in chosen.items() if k in args.only.split(",") or k == "rewritten"
            }
        measured: dict[str, list[tuple[float, float]]] = {k: [] for k in chosen}
        answers = {
            k: tuple(round(float(x), 2) for x in lineitem_totals(v())) for k, v in chosen.items()
        }
        for _ in range(args.runs):
            for name, frame in chosen.items():
                cpu, t0 = tree_cpu_seconds(), time.perf_counter()
                lineitem_totals(frame())
                measured[name].append((time.perf_counter() - t0, tree_cpu_seconds() - cpu))
        base_wall = statistics.median(w for w, _ in measured["rewritten"])
        base_cpu = statistics.median(c for _, c in measured["rewritten"])
        rows = {}
        for name, runs in measured.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            rows[name] = {
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 2),
                "wall_ratio": round(wall / base_wall, 2),
                "cpu_ratio": round(cpu / base_cpu, 2),
                "same_answer": answers[name] == answers["rewritten"],
            }
            print(sf, name, rows[name], flush=True)
        report[f"sf{sf}"] = {"variants": rows, "load_after": load_average()}
    save_report(report, args.out)
    qc.stop(delta=True)


if __name__ == "__main__":
    main()
