"""Indexed write vs plain parquet write of the same DataFrame, side by side.

Usage: python bench/write_bench.py --sf 1 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    dir_bytes,
    fresh_dir,
    lineitem,
    machine,
    md_table,
    median,
    peak_rss_mb,
    timed,
)

COLUMNS = "l_shipdate,l_extendedprice,l_partkey"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cube-size", type=int, default=500_000)
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    df = spark.read.parquet(source)
    rows = df.count()
    times: dict[str, list[float]] = {}
    files: dict[str, int] = {}
    for _ in range(args.rounds):
        out = fresh_dir("parquet")
        with timed(times, "parquet"):
            df.write.parquet(out)
        files["parquet"] = len([f for f in Path(out).glob("*.parquet")])
        size_parquet = dir_bytes(out)
        out = fresh_dir("qbeast")
        with timed(times, "qbeast"):
            result = qc.write(df, out, columnsToIndex=COLUMNS, cubeSize=args.cube_size)
        files["qbeast"] = result.num_files
        size_qbeast = dir_bytes(out)
    ratio = median(times["qbeast"]) / median(times["parquet"])
    report = {
        "machine": machine(),
        "rows": rows,
        "sf": args.sf,
        "parquet_s": times["parquet"],
        "qbeast_s": times["qbeast"],
        "ratio_median": ratio,
        "files": files,
        "bytes": {"parquet": size_parquet, "qbeast": size_qbeast},
        "client_peak_rss_mb": peak_rss_mb(),
    }
    print(json.dumps(report, indent=2))
    print(
        md_table(
            ["write", "median s", "runs", "files", "bytes"],
            [
                ["df.write.parquet", f"{median(times['parquet']):.1f}",
                 " / ".join(f"{t:.1f}" for t in times["parquet"]), files["parquet"],
                 f"{size_parquet:,}"],
                [f"qbeast_connect.write ({COLUMNS})", f"{median(times['qbeast']):.1f}",
                 " / ".join(f"{t:.1f}" for t in times["qbeast"]), files["qbeast"],
                 f"{size_qbeast:,}"],
            ],
        )
    )
    print(f"\nratio qbeast/parquet (median): {ratio:.2f}x; client peak RSS {peak_rss_mb():.0f} MiB")
    qc.stop()


if __name__ == "__main__":
    main()
