"""Writes side by side: indexed write vs df.write.parquet vs deltalake + Z-order; appends;
optimize; client and server peak memory.

Usage: python bench/write_bench.py --sf 1 --rounds 2 [--out result.json] [--zorder]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    dir_bytes,
    fresh_dir,
    lineitem,
    machine,
    md_table,
    median,
    peak_rss_mb,
    timed,
    warm_up,
)

COLUMNS = "l_shipdate,l_extendedprice,l_partkey"


def register_floor_source(spark: Any) -> str:
    """Register a Python Data Source whose Arrow writer only receives the rows.

    Writing through it measures the floor of any Python writer: Spark converting the rows
    to Arrow and sending them to the Python workers, with no indexing and no file written.
    The class is defined in this script (``__main__``), so it travels to the server by value.
    """
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class ReceiveOnlyWriter(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class ReceiveOnlySource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "qbeast_bench_receive_only"

        def writer(self, schema: Any, overwrite: bool) -> ReceiveOnlyWriter:
            return ReceiveOnlyWriter()

    spark.dataSource.register(ReceiveOnlySource)
    return ReceiveOnlySource.name()


def server_peak_mb() -> float | None:
    """Peak RSS (VmHWM) of the embedded server JVM, if this process started one."""
    from qbeast_connect.spark.session import embedded_server

    server = embedded_server()
    if server is None or server.pid is None:
        return None
    try:
        for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cube-size", type=int, default=500_000)
    parser.add_argument("--zorder", action="store_true", help="also time deltalake + z-order")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    df = spark.read.parquet(source)
    rows = df.count()
    floor_format = register_floor_source(spark)
    from pyspark.sql import functions as F

    with_weight = df.select("*", F.hash(*COLUMNS.split(",")).alias("_w"))
    times: dict[str, list[float]] = {}
    phases: dict[str, list[float]] = {}
    files: dict[str, int] = {}
    sizes: dict[str, int] = {}
    warm_up(df, COLUMNS)
    for _ in range(args.rounds):
        out = fresh_dir("parquet")
        with timed(times, "parquet"):
            df.write.parquet(out)
        files["parquet"] = len(list(Path(out).glob("*.parquet")))
        sizes["parquet"] = dir_bytes(out)
        out = fresh_dir("qbeast")
        with timed(times, "qbeast"):
            result = qc.write(df, out, columnsToIndex=COLUMNS, cubeSize=args.cube_size)
        files["qbeast"] = result.num_files
        sizes["qbeast"] = dir_bytes(out)
        for phase, seconds in result.timings.items():
            phases.setdefault(phase, []).append(seconds)
        with timed(times, "python_writer_floor"):
            with_weight.write.format(floor_format).mode("append").save()
    table_path = out
    client_after_writes = peak_rss_mb()

    # appends: inside the space (same revision) and outside it (a new revision)
    part = df.filter("l_orderkey % 10 = 0")
    part_rows = part.count()
    with timed(times, "append_same_revision"):
        same = qc.write(part, table_path, mode="append")
    shifted = part.selectExpr(
        *[c if c != "l_extendedprice" else "cast(l_extendedprice * 3 as decimal(15,2)) as l_extendedprice"
          for c in df.columns]
    )
    with timed(times, "append_new_revision"):
        new = qc.write(shifted, table_path, mode="append")
    assert not same.new_revision and new.new_revision
    with timed(times, "parquet_append"):
        part.write.mode("append").parquet(fresh_dir("parquet_append"))
    table = qc.QbeastTable.forPath(spark, table_path)
    files_before = table.getIndexMetrics(1).file_count
    with timed(times, "optimize_revision_1"):
        optimized = table.optimize(1)
    files_after = table.refresh().getIndexMetrics(1).file_count

    if args.zorder:
        import pyarrow.dataset as ds
        from deltalake import DeltaTable, write_deltalake

        zpath = fresh_dir("zorder_write")
        data = ds.dataset(source).to_table()
        with timed(times, "deltalake_write"):
            write_deltalake(zpath, data)
        with timed(times, "deltalake_zorder"):
            DeltaTable(zpath).optimize.z_order(["l_shipdate", "l_extendedprice", "l_partkey"])
        del data

    server_peak = server_peak_mb()
    ratio = median(times["qbeast"]) / median(times["parquet"])
    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python bench/write_bench.py " + " ".join(sys.argv[1:]),
        "rows": rows,
        "sf": args.sf,
        "cube_size": args.cube_size,
        "times": times,
        "write_phases": phases,
        "ratio_median": ratio,
        "files": files,
        "bytes": sizes,
        "append_rows": part_rows,
        "optimize": {"files_before": files_before, "files_after": files_after,
                     "rows": optimized.rows},
        "client_peak_rss_mb_after_writes": client_after_writes,
        "client_peak_rss_mb": peak_rss_mb(),
        "server_peak_rss_mb": server_peak,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    rows_md = [
        ["df.write.parquet", f"{median(times['parquet']):.1f}", files["parquet"]],
        [f"qbeast_connect.write ({COLUMNS})", f"{median(times['qbeast']):.1f}", files["qbeast"]],
    ]
    if args.zorder:
        rows_md.append(["deltalake write_deltalake", f"{median(times['deltalake_write']):.1f}", "-"])
        rows_md.append(["deltalake optimize.z_order", f"{median(times['deltalake_zorder']):.1f}", "-"])
    print(md_table(["write", "median s", "files"], rows_md))
    print(f"\nratio qbeast/parquet (median): {ratio:.2f}x; client peak RSS {peak_rss_mb():.0f} MiB;"
          f" server peak RSS {server_peak} MiB")
    qc.stop()


if __name__ == "__main__":
    main()
