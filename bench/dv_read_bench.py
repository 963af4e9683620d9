"""Reads of a table whose deleted rows are in deletion vectors, issue #32.

Usage: python -m bench.dv_read_bench --sf 0.1 --runs 3 --out bench/dv_read_sf0.1.json

One embedded server runs Delta's engine next to the plugin (``qc.session(delta=True)``).
TPC-H ``lineitem`` is written twice by Delta, with deletion vectors on and off, and the same
DELETE (``l_orderkey % 10 = 3``: 10% of the rows, in every file) runs on both: the first
table keeps its files and gets a vector per file, the second has its files rewritten
without the rows. The same aggregate (``count``, two ``sum``s) is then timed through
``QbeastTable.forPath(...).toDF()`` (qbeast-connect's read, vectors applied by the plugin's
reader) and through Delta's own ``format("delta")`` on both tables; the median of
``--runs`` runs after one untimed run.
"""

from __future__ import annotations

import argparse
import statistics
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

WHERE = "l_orderkey % 10 = 3"


def delete_into_delta_table(spark: Any, source: str, path: str, *, vectors: bool) -> None:
    """Write the parquet data at ``source`` as a Delta table at ``path`` with deletion
    vectors on or off, then run the benchmark's ``DELETE`` on it (Delta's engine)."""
    spark.sql(
        f"CREATE TABLE delta.`{path}` USING delta "
        f"TBLPROPERTIES ('delta.enableDeletionVectors' = '{str(vectors).lower()}') "
        f"AS SELECT * FROM parquet.`{source}`"
    ).collect()
    spark.sql(f"DELETE FROM delta.`{path}` WHERE {WHERE}").collect()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session(delta=True, connect_timeout=None, retry_timeout=None)
    report: dict[str, Any] = {
        "machine": machine(),
        "sf": args.sf,
        "runs": args.runs,
        "load_before": load_average(),
        "reads_s": {},
    }
    paths = {e: fresh_dir(f"dvread_{e}") for e in ("vectors", "rewritten")}
    for engine in paths:
        delete_into_delta_table(spark, source, paths[engine], vectors=engine == "vectors")
    answers = set()
    for reader in ("qbeast-connect", "delta"):
        for engine, path in paths.items():

            def frame(p: str = path, r: str = reader) -> Any:
                if r == "delta":
                    return spark.read.format("delta").load(p)
                return qc.QbeastTable.forPath(spark, p).toDF()

            answers.add(tuple(round(float(v), 2) for v in lineitem_totals(frame())))
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                lineitem_totals(frame())
                times.append(time.perf_counter() - t0)
            report["reads_s"][f"{reader}/{engine}"] = round(statistics.median(times), 3)
        ratio = report["reads_s"][f"{reader}/vectors"] / report["reads_s"][f"{reader}/rewritten"]
        report[f"{reader}_ratio"] = round(ratio, 2)
        print(reader, report["reads_s"], f"ratio {ratio:.2f}", flush=True)
    report["same_answer"] = len(answers) == 1
    report["load_after"] = load_average()
    save_report(report, args.out)
    qc.stop(delta=True)


if __name__ == "__main__":
    main()
