"""The plugin's write task alone, in this process: its Python cost per row, phase by phase.

Feeds one task's share of TPC-H lineitem (Arrow batches of 10,000 rows, the types Spark
sends) through ``server_plugin.writer.write_task`` with the plan a real write of the whole
table gets (revision from the data's bounds, cube weights from the local-OTree estimation,
file layout), and reports the task's phases (``server_plugin.write_profile``) and CPU
seconds next to pyarrow writing the same rows to one parquet file. No Spark is involved,
so the numbers hold still on a busy machine (CPU seconds, not wall time).

Usage: python bench/write_task_bench.py --sf 1 [--rows 3000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import lineitem, median

COLUMNS = ("l_shipdate", "l_extendedprice", "l_partkey")


def _plan(table: Any, path: str, total: int, cube_size: int) -> Any:
    """The write plan ``qc.write`` makes for ``total`` rows like ``table``'s."""
    import pyarrow.compute as pc

    from qbeast_connect.index.append_plan import weights_and_layout
    from qbeast_connect.index.estimation import DomainEstimator, group_cube_size
    from qbeast_connect.index.normalize import normalize
    from qbeast_connect.model.column_spec import ColumnSpec
    from qbeast_connect.model.revision import plan_revision
    from qbeast_connect.model.transformation import ColumnStats, QDataType
    from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan

    stats = {
        "l_shipdate": ColumnStats(
            min=int(pc.min(table["l_shipdate"]).cast("int32").as_py()) * 86_400_000,
            max=int(pc.max(table["l_shipdate"]).cast("int32").as_py()) * 86_400_000,
        ),
        "l_extendedprice": ColumnStats(
            min=float(pc.min(table["l_extendedprice"]).as_py()),
            max=float(pc.max(table["l_extendedprice"]).as_py()),
        ),
        "l_partkey": ColumnStats(
            min=int(pc.min(table["l_partkey"]).as_py()), max=int(pc.max(table["l_partkey"]).as_py())
        ),
    }
    types = {
        "l_shipdate": QDataType.DATE, "l_extendedprice": QDataType.DECIMAL,
        "l_partkey": QDataType.LONG,
    }
    revision = plan_revision(
        None, tuple(ColumnSpec(c) for c in COLUMNS), types, stats, {}, cube_size, path,
        1_700_000_000_000, random.Random(1),
    ).revision
    fraction = table.num_rows / total
    estimator = DomainEstimator(
        3, group_cube_size(max(1, int(cube_size * fraction)), 1), 100_000
    )
    points = normalize(revision.transformations, [table[c] for c in COLUMNS])
    estimator.add(points, table[WEIGHT_COLUMN].to_numpy())
    domains = {c: v / fraction for c, v in estimator.finish().items()}
    weights, layout = weights_and_layout(revision, domains, {}, total)
    return WritePlan(
        table_path=path, mode="append", read_version=-1, revision_json=revision.to_json(),
        cube_weights=weights, layout=layout, txn_id=str(uuid.uuid4()),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--rows", type=int, default=3_000_000, help="rows of the task")
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.write_plan import WEIGHT_COLUMN
    from server_plugin import write_profile, writer

    source = ds.dataset(lineitem(args.sf))
    total = source.count_rows()
    table = source.head(args.rows)
    weights = spark_hash_columns([table[c] for c in COLUMNS])
    table = table.append_column(WEIGHT_COLUMN, pa.array(weights, pa.int32()))
    table = table.combine_chunks()
    work = Path(tempfile.mkdtemp(prefix="qbeast-write-task-"))
    plan = _plan(table, str(work), total, args.cube_size)
    batches = table.to_batches(max_chunksize=args.batch)
    profile = work / "profile.jsonl"
    os.environ[write_profile.PROFILE_ENV] = str(profile)
    runs: list[dict[str, float]] = []
    reference: list[float] = []
    for _ in range(args.rounds):
        shutil.rmtree(work / "t", ignore_errors=True)
        (work / "t").mkdir()
        plan_here = _plan_at(plan, str(work / "t"))
        cpu = time.process_time()
        wall = time.perf_counter()
        message = writer.write_task(plan_here, iter(batches))
        run = json.loads(profile.read_text().splitlines()[-1])
        run["cpu"] = time.process_time() - cpu
        run["wall"] = time.perf_counter() - wall
        run["files"] = len(message.files)
        runs.append(run)
        # reference: the same rows, one parquet file, pyarrow defaults and snappy
        cpu = time.process_time()
        pq.write_table(pa.Table.from_batches(batches).drop_columns([WEIGHT_COLUMN]),
                       work / "reference.parquet", compression="snappy")
        reference.append(time.process_time() - cpu)
    keys = [k for k in runs[0] if k not in ("pid",)]
    summary = {k: round(median([float(r.get(k, 0.0)) for r in runs]), 3) for k in keys}
    summary["pyarrow_write_table_cpu"] = round(median(reference), 3)
    report = {"command": "python bench/write_task_bench.py " + " ".join(sys.argv[1:]),
              "rows": table.num_rows, "groups": plan.layout.group_count, "median": summary}
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    shutil.rmtree(work, ignore_errors=True)


def _plan_at(plan: Any, path: str) -> Any:
    import dataclasses

    return dataclasses.replace(plan, table_path=path)


if __name__ == "__main__":
    main()
