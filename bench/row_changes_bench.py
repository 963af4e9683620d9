"""Deletes that rewrite files (ours) against deletion vectors (Delta's), issue #33.

Usage: python -m bench.row_changes_bench --sf 0.1 --out bench/row_changes_sf0.1.json

One embedded server runs Delta's engine next to the plugin (``qc.session(delta=True)``).
TPC-H ``lineitem`` is written three times: a qbeast table (``qc.write`` indexed on
``l_shipdate, l_extendedprice, l_partkey``), a Delta table with deletion vectors on and one
with them off (Delta rewrites files). Each gets the same deletes, in order:

* ``indexed``: one ship date (about 0.04% of the rows, few files hold them);
* ``scattered``: ``l_orderkey % 1000 = 7`` (0.1% of the rows, in every file);

and after each, the same aggregate over every row (``sum``/``count`` of two columns). The
report gives the seconds of each delete and of the aggregate after it, and the bytes the
delete added to the table directory outside the log (new data files and vector files).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench.common import (
    fresh_dir,
    lineitem,
    lineitem_totals,
    load_average,
    machine,
    save_report,
)

DELETES = {
    "indexed": "l_shipdate = date'1995-03-15'",
    "scattered": "l_orderkey % 1000 = 7",
}


def dir_bytes(path: str) -> int:
    """Bytes of every file under ``path`` outside ``_delta_log`` (data and vectors)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        if "_delta_log" not in root:
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--cube-size", type=int, default=50_000)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session(delta=True, connect_timeout=None, retry_timeout=None)
    report: dict[str, Any] = {
        "machine": machine(),
        "sf": args.sf,
        "cube_size": args.cube_size,
        "load_before": load_average(),
        "write_s": {},
        "deletes": {},
    }
    paths = {e: fresh_dir(f"rowchanges_{e}") for e in ("qbeast", "delta_dv", "delta_rewrite")}
    df = spark.read.parquet(source)
    report["write_s"]["qbeast"] = round(
        _timed(
            lambda: qc.write(
                df,
                paths["qbeast"],
                columnsToIndex="l_shipdate,l_extendedprice,l_partkey",
                cubeSize=args.cube_size,
            )
        )[0],
        2,
    )
    for engine, dv in (("delta_dv", "true"), ("delta_rewrite", "false")):
        secs, _ = _timed(
            lambda p=paths[engine], v=dv: spark.sql(
                f"CREATE TABLE delta.`{p}` USING delta "
                f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{v}') "
                f"AS SELECT * FROM parquet.`{source}`"
            ).collect()
        )
        report["write_s"][engine] = round(secs, 2)

    def delete(engine: str, where: str) -> Any:
        if engine == "qbeast":
            return qc.QbeastTable.forPath(spark, paths[engine]).delete(where)
        return spark.sql(f"DELETE FROM delta.`{paths[engine]}` WHERE {where}").collect()

    def read(engine: str) -> Any:
        if engine == "qbeast":
            return qc.QbeastTable.forPath(spark, paths[engine]).toDF()
        return spark.read.format("delta").load(paths[engine])

    for engine in paths:  # untimed: plans of the aggregate
        lineitem_totals(read(engine))
    for name, where in DELETES.items():
        row: dict[str, Any] = {}
        answers = set()
        for engine in paths:
            before = dir_bytes(paths[engine])
            secs, _ = _timed(lambda e=engine, w=where: delete(e, w))
            added = dir_bytes(paths[engine]) - before
            agg_s, answer = _timed(lambda e=engine: lineitem_totals(read(e)))
            answers.add(tuple(round(float(v), 2) for v in answer))
            row[engine] = {
                "delete_s": round(secs, 2),
                "bytes_added": added,
                "aggregate_after_s": round(agg_s, 2),
            }
        row["same_answer"] = len(answers) == 1
        report["deletes"][name] = row
        print(name, row, flush=True)
    report["load_after"] = load_average()
    save_report(report, args.out)
    qc.stop(delta=True)


if __name__ == "__main__":
    main()
