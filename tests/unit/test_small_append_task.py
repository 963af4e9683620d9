"""The small-append domain task and the check that its domains equal the estimation job's."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.transformation import ColumnStats
from qbeast_connect.spark.small_append import exact_domains, may_use
from qbeast_connect.spark.tasks import append_domains, estimate_domains


def _revision(cube_size: int = 2_000) -> Revision:
    import random

    return plan_revision(
        None,
        (ColumnSpec("x"), ColumnSpec("y")),
        {"x": "double", "y": "long"},
        {"x": ColumnStats(min=0.0, max=100.0), "y": ColumnStats(min=0, max=999)},
        {},
        cube_size,
        "/t",
        1,
        random.Random(1),
    ).revision


def _batches(rows: int, seed: int, x_high: float = 100.0) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    x = pa.array(rng.uniform(0, x_high, rows))
    y = pa.array(rng.integers(0, 1_000, rows), pa.int64())
    w = pa.array(spark_hash_columns([x, y]), pa.int32())
    table = pa.table({"w": w, "c0": x, "c1": y})
    return table.to_batches(max_chunksize=300)


def _params(revision: Revision, existing: dict[str, int], **extra: Any) -> str:
    return json.dumps(
        {
            "revision": revision.to_json(),
            "groupCubeSize": revision.desired_cube_size,
            "bufferCapacity": 100_000,
            "existing": existing,
            **extra,
        }
    )


def _rows(batches: Any) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def test_append_domains_equal_the_estimation_task_on_a_small_partition() -> None:
    revision = _revision()
    # inner cubes of an existing index: the root and two children
    existing = {"": -1_500_000_000, "A": -500_000_000, "Q": -600_000_000}
    batches = _batches(800, seed=3)
    ours = _rows(append_domains(_params(revision, existing, maxRows=100_000), iter(batches)))
    # the estimation job with the group cube size it would compute for one 800-row partition
    theirs = _rows(estimate_domains(_params(revision, existing), iter(batches)))
    cubes = [r for r in ours if r["note"] is None]
    assert {r["cube"]: r["domain"] for r in cubes} == {r["cube"]: r["domain"] for r in theirs}
    assert [r["domain"] for r in ours if r["note"] == "rows"] == [800.0]
    assert len(cubes) > 3  # rows went below the existing inner cubes


def test_append_domains_report_rows_outside_the_space_and_large_partitions() -> None:
    revision = _revision()
    outside = _rows(append_domains(_params(revision, {}, maxRows=100_000),
                                   iter(_batches(500, seed=4, x_high=150.0))))
    assert [r["note"] for r in outside] == ["outside"]
    large = _rows(append_domains(_params(revision, {}, maxRows=400), iter(_batches(900, 5))))
    assert [r["note"] for r in large] == ["large"]
    # a value just above the linear bound, which the statistics would widen the revision for
    batch = _batches(10, seed=6)[0]
    x = batch.column(1).to_numpy().copy()
    x[3] = np.nextafter(100.0, 200.0)
    above = pa.RecordBatch.from_arrays([batch.column(0), pa.array(x), batch.column(2)],
                                       names=["w", "c0", "c1"])
    found = _rows(append_domains(_params(revision, {}, maxRows=100), iter([above])))
    assert [r["note"] for r in found] == ["outside"]


def test_exact_domains_accepts_only_what_the_estimation_job_would_compute() -> None:
    rows = [{"cube": "", "domain": 10.0, "note": None}, {"cube": "A", "domain": 5.0, "note": None},
            {"cube": "A", "domain": 1.0, "note": None}]
    assert exact_domains(rows, [600, 400], 2_000, 100_000, 1.0) == {"": 10.0, "A": 6.0}
    # a partition as large as the group cube size (2000 // 2 trees) could fill a cube
    assert exact_domains(rows, [1_000, 400], 2_000, 100_000, 1.0) is None
    # a sampled estimation is not what the full domains give
    assert exact_domains(rows, [600, 400], 2_000, 100_000, 0.5) is None
    # a partition reported a row outside the space
    assert exact_domains([*rows, {"cube": None, "domain": None, "note": "outside"}],
                         [600, 400], 2_000, 100_000, 1.0) is None
    assert exact_domains([], [], 2_000, 100_000, 1.0) is None


def test_may_use_needs_the_latest_revision_unchanged_by_the_options() -> None:
    revision = _revision()
    assert may_use(revision, (), None, False) and may_use(revision, (), 2_000, False)
    assert may_use(revision, (ColumnSpec("X"), ColumnSpec("y", "linear")), None, False)
    assert not may_use(revision, (), 3_000, False)
    assert not may_use(revision, (), None, True)  # columnStats may widen the revision
    assert not may_use(revision, (ColumnSpec("x"), ColumnSpec("y", "hashing")), None, False)
    assert not may_use(revision, (ColumnSpec("y"), ColumnSpec("x")), None, False)
    assert not may_use(None, (), None, False)
