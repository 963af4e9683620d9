"""Synthetic data sets: the write and read workloads on uniform, Zipf and clustered data.

Usage: python bench/synthetic_bench.py --rows 2000000 --cube-size 10000 --queries 10
       [--dists uniform,zipf,clustered] [--dims 2,3,4] [--datasets uniform:3,zipf:3:quantiles]
       [--out result.json]

Data (generated once with fixed numpy seeds under ``$QBEAST_BENCH_DIR/data`` and reused):
``id`` (int64), ``c0``..``c{d-1}`` (double, the indexed columns) and ``payload`` (a random
50-character string, so that files carry realistic bytes per row). Distributions, each
column drawn independently unless said otherwise:

* ``uniform``: uniform on [0, 1).
* ``zipf``: numpy ``zipf(a=1.3)`` clipped at 10**6 plus uniform [0, 1) jitter (no ties):
  about a quarter of the rows fall in [1, 2) while the range reaches 10**6, so nearly all
  the data sits in a tiny corner of the indexed space.
* ``clustered``: 98% of the rows in 8 Gaussian clusters (sigma 0.01 per column, centres
  uniform in [0.1, 0.9]^d, unequal weights), 2% uniform background noise; the columns are
  strongly correlated.

For each data set, side by side in one Spark session: ``df.write.parquet`` and the qbeast
write (then ``optimize``), ``deltalake.write_deltalake`` + ``optimize.z_order`` on all the
indexed columns (its target file size tuned to about the qbeast table's file count), the
sampling table and the range-filter table of ``bench/read_workloads.py``.

Matrix: with neither ``--dists`` nor ``--dims`` nor ``--datasets``, every distribution at 3
dimensions plus uniform at 2 and 4, and Zipf at 3 indexed with the ``quantiles``
transformer (:data:`DEFAULT_MATRIX`): the distributions are compared at one dimensionality,
the effect of the dimensionality on one distribution, and the remedy for skew (quantiles
from ``qc.computeQuantilesForColumn``, their time counted in the write), in six data sets.
``--dists``/``--dims`` run their cross product with linear transformers (a missing one means
all values); ``--datasets dist:dims[:quantiles],...`` names the data sets one by one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BENCH_DIR, dir_bytes, fresh_dir, machine, md_table, optimized, save_report
from bench.read_workloads import print_tables, read_workloads, sql_literal

DISTRIBUTIONS = ("uniform", "zipf", "clustered")
DIMENSIONS = (2, 3, 4)
DEFAULT_MATRIX = (
    ("uniform", 3, "linear"),
    ("zipf", 3, "linear"),
    ("zipf", 3, "quantiles"),
    ("clustered", 3, "linear"),
    ("uniform", 2, "linear"),
    ("uniform", 4, "linear"),
)
TRANSFORMS = ("linear", "quantiles")
SEED = 20240607
CHUNK_ROWS = 500_000
PAYLOAD_CHARS = 50
ZIPF_A = 1.3
ZIPF_CLIP = 1e6
CLUSTERS = 8
CLUSTER_SIGMA = 0.01
NOISE_SHARE = 0.02


def _columns(dims: int) -> list[str]:
    return [f"c{i}" for i in range(dims)]


def _values(dist: str, dims: int, rows: int, chunk: int) -> Any:
    """The ``rows`` x ``dims`` indexed values of one chunk (its own fixed seed)."""
    import numpy as np

    rng = np.random.default_rng([SEED, DISTRIBUTIONS.index(dist), dims, chunk])
    if dist == "uniform":
        return rng.random((rows, dims))
    if dist == "zipf":
        heavy = np.minimum(rng.zipf(ZIPF_A, size=(rows, dims)), ZIPF_CLIP).astype(np.float64)
        return heavy + rng.random((rows, dims))
    if dist == "clustered":
        # the clusters are the same in every chunk: drawn from a seed without the chunk
        shape = np.random.default_rng([SEED, DISTRIBUTIONS.index(dist), dims])
        centres = shape.uniform(0.1, 0.9, size=(CLUSTERS, dims))
        weights = shape.dirichlet(np.ones(CLUSTERS))
        which = rng.choice(CLUSTERS, size=rows, p=weights)
        out = centres[which] + rng.normal(0.0, CLUSTER_SIGMA, size=(rows, dims))
        noise = rng.random(rows) < NOISE_SHARE
        out[noise] = rng.random((int(noise.sum()), dims))
        return out
    raise ValueError(f"unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")


def _payload(rng: Any, rows: int) -> Any:
    """``rows`` random strings of ``PAYLOAD_CHARS`` lowercase letters, as one Arrow array."""
    import numpy as np
    import pyarrow as pa

    data = rng.integers(ord("a"), ord("z") + 1, size=rows * PAYLOAD_CHARS, dtype=np.uint8)
    offsets = np.arange(0, (rows + 1) * PAYLOAD_CHARS, PAYLOAD_CHARS, dtype=np.int32)
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data))


def generate(dist: str, dims: int, rows: int) -> str:
    """Path of the parquet data set (generated once: reused when its marker file exists)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = BENCH_DIR / "data" / f"synthetic_{dist}_d{dims}_n{rows}"
    done = path / "_GENERATED"
    if done.exists():
        return str(path)
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.parquet"):
        old.unlink()
    for chunk, start in enumerate(range(0, rows, CHUNK_ROWS)):
        n = min(CHUNK_ROWS, rows - start)
        values = _values(dist, dims, n, chunk)
        payload_rng = np.random.default_rng([SEED, 99, chunk])
        columns = {"id": pa.array(np.arange(start, start + n, dtype=np.int64))}
        for i, name in enumerate(_columns(dims)):
            columns[name] = pa.array(values[:, i])
        columns["payload"] = _payload(payload_rng, n)
        pq.write_table(pa.table(columns), path / f"part-{chunk:05d}.parquet")
    done.write_text(json.dumps({"dist": dist, "dims": dims, "rows": rows, "seed": SEED}))
    return str(path)


