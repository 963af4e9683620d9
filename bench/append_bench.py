"""Small appends: 1,000-row appends into a TPC-H lineitem table against a parquet append.

Usage: python bench/append_bench.py --sf 1 --appends 20 [--out result.json]

One run, one Connect server. The base table is written once and copied, so that two copies
receive the same appends side by side: ``one_job`` (the current path: the write job's one
task indexes its rows itself, :mod:`qbeast_connect.spark.small_append`) and ``three_jobs``
(the same client with that path switched off: statistics, estimation and write jobs). Each
round appends the same 1,000 rows with ``df.write.mode("append").parquet``, then to each
copy; medians over the rounds are reported with the per-phase timings of
``WriteResult.timings``. ``WriteResult`` reads its commit back only when its version or
metrics are first accessed: ``read_back`` times that access, apart from the append.
After the appends the two copies' index metrics and the bytes a 1% filter and
``sample(0.01)`` would read are printed side by side (index quality).

With ``--big-rows N`` (default 200,000) it also appends N rows once to each copy: the
one-job attempt declines (more rows than a small append) and the regular jobs run, so
``declined`` is the cost of the failed attempt on a big append.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, md_table, median, save_report, timed

COLUMNS = "l_shipdate,l_extendedprice,l_partkey"
FILTER_1PCT = "l_extendedprice BETWEEN 50000 AND 50900"
APPEND_ROWS = 1_000


def _slices(spark: Any, df: Any, count: int) -> list[str]:
    """``count`` parquet inputs of APPEND_ROWS rows each (one file, one partition each)."""
    import pyarrow.parquet as pq

    staging = fresh_dir("append_rows")
    df.limit(count * APPEND_ROWS).coalesce(1).write.parquet(staging)
    table = pq.read_table(staging)
    out = []
    for i in range(count):
        path = fresh_dir(f"append_slice_{i}")
        Path(path).mkdir(parents=True)
        pq.write_table(table.slice(i * APPEND_ROWS, APPEND_ROWS), f"{path}/part-0.parquet")
        out.append(path)
    return out


def _quality(spark: Any, path: str) -> dict[str, Any]:
    import qbeast_connect as qc

    table = qc.QbeastTable.forPath(spark, path)
    metrics = table.getIndexMetrics()
    filtered = table.explainScan(where=FILTER_1PCT)
    sampled = table.explainScan(fraction=0.01)
    return {
        "cubes": metrics.cube_count,
        "blocks": metrics.block_count,
        "files": metrics.file_count,
        "height": metrics.height,
        "rows": metrics.element_count,
        "cube_rows_quartiles": metrics.cube_element_count_stats.quartiles,
        "filter_1pct_bytes": filtered.selected_bytes,
        "filter_1pct_files": filtered.selected_files,
        "sample_1pct_bytes": sampled.selected_bytes,
        "total_bytes": filtered.total_bytes,
        "filter_1pct_count": table.read(FILTER_1PCT).count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--cube-size", type=int, default=500_000)
    parser.add_argument("--big-rows", type=int, default=200_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.spark import small_append

    source = lineitem(args.sf)
    spark = qc.session()
    df = spark.read.parquet(source)
    one_job_path = fresh_dir("append_one_job")
    three_jobs = fresh_dir("append_three_jobs")
    base = qc.write(df, one_job_path, columnsToIndex=COLUMNS, cubeSize=args.cube_size)
    shutil.copytree(one_job_path, three_jobs)
    slices = _slices(spark, df, args.appends)
    parquet_out = fresh_dir("append_parquet")
    df.limit(1).write.parquet(parquet_out)  # an existing parquet directory to append to
    # one untimed round so that the Python workers have imported the task modules
    qc.write(spark.read.parquet(slices[0]), fresh_dir("append_warmup"), columnsToIndex=COLUMNS)

    use = small_append.may_use
    times: dict[str, list[float]] = {}
    phases: dict[str, dict[str, list[float]]] = {"one_job": {}, "three_jobs": {}}
    for i, rows in enumerate(slices):
        # rotate the order of the three appends so no one always runs first
        order = ["parquet", "one_job", "three_jobs"]
        order = order[i % 3 :] + order[: i % 3]
        for name in order:
            part = spark.read.parquet(rows)
            if name == "parquet":
                with timed(times, name):
                    part.write.mode("append").parquet(parquet_out)
                continue
            small_append.may_use = use if name == "one_job" else (lambda *_: False)  # type: ignore[assignment]
            try:
                with timed(times, name):
                    result = qc.write(part, one_job_path if name == "one_job" else three_jobs,
                                      mode="append")
            finally:
                small_append.may_use = use  # type: ignore[assignment]
            with timed(times, f"{name}_read_back"):
                assert result.num_rows == APPEND_ROWS and not result.new_revision
            for phase, seconds in result.timings.items():
                phases[name].setdefault(phase, []).append(seconds)

    # index quality after the small appends (before the big one below)
    quality = {"one_job": _quality(spark, one_job_path), "three_jobs": _quality(spark, three_jobs)}
    big: dict[str, Any] = {}
    if args.big_rows:
        big_df = df.limit(args.big_rows).coalesce(1)
        big_path = fresh_dir("append_big_rows")
        big_df.write.parquet(big_path)
        for name in ("one_job", "three_jobs"):
            small_append.may_use = use if name == "one_job" else (lambda *_: False)  # type: ignore[assignment]
            try:
                start = time.perf_counter()
                result = qc.write(spark.read.parquet(big_path),
                                  one_job_path if name == "one_job" else three_jobs, mode="append")
                big[name] = {"s": time.perf_counter() - start, "timings": dict(result.timings)}
            finally:
                small_append.may_use = use  # type: ignore[assignment]
            assert result.num_rows == args.big_rows

    print(json.dumps({"times": times, "phases": phases}), flush=True)
    parquet = median(times["parquet"])
    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python bench/append_bench.py " + " ".join(sys.argv[1:]),
        "sf": args.sf,
        "cube_size": args.cube_size,
        "base_rows": base.num_rows,
        "appends": args.appends,
        "median_s": {k: median(v) for k, v in times.items()},
        "ratio_to_parquet": {k: median(v) / parquet for k, v in times.items()},
        "phase_median_s": {
            name: {p: median(v) for p, v in ph.items()} for name, ph in phases.items()
        },
        "times": times,
        "big_append": {"rows": args.big_rows, **big},
        "quality": quality,
    }
    save_report(report, args.out)
    print()
    rows_md = [
        [k, f"{report['median_s'][k]:.3f}", f"{report['ratio_to_parquet'][k]:.2f}x"]
        for k in ("parquet", "one_job", "three_jobs", "one_job_read_back")
    ]
    print(md_table(["1,000-row append", "median s", "vs parquet"], rows_md))
    names = sorted(set(phases["one_job"]) | set(phases["three_jobs"]))
    print(md_table(
        ["phase", "one_job", "three_jobs"],
        [[p, *(f"{report['phase_median_s'][n].get(p, 0.0):.3f}" for n in phases)] for p in names],
    ))
    q = report["quality"]
    print(md_table(["after appends", "one_job", "three_jobs"],
                   [[k, q["one_job"][k], q["three_jobs"][k]] for k in q["one_job"]]))
    if big:
        print(md_table(
            [f"{args.big_rows:,}-row append", "s", "phases"],
            [[k, f"{v['s']:.2f}", json.dumps({p: round(t, 2) for p, t in v["timings"].items()})]
             for k, v in big.items()],
        ))
    qc.stop()


if __name__ == "__main__":
    main()
