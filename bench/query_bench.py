"""Queries that read columns: qbeast against plain parquet and a deltalake z-ordered copy.

Usage: python bench/query_bench.py --sf 1 --cube-sizes 1000000,5000000 --out q.json
       python bench/query_bench.py --sf 0.01 --quick      # smoke run, under 2 minutes

Every timed read aggregates columns it reads (``sum(l_quantity), sum(l_extendedprice *
(1 - l_discount)), count(*), sum(hash(l_comment))``), so Spark cannot answer it from parquet
footers as it answers a bare ``count()``. Built in one run, on TPC-H lineitem generated
offline (``bench.common.lineitem``):

* plain parquet (``df.write.parquet``);
* one qbeast table per ``--cube-sizes`` entry, indexed on l_shipdate, l_extendedprice,
  l_partkey;
* a ``deltalake`` copy z-ordered on the same three columns (``optimize.z_order``, written in
  this process by the deltalake package). There is no Delta jar on the server: the same
  Spark session reads it as plain parquet of the files that deltalake's own file skipping
  keeps (the add actions whose min/max statistics overlap the filter), which is what a Delta
  reader does before Spark's row-group statistics take over.

Per query shape: median of ``--repeats`` wall times (the engines take turns inside each
round, so load from other users of the machine falls on all of them), the ratio to plain
parquet measured in the same run, the bytes of the files each read opens, and whether the
answers agree. The qbeast read starts from a loaded ``QbeastTable`` (its planning is in the
time); the fixed cost, ``QbeastTable.forPath`` + planning without a job, is reported apart.
Writes (``qc.write`` against ``df.write.parquet``) and 1,000-row appends are timed too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import dir_bytes, fresh_dir, lineitem, machine, md_table, median
from bench.read_workloads import _numeric_key, _overlaps, sql_literal, zorder_copy

COLUMNS = ["l_shipdate", "l_extendedprice", "l_partkey"]
SAMPLE_ROWS = 2_000_000  # rows of the client-side sample the filter bounds are chosen from


# -- the query shapes -------------------------------------------------------------------


def _data_sample(source: str, rows: int) -> dict[str, Sample]:
    """A uniform random sample (about ``rows`` rows) of the indexed columns, read batch by
    batch so the client never holds a whole column."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    dataset = ds.dataset(source)
    keep = min(1.0, rows / dataset.count_rows())
    rng = np.random.default_rng(7)
    parts: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for batch in dataset.to_batches(columns=COLUMNS):
        mask = pa.array(rng.random(batch.num_rows) < keep)
        for c in COLUMNS:
            parts[c].append(batch.column(c).filter(mask))
    return {c: Sample(pa.concat_arrays(v)) for c, v in parts.items()}


class Sample:
    """One column of the sample: numeric keys that order like the values (to count fast),
    and the values in key order (to turn a quantile into a literal)."""

    def __init__(self, values: Any) -> None:
        import pyarrow as pa

        self.keys = _numeric_key(values)
        order = np.argsort(self.keys, kind="stable")
        self.sorted_keys = self.keys[order]
        self.sorted_values = values.take(pa.array(order))

    def window(self, start: float, width: float) -> tuple[Any, Any]:
        """The values at the quantiles ``start`` and ``start + width``."""
        last = len(self.sorted_keys) - 1
        lo, hi = int(start * last), int(min(1.0, start + width) * last)
        return self.sorted_values[lo].as_py(), self.sorted_values[hi].as_py()

    def key(self, value: Any) -> float:
        if isinstance(value, datetime.date):
            return float((value - datetime.date(1970, 1, 1)).days)
        return float(value)


def _share(sample: dict[str, Sample], bounds: dict[str, tuple[Any, Any]]) -> float:
    mask = np.ones(len(next(iter(sample.values())).keys), dtype=bool)
    for c, (lo, hi) in bounds.items():
        s = sample[c]
        mask &= (s.keys >= s.key(lo)) & (s.keys <= s.key(hi))
    return float(mask.mean())


