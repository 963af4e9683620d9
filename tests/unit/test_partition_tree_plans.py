"""One OTree per time partition, without Spark: the estimation job's per-partition trees,
the one-job append's per-partition plan and the plan JSON."""

from __future__ import annotations

import json

import pyarrow as pa

from qbeast_connect.index.append_plan import weights_and_layout
from qbeast_connect.index.estimation import group_cube_size
from qbeast_connect.index.layout import FileLayout
from qbeast_connect.index.partition_trees import PartitionTree, group_offsets
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.rules.time_partitioning import TimePartitioning
from qbeast_connect.spark.small_append import in_task_partition_params
from qbeast_connect.spark.tasks import estimate_domains, estimate_partition_domains
from qbeast_connect.write_plan import WritePlan
from server_plugin.append_task import plan_in_task
from tests.unit.test_small_append_task import (
    EXISTING,
    _batches,
    _revision,
    _Status,
    _write_batches,
)

PARTITIONING = TimePartitioning.of("t", "daily")
DAYS = ("2024-01-01", "2024-01-02")


def _domains(batches: list[pa.RecordBatch], params: dict[str, object]) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in (
        r for b in estimate_domains(json.dumps(params), iter(batches)) for r in b.to_pylist()
    ):
        out[row["cube"]] = out.get(row["cube"], 0.0) + row["domain"]
    return out


def _with_day(batches: list[pa.RecordBatch], day: str) -> list[pa.RecordBatch]:
    return [b.append_column(PARTITIONING.column, pa.array([day] * b.num_rows)) for b in batches]


def test_estimation_builds_one_tree_per_partition_value() -> None:
    revision = _revision(cube_size=200)
    big, small = _batches(900, seed=1), _batches(70, seed=2)
    inner = {c: w for c, (w, _) in EXISTING.items() if w < 2**31 - 1}
    params = {"revision": revision.to_json(), "groupCubeSize": 200, "bufferCapacity": 100_000}
    # the days' batches interleaved in one task, the first day with an existing tree
    mixed = [*_with_day(big[:1], DAYS[0]), *_with_day(small, DAYS[1]), *_with_day(big[1:], DAYS[0])]
    job = dict(params, existing={DAYS[0]: inner})
    found: dict[str, dict[str, float]] = {}
    for row in (
        r for b in estimate_partition_domains(json.dumps(job), iter(mixed)) for r in b.to_pylist()
    ):
        found.setdefault(row["part"], {})[row["cube"]] = row["domain"]
    # each day's domains are exactly those of its rows alone, with its own existing tree
    assert found[DAYS[0]] == _domains(big, dict(params, existing=inner))
    assert found[DAYS[1]] == _domains(small, dict(params, existing={}))
    assert found[DAYS[1]] == {"": 70.0}  # fewer rows than a cube: the root holds them all


def test_one_job_append_plans_each_partition_with_its_own_tree() -> None:
    revision = _revision()
    statuses = {DAYS[0]: {c: _Status(w, n) for c, (w, n) in EXISTING.items()}}
    task = in_task_partition_params(statuses, 100_000, 1_000_000)
    plan = WritePlan(
        "/t", "append", 3, revision.to_json(), append_task=task, partitioning=PARTITIONING
    )
    plan = WritePlan.from_json(plan.to_json())
    first, second = _batches(800, seed=3), _batches(120, seed=5)
    rows = [*_with_day(_write_batches(first), DAYS[0]), *_with_day(_write_batches(second), DAYS[1])]
    planned, kept = plan_in_task(plan, iter(rows))
    assert sum(b.num_rows for b in kept) == 920 and planned.append_task is None
    trees = planned.partition_trees
    assert trees is not None and sorted(trees) == list(DAYS)
    # the first day grows its existing tree; the second starts a fresh one
    inner = {c: w for c, (w, _) in EXISTING.items() if w < 2**31 - 1}
    gcs = group_cube_size(revision.desired_cube_size, 1)
    params = {"revision": revision.to_json(), "groupCubeSize": gcs, "bufferCapacity": 100_000}
    counts = {CubeId.from_string(c, 2): n for c, (_, n) in EXISTING.items()}
    w0, l0 = weights_and_layout(
        revision, _domains(first, dict(params, existing=inner)), counts, 800
    )
    w1, l1 = weights_and_layout(revision, _domains(second, dict(params, existing={})), {}, 120)
    assert dict(trees[DAYS[0]].cube_weights) == w0
    assert trees[DAYS[0]].layout.to_json_value() == l0.to_json_value()
    assert dict(trees[DAYS[1]].cube_weights) == w1 == {"": 2**31 - 1}
    assert trees[DAYS[1]].layout.to_json_value() == l1.to_json_value()


def test_plan_json_carries_partition_trees_and_their_groups_apart() -> None:
    trees = {
        DAYS[1]: PartitionTree({"": 5}, FileLayout.single()),
        DAYS[0]: PartitionTree({"": -7, "A": 2**31 - 1}, FileLayout.single()),
    }
    plan = WritePlan("/t", "append", 0, None, partitioning=PARTITIONING, partition_trees=trees)
    back = WritePlan.from_json(plan.to_json())
    assert back.partition_trees == trees
    assert WritePlan.from_json(WritePlan("/t", "append", 0, None).to_json()).partition_trees is None
    # one group range per partition, in value order, and a last group for the rest
    assert group_offsets(trees) == ({DAYS[0]: 0, DAYS[1]: 1}, 3)