def bench_one(
    spark: Any, dist: str, dims: int, transform: str, args: argparse.Namespace
) -> dict[str, Any]:
    """Every measure of one data set."""
    import qbeast_connect as qc

    t0 = time.perf_counter()
    source = generate(dist, dims, args.rows)
    generate_s = time.perf_counter() - t0
    columns = _columns(dims)
    df = spark.read.parquet(source)
    rows = df.count()

    # writes: parquet first, then qbeast, from the same cached-by-the-OS source files
    out = fresh_dir("synthetic_parquet")
    t0 = time.perf_counter()
    df.write.parquet(out)
    parquet_s = time.perf_counter() - t0
    parquet_files = len(list(Path(out).glob("*.parquet")))
    parquet_bytes = dir_bytes(out)
    path = fresh_dir("synthetic_qbeast")
    t0 = time.perf_counter()
    options: dict[str, Any] = {"columnsToIndex": ",".join(columns), "cubeSize": args.cube_size}
    if transform == "quantiles":
        stats = {f"{c}_quantiles": qc.computeQuantilesForColumn(df, c) for c in columns}
        options["columnsToIndex"] = ",".join(f"{c}:quantiles" for c in columns)
        options["columnStats"] = json.dumps(stats)
    quantiles_s = time.perf_counter() - t0
    written = qc.write(df, path, **options)
    write_s = time.perf_counter() - t0
    table = qc.QbeastTable.forPath(spark, path)
    table, optimize_s = optimized(table)
    metrics = table.getIndexMetrics()
    report: dict[str, Any] = {
        "name": f"{dist} {dims}D" + (" quantiles" if transform == "quantiles" else ""),
        "distribution": dist,
        "dims": dims,
        "transform": transform,
        "quantiles_s": quantiles_s,
        "columns": columns,
        "rows": rows,
        "source": source,
        "source_bytes": dir_bytes(source),
        "generate_s": generate_s,
        "parquet_write_s": parquet_s,
        "parquet_files": parquet_files,
        "parquet_bytes": parquet_bytes,
        "write_s": write_s,
        "write_ratio": write_s / parquet_s,
        "files_written": written.num_files,
        "optimize_s": optimize_s,
        "files": metrics.file_count,
        "height": metrics.height,
        "min_height": metrics.min_height,
        "bytes": metrics.bytes,
    }
    report.update(
        read_workloads(
            spark, source, table, columns, args.queries, sql_literal, zorder_name="synthetic_zorder"
        )
    )
    return report


