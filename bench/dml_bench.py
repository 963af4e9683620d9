"""Row-level changes on a qbeast table: ours against Delta's own DML on the same table (#33).

Usage: python -m bench.dml_bench --sf 1 --out bench/dml_sf1.json

One embedded server runs Delta's engine next to the plugin (``qc.session(delta=True)``).
TPC-H ``lineitem`` is written once as a qbeast table (``qc.write`` indexed on
``l_shipdate, l_extendedprice, l_partkey``) per setting of ``delta.enableDeletionVectors``
(``--vectors off,on``), and copied, so that both engines change the very same table:

* ``ours``: ``QbeastTable.delete`` / ``update`` / ``merge`` (no Delta jar involved);
* ``delta``: Delta's ``DELETE`` / ``UPDATE`` / ``MERGE INTO`` SQL on the copy.

The changes, in order, each on the table the previous one left:

* ``delete``: 0.1% of the rows by a predicate on an indexed column (a range of ship dates);
* ``update``: 1% of the rows (``l_orderkey % 100 = 7``), a non-indexed column;
* ``merge``: ``--merge-rows`` source rows keyed on (``l_orderkey``, ``l_linenumber``), half
  of them existing rows with a new ``l_quantity`` and ``l_comment``, half new rows.

For each: wall seconds; bytes the change added outside ``_delta_log`` (new data files and
vector files); and, read through our index (``explainScan``) before and after, the bytes
``sample(0.01)`` and a 1% ``l_partkey`` filter select. The tables' rows are compared
after every change (count and sums of two columns).
"""

from __future__ import annotations

import argparse
import shutil
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
from bench.row_changes_bench import dir_bytes

INDEXED = "l_shipdate,l_extendedprice,l_partkey"
#: The 1% filter on an indexed column measured after each change (l_partkey in [1, 200,000·sf]).
FILTER = "l_partkey <= {limit}"


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def _delete_range(spark: Any, source: str) -> str:
    """A range of ship dates holding about 0.1% of the rows (whole days, from 1995-03-15)."""
    per_day = (
        spark.read.parquet(source)
        .where("l_shipdate >= date'1995-03-15'")
        .groupBy("l_shipdate")
        .count()
        .orderBy("l_shipdate")
        .limit(10)
        .collect()
    )
    total = spark.read.parquet(source).count()
    rows, last = 0, None
    for row in per_day:
        rows += row["count"]
        last = row["l_shipdate"]
        if rows >= total / 1000:
            break
    return f"l_shipdate BETWEEN date'1995-03-15' AND date'{last}'"


def _merge_source(spark: Any, source: str, rows: int, out: str) -> str:
    """``rows`` source rows: half existing keys with new values, half new keys."""
    lineitems = spark.read.parquet(source)
    total = lineitems.count()
    modulus = max(1, int(total / (rows / 2)))
    updates = lineitems.where(f"l_orderkey % {modulus} = 5").selectExpr(
        *[
            c
            if c not in ("l_quantity", "l_comment")
            else ("l_quantity + 1 AS l_quantity" if c == "l_quantity" else "'merged' AS l_comment")
            for c in lineitems.columns
        ]
    )
    inserts = lineitems.where(f"l_orderkey % {modulus} = 6").selectExpr(
        *[
            c if c != "l_orderkey" else "l_orderkey + 100000000 AS l_orderkey"
            for c in lineitems.columns
        ]
    )
    updates.unionByName(inserts).write.mode("overwrite").parquet(out)
    return out


def _scan_bytes(spark: Any, path: str, limit: int) -> dict[str, int]:
    import qbeast_connect as qc

    table = qc.QbeastTable.forPath(spark, path)
    return {
        "sample(0.01)": table.explainScan(fraction=0.01).selected_bytes,
        "filter 1%": table.explainScan(where=FILTER.format(limit=limit)).selected_bytes,
    }