def _fit(
    sample: dict[str, Sample], target: float, make: Callable[[float], dict[str, tuple[Any, Any]]]
) -> dict[str, tuple[Any, Any]]:
    """Bisect a window width so the sample share matches ``target``."""
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if _share(sample, make(mid)) < target:
            lo = mid
        else:
            hi = mid
    return make(hi)


def shapes(source: str) -> list[dict[str, Any]]:
    """The filter shapes, with bounds chosen from the data (a client-side sample)."""
    s = _data_sample(source, SAMPLE_ROWS)
    one = _fit(s, 0.01, lambda w: {"l_extendedprice": s["l_extendedprice"].window(0.4, w)})
    start = s["l_shipdate"].window(0.3, 0.0)[0]
    ship = (start, start + datetime.timedelta(days=89))  # 90 days, both ends included
    two = _fit(s, 0.01, lambda w: {"l_shipdate": ship, "l_partkey": s["l_partkey"].window(0.2, w)})
    three = _fit(s, 0.001, lambda w: {c: s[c].window(0.35, w) for c in COLUMNS})
    out = []
    for name, bounds in (
        ("1 column 1%", one),
        ("2 columns 1%", two),
        ("3 columns 0.1%", three),
    ):
        where = " AND ".join(
            f"{c} BETWEEN {sql_literal(c, lo)} AND {sql_literal(c, hi)}"
            for c, (lo, hi) in bounds.items()
        )
        out.append({"name": name, "where": where, "bounds": bounds})
    return out


# -- timing -----------------------------------------------------------------------------