def _matrix(args: argparse.Namespace) -> list[tuple[str, int, str]]:
    if args.datasets:
        out = []
        for item in args.datasets.split(","):
            dist, _, rest = item.strip().partition(":")
            dims, _, transform = rest.partition(":")
            out.append((dist, int(dims), transform or "linear"))
    elif args.dists is None and args.dims is None:
        out = list(DEFAULT_MATRIX)
    else:
        dists = args.dists.split(",") if args.dists else list(DISTRIBUTIONS)
        dims_list = [int(d) for d in args.dims.split(",")] if args.dims else list(DIMENSIONS)
        out = [(d.strip(), k, "linear") for d in dists for k in dims_list]
    for dist, dims, transform in out:
        if transform not in TRANSFORMS:
            raise SystemExit(f"unknown transformer {transform!r}; known: {', '.join(TRANSFORMS)}")
        if dist not in DISTRIBUTIONS:
            raise SystemExit(f"unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")
        if not 1 <= dims <= 8:
            raise SystemExit(f"dimensions must be 1..8, got {dims}")
    return out


def summary_md(datasets: list[dict[str, Any]]) -> str:
    """One line per data set: writes, layout and the 2-column 1% filter case."""
    rows = []
    for d in datasets:
        two = next(
            (
                f
                for f in d["filters"]
                if f["dims"] == min(2, d["dims"]) and f["selectivity"] == 0.01
            ),
            None,
        )
        amps = ["-", "-", "-"]
        if two:
            amps = [
                "-" if two.get(k) is None else f"{two[k]:.1f}x"
                for k in (
                    "amplification_qbeast",
                    "amplification_zorder",
                    "amplification_zorder_ranks",
                )
            ]
        rows.append(
            [
                d["name"],
                f"{d['write_ratio']:.2f}x",
                f"{d['files']} / {d['zorder_files']}",
                f"{d['height']} ({d['min_height']})",
                " / ".join(amps),
            ]
        )
    return md_table(
        [
            "data set",
            "qbeast / parquet write",
            "files qbeast / deltalake",
            "height (ideal)",
            "2 col 1% amplification: qbeast / deltalake z-order / Z-curve on ranks",
        ],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cube-size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--dists", default=None, help="e.g. uniform,zipf,clustered")
    parser.add_argument("--dims", default=None, help="e.g. 2,3,4")
    parser.add_argument("--datasets", default=None, help="e.g. uniform:2,zipf:3:quantiles (overrides)")
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args()
    matrix = _matrix(args)

    import qbeast_connect as qc

    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "command": "python bench/synthetic_bench.py " + " ".join(sys.argv[1:]),
        "rows": args.rows,
        "cube_size": args.cube_size,
        "queries": args.queries,
        "matrix": [f"{dist}:{dims}:{transform}" for dist, dims, transform in matrix],
        "datasets": [],
    }
    spark = qc.session()
    try:
        for dist, dims, transform in matrix:
            print(f"-- {dist} {dims}D {transform}, {args.rows:,} rows", flush=True)
            one = bench_one(spark, dist, dims, transform, args)
            report["datasets"].append(one)
            print_tables(one)
            print(flush=True)
    finally:
        qc.stop()
    save_report(report, args.out)
    print()
    print(summary_md(report["datasets"]))


if __name__ == "__main__":
    main()
