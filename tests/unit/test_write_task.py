"""The plugin's write task on its own (no Spark): flushes, file groups and block tags."""

from __future__ import annotations

import itertools
import random
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast_connect.index.assignment import CubeAssigner
from qbeast_connect.index.estimation import DomainEstimator
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.index.layout import estimated_counts, plan_layout, segments_from_counts
from qbeast_connect.index.normalize import normalize
from qbeast_connect.model.block import MAX_ROW_WEIGHT_TAG, decode_blocks
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
    # one file per file group, however many times the buffer filled up
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
        # the largest row weight of the file, recomputed from its rows
        assert f.tags[MAX_ROW_WEIGHT_TAG] == str(int(w.max()))
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


def _row_group_cubes(
    path: Path, plan: WritePlan, assigner: CubeAssigner
) -> list[tuple[list[str], np.ndarray]]:
    """Per row group of a file: the cube of every row and the Morton key of its point."""
    from qbeast_connect.index.block_order import morton_keys

    revision = Revision.from_json(plan.revision_json)
    footer = pq.ParquetFile(path)
    out = []
    for i in range(footer.num_row_groups):
        data = footer.read_row_group(i)
        columns = [data.column("x"), data.column("y")]
        points = normalize(revision.transformations, columns)
        labels, inverse = assigner.assign_labels(points, spark_hash_columns(columns))
        out.append(([labels[j] for j in inverse.tolist()], morton_keys(points)))
    return out


def test_row_groups_of_a_file_follow_its_blocks_in_cube_order(tmp_path: Path) -> None:
    from qbeast_connect.model.cube_id import cube_string_sort_key

    table = _data(20_000)
    plan = _plan(table, str(tmp_path), cube_size=1_000)
    message = writer.write_task(plan, iter(table.to_batches(max_chunksize=1_000)))
    assigner = CubeAssigner(2, plan.cube_weights)
    _, least = writer.row_group_limits(1_000)  # blocks of fewer rows may share a row group
    several = 0
    for f in message.files:
        blocks = decode_blocks(f.tags["blocks"])
        assert [b.cube_id for b in blocks] == sorted(
            (b.cube_id for b in blocks), key=cube_string_sort_key
        )
        groups = _row_group_cubes(tmp_path / f.path, plan, assigner)
        several += len(groups) > 1
        # rows in cube order, each row group a run of the file's blocks
        rows = [cube for cubes, _ in groups for cube in cubes]
        expected = [b.cube_id for b in blocks for _ in range(b.element_count)]
        assert rows == expected
        for cubes, _ in groups:
            counts = {c: cubes.count(c) for c in cubes}
            if len(counts) > 1:
                # only small blocks share a row group
                sizes = {b.cube_id: b.element_count for b in blocks}
                assert all(sizes[c] < least for c in counts), counts
            else:
                (cube,) = counts
                assert next(b for b in blocks if b.cube_id == cube).element_count == len(cubes)
    assert several >= 3  # multi-cube files are written as several row groups


def test_long_blocks_are_cut_into_row_groups_of_consecutive_morton_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _data(20_000)
    plan = _plan(table, str(tmp_path), cube_size=1_000)
    monkeypatch.setattr(writer, "BLOCK_ROW_GROUP_ROWS", 128)
    monkeypatch.setattr(writer, "MIN_ROW_GROUP_ROWS", 128)
    monkeypatch.setattr(writer, "ROW_GROUP_FLOOR", 128)
    message = writer.write_task(plan, iter(table.to_batches(max_chunksize=1_000)))
    assigner = CubeAssigner(2, plan.cube_weights)
    cut = 0
    for f in message.files:
        groups = _row_group_cubes(tmp_path / f.path, plan, assigner)
        assert all(len(cubes) <= 128 for cubes, _ in groups)
        for (a, ka), (b, kb) in itertools.pairwise(groups):
            if len(set(a)) == 1 and set(a) == set(b):
                # two row groups of one block: disjoint, ascending Z-order ranges
                assert int(ka.max()) <= int(kb.min())
                cut += 1
    assert cut >= 20


