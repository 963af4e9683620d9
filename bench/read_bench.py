"""Read benchmarks on TPC-H lineitem: sampling and range filters, side by side.

Usage: python bench/read_bench.py --sf 1 --cube-size 10000 --queries 25

* Sampling: bytes read by ``sample(f)`` as a share of the table, and its time against
  ``spark.read.parquet(source).sample(f)`` over the unindexed data.
* Range filters: for random ranges of about 0.1%, 1% and 10% selectivity on 1, 2 and 3 of
  the indexed columns, the read amplification (rows in the files read / rows matching) of
  the qbeast layout, of a ``deltalake`` Z-order layout of the same data on the same three
  columns with about the same number of files, and of a Z-curve on the columns' quantile
  ranks with the same number of files (in memory), plus time against the unindexed parquet.

The measurements are those of ``bench/read_workloads.py`` (shared with the synthetic data).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, optimized, save_report
from bench.read_workloads import print_tables, read_workloads, sql_literal

# query order: 1 column = l_extendedprice, 2 = + l_partkey, 3 = + l_shipdate; the Z-order
# copy is z-ordered on all three (the columns the qbeast table is indexed on)
COLUMNS = ["l_extendedprice", "l_partkey", "l_shipdate"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=25)
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    try:
        run(spark, source, args)
    finally:
        qc.stop()


def run(spark: Any, source: str, args: argparse.Namespace) -> None:
    import qbeast_connect as qc

    df = spark.read.parquet(source)
    total_rows = df.count()
    path = fresh_dir("qbeast_read")
    t0 = time.perf_counter()
    qc.write(df, path, columnsToIndex=",".join(COLUMNS), cubeSize=args.cube_size)
    write_s = time.perf_counter() - t0
    table = qc.QbeastTable.forPath(spark, path)
    table, optimize_s = optimized(table)
    metrics = table.getIndexMetrics()
    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python bench/read_bench.py " + " ".join(sys.argv[1:]),
        "columns": COLUMNS,
        "sf": args.sf,
        "rows": total_rows,
        "cube_size": args.cube_size,
        "write_s": write_s,
        "optimize_s": optimize_s,
        "files": metrics.file_count,
        "height": metrics.height,
        "min_height": metrics.min_height,
        "bytes": metrics.bytes,
    }

    report.update(read_workloads(spark, source, table, COLUMNS, args.queries, sql_literal))
    save_report(report, args.out)
    print()
    print_tables(report)


if __name__ == "__main__":
    main()
