"""Where the time of a deletion-vector filter goes: the plan or the rows (issue #32).

``bench/dv_read_profile.py`` found a bitmap literal filter on ``_metadata.row_index`` the
cheapest way for Spark's own reader to leave out deleted rows, at 1.7x-4.5x of the read of
the rewritten table. This script takes the plan apart, on synthetic parquet (6,000,000
rows of three columns, split into ``--files`` files, 10% of each file's rows deleted at
random), Spark Connect on ``local[2]``, ``sum(a), count(*)`` as the aggregate:

* ``plain``: every row, no filter (the rewritten table has 10% fewer rows to read).
* ``literal``: one scan per file, ``bit_get(element_at(<array<bigint> literal>, ...))`` on
  ``row_index``, the literal sent in the plan (``dv_read_profile``'s ``bitmap_filter``).
* ``scalar``: the same lookup, with the bitmap a scalar subquery (``DataFrame.scalar()``)
  of a one-row local relation: no literal for the optimizer to walk.
* ``join``: one scan of every file, broadcast-joined on ``_metadata.file_path`` to a local
  relation of (path, first, last, bitmap) rows.
* ``tiny_literal`` / ``tiny_scalar``: ``literal`` / ``scalar`` with the first file's bitmap
  over a one-row file: the cost of the plan alone.

Median of ``--runs`` after one untimed run::

    python -m bench.dv_filter_plans --files 1,2,20,60 --runs 3 --out bench/dv_filter_plans.json
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.common import BENCH_DIR, load_average, machine, save_report

ROWS = 6_000_000
SCHEMA = "a double, b bigint, c double"


def _files(count: int) -> list[str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = BENCH_DIR / f"dv-filter-plans-{count}"
    names = [str(folder / f"part-{i:04d}.parquet") for i in range(count)]
    if not folder.exists():
        folder.mkdir(parents=True)
        rng = np.random.default_rng(1)
        size = ROWS // count
        for name in names:
            columns = {
                "a": rng.random(size),
                "b": rng.integers(0, 100, size),
                "c": rng.random(size),
            }
            pq.write_table(pa.table(columns), name)
    return names


def bitmap_words(deleted: Any) -> tuple[int, int, Any]:
    """First and last of the sorted ``deleted`` rows and the 64-bit words between them
    (the plugin's :func:`~server_plugin.delta.deletion_vectors.row_bitmap`), as int64."""
    import numpy as np

    from server_plugin.delta.deletion_vectors import row_bitmap

    lo, hi, words = row_bitmap(np.asarray(deleted, dtype=np.uint64))
    return lo, hi, np.frombuffer(words, dtype="<i8")


def _bitmap(rows: int, rng: Any) -> tuple[int, int, Any]:
    """10% of a file's ``rows`` deleted at random, as :func:`bitmap_words`."""
    import numpy as np

    return bitmap_words(np.sort(rng.choice(rows, rows // 10, replace=False)))


def keep_row(row: Any, lo: Any, hi: Any, words: Any) -> Any:
    """TRUE unless bit ``row - lo`` of ``words`` is set (rows outside [lo, hi] are kept)."""
    from pyspark.sql import functions as F

    offset = row - lo
    word = F.element_at(words, F.shiftright(offset, 6).cast("int") + 1)
    return (
        (row < lo) | (row > hi) | (F.bit_get(word, offset.bitwiseAND(F.lit(63)).cast("int")) == 0)
    )


def variants(spark: Any, files: list[str], tiny: str) -> dict[str, Callable[[], Any]]:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.connect.column import Column
    from pyspark.sql.connect.expressions import LiteralExpression
    from pyspark.sql.types import ArrayType, LongType

    rng = np.random.default_rng(2)
    bitmaps = [_bitmap(ROWS // len(files), rng) for _ in files]
    row = F.col("_metadata.row_index")

    def literal(words: Any) -> Any:
        return Column(LiteralExpression(words.tolist(), ArrayType(LongType(), False)))

    def scalar(words: Any) -> Any:
        table = pa.table({"w": pa.array([words], pa.list_(pa.int64()))})
        return spark.createDataFrame(table).scalar()

    def per_file(bitmap_column: Callable[[Any], Any], paths: list[str]) -> Any:
        frames = [
            spark.read.schema(SCHEMA)
            .parquet(path)
            .where(keep_row(row, F.lit(lo), F.lit(hi), bitmap_column(words)))
            for path, (lo, hi, words) in zip(paths, bitmaps, strict=False)
        ]
        return functools.reduce(lambda x, y: x.union(y), frames)

    scanned = spark.read.schema(SCHEMA).parquet(*files)
    names = [r[0] for r in scanned.select("_metadata.file_path").distinct().collect()]
    by_base = {n.rsplit("/", 1)[1]: n for n in names}  # Spark's own spelling of each path
    keys = pa.table(
        {
            "__p": [by_base[f.rsplit("/", 1)[1]] for f in files],
            "__lo": [b[0] for b in bitmaps],
            "__hi": [b[1] for b in bitmaps],
            "__w": pa.array([b[2] for b in bitmaps], pa.list_(pa.int64())),
        }
    )

    def join() -> Any:
        tagged = scanned.select("*", F.col("_metadata.file_path").alias("__f"), row.alias("__r"))
        joined = tagged.join(F.broadcast(spark.createDataFrame(keys)), F.col("__f") == F.col("__p"))
        return joined.where(keep_row(F.col("__r"), F.col("__lo"), F.col("__hi"), F.col("__w")))

    def agg(frame: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: tuple(frame().agg(F.sum("a"), F.count("*")).collect()[0])

    return {
        "plain": agg(lambda: scanned),
        "literal": agg(lambda: per_file(literal, files)),
        "scalar": agg(lambda: per_file(scalar, files)),
        "join": agg(join),
        "tiny_literal": agg(lambda: per_file(literal, [tiny])),
        "tiny_scalar": agg(lambda: per_file(scalar, [tiny])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default="1,2,20,60")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.remote("local[2]").config("spark.driver.memory", "4g").getOrCreate()
    )
    tiny = str(BENCH_DIR / "dv-filter-plans-one-row.parquet")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"a": [1.0], "b": [1], "c": [1.0]}), tiny)
    report: dict[str, Any] = {"machine": machine(), "load_before": load_average(), "runs": {}}
    for count in (int(c) for c in args.files.split(",")):
        timings: dict[str, float] = {}
        answers: dict[str, Any] = {}
        for name, run in variants(spark, _files(count), tiny).items():
            answers[name] = run()
            seconds = []
            for _ in range(args.runs):
                start = time.perf_counter()
                run()
                seconds.append(time.perf_counter() - start)
            timings[name] = statistics.median(seconds)
            print(f"{count} files, {name}: {timings[name]:.3f} s, {answers[name]}", flush=True)
        kept = {answers[n][1] for n in ("literal", "scalar", "join")}
        assert kept == {ROWS - count * ((ROWS // count) // 10)}, answers  # the same rows left
        report["runs"][str(count)] = {"seconds": timings, "answers": answers}
    report["load_after"] = load_average()
    save_report(report, args.out)


if __name__ == "__main__":
    main()
