"""Samples from SQL (issue #34): a catalog table created with ``sampleFraction`` against
``QbeastTable.sample`` and Spark's own ``TABLESAMPLE``.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-sql python -m bench.sql_sample_bench --sf 1 \
    --runs 3 --out bench/sql_sample_sf1.json

TPC-H lineitem is written once as a qbeast table (``bench.common.indexed_copy``). Then, for
each fraction, the same aggregate (``bench.query_bench.aggregate``) runs over
``SELECT * FROM li_sample`` (a table ``CREATE``d with ``OPTIONS (sampleFraction 'f')``),
``QbeastTable.sample(f)``, ``SELECT * FROM li TABLESAMPLE (f*100 PERCENT)`` and
``spark.read.format("qbeast").load(path).sample(fraction=f)``; bytes are the sizes of the
files each read opens (the plugin's planner run in this process for the reads through the
plugin, ``inputFiles()`` for ``QbeastTable.sample``). With the server's SQL extension (the
default where a JDK is present; ``--sql-extension off`` for Spark's own sample) the last two
reach the plugin as the read options the extension's rule adds; without it Spark samples
after reading every file. Times are medians of ``--runs`` after one untimed run,
interleaved.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench.common import (
    bench_session,
    indexed_copy,
    lineitem,
    load_average,
    machine,
    median,
    out_dir,
    save_report,
)
from bench.query_bench import aggregate


def _files_bytes(files: list[str]) -> int:
    """Bytes of these files (``inputFiles()`` entries)."""
    return sum(os.path.getsize(p.removeprefix("file:")) for p in files)


def _plugin_bytes(path: str, **options: str) -> int:
    """Bytes of the files a ``format("qbeast")`` read with these options opens."""
    from server_plugin.qbeast_format import QbeastDataSource

    source = QbeastDataSource({"path": path, **options})
    reader: Any = source.reader(source.schema())
    return sum(size for _key, size in reader.selected())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fractions", default="0.01,0.1")
    parser.add_argument("--sql-extension", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.spark.sql_extension import EXTENSION_CLASS

    spark = bench_session(sql_extension={"on": True, "off": False}.get(args.sql_extension))
    extension = EXTENSION_CLASS in (spark.conf.get("spark.sql.extensions", "") or "")
    path = out_dir("/tmp/qbeast-bench-sql") / f"lineitem_sf{args.sf}_c{args.cube_size}"
    indexed_copy(spark, lineitem(args.sf), path, args.cube_size)
    table = qc.QbeastTable.forPath(spark, str(path))
    total = _files_bytes(table.toDF().inputFiles())
    spark.sql("DROP TABLE IF EXISTS li").collect()
    spark.sql(f"CREATE TABLE li USING qbeast LOCATION '{path}'").collect()
    report: dict[str, Any] = {
        "machine": machine(),
        "sf": args.sf,
        "cube_size": args.cube_size,
        "runs": args.runs,
        "load_before": load_average(),
        "table_bytes": total,
        "sql_extension": extension,
        "fractions": {},
    }
    for fraction in (float(f) for f in args.fractions.split(",")):
        name = f"li_sample_{str(fraction).replace('.', '_')}"
        spark.sql(f"DROP TABLE IF EXISTS {name}").collect()
        spark.sql(
            f"CREATE TABLE {name} USING qbeast OPTIONS (sampleFraction '{fraction}') "
            f"LOCATION '{path}'"
        ).collect()
        reads = {
            "sql_sampleFraction": lambda name=name: spark.sql(f"SELECT * FROM {name}"),
            "QbeastTable.sample": lambda f=fraction: table.sample(f),
            "sql_TABLESAMPLE": lambda f=fraction: spark.sql(
                f"SELECT * FROM li TABLESAMPLE ({f * 100:g} PERCENT)"
            ),
            "df.sample": lambda f=fraction: spark.read.format("qbeast")
            .load(str(path))
            .sample(fraction=f, seed=1),
        }
        times: dict[str, list[float]] = {k: [] for k in reads}
        answers: dict[str, Any] = {}
        for run in range(args.runs + 1):
            for key, read in reads.items():
                start = time.perf_counter()
                answers[key] = aggregate(read())
                if run:
                    times[key].append(time.perf_counter() - start)
        sample_bytes = _files_bytes(table.sample(fraction).inputFiles())
        sql_bytes = _plugin_bytes(str(path), sampleFraction=str(fraction))
        pushed = {"tableSampleFraction": str(fraction), "tableSampleSeed": "1"}
        tablesample_bytes = _plugin_bytes(str(path), **pushed) if extension else total
        # the same rows as QbeastTable.sample: same count and same hash sum
        expected = (answers["QbeastTable.sample"][2], answers["QbeastTable.sample"][3])
        same = {k: (a[2], a[3]) == expected for k, a in answers.items()}
        report["fractions"][str(fraction)] = {
            "seconds": {k: median(v) for k, v in times.items()},
            "bytes": {
                "sql_sampleFraction": sql_bytes,
                "QbeastTable.sample": sample_bytes,
                "sql_TABLESAMPLE": tablesample_bytes,
                "df.sample": tablesample_bytes,
            },
            "sql_bytes_vs_sample": sql_bytes / sample_bytes if sample_bytes else None,
            "tablesample_bytes_vs_sample": (
                tablesample_bytes / sample_bytes if sample_bytes else None
            ),
            "same_rows_as_sample": same,
            "rows": answers["QbeastTable.sample"][2],
        }
        print(fraction, report["fractions"][str(fraction)], flush=True)
    report["load_after"] = load_average()
    save_report(report, args.out or None)


if __name__ == "__main__":
    main()