def test_full_blocks_are_cut_into_row_groups_of_a_32nd_of_a_cube(tmp_path: Path) -> None:
    # Row-group statistics are the finest unit Spark skips by (pages below them skipped
    # rows but not bytes, bench/layout_bench.py): a block cut in 8 left each row group
    # spanning half of its cube on every second dimension, too coarse for a 1-column filter.
    cube = 65_536
    table = _data(200_000)
    plan = _plan(table, str(tmp_path), cube_size=cube)
    message = writer.write_task(plan, iter(table.to_batches(max_chunksize=10_000)))
    assigner = CubeAssigner(2, plan.cube_weights)
    root_groups = []
    for f in message.files:
        for cubes, keys in _row_group_cubes(tmp_path / f.path, plan, assigner):
            assert len(cubes) <= cube // 32
            if set(cubes) == {""}:
                root_groups.append(keys)
    root_rows = sum(len(k) for k in root_groups)
    assert root_rows > cube // 2, "the root is one large block"
    assert len(root_groups) >= 32 * root_rows // cube
    for a, b in itertools.pairwise(root_groups):
        assert int(a.max()) <= int(b.min()), "consecutive Z-order ranges"


def test_row_groups_of_indexed_files_are_cut_into_pages_of_a_quarter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark's page-index filtering skips the decoding of pages below a row group: a
    # quarter of a row group decoded 30% fewer rows than pyarrow's 20,000-row pages
    # (bench/layout_bench.py, BENCHMARKS.md).
    assert writer.page_row_limit(1_000_000) == 31_250 // 4
    assert writer.page_row_limit(100_000) == 3_125 // 4
    assert writer.page_row_limit(5_000_000) == writer.PAGE_ROWS
    assert writer.page_row_limit(1_000) == writer.PAGE_FLOOR
    seen: list[Any] = []
    real = pq.ParquetWriter

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("max_rows_per_page"))
        return real(*args, **kwargs)

    monkeypatch.setattr(writer.pq, "ParquetWriter", spy)
    table = _data(20_000)
    plan = _plan(table, str(tmp_path), cube_size=1_000)
    message = writer.write_task(plan, iter(table.to_batches(max_chunksize=1_000)))
    assert seen and seen == [writer.PAGE_FLOOR] * len(message.files)


def test_row_group_limits_scale_with_the_cube_size() -> None:
    assert writer.row_group_limits(1_000_000) == (31_250, 16_384)
    assert writer.row_group_limits(5_000_000) == (writer.BLOCK_ROW_GROUP_ROWS, 16_384)
    assert writer.row_group_limits(100_000) == (3_125, 3_125)
    assert writer.row_group_limits(1_000) == (2_048, 250)


def test_task_streaming_several_buffers_writes_one_file_per_group_in_cube_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A task narrowed over many input splits fills its buffer several times: each file
    # group must still be one file, laid out exactly as if the task had held every row,
    # and the rows set aside on local disk must be gone afterwards.
    import tempfile

    table = _data(20_000)
    plan = _plan(table, str(tmp_path / "table"), cube_size=1_000)
    (tmp_path / "table").mkdir()
    batches = table.to_batches(max_chunksize=1_000)
    whole = writer.write_task(plan, iter(batches))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(writer, "FLUSH_ROWS", 3_000)  # seven buffers
    streamed = writer.write_task(plan, iter(batches))

    def layout(message: Any) -> dict[tuple[str, ...], tuple[Any, ...]]:
        out = {}
        for f in message.files:
            blocks = decode_blocks(f.tags["blocks"])
            footer = pq.ParquetFile(tmp_path / "table" / f.path)
            sizes = tuple(
                footer.metadata.row_group(i).num_rows
                for i in range(footer.metadata.num_row_groups)
            )
            rows = tuple(footer.read().column("payload").to_pylist())
            out[tuple(b.cube_id for b in blocks)] = (blocks, sizes, rows)
        return out

    assert len(whole.files) == plan.layout.group_count
    assert len(streamed.files) == plan.layout.group_count
    # same blocks, same row groups, same rows in the same order, file by file
    assert layout(streamed) == layout(whole)
    assert list(scratch.iterdir()) == []
