"""Where the executor CPU of ``QbeastTable.sample(f)`` goes, in one run.

Usage (after ``bench.sample_bench`` wrote the table):
    QBEAST_BENCH_DIR=/tmp/qbeast-bench-sample python -m bench.sample_breakdown --sf 1 \
        --cube-size 100000 --fraction 0.1 --runs 3 --ui-port 4077

Every variant computes ``bench.query_bench.aggregate`` (or a count) and is timed by wall
time and by the executor CPU of its stages (UI REST API; on a shared machine wall time is
mostly waiting). Variants:

* plain ``df.sample(f)`` and plain with no sample: their difference is the aggregate's cost
  over the rows the sample drops, so the aggregate's cost per row;
* ``QbeastTable.sample(f)``, with the aggregate and with only ``count(*)`` (the scan, the
  indexed columns and the weight hash, without the aggregated columns);
* the same rows (the files the sample opens) rewritten by pyarrow: the same files with
  row groups of 16,384 rows, and all of them in one file; both with the weight filter.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_session, completed_stages, executor_cpu_ms, lineitem, median, out_dir
from bench.query_bench import aggregate


def _copies(files: list[str], out: Path) -> dict[str, list[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    regrouped, single = out / "copy_rg16k", out / "copy_single"
    for d in (regrouped, single):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    tables = []
    for p in files:
        t = pq.read_table(p)
        tables.append(t)
        pq.write_table(
            t, regrouped / os.path.basename(p), row_group_size=16384, store_decimal_as_integer=True
        )
    pq.write_table(
        pa.concat_tables(tables),
        single / "all.parquet",
        row_group_size=131072,
        store_decimal_as_integer=True,
    )
    return {
        "same rows, same files, row groups of 16k rows": [
            str(regrouped / os.path.basename(p)) for p in files
        ],
        "same rows in one file": [str(single / "all.parquet")],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ui-port", type=int, default=4077)
    args = parser.parse_args()

    from pyspark.sql import functions as F

    import qbeast_connect as qc
    from qbeast_connect.planning.file_planner import sample_weight_sql

    out = out_dir("/tmp/qbeast-bench-sample")
    path = out / f"sample_sf{args.sf:g}_{args.cube_size}"
    spark = bench_session(args.ui_port)
    try:
        plain = spark.read.parquet(lineitem(args.sf))
        table = qc.QbeastTable.forPath(spark, str(path))
        f = args.fraction
        files = [p.removeprefix("file:") for p in table.sample(f).inputFiles()]
        weight = F.expr(sample_weight_sql(table.indexedColumns(), f))

        def count(df: Any) -> Any:
            return df.agg(F.count(F.lit(1))).collect()[0]

        reads = {
            f"plain df.sample({f})": lambda: aggregate(plain.sample(f)),
            "plain, no sample": lambda: aggregate(plain),
            f"qbeast sample({f})": lambda: aggregate(table.sample(f)),
            f"qbeast sample({f}), count(*) only": lambda: count(table.sample(f)),
        }
        for name, paths in _copies(files, out).items():
            reads[name] = lambda paths=paths: aggregate(
                spark.read.schema(table.schema).parquet(*paths).filter(weight)
            )
        print(f"{len(files)} files", flush=True)
        walls: dict[str, list[float]] = {k: [] for k in reads}
        cpus: dict[str, list[float]] = {k: [] for k in reads}
        for run in range(args.runs + 1):
            for name, read in reads.items():
                before = completed_stages(args.ui_port)
                t0 = time.perf_counter()
                answer = read()
                wall = time.perf_counter() - t0
                if run == 0:
                    print(name, tuple(answer), flush=True)
                    continue
                walls[name].append(wall)
                cpus[name].append(executor_cpu_ms(args.ui_port, before))
        base_w, base_c = (
            median(walls[f"plain df.sample({f})"]),
            median(cpus[f"plain df.sample({f})"]),
        )
        print("| read | wall s | wall ratio | executor CPU ms | CPU ratio |")
        print("|---|---|---|---|---|")
        for name in reads:
            w, c = median(walls[name]), median(cpus[name])
            print(f"| {name} | {w:.2f} | {w / base_w:.2f}x | {c:.0f} | {c / base_c:.2f}x |")
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