def aggregate(df: Any) -> tuple[Any, ...]:
    """The aggregate every timed read computes, collected."""
    from pyspark.sql import functions as F

    row = df.agg(
        F.sum("l_quantity"),
        F.sum(F.col("l_extendedprice") * (F.lit(1) - F.col("l_discount"))),
        F.count(F.lit(1)),
        F.sum(F.hash("l_comment")),
    ).collect()[0]
    return tuple(row)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def run(spark: Any, source: str, args: argparse.Namespace) -> dict[str, Any]:
    import qbeast_connect as qc

    df = spark.read.parquet(source)
    total_rows = df.count()
    cube_sizes = [int(x) for x in args.cube_sizes.split(",")]
    times: dict[str, list[float]] = {}

    # warm-up (untimed): JVM class loading and the Python workers' imports
    warm = df.sample(fraction=0.01, seed=1)
    warm.write.mode("overwrite").parquet(fresh_dir("q18_warm_parquet"))
    qc.write(warm, fresh_dir("q18_warm_qbeast"), columnsToIndex=",".join(COLUMNS), cubeSize=5000)

    # writes: each round rebuilds every table; the last round's tables are the ones read
    parquet_path = ""
    qbeast_paths: dict[int, str] = {}
    for _ in range(args.write_rounds):
        parquet_path = fresh_dir("q18_parquet")
        seconds, _ = _timed(lambda p=parquet_path: df.write.parquet(p))
        times.setdefault("write_parquet", []).append(seconds)
        for cs in cube_sizes:
            qbeast_paths[cs] = fresh_dir(f"q18_qbeast_{cs}")
            seconds, _ = _timed(
                lambda cs=cs: qc.write(
                    df, qbeast_paths[cs], columnsToIndex=",".join(COLUMNS), cubeSize=cs
                )
            )
            times.setdefault(f"write_qbeast_{cs}", []).append(seconds)
    tables = {cs: qc.QbeastTable.forPath(spark, p) for cs, p in qbeast_paths.items()}
    parquet_bytes = dir_bytes(parquet_path)
    parquet_files = len(spark.read.parquet(parquet_path).inputFiles())
    zfiles = max(t.getIndexMetrics().file_count for t in tables.values())
    zorder = zorder_copy(source, COLUMNS, zfiles, name="q18_zorder", reuse=args.reuse_zorder)

    plain = spark.read.parquet(parquet_path)
    z_all = [f"{zorder.path}/{f['path']}" for f in zorder.files]
    results = []
    samples = [
        {"name": "sample(0.01)", "fraction": 0.01},
        {"name": "sample(0.1)", "fraction": 0.1},
    ]
    for shape in [*shapes(source), *samples]:
        where, fraction = shape.get("where"), shape.get("fraction")
        engines: dict[str, Callable[[], Any]] = {}
        read_bytes: dict[str, int] = {"parquet": parquet_bytes}
        files: dict[str, int] = {"parquet": parquet_files}
        if where is not None:
            kept = [f for f in zorder.files if _overlaps(f, shape["bounds"])]
            z_paths = [f"{zorder.path}/{f['path']}" for f in kept]
            read_bytes["zorder"] = sum(int(f["size_bytes"]) for f in kept)
            files["zorder"] = len(kept)
            engines["parquet"] = lambda w=where: aggregate(plain.filter(w))
            engines["zorder"] = lambda w=where, p=z_paths: aggregate(
                spark.read.parquet(*p).filter(w) if p else plain.limit(0)
            )
        else:
            read_bytes["zorder"] = zorder.total_bytes
            files["zorder"] = len(z_all)
            engines["parquet"] = lambda f=fraction: aggregate(plain.sample(fraction=f, seed=3))
            engines["zorder"] = lambda f=fraction: aggregate(
                spark.read.parquet(*z_all).sample(fraction=f, seed=3)
            )
        for cs, table in tables.items():
            scan = table.explainScan(where=where, fraction=fraction)
            read_bytes[f"qbeast_{cs}"] = scan.selected_bytes
            files[f"qbeast_{cs}"] = scan.selected_files
            engines[f"qbeast_{cs}"] = lambda t=table, w=where, f=fraction: aggregate(
                t.read(where=w, fraction=f)
            )
        walls: dict[str, list[float]] = {k: [] for k in engines}
        answers: dict[str, Any] = {}
        for r in range(args.repeats):
            order = list(engines)
            order = order[r % len(order) :] + order[: r % len(order)]  # take turns
            for k in order:
                seconds, answers[k] = _timed(engines[k])
                walls[k].append(seconds)
        rows = {k: int(v[2]) for k, v in answers.items()}
        base = median(walls["parquet"])
        results.append(
            {
                "shape": shape["name"],
                "where": where,
                "fraction": fraction,
                "selectivity": rows["parquet"] / total_rows,
                "rows": rows,
                "answers_equal": None
                if where is None
                else all(a == answers["parquet"] for a in answers.values()),
                "seconds": walls,
                "median_s": {k: median(v) for k, v in walls.items()},
                "ratio": {k: median(v) / base for k, v in walls.items()},
                "bytes": read_bytes,
                "bytes_share": {
                    k: v
                    / (
                        zorder.total_bytes
                        if k == "zorder"
                        else _table_bytes(k, tables, parquet_bytes)
                    )
                    for k, v in read_bytes.items()
                },
                "files": files,
            }
        )

    # fixed cost: forPath + planning (no job), on the 2-column filter
    fixed: dict[str, float] = {}
    two = results[1]["where"]
    for cs, p in qbeast_paths.items():
        walls_fixed = [
            _timed(lambda p=p: qc.QbeastTable.forPath(spark, p).explainScan(where=two))[0]
            for _ in range(args.repeats)
        ]
        fixed[f"qbeast_{cs}"] = median(walls_fixed)

    # appends of the same 1,000 rows: qbeast (first cube size) against parquet
    rows_path = fresh_dir("q18_append_rows")
    df.sample(fraction=min(1.0, 3000 / total_rows), seed=11).limit(1000).write.parquet(rows_path)
    extra = spark.read.parquet(rows_path)
    append_rows = extra.count()
    append_table = qbeast_paths[cube_sizes[0]]
    for _ in range(args.write_rounds):
        seconds, _ = _timed(lambda: extra.write.mode("append").parquet(parquet_path))
        times.setdefault("append_parquet", []).append(seconds)
        seconds, _ = _timed(lambda: qc.write(extra, append_table, mode="append"))
        times.setdefault("append_qbeast", []).append(seconds)
    after = qc.QbeastTable.forPath(spark, append_table).getIndexMetrics()

    return {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python bench/query_bench.py " + " ".join(sys.argv[1:]),
        "sf": args.sf,
        "rows": total_rows,
        "columns": COLUMNS,
        "cube_sizes": cube_sizes,
        "files": {
            "parquet": parquet_files,
            "zorder": len(zorder.files),
            **{f"qbeast_{cs}": t.getIndexMetrics().file_count for cs, t in tables.items()},
        },
        "table_bytes": {
            "parquet": parquet_bytes,
            "zorder": zorder.total_bytes,
            **{f"qbeast_{cs}": t.getIndexMetrics().bytes for cs, t in tables.items()},
        },
        "zorder_passes": zorder.passes,
        "queries": results,
        "fixed_cost_s": fixed,
        "times": times,
        "append_rows": append_rows,
        "files_after_appends": after.file_count,
    }


