"""Throughput of the hot paths on 1,000,000 rows (prints timings; run with ``-s``).

No timing assertions: the numbers depend on the machine. The checks only make sure the
pipeline did the work (every row assigned, counts add up).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyarrow as pa

from qbeast_connect.index.assignment import CubeAssigner, block_summaries
from qbeast_connect.index.estimation import DomainEstimator, group_cube_size
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.index.layout import estimated_counts, plan_layout, segments_from_counts
from qbeast_connect.index.normalize import normalize
from qbeast_connect.model.transformation import HashTransformation, LinearTransformation, QDataType
from qbeast_connect.model.weight import weight_from_normalized

N = 1_000_000


def _weights_from_domains(domains: dict[str, float], dcs: int, d: int) -> dict[str, int]:
    nw: dict[str, float] = {}
    s = (d + 5) // 6
    for cube in sorted(domains, key=len):
        depth = len(cube) // s
        pw = 0.0
        if depth:
            parent = cube[: (depth - 1) * s]
            if parent not in nw or nw[parent] >= 1.0:
                continue
            pw = nw[parent]
        dom = domains[cube]
        nw[cube] = 1.0 if dom <= dcs else pw + dcs / math.floor(dom)
    return {c: weight_from_normalized(v) for c, v in nw.items()}


def _strings(rng: np.random.Generator, n: int) -> pa.Array:
    chars = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    lens = rng.integers(8, 13, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    data = chars[rng.integers(0, chars.size, int(offsets[-1]))]
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())]
    )


def test_throughput_1m_rows() -> None:
    rng = np.random.default_rng(0)
    cols = [pa.array(rng.integers(0, 10**6, N)), pa.array(rng.random(N) * 100), _strings(rng, N)]
    transformations = [
        LinearTransformation(0, 10**6, 5, QDataType.LONG),
        LinearTransformation(0.0, 100.0, 3.0, QDataType.DOUBLE),
        HashTransformation(7),
    ]
    t0 = time.perf_counter()
    weights = spark_hash_columns(cols)
    t_weight = time.perf_counter() - t0

    t0 = time.perf_counter()
    points = normalize(transformations, cols)
    t_norm = time.perf_counter() - t0

    dcs = 30_000  # about 60-80 cubes for 1M rows in 3-D
    t0 = time.perf_counter()
    est = DomainEstimator(3, group_cube_size(10**5, 10))
    est.add(points, weights)
    domains = est.finish()
    t_est = time.perf_counter() - t0
    cube_weights = _weights_from_domains(domains, dcs, 3)

    t0 = time.perf_counter()
    assigner = CubeAssigner(3, cube_weights)
    names, cube_index = assigner.assign_labels(points, weights)
    t_assign = time.perf_counter() - t0

    counts = estimated_counts(domains, cube_weights, 3)
    layout = plan_layout(segments_from_counts(counts, cube_weights, 3), dcs, rows=N)
    t0 = time.perf_counter()
    groups = layout.groups(cube_index, names, weights)
    blocks = block_summaries(groups, cube_index, weights)
    t_group = time.perf_counter() - t0

    print(
        f"\n1M rows, 3 dims: spark hash {t_weight:.3f}s | normalize {t_norm:.3f}s | "
        f"estimation (gcs {est.group_cube_size}, {est.trees_built} trees) {t_est:.3f}s | "
        f"assign ({len(cube_weights)} cubes) {t_assign:.3f}s | group+blocks {t_group:.3f}s | "
        f"normalize+assign+group {t_norm + t_assign + t_group:.3f}s"
    )
    assert domains[""] == N
    assert sum(b[3] for b in blocks) == N
    assert 40 <= len(cube_weights) <= 200
    assert len(names) == len({b[1] for b in blocks})
