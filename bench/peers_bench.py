"""qbeast-connect beside Delta Lake's liquid clustering, on one Spark, as ratios to parquet.

Usage: python -m bench.peers_bench --sf 1 --cube-size 1000000 --runs 3 --out bench/peers_sf1.json

One embedded Connect server runs Delta's engine next to the qbeast plugin
(``qc.session(delta=True)``). On TPC-H ``lineitem`` it writes:

* ``parquet``: Spark's plain parquet copy, the baseline of every ratio;
* ``qbeast``: ``qc.write`` indexed on ``l_shipdate, l_extendedprice, l_partkey``;
* ``delta_liquid``: ``CREATE TABLE ... USING delta CLUSTER BY`` the same columns as a
  select of the parquet copy, then ``OPTIMIZE`` (Delta 4.x, Hilbert clustering), with
  Delta's target file size set to the qbeast table's mean file size (Delta's default,
  1 GiB, makes one file at these scales: nothing to skip).

Then it times the query bench's aggregate (``bench/query_bench.aggregate``) under its
three filter shapes (1 column 1%, 2 columns 1%, 3 columns 0.1%) and ``sample(0.01)``:
``QbeastTable.sample`` for qbeast, Spark's ``DataFrame.sample`` for the others (Delta
has no index sampling: it reads every file). Each query runs ``--runs`` times after one
untimed run; the median is reported with the bytes the server's JVM read
(``bench.layout_bench.ReadMeter``), every figure also as a ratio to parquet's in the
same run. Filter answers are compared across engines.

qbeast-spark, the third peer the issue names, is not here: its release jars are not
served by the package registries this machine reaches (see BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from bench.common import dir_bytes, fresh_dir, lineitem, load_average, machine, save_report
from bench.layout_bench import ReadMeter
from bench.query_bench import COLUMNS, aggregate, shapes


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ui-port", type=int, default=4073)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.spark.session import embedded_server

    source = lineitem(args.sf)
    spark = qc.session(
        delta=True,
        connect_timeout=None,
        retry_timeout=None,
        **{"spark.ui.enabled": "true", "spark.ui.port": str(args.ui_port)},
    )
    server = embedded_server(delta=True)
    assert server is not None and server.pid is not None
    meter = ReadMeter(args.ui_port, server.pid)
    report: dict[str, Any] = {
        "machine": machine(),
        "sf": args.sf,
        "cube_size": args.cube_size,
        "load_before": load_average(),
        "write_s": {},
        "bytes_on_disk": {},
        "queries": {},
    }
    df = spark.read.parquet(source)
    df.limit(1000).write.mode("overwrite").parquet(fresh_dir("peers_warm"))  # warm-up
    paths = {e: fresh_dir(f"peers_{e}") for e in ("parquet", "qbeast", "delta_liquid")}

    secs, _ = _timed(lambda: df.write.mode("overwrite").parquet(paths["parquet"]))
    report["write_s"]["parquet"] = round(secs, 2)
    secs, _ = _timed(
        lambda: qc.write(
            df, paths["qbeast"], columnsToIndex=",".join(COLUMNS), cubeSize=args.cube_size
        )
    )
    report["write_s"]["qbeast"] = round(secs, 2)
    cols = ", ".join(COLUMNS)
    # the same file granularity for both layouts: Delta's OPTIMIZE aims at files of 1 GiB
    # by default, which at these scales is one file and leaves clustering nothing to skip
    table_files = qc.QbeastTable.forPath(spark, paths["qbeast"]).snapshot.files
    target = max(1 << 20, sum(f.size for f in table_files) // max(len(table_files), 1))
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
    report["delta_max_file_size"] = target
    secs, _ = _timed(
        lambda: spark.sql(
            f"CREATE TABLE delta.`{paths['delta_liquid']}` USING delta CLUSTER BY ({cols}) "
            f"AS SELECT * FROM parquet.`{source}`"
        ).collect()
    )
    opt, _ = _timed(lambda: spark.sql(f"OPTIMIZE delta.`{paths['delta_liquid']}`").collect())
    report["write_s"]["delta_liquid_create"] = round(secs, 2)
    report["write_s"]["delta_liquid_optimize"] = round(opt, 2)
    report["write_s"]["delta_liquid"] = round(secs + opt, 2)
    for engine, path in paths.items():
        report["bytes_on_disk"][engine] = dir_bytes(path)
    print(json.dumps(report["write_s"]), flush=True)

    plain = spark.read.parquet(paths["parquet"])
    table = qc.QbeastTable.forPath(spark, paths["qbeast"])
    delta = spark.read.format("delta").load(paths["delta_liquid"])
    queries: list[tuple[str, dict[str, Any]]] = [
        (
            s["name"],
            {
                "parquet": lambda w=s["where"]: plain.filter(w),
                "qbeast": lambda w=s["where"]: table.filter(w),
                "delta_liquid": lambda w=s["where"]: delta.filter(w),
            },
        )
        for s in shapes(source)
    ]
    queries.append(
        (
            "sample(0.01)",
            {
                "parquet": lambda: plain.sample(fraction=0.01, seed=7),
                "qbeast": lambda: table.sample(0.01),
                "delta_liquid": lambda: delta.sample(fraction=0.01, seed=7),
            },
        )
    )
    for name, makers in queries:
        row: dict[str, Any] = {}
        answers: dict[str, Any] = {}
        for engine, make in makers.items():
            aggregate(make())  # untimed: plans and caches of this shape
            times = []
            for _ in range(args.runs):
                secs, answers[engine] = _timed(lambda m=make: aggregate(m()))
                times.append(secs)
            _, measured = meter.measure(lambda m=make: aggregate(m()))
            row[engine] = {
                "seconds": round(statistics.median(times), 3),
                "bytes": measured["bytes"],
                "share_of_table": round(measured["bytes"] / report["bytes_on_disk"][engine], 4),
            }
        for engine in ("qbeast", "delta_liquid"):
            row[engine]["time_vs_parquet"] = round(
                row[engine]["seconds"] / row["parquet"]["seconds"], 3
            )
            row[engine]["bytes_vs_parquet"] = round(
                row[engine]["bytes"] / max(row["parquet"]["bytes"], 1), 4
            )
        if not name.startswith("sample"):
            row["answers_equal"] = (
                answers["parquet"] == answers["qbeast"] == answers["delta_liquid"]
            )
        report["queries"][name] = row
        print(name, json.dumps(row), flush=True)
    for engine in ("qbeast", "delta_liquid"):
        report["write_s"][f"{engine}_vs_parquet"] = round(
            report["write_s"][engine] / report["write_s"]["parquet"], 2
        )
    report["load_after"] = load_average()
    save_report(report, args.out)
    qc.stop(delta=True)


if __name__ == "__main__":
    main()
