"""How cost grows: indexed write vs parquet write, and client planning, at several sizes.

Usage: python bench/scaling_bench.py --sizes 0.1,0.3,1 [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, warm_up


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0.1,0.3,1")
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = qc.session()
    points = []
    sizes = [float(x) for x in args.sizes.split(",")]
    warm_up(spark.read.parquet(lineitem(sizes[0])), "l_shipdate,l_extendedprice,l_partkey")
    for sf in sizes:
        df = spark.read.parquet(lineitem(sf))
        rows = df.count()
        start = time.perf_counter()
        df.write.parquet(fresh_dir(f"scale_pq_{sf}"))
        parquet_s = time.perf_counter() - start
        path = fresh_dir(f"scale_qb_{sf}")
        start = time.perf_counter()
        qc.write(df, path, columnsToIndex="l_shipdate,l_extendedprice,l_partkey",
                 cubeSize=args.cube_size)
        qbeast_s = time.perf_counter() - start
        table = qc.QbeastTable.forPath(spark, path)
        start = time.perf_counter()
        for _ in range(20):
            table.explainScan(where="l_extendedprice < 20000 AND l_partkey < 50000", fraction=0.1)
        planning_ms = (time.perf_counter() - start) / 20 * 1000
        points.append({"sf": sf, "rows": rows, "parquet_s": parquet_s, "qbeast_s": qbeast_s,
                       "planning_ms": planning_ms, "files": table.getIndexMetrics().file_count})
        print(points[-1], flush=True)
    report = {"machine": machine(), "points": points}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    qc.stop()


if __name__ == "__main__":
    main()
