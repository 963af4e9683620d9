"""The plugin's write task on its own (no Spark): flushes, file groups and block tags."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast_connect.index.assignment import CubeAssigner
from qbeast_connect.index.estimation import DomainEstimator
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.index.layout import estimated_counts, plan_layout, segments_from_counts
from qbeast_connect.index.normalize import normalize
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.estimation_math import weights_from_domains
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.transformation import ColumnStats
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan
from server_plugin import writer


def _data(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 100, rows)
    y = rng.integers(0, 1_000, rows)
    payload = pa.array([f"row-{i:06d}" for i in range(rows)])
    table = pa.table({"x": x, "y": pa.array(y, pa.int64()), "payload": payload})
    weights = spark_hash_columns([table.column("x"), table.column("y")])
    return table.append_column(WEIGHT_COLUMN, pa.array(weights, pa.int32()))


def _plan(table: pa.Table, path: str, cube_size: int) -> WritePlan:
    stats = {
        "x": ColumnStats(min=0.0, max=100.0),
        "y": ColumnStats(min=0, max=999),
    }
    revision = plan_revision(
        None,
        (ColumnSpec("x"), ColumnSpec("y")),
        {"x": "double", "y": "long"},
        stats,
        {},
        cube_size,
        path,
        1_700_000_000_000,
        random.Random(1),
    ).revision
    points = normalize(revision.transformations, [table.column("x"), table.column("y")])
    weights = table.column(WEIGHT_COLUMN).to_numpy()
    estimator = DomainEstimator(2, cube_size, 10_000)
    estimator.add(points, weights)
    domains = estimator.finish()
    cube_weights = {
        str(c): int(w)
        for c, w in weights_from_domains(
            {CubeId.from_string(c, 2): v for c, v in domains.items()}, cube_size
        ).items()
    }
    counts = estimated_counts(domains, cube_weights, 2)
    layout = plan_layout(segments_from_counts(counts, cube_weights, 2), cube_size)
    return WritePlan(
        table_path=path,
        mode="append",
        read_version=-1,
        revision_json=revision.to_json(),
        cube_weights=cube_weights,
        layout=layout,
        txn_id=str(uuid.uuid4()),
    )


@pytest.mark.parametrize("flush_bytes", [writer.FLUSH_BYTES, 40_000])
def test_write_task_files_hold_their_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flush_bytes: int
) -> None:
    table = _data(20_000)
    plan = _plan(table, str(tmp_path), cube_size=1_000)
    assert plan.layout.group_count > 4
    monkeypatch.setattr(writer, "FLUSH_BYTES", flush_bytes)
    message = writer.write_task(plan, iter(table.to_batches(max_chunksize=1_000)))

    files = message.files
    assert sum(f.num_records for f in files) == table.num_rows
    if flush_bytes < table.nbytes:
        # several flushes: a file group appears in more than one file
        assert len(files) > plan.layout.group_count
    else:
        assert len(files) == plan.layout.group_count
    assigner = CubeAssigner(2, plan.cube_weights)
    revision_columns = ("x", "y")
    revision = Revision.from_json(plan.revision_json)
    seen: list[str] = []
    for f in files:
        data = pq.read_table(tmp_path / f.path)
        assert data.column_names == ["x", "y", "payload"]
        seen.extend(data.column("payload").to_pylist())
        columns = [data.column(c) for c in revision_columns]
        w = spark_hash_columns(columns)
        labels, inverse = assigner.assign_labels(normalize(revision.transformations, columns), w)
        groups = plan.layout.groups(inverse, labels, w)
        assert len(set(groups.tolist())) == 1, "a file holds one file group"
        blocks = {b.cube_id: b for b in decode_blocks(f.tags["blocks"])}
        assert f.tags["revision"] == str(revision.revision_id)
        expected: dict[str, tuple[int, int]] = {}
        for i, label in enumerate(labels):
            rows = inverse == i
            if rows.any():
                expected[label] = (int(w[rows].min()), int(rows.sum()))
        assert {c: (b.min_weight, b.element_count) for c, b in blocks.items()} == expected
        for cube, block in blocks.items():
            assert block.max_weight == plan.cube_weights.get(cube, 2**31 - 1)
    assert sorted(seen) == sorted(table.column("payload").to_pylist())


def test_row_outside_the_revision_space_raises_input_changed_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qbeast_connect.exceptions import InputChangedError

    table = _data(4_000)
    plan = _plan(table, str(tmp_path), cube_size=1_000)
    monkeypatch.setattr(writer, "FLUSH_ROWS", 1_000)  # files are written before the bad row
    outside = _data(10).set_column(0, "x", pa.array([250.0] * 10))  # revision covers [0, 100]
    batches = [*table.to_batches(max_chunksize=1_000), *outside.to_batches()]
    with pytest.raises(InputChangedError, match="column 'x' has value 250.0"):
        writer.write_task(plan, iter(batches))
    assert list(tmp_path.glob("*.parquet")) == []
