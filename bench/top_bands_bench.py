"""The small top weight bands of large-cube tables (``index/layout.SAMPLE_BAND_ROWS``)
against the layout before them: the same data and cube size written both ways, read with
the same samples and filters.

Usage: python -m bench.top_bands_bench --sf 10 --before /tmp/qbeast-bench-lead/approx_sf10_1000000 \
    --after /tmp/qbeast-bench-s23/approx_sf10_1000000 --runs 5 --out bench/top_bands_sf10.json

Both tables must hold TPC-H lineitem of ``--sf`` indexed on the query bench's columns with
one cube size (``bench.approx_bench`` writes them; the table "before" was written by the
code before the change). For each read: the files and bytes it opens (from the log) and the
median wall time of the query bench's aggregate, interleaved between the two tables; the
answers of both tables are compared.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_session, lineitem, load_average, machine, median, save_report
from bench.query_bench import aggregate, shapes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=10.0)
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    spark = bench_session()
    try:
        tables = {
            "before": qc.QbeastTable.forPath(spark, args.before),
            "after": qc.QbeastTable.forPath(spark, args.after),
        }
        reads: dict[str, dict[str, Any]] = {}
        for fraction in (0.001, 0.01, 0.1):
            reads[f"sample({fraction})"] = {"fraction": fraction, "where": None}
        for shape in shapes(lineitem(args.sf)):
            reads[shape["name"]] = {"fraction": None, "where": shape["where"]}
        report: dict[str, Any] = {
            "machine": machine(),
            "load_average_at_start": load_average(),
            "command": "python -m bench.top_bands_bench " + " ".join(sys.argv[1:]),
            "tables": {},
            "reads": {},
        }
        for name, read in reads.items():
            entry: dict[str, Any] = {}
            answers = {}
            frames = {}
            for key, table in tables.items():
                scan = table.explainScan(read["where"], fraction=read["fraction"])
                frames[key] = table.read(read["where"], fraction=read["fraction"])
                answers[key] = aggregate(frames[key])  # warm-up, and the answer
                entry[key] = {"files": scan.selected_files, "bytes": scan.selected_bytes}
                report["tables"][key] = {"files": scan.total_files, "bytes": scan.total_bytes}
            times: dict[str, list[float]] = {k: [] for k in tables}
            for _ in range(args.runs):
                for key in tables:
                    t0 = time.perf_counter()
                    aggregate(frames[key])
                    times[key].append(time.perf_counter() - t0)
            for key in tables:
                entry[key]["median_s"] = round(median(times[key]), 3)
            if read["fraction"] is None:
                entry["same_answer"] = answers["before"] == answers["after"]
            entry["time_ratio_after_before"] = round(
                entry["after"]["median_s"] / entry["before"]["median_s"], 2
            )
            report["reads"][name] = entry
            print(name, entry, flush=True)
        report["load_average_at_end"] = load_average()
        save_report(report, args.out)
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
