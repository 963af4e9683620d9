"""Bytes and rows Spark actually reads for the query bench's shapes, on tables it left behind.

Usage: python -m bench.read_bytes_bench --sf 10 --cube-size 1000000 --ui-port 4072

``bench/query_bench.py`` reports the bytes of the files a read *opens*. Inside those files
Spark skips row groups by their statistics and pages by the page index, so the bytes it reads
are fewer. This script measures them, on the plain parquet copy and the qbeast table that
the last ``query_bench`` run wrote (``q18_parquet``, ``q18_qbeast_<cubeSize>`` under the
bench directory), with the same filters (rebuilt from the same data sample) and aggregate:

* ``bytes``: what the embedded server's JVM read (``rchar`` of ``/proc/<pid>/io``, see
  :class:`bench.layout_bench.ReadMeter`), as a share of the table's bytes on disk;
* ``records``: rows the scans returned after row-group and page skipping.

One run per query and engine, after one untimed warm-up read of each; the answers of both
engines are compared.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from bench.common import dir_bytes, lineitem, machine, save_report
from bench.layout_bench import ReadMeter
from bench.query_bench import aggregate, shapes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=10.0)
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--ui-port", type=int, default=4072)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.spark.session import embedded_server

    out_dir = Path(os.environ.get("QBEAST_BENCH_DIR", "/tmp/qbeast-bench")) / "out"
    parquet_path = str(out_dir / "q18_parquet")
    qbeast_path = str(out_dir / f"q18_qbeast_{args.cube_size}")
    ui = {"spark.ui.enabled": "true", "spark.ui.port": str(args.ui_port)}
    spark = qc.session(None, connect_timeout=None, retry_timeout=None, **ui)
    try:
        server = embedded_server()
        if server is None or server.pid is None:
            raise SystemExit("the bytes are measured on an embedded server only")
        meter = ReadMeter(args.ui_port, server.pid)
        plain = spark.read.parquet(parquet_path)
        table = qc.QbeastTable.forPath(spark, qbeast_path)
        sizes = {"parquet": dir_bytes(parquet_path), "qbeast": dir_bytes(qbeast_path)}
        queries: list[tuple[str, Any, Any]] = [
            (s["name"], plain.filter(s["where"]), lambda w=s["where"]: table.filter(w))
            for s in shapes(lineitem(args.sf))
        ]
        queries += [
            (f"sample({f})", plain.sample(fraction=f, seed=7), lambda f=f: table.sample(f))
            for f in (0.01, 0.1)
        ]
        aggregate(plain)  # warm-up: class loading, the Python workers
        aggregate(table.filter("l_partkey < 0"))
        report: dict[str, Any] = {"machine": machine(), "sizes": sizes, "queries": {}}
        for name, plain_df, qbeast_df in queries:
            row: dict[str, Any] = {}
            answers = {}
            for engine, make in (("parquet", lambda d=plain_df: d), ("qbeast", qbeast_df)):
                answers[engine], measured = meter.measure(lambda m=make: aggregate(m()))
                measured["share"] = round(measured["bytes"] / sizes[engine], 4)
                row[engine] = measured
            # the parquet sample is Spark's own random sample: only filters compare
            row["answers_equal"] = (
                answers["parquet"] == answers["qbeast"] if "sample" not in name else None
            )
            report["queries"][name] = row
            print(name, json.dumps(row))
    finally:
        qc.stop()
    save_report(report, args.out)


if __name__ == "__main__":
    main()
