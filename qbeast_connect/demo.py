"""The end-to-end demo: index TPC-H ``lineitem`` and read less with samples and filters.

Run ``python -m qbeast_connect.demo [--sf 0.1] [--workdir DIR]``. It generates the data set
offline with DuckDB's TPC-H extension, starts an embedded Spark Connect server (unless
``SPARK_REMOTE`` is set), indexes the table on three columns, then samples and filters it,
showing how many files and bytes the index skipped, and checks every answer against a full
scan.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import sys
import time
from pathlib import Path

from qbeast_connect.exceptions import MissingDependencyError


def generate_lineitem(scale_factor: float, out_dir: str) -> str:
    """Write TPC-H ``lineitem`` at ``scale_factor`` as parquet into ``out_dir``; return the path.

    Raises:
        MissingDependencyError: duckdb or its TPC-H extension is not installed.
    """
    try:
        import duckdb
    except ImportError as exc:
        raise MissingDependencyError(
            "the demo data needs duckdb: pip install 'qbeast-connect[demo]'"
        ) from exc
    target = Path(out_dir) / f"lineitem_sf{scale_factor:g}"
    if (target / "_SUCCESS").exists():
        return str(target)
    target.mkdir(parents=True, exist_ok=True)
    pattern = os.path.join(
        os.path.dirname(duckdb.__file__), "..", "duckdb_ext", "extensions", "*", "*",
        "tpch.duckdb_extension",
    )
    found = sorted(glob.glob(pattern))
    if not found:  # pragma: no cover - only without the packaged extension
        raise MissingDependencyError(
            "the TPC-H extension is missing: pip install 'duckdb-ext-tpch==1.4.4.20260205'"
        )
    # dbgen holds every TPC-H table in memory (about 1.5 GB per unit of sf): above sf 3 it
    # runs in steps of about sf 3 (dbgen's own children/step split), one file per step
    steps = max(1, math.ceil(scale_factor / 3))
    for step in range(steps):
        con = duckdb.connect()
        con.execute(f"LOAD '{os.path.realpath(found[-1])}'")
        split = f", children={steps}, step={step}" if steps > 1 else ""
        con.execute(f"CALL dbgen(sf={scale_factor}{split})")
        name = "lineitem.parquet" if steps == 1 else f"lineitem-{step:03d}.parquet"
        con.execute(f"COPY lineitem TO '{target}/{name}' (FORMAT parquet, ROW_GROUP_SIZE 122880)")
        con.close()
    (target / "_SUCCESS").write_text("")
    return str(target)


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sf", type=float, default=0.1, help="TPC-H scale factor (0.1 = 600k rows)"
    )
    parser.add_argument("--workdir", default="qbeast-demo", help="where data and the table go")
    parser.add_argument("--cube-size", type=int, default=20_000)
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    import qbeast_connect as qc

    work = Path(args.workdir).resolve()
    t0 = time.time()
    source = generate_lineitem(args.sf, str(work / "data"))
    print(f"[1/5] TPC-H lineitem sf={args.sf:g} generated at {source} ({time.time() - t0:.1f} s)")

    t0 = time.time()
    spark = qc.session()
    where = os.environ.get("SPARK_REMOTE") or "an embedded local server"
    print(f"[2/5] Spark Connect session on {where} ({time.time() - t0:.1f} s)")

    df = spark.read.parquet(source)
    table_path = str(work / "lineitem_qbeast")
    columns = "l_shipdate,l_extendedprice,l_partkey"
    t0 = time.time()
    result = qc.write(df, table_path, columnsToIndex=columns, cubeSize=args.cube_size,
                      mode="overwrite")
    print(
        f"[3/5] indexed {result.num_rows:,} rows on ({columns}) into {result.num_files} files, "
        f"Delta version {result.version} ({time.time() - t0:.1f} s)"
    )
    table = qc.QbeastTable.forPath(spark, table_path)
    metrics = table.getIndexMetrics()
    print(
        f"      index: {metrics.cube_count} cubes, height {metrics.height} "
        f"(ideal {metrics.min_height}), {metrics.file_count} files, "
        f"{metrics.bytes / 1e6:.1f} MB"
    )
    total = table.toDF().count()

    print("[4/5] sample(0.01): deterministic 1% sample read from the top of the tree")
    scan = table.explainScan(fraction=0.01)
    sample_count = table.sample(0.01).count()
    print(f"      {sample_count:,} rows of {total:,} ({sample_count / total:.2%})")
    print("      " + str(scan).replace("\n", "\n      "))

    condition = (
        "l_shipdate >= DATE '1995-01-01' AND l_shipdate < DATE '1995-02-01' "
        "AND l_extendedprice < 20000"
    )
    print(f"[5/5] filter: {condition}")
    scan = table.explainScan(where=condition)
    got = table.filter(condition)
    expected = df.filter(condition)
    got_count = got.count()
    checksum = F.sum(F.hash("l_orderkey", "l_linenumber").cast("long"))
    same = (
        got_count == expected.count()
        and got.agg(checksum).collect()[0][0] == expected.agg(checksum).collect()[0][0]
    )
    print(f"      {got_count:,} rows; identical to a full scan of the source: {same}")
    print("      " + str(scan).replace("\n", "\n      "))
    print(f"      files read: {len(got.inputFiles())} of {metrics.file_count}")
    qc.stop()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
