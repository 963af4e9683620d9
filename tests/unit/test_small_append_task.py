"""The one-job small append's task planner (``server_plugin.append_task``): it computes what
the estimation job and the client would, or declines the rows before writing anything."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from qbeast_connect.exceptions import QbeastError, error_from_text
from qbeast_connect.index.append_plan import weights_and_layout
from qbeast_connect.index.estimation import group_cube_size
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.index.layout import FileLayout, band_edges
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.transformation import ColumnStats
from qbeast_connect.spark.small_append import declined, in_task_params, may_use
from qbeast_connect.spark.tasks import estimate_domains
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan
from server_plugin.append_task import SmallAppendDeclinedError, plan_in_task

#: Inner cubes of an existing index (root and two children) with their element counts.
EXISTING = {"": (-1_500_000_000, 2_000), "A": (-500_000_000, 2_000), "Q": (-600_000_000, 2_000),
            "AA": (2**31 - 1, 700), "g": (2**31 - 1, 300)}


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
    return list(table.to_batches(max_chunksize=300))


def _write_batches(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The batches as the write task sees them: data columns x, y and the weight column."""
    return [
        pa.RecordBatch.from_arrays(
            [b.column(1), b.column(2), b.column(0)], names=["x", "y", WEIGHT_COLUMN]
        )
        for b in batches
    ]


class _Status:
    def __init__(self, max_weight: int, element_count: int) -> None:
        self.max_weight, self.element_count = max_weight, element_count


def _regular_path(
    revision: Revision, batches: list[pa.RecordBatch], rows: int, top_rows: int | None = None
) -> tuple[dict[str, float], dict[str, int], FileLayout]:
    """What the regular path computes for these rows in one partition: the estimation
    job's domains (group cube size of one tree), then the client's weights and layout."""
    inner = {c: w for c, (w, _) in EXISTING.items() if w < 2**31 - 1}
    params = json.dumps({"revision": revision.to_json(),
                         "groupCubeSize": group_cube_size(revision.desired_cube_size, 1),
                         "bufferCapacity": 100_000, "existing": inner})
    domains: dict[str, float] = {}
    for row in (r for b in estimate_domains(params, iter(batches)) for r in b.to_pylist()):
        domains[row["cube"]] = domains.get(row["cube"], 0.0) + row["domain"]
    counts = {CubeId.from_string(c, 2): n for c, (_, n) in EXISTING.items()}
    weights, layout = weights_and_layout(revision, domains, counts, rows, top_rows)
    return domains, weights, layout


def _plan(revision: Revision, max_rows: int = 100_000) -> WritePlan:
    statuses = {c: _Status(w, n) for c, (w, n) in EXISTING.items()}
    task = in_task_params(statuses, 100_000, 1_000_000)
    task["maxRows"] = min(task["maxRows"], max_rows)
    plan = WritePlan("/t", "append", 3, revision.to_json(), append_task=task)
    return WritePlan.from_json(plan.to_json())  # as the server receives it


def test_in_task_plan_equals_the_estimation_job_and_the_client_weights() -> None:
    revision = _revision()
    batches = _batches(800, seed=3)
    planned, rows = plan_in_task(_plan(revision), iter(_write_batches(batches)))
    assert sum(b.num_rows for b in rows) == 800 and planned.append_task is None

    domains, weights, layout = _regular_path(revision, batches, 800)
    assert len(domains) > 3  # rows went below the existing inner cubes
    assert dict(planned.cube_weights) == weights
    assert planned.layout.to_json_value() == layout.to_json_value()


@pytest.mark.parametrize(
    ("rows", "x_high", "max_rows", "reason"),
    [
        (500, 150.0, 100_000, "beyond the revision's bounds"),
        (900, 100.0, 400, "more than 400 rows"),
        (2_500, 100.0, 100_000, "fill a cube"),  # one tree of 2,500 rows, cubes of 2,000
    ],
    ids=["outside", "too-many-rows", "fills-a-cube"],
)
def test_in_task_plan_declines_rows_the_regular_path_must_index(
    rows: int, x_high: float, max_rows: int, reason: str
) -> None:
    revision = _revision()
    batches = _write_batches(_batches(rows, seed=4, x_high=x_high))
    with pytest.raises(SmallAppendDeclinedError, match=reason) as caught:
        plan_in_task(_plan(revision, max_rows), iter(batches))
    # as the client sees it: the Spark error text, translated into a QbeastError
    text = f"PythonException: {caught.value}\n  File ..."
    translated = error_from_text(text)
    assert isinstance(translated, QbeastError) and declined(translated)
    assert not declined(RuntimeError("[QBEAST_ERROR] something else"))


def test_a_compaction_task_indexes_rows_that_fill_a_cube_with_fine_top_bands() -> None:
    """An automatic compaction's task (``in_task_params(compaction=...)``) takes rows that
    fill a cube of their one local tree (an append's task declines them) and plans the
    compaction's layout: top band of about cubeSize / 32 rows, as the client would for the
    same domains."""
    revision = _revision()
    statuses = {c: _Status(w, n) for c, (w, n) in EXISTING.items()}
    task = in_task_params(statuses, 100_000, 1_000_000, compaction=2_000)
    assert task["topRows"] == 62 and task["compaction"] is True
    plan = WritePlan.from_json(
        WritePlan("/t", "append", 3, revision.to_json(), append_task=task).to_json()
    )
    batches = _batches(2_500, seed=4)
    planned, rows = plan_in_task(plan, iter(_write_batches(batches)))
    assert sum(b.num_rows for b in rows) == 2_500
    _domains, weights, layout = _regular_path(revision, batches, 2_500, top_rows=62)
    assert dict(planned.cube_weights) == weights
    assert planned.layout.to_json_value() == layout.to_json_value()
    assert planned.layout.edges == band_edges(2_500, 2_000, 62)  # 1/32 ... 1/2
    assert len(planned.layout.edges) == 5
    # rows outside the revision's space still go to the regular path
    with pytest.raises(SmallAppendDeclinedError, match="bounds"):
        plan_in_task(plan, iter(_write_batches(_batches(500, seed=4, x_high=150.0))))


def test_in_task_plan_declines_a_value_just_above_a_linear_bound() -> None:
    revision = _revision()
    batch = _batches(10, seed=6)[0]
    x = batch.column(1).to_numpy().copy()
    x[3] = np.nextafter(100.0, 200.0)  # the statistics would widen the revision for it
    above = pa.RecordBatch.from_arrays([batch.column(0), pa.array(x), batch.column(2)],
                                       names=["w", "c0", "c1"])
    with pytest.raises(SmallAppendDeclinedError, match="bounds"):
        plan_in_task(_plan(revision), iter(_write_batches([above])))


def test_may_use_needs_the_latest_revision_unchanged_by_the_options() -> None:
    revision = _revision()
    assert may_use(revision, (), None, False) and may_use(revision, (), 2_000, False)
    assert may_use(revision, (ColumnSpec("X"), ColumnSpec("y", "linear")), None, False)
    assert not may_use(revision, (), 3_000, False)
    assert not may_use(revision, (), None, True)  # columnStats may widen the revision
    assert not may_use(revision, (ColumnSpec("x"), ColumnSpec("y", "hashing")), None, False)
    assert not may_use(revision, (ColumnSpec("y"), ColumnSpec("x")), None, False)
    assert not may_use(None, (), None, False)
