"""Reading a partitioned table: partition values from the log vs from directory names.

``read_table_files`` gives a partition column the values of the log's ``partitionValues``.
With Spark's parquet reader, when every file's directory names spell its log values it
lets Spark read them from there (``basePath``: one scan, ``auto`` below, as before);
otherwise it reads each distinct partition with its own scan and adds the values as
literals (one balanced union, ``union``). This measures the three side by side, in one run,
on tables of N partitions (one small file each, a string partition column as
time-partitioned tables have), as the time of ``count()`` and of ``collect()``.

    QBEAST_BENCH_DIR=/tmp/qbeast-bench-$USER .venv/bin/python bench/partition_read_bench.py \\
        --partitions 10,100,300 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bench.common import BENCH_DIR, machine


def _table(path: str, partitions: int, rows_per_partition: int = 100) -> None:
    shutil.rmtree(path, ignore_errors=True)
    n = partitions * rows_per_partition
    write_deltalake(
        path,
        pa.table(
            {
                "id": pa.array(range(n), pa.int64()),
                "x": pa.array([i * 0.25 for i in range(n)], pa.float64()),
                "hour": pa.array([f"2024-01-01 {i % partitions:05d}" for i in range(n)]),
            }
        ),
        partition_by=["hour"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", default="10,100,300")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.paths import resolve_table_file
    from qbeast_connect.spark.files import _read_partitioned, read_table_files

    spark = qc.session()
    results = []
    try:
        for partitions in [int(p) for p in args.partitions.split(",")]:
            path = str(BENCH_DIR / "out" / f"partitioned_{partitions}")
            _table(path, partitions)
            table = qc.QbeastTable.forPath(spark, path)
            adds = pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()
            files = [
                (str(a["path"]), int(a["size_bytes"]), {"hour": a["partition.hour"]})
                for a in adds
            ]
            root, schema = table.path, table.schema

            def auto(files: Any = files, root: str = root, schema: Any = schema) -> Any:
                return read_table_files(spark, root, schema, files)

            def union(files: Any = files, root: str = root, schema: Any = schema) -> Any:
                located = [resolve_table_file(root, f[0]) for f in files]
                return _read_partitioned(spark, schema, located, [f[2] for f in files])

            def dirs(files: Any = files, root: str = root, schema: Any = schema) -> Any:
                paths = [resolve_table_file(root, f[0]) for f in files]
                return spark.read.schema(schema).option("basePath", root).parquet(*paths)

            expected = partitions * 100
            variants = {"auto": auto, "union": union, "dirs": dirs}
            assert {name: f().count() for name, f in variants.items()} == dict.fromkeys(
                variants, expected
            )  # and warm
            row: dict[str, Any] = {"partitions": partitions}
            # rounds interleave the variants, so a busy moment of the shared machine
            # weighs on all of them alike
            times: dict[str, list[float]] = {}
            for _ in range(args.rounds):
                for name, f in variants.items():
                    for action in ("count", "collect"):
                        start = time.perf_counter()
                        getattr(f(), action)()
                        times.setdefault(f"{action}_{name}_s", []).append(
                            time.perf_counter() - start
                        )
            row.update({key: statistics.median(values) for key, values in times.items()})
            for name in ("auto", "union"):
                row[f"count_{name}_vs_dirs"] = row[f"count_{name}_s"] / row["count_dirs_s"]
                row[f"collect_{name}_vs_dirs"] = row[f"collect_{name}_s"] / row["collect_dirs_s"]
            results.append(row)
            print(json.dumps(row), flush=True)
    finally:
        qc.stop()
    print(json.dumps({"machine": machine(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
