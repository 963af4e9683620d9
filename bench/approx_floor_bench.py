"""Where the time of one ``approx`` step goes at sf 10: the step's query against the cheapest
queries over the same files, with Spark's adaptive query execution (AQE) on and off.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-approx python -m bench.approx_floor_bench --sf 10 \
    --cube-size 1000000 --runs 7 --out bench/approx_floor_sf10.json

Needs the table ``bench.approx_bench`` writes (it is reused, never written here). Every query
is timed ``--runs`` times, interleaved, first with the session's default AQE (on), then with
``spark.sql.adaptive.enabled=false`` set on the session; medians are reported.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.approx_bench import table_path
from bench.common import bench_session, lineitem, load_average, machine, median, save_report


def _variants(spark: Any, table: Any) -> dict[str, Callable[[], object]]:
    from pyspark.sql import functions as F

    from qbeast_connect.approx import run
    from qbeast_connect.approx.aggregates import parse_aggregates
    from qbeast_connect.approx.planner import BandPlanner
    from qbeast_connect.model.weight import weight_from_fraction
    from qbeast_connect.spark.adaptive import adaptive_off
    from qbeast_connect.table import ScanExplanation

    aggs = parse_aggregates("sum(l_extendedprice) AS r")
    band = BandPlanner(table._planner(None)).first_band(76_830)
    paths = tuple(table._absolute(p) for p in band.plan.paths)
    schema = table.schema
    weight = weight_from_fraction(band.to_fraction)
    keys = ", ".join(table.indexedColumns())
    plain = spark.read.parquet(lineitem(10))

    def files() -> Any:
        return spark.read.schema(schema).parquet(*paths)

    def step_frame() -> Any:
        explanation = ScanExplanation(band.plan, paths, table._reader())
        return table._dataframe(explanation, None, band.to_fraction, from_fraction=0.0)

    def one_stage() -> Any:
        with adaptive_off(spark):
            return run._band_sums(step_frame().coalesce(1), aggs, ())

    return {
        "exact sum on plain parquet (sf 10)": lambda: plain.agg(F.sum("l_extendedprice")).collect(),
        "approx(relativeError=0.01), whole call": lambda: table.approx(
            "sum(l_extendedprice) AS r", relativeError=0.01
        ),
        "the step's query (band filter, the estimator's 4 sums)": lambda: run._band_sums(
            step_frame(), aggs, ()
        ),
        "the step's query as approx runs it (one task, AQE set aside)": lambda: one_stage(),
        "the band's files, no filter, the 4 sums": lambda: run._band_sums(files(), aggs, ()),
        "the band's files, band filter, one sum": lambda: files()
        .filter(F.expr(f"hash({keys}) < {weight}"))
        .agg(F.sum("l_extendedprice"))
        .collect(),
        "the band's files, no filter, one sum": lambda: files()
        .agg(F.sum("l_extendedprice"))
        .collect(),
        "spark.range(1).collect()": lambda: spark.range(1).collect(),
    }


def _timed(variants: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    for make in variants.values():
        make()  # warm-up
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(runs):
        for key, make in variants.items():
            t0 = time.perf_counter()
            make()
            times[key].append(time.perf_counter() - t0)
    return {k: round(median(v), 4) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=10.0)
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    path = table_path(args.sf, args.cube_size, written=True)
    spark = bench_session()
    try:
        table = qc.QbeastTable.forPath(spark, str(path))
        variants = _variants(spark, table)
        report: dict[str, Any] = {
            "machine": machine(),
            "load_average_at_start": load_average(),
            "command": "python -m bench.approx_floor_bench " + " ".join(sys.argv[1:]),
            "median_s": {"AQE on (default)": _timed(variants, args.runs)},
        }
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        try:
            report["median_s"]["AQE off"] = _timed(variants, args.runs)
        finally:
            spark.conf.unset("spark.sql.adaptive.enabled")
        report["load_average_at_end"] = load_average()
        save_report(report, args.out)
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
