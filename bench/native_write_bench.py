"""Prototype of the JVM-only write path against today's writer and df.write.parquet.

In ONE run, alternating, ``--rounds`` times (medians reported):

* ``df.write.parquet``;
* today's ``qc.write`` (its ``WriteResult.timings`` per phase);
* the native pipeline (``bench.native_assign``): today's statistics and
  estimation jobs, then cube assignment + repartition + sort + Spark's own parquet writer
  (no Python worker), then a block-statistics job reading back the indexed columns of the
  written files. The Delta commit is not part of the prototype (it would add one small
  driver-side step: the AddFiles from the block statistics and the parquet footers).

Correctness checks (printed, and the run fails if they do not hold): the native files hold
every input row (count and ``sum(hash(*))``); per cube, the native blocks hold the same
number of rows as the blocks of today's table when both used the same cube weights; and
for a few thousand rows the native cube equals the Python ``CubeAssigner``'s.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-native python bench/native_write_bench.py --sf 1 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_dir, lineitem, machine, md_table, median, timed, warm_up

COLUMNS = "l_shipdate,l_extendedprice,l_partkey"


def table_blocks(path: str) -> Counter[str]:
    """Rows per cube of a qbeast table, from the ``tags.blocks`` of its AddFiles."""
    counts: Counter[str] = Counter()
    for log in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            add = action.get("add")
            if add and add.get("tags", {}).get("blocks"):
                for block in json.loads(add["tags"]["blocks"]):
                    counts[block["cubeId"]] += int(block["elementCount"])
    return counts


def native_write(
    df: Any, spark: Any, cube_size: int, phases: dict[str, list[float]], shuffle: bool
) -> tuple[Any, Any, str]:
    from bench.native_assign import (
        NativeAssignment,
        block_stats,
        estimate_index,
        write_native,
    )

    out = fresh_dir("native" if shuffle else "native_noshuffle")
    revision, weights, layout, jobs = estimate_index(
        df, out, {"columnsToIndex": COLUMNS, "cubeSize": cube_size}
    )
    for name, seconds in jobs.items():
        phases.setdefault(name, []).append(seconds)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    na = NativeAssignment(revision, weights, layout, types)
    with timed(phases, "assign+sort+native write"):
        write_native(df, na, out, shuffle=shuffle)
    with timed(phases, "block stats"):
        blocks = block_stats(spark, out, na)
    return na, blocks, out


def check_rows(df: Any, na: Any, rows: int = 5000) -> int:
    """Native cube == Python CubeAssigner cube for ``rows`` rows; returns the cubes seen."""
    import numpy as np

    from bench.native_assign import cube_key
    from qbeast_connect.index.assignment import CubeAssigner
    from qbeast_connect.index.hashing_np import spark_hash_columns
    from qbeast_connect.index.normalize import normalize

    table = na.assign(df.limit(rows)).toArrow()
    columns = [table.column(n) for n in na.revision.column_names]
    points = normalize(na.revision.transformations, columns)
    weights = spark_hash_columns(columns)
    assert (table.column("_qw").to_numpy() == weights).all(), "weights differ"
    cube_weights = {n: na.max_weight(k) for k, n in na.cube_names().items() if k in na.cubes.max_weights}
    depth, coords = CubeAssigner(na.d, cube_weights).assign(points, weights)
    keys = np.asarray([cube_key(int(k), c.tolist(), na.d) for k, c in zip(depth, coords, strict=True)])
    assert (table.column("_qcube").to_numpy() == keys).all(), "cubes differ"
    return len(set(keys.tolist()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cube-size", type=int, default=500_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    source = lineitem(args.sf)
    spark = qc.session()
    df = spark.read.parquet(source)
    rows = df.count()
    checksum = df.selectExpr("sum(hash(*))").collect()[0][0]
    warm_up(df, COLUMNS)
    times: dict[str, list[float]] = {}
    today_phases: dict[str, list[float]] = {}
    native_phases: dict[str, list[float]] = {}
    local_phases: dict[str, list[float]] = {}
    checks: dict[str, Any] = {}
    files: dict[str, int] = {}
    order = ["parquet", "qbeast", "native", "native_local"]
    for round_ in range(args.rounds):
        for name in order[round_ % 4:] + order[:round_ % 4]:  # alternate who goes first
            if name == "parquet":
                out = fresh_dir("parquet")
                with timed(times, "parquet"):
                    df.write.parquet(out)
                files["parquet"] = len(list(Path(out).glob("*.parquet")))
            elif name == "qbeast":
                qpath = fresh_dir("qbeast")
                with timed(times, "qbeast"):
                    result = qc.write(df, qpath, columnsToIndex=COLUMNS, cubeSize=args.cube_size)
                files["qbeast"] = int(result.num_files or 0)
                for phase, seconds in result.timings.items():
                    today_phases.setdefault(phase, []).append(seconds)
            elif name == "native":
                with timed(times, "native"):
                    na, blocks, npath = native_write(
                        df, spark, args.cube_size, native_phases, shuffle=True
                    )
                files["native"] = len(list(Path(npath).glob("*.parquet")))
            else:
                with timed(times, "native_local"):
                    _, local_blocks, lpath = native_write(
                        df, spark, args.cube_size, local_phases, shuffle=False
                    )
                files["native_local"] = len(list(Path(lpath).rglob("*.parquet")))
        # correctness, untimed
        back = spark.read.parquet(npath)
        assert back.count() == rows, "native files lost or duplicated rows"
        assert back.selectExpr("sum(hash(*))").collect()[0][0] == checksum, "native rows differ"
        native_counts: Counter[str] = Counter()
        for _, cube, _, _, n in blocks:
            native_counts[cube] += n
        assert sum(native_counts.values()) == rows
        today = table_blocks(qpath)
        checks.setdefault("same_cube_counts_as_today", []).append(today == native_counts)
        local_counts: Counter[str] = Counter()
        for _, cube, _, _, n in local_blocks:
            local_counts[cube] += n
        local_back = spark.read.parquet(lpath).drop("_qgroup")
        assert local_back.selectExpr("sum(hash(*))").collect()[0][0] == checksum
        checks.setdefault("local_same_cubes_as_shuffled", []).append(local_counts == native_counts)
        checks["cubes_native"] = len(native_counts)
        checks["cubes_today"] = len(today)
    checks["rows_checked_against_python_assigner"] = 5000
    checks["cubes_in_checked_rows"] = check_rows(df, na)

    def ratio(key: str) -> float:
        return median(times[key]) / median(times["parquet"])

    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python bench/native_write_bench.py " + " ".join(sys.argv[1:]),
        "rows": rows,
        "sf": args.sf,
        "cube_size": args.cube_size,
        "times": times,
        "today_phases": today_phases,
        "native_phases": native_phases,
        "native_local_phases": local_phases,
        "ratio_qbeast": ratio("qbeast"),
        "ratio_native": ratio("native"),
        "ratio_native_local": ratio("native_local"),
        "files": files,
        "checks": checks,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    table = [["df.write.parquet", f"{median(times['parquet']):.1f}", "1.00", files["parquet"]],
             ["qc.write (today)", f"{median(times['qbeast']):.1f}", f"{ratio('qbeast'):.2f}", files["qbeast"]]]
    table += [[f"  today: {p}", f"{median(v):.2f}", "", ""] for p, v in today_phases.items()]
    table.append(["native pipeline", f"{median(times['native']):.1f}", f"{ratio('native'):.2f}", files["native"]])
    table += [[f"  native: {p}", f"{median(v):.2f}", "", ""] for p, v in native_phases.items()]
    table.append(["native, no shuffle", f"{median(times['native_local']):.1f}", f"{ratio('native_local'):.2f}", files["native_local"]])
    table += [[f"  no shuffle: {p}", f"{median(v):.2f}", "", ""] for p, v in local_phases.items()]
    print(md_table(["write", "median s", "ratio to parquet", "files"], table))
    qc.stop()


if __name__ == "__main__":
    main()