def _table_bytes(key: str, tables: dict[int, Any], parquet_bytes: int) -> int:
    if key == "parquet":
        return parquet_bytes
    return int(tables[int(key.split("_")[1])].getIndexMetrics().bytes)


# -- report -----------------------------------------------------------------------------


def markdown(r: dict[str, Any]) -> str:
    """The result as markdown: one table of reads, one of writes and fixed costs."""
    engines = ["zorder"] + [f"qbeast_{cs}" for cs in r["cube_sizes"]]
    label = {"zorder": "deltalake z-order"}
    label.update({f"qbeast_{cs}": f"qbeast cubeSize {cs:,}" for cs in r["cube_sizes"]})
    files = r["files"]
    header = ["query", "selectivity", f"parquet ({files['parquet']} files)"] + [
        f"{label[e]} ({files[e]} files)" for e in engines
    ]
    rows = []
    for q in r["queries"]:
        sel = f"{100 * q['selectivity']:.2f}%"
        if q["answers_equal"] is False:
            sel += " **answers differ**"
        row = [q["shape"], sel, f"{q['median_s']['parquet']:.2f} s"]
        for e in engines:
            row.append(
                f"{q['median_s'][e]:.2f} s, **{q['ratio'][e]:.2f}x**, "
                f"{100 * q['bytes_share'][e]:.0f}% of bytes ({q['files'][e]} files)"
            )
        rows.append(row)
    t = r["times"]
    wp = median(t["write_parquet"])
    ap = median(t["append_parquet"])
    cost = [
        ["df.write.parquet", f"{wp:.1f} s", "1.00x"],
        *[
            [
                f"qc.write, cubeSize {cs:,}",
                f"{median(t[f'write_qbeast_{cs}']):.1f} s",
                f"**{median(t[f'write_qbeast_{cs}']) / wp:.2f}x**",
            ]
            for cs in r["cube_sizes"]
        ],
        [f"parquet append of {r['append_rows']:,} rows", f"{ap:.2f} s", "1.00x"],
        [
            f"qc.write append of the same rows (cubeSize {r['cube_sizes'][0]:,})",
            f"{median(t['append_qbeast']):.2f} s",
            f"**{median(t['append_qbeast']) / ap:.2f}x**",
        ],
        *[
            [f"QbeastTable.forPath + planning, cubeSize {cs:,}", f"{s * 1000:.0f} ms", "-"]
            for cs, s in ((cs, r["fixed_cost_s"][f"qbeast_{cs}"]) for cs in r["cube_sizes"])
        ],
    ]
    return "\n".join(
        [
            f"TPC-H lineitem sf {r['sf']:g} ({r['rows']:,} rows), indexed on "
            + ", ".join(r["columns"])
            + ". Cells: median wall time, ratio to plain parquet in the same run, bytes of "
            "the files the read opens as a share of that table.",
            "",
            md_table(header, rows),
            "",
            md_table(["write / fixed cost", "median", "ratio"], cost),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-sizes", default="1000000,5000000")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per read")
    parser.add_argument("--write-rounds", type=int, default=3, help="timed writes and appends")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument(
        "--reuse-zorder",
        action="store_true",
        help="reuse the deltalake z-ordered copy a previous run built from the same data",
    )
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args()
    if args.quick:
        args.cube_sizes, args.repeats, args.write_rounds = "5000,20000", 1, 1

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    try:
        report = run(spark, source, args)
    finally:
        qc.stop()
    report["markdown"] = markdown(report)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(report["markdown"])


if __name__ == "__main__":
    main()