def run_setting(spark: Any, source: str, vectors: str, args: Any) -> dict[str, Any]:
    """Write the table once with vectors ``vectors``, copy it, run the changes on both."""
    import qbeast_connect as qc

    paths = {"ours": fresh_dir(f"dml_ours_{vectors}"), "delta": fresh_dir(f"dml_delta_{vectors}")}
    df = spark.read.parquet(source)
    write_s, _ = _timed(
        lambda: qc.write(
            df,
            paths["ours"],
            columnsToIndex=INDEXED,
            cubeSize=args.cube_size,
            **{"delta.enableDeletionVectors": "true" if vectors == "on" else "false"},
        )
    )
    shutil.rmtree(paths["delta"], ignore_errors=True)
    shutil.copytree(paths["ours"], paths["delta"])
    limit = max(1, int(200_000 * args.sf / 100))
    merge_src = _merge_source(spark, source, args.merge_rows, fresh_dir(f"dml_src_{vectors}"))
    spark.read.parquet(merge_src).createOrReplaceTempView("merge_src")
    delete_where = _delete_range(spark, source)
    update_where = "l_orderkey % 100 = 7"
    key = "t.l_orderkey = s.l_orderkey AND t.l_linenumber = s.l_linenumber"

    def ours(change: str) -> Any:
        table = qc.QbeastTable.forPath(spark, paths["ours"])
        if change == "delete":
            return table.delete(delete_where)
        if change == "update":
            return table.update(update_where, {"l_discount": "l_discount + 0.01"})
        merged = table.alias("t").merge(spark.read.parquet(merge_src).alias("s"), key)
        return merged.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    def delta(change: str) -> Any:
        p = paths["delta"]
        if change == "delete":
            sql = f"DELETE FROM delta.`{p}` WHERE {delete_where}"
        elif change == "update":
            sql = f"UPDATE delta.`{p}` SET l_discount = l_discount + 0.01 WHERE {update_where}"
        else:
            sql = (
                f"MERGE INTO delta.`{p}` t USING merge_src s ON {key} "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
        return spark.sql(sql).collect()

    out: dict[str, Any] = {
        "vectors": vectors,
        "write_s": round(write_s, 2),
        "delete_where": delete_where,
        "merge_rows": spark.read.parquet(merge_src).count(),
        "table_bytes": dir_bytes(paths["ours"]),
        "before": _scan_bytes(spark, paths["ours"], limit),
        "changes": {},
    }
    for change in ("delete", "update", "merge"):
        row: dict[str, Any] = {}
        answers = set()
        for engine, run in (("ours", ours), ("delta", delta)):
            before = dir_bytes(paths[engine])
            secs, _ = _timed(lambda r=run, c=change: r(c))
            reads = _scan_bytes(spark, paths[engine], limit)
            answer = lineitem_totals(qc.QbeastTable.forPath(spark, paths[engine]).toDF())
            answers.add(tuple(round(float(v), 2) for v in answer))
            row[engine] = {
                "seconds": round(secs, 2),
                "bytes_added": dir_bytes(paths[engine]) - before,
                "reads_after": reads,
                "read_ratio_to_before": {
                    k: round(v / max(1, out["before"][k]), 3) for k, v in reads.items()
                },
            }
        row["same_rows"] = len(answers) == 1
        row["bytes_ratio_ours_to_delta"] = round(
            row["ours"]["bytes_added"] / max(1, row["delta"]["bytes_added"]), 4
        )
        out["changes"][change] = row
        print(vectors, change, row, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--cube-size", type=int, default=100_000)
    parser.add_argument("--merge-rows", type=int, default=100_000)
    parser.add_argument("--vectors", default="off,on")
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
        "settings": [],
    }
    for vectors in args.vectors.split(","):
        report["settings"].append(run_setting(spark, source, vectors.strip(), args))
    report["load_after"] = load_average()
    save_report(report, args.out)
    qc.stop(delta=True)


if __name__ == "__main__":
    main()
