"""Read benchmarks on TPC-H lineitem: sampling and range filters, side by side.

Usage: python bench/read_bench.py --sf 1 --cube-size 10000 --queries 25

* Sampling: bytes read by ``sample(f)`` as a share of the table, and its time against
  ``spark.read.parquet(source).sample(f)`` over the unindexed data.
* Range filters: for random ranges of about 0.1%, 1% and 10% selectivity on 1, 2 and 3 of
  the indexed columns, the read amplification (rows in the files read / rows matching) of
  the qbeast layout and of a ``deltalake`` Z-order layout of the same data on the same
  columns with about the same number of files, plus time against the unindexed parquet.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, md_table, median

COLUMNS = ["l_extendedprice", "l_partkey", "l_shipdate"]


def _zorder_copy(source: str, columns: list[str], target_files: int) -> tuple[str, Any]:
    import pyarrow.dataset as ds
    from deltalake import DeltaTable, write_deltalake

    path = fresh_dir("zorder")
    data = ds.dataset(source).to_table()
    write_deltalake(path, data)
    total = sum(f.stat().st_size for f in Path(path).glob("*.parquet"))
    dt = DeltaTable(path)
    dt.optimize.z_order(columns, target_size=max(1, total // max(1, target_files)))
    dt = DeltaTable(path)
    return path, dt


def _zorder_files(dt: Any) -> list[dict[str, Any]]:
    import pyarrow as pa

    # deltalake 1.x returns an arro3 table; pyarrow takes it through the Arrow C interface
    return pa.table(dt.get_add_actions(flatten=True)).to_pylist()


def _overlaps(file: dict[str, Any], bounds: dict[str, tuple[Any, Any]]) -> bool:
    for col, (low, high) in bounds.items():
        fmin = file.get(f"min.{col}")
        fmax = file.get(f"max.{col}")
        if fmin is None or fmax is None:
            continue
        if _num(fmax) < _num(low) or _num(fmin) > _num(high):
            return False
    return True


def _num(value: Any) -> float:
    import datetime
    import decimal

    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, datetime.date):
        return float(value.toordinal())
    if isinstance(value, decimal.Decimal):
        return float(value)
    return float(value)


def _sql_literal(col: str, value: Any) -> str:
    import datetime

    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return repr(float(value)) if col == "l_extendedprice" else str(int(value))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=25)
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args()

    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    df = spark.read.parquet(source)
    total_rows = df.count()
    path = fresh_dir("qbeast_read")
    t0 = time.perf_counter()
    qc.write(df, path, columnsToIndex=",".join(COLUMNS), cubeSize=args.cube_size)
    write_s = time.perf_counter() - t0
    table = qc.QbeastTable.forPath(spark, path)
    t0 = time.perf_counter()
    table.optimize()
    optimize_s = time.perf_counter() - t0
    table = table.refresh()
    metrics = table.getIndexMetrics()
    report: dict[str, Any] = {
        "machine": machine(),
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

    # -- sampling ---------------------------------------------------------------------
    sampling = []
    for fraction in (0.001, 0.01, 0.1, 0.5):
        scan = table.explainScan(fraction=fraction)
        times_q, times_s = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            n_q = table.sample(fraction).count()
            times_q.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            n_s = df.sample(fraction=fraction, seed=3).count()
            times_s.append(time.perf_counter() - t0)
        sampling.append(
            {
                "fraction": fraction,
                "bytes_share": scan.selected_bytes / scan.total_bytes,
                "files": scan.selected_files,
                "rows_qbeast": n_q,
                "rows_spark_sample": n_s,
                "qbeast_s": median(times_q),
                "spark_sample_s": median(times_s),
            }
        )
    report["sampling"] = sampling

    # -- range filters ----------------------------------------------------------------
    arrow = ds.dataset(source).to_table(columns=COLUMNS)
    sorted_cols = {c: pc.sort_indices(arrow, sort_keys=[(c, "ascending")]) for c in COLUMNS}
    values = {c: arrow.column(c).take(sorted_cols[c]).to_pylist() for c in COLUMNS}
    _zpath, dt = _zorder_copy(source, COLUMNS[:2], metrics.file_count)
    zfiles = _zorder_files(dt)
    rng = random.Random(7)
    filters = []
    for dims in (1, 2, 3):
        for selectivity in (0.001, 0.01, 0.1):
            per_dim = selectivity ** (1.0 / dims)
            amps_q, amps_z, times_q, times_p, matches = [], [], [], [], []
            zsets = []
            for _ in range(args.queries):
                bounds = {}
                for col in COLUMNS[:dims]:
                    start = rng.uniform(0, 1 - per_dim)
                    lo = values[col][int(start * (total_rows - 1))]
                    hi = values[col][int((start + per_dim) * (total_rows - 1))]
                    bounds[col] = (lo, hi)
                where = " AND ".join(
                    f"{c} >= {_sql_literal(c, lo)} AND {c} <= {_sql_literal(c, hi)}"
                    for c, (lo, hi) in bounds.items()
                )
                scan = table.explainScan(where=where)
                t0 = time.perf_counter()
                matched = table.filter(where).count()
                times_q.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                df.filter(where).count()
                times_p.append(time.perf_counter() - t0)
                if matched == 0:
                    continue
                matches.append(matched)
                amps_q.append(scan.selected_rows / matched)
                if dims <= 2:
                    zread = [f for f in zfiles if _overlaps(f, bounds)]
                    zsets.append(len(zread))
                    amps_z.append(sum(int(f["num_records"]) for f in zread) / matched)
            filters.append(
                {
                    "dims": dims,
                    "selectivity": selectivity,
                    "queries": len(matches),
                    "median_matching_rows": median(matches) if matches else 0,
                    "amplification_qbeast": median(amps_q) if amps_q else None,
                    "amplification_zorder": median(amps_z) if amps_z else None,
                    "zorder_files_read": median(zsets) if zsets else None,
                    "qbeast_s": median(times_q),
                    "parquet_s": median(times_p),
                }
            )
    report["zorder_files"] = len(zfiles)
    report["filters"] = filters
    text = json.dumps(report, indent=2, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    print()
    print(
        md_table(
            ["sample f", "bytes read / table", "files", "qbeast s", "spark sample s", "time ratio"],
            [
                [s["fraction"], f"{s['bytes_share']:.2%}", s["files"], f"{s['qbeast_s']:.2f}",
                 f"{s['spark_sample_s']:.2f}", f"{s['qbeast_s'] / s['spark_sample_s']:.2f}"]
                for s in sampling
            ],
        )
    )
    print()
    print(
        md_table(
            ["dims", "selectivity", "amplification qbeast", "amplification z-order",
             "qbeast s", "unindexed parquet s"],
            [
                [f["dims"], f["selectivity"],
                 "-" if f["amplification_qbeast"] is None else f"{f['amplification_qbeast']:.1f}x",
                 "-" if f["amplification_zorder"] is None else f"{f['amplification_zorder']:.1f}x",
                 f"{f['qbeast_s']:.2f}", f"{f['parquet_s']:.2f}"]
                for f in filters
            ],
        )
    )
    qc.stop()


if __name__ == "__main__":
    main()
