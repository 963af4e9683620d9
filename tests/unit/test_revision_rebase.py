"""Concurrent commits of qbeast writes through the plugin's driver-side commit (no Spark).

Appends that open new revisions rebase over each other (the loser renumbers its revision
after the winner's); appends and optimizes that touch different files commute; conflicts
stay where the semantics demand them (overwrite against append, two optimizes of the same
files, a concurrent schema or table-property change).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from qbeast_connect.exceptions import CommitConflictError
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.model.column_spec import ColumnSpec
from qbeast_connect.model.revision import Revision, plan_revision
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.model.transformation import ColumnStats, LinearTransformation
from qbeast_connect.planning.file_planner import plan_files, stats_by_path
from qbeast_connect.planning.predicate import from_sql
from qbeast_connect.write_plan import WEIGHT_COLUMN, WritePlan
from server_plugin import writer
from server_plugin.delta.actions import FrozenMap
from server_plugin.delta.committer import commit
from server_plugin.delta.conflicts import TransactionReadSet
from server_plugin.delta.log_reader import read_snapshot
from server_plugin.delta.schema import arrow_schema_to_delta
from server_plugin.delta.snapshot import DeltaSnapshot
from server_plugin.delta.storage import LocalStorage

LAST = "qbeast.lastRevisionID"


def _batch(ids: Sequence[int], lo: float, hi: float) -> pa.Table:
    n = len(ids)
    xs = [lo + (hi - lo) * i / max(n - 1, 1) for i in range(n)]
    table = pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.float64())})
    weights = spark_hash_columns([table.column("x")])
    return table.append_column(WEIGHT_COLUMN, pa.array(weights, pa.int32()))


def _reweighted(table: pa.Table) -> pa.Table:
    weights = spark_hash_columns([table.column("x")])
    return table.append_column(WEIGHT_COLUMN, pa.array(weights, pa.int32()))


def _latest(snap: DeltaSnapshot) -> Revision:
    config = snap.metadata.configuration
    return Revision.from_json(config[f"qbeast.revision.{config[LAST]}"])


def _plan(
    path: str,
    read_version: int,
    revision: Revision,
    *,
    configuration: Mapping[str, str] | None = None,
    schema_string: str | None = None,
    mode: str = "append",
    remove_paths: tuple[str, ...] = (),
    data_change: bool = True,
    operation: str = "WRITE",
) -> WritePlan:
    return WritePlan(
        table_path=path,
        mode=mode,  # type: ignore[arg-type]
        read_version=read_version,
        revision_json=revision.to_json(),
        configuration=configuration,
        schema_string=schema_string,
        txn_id=str(uuid.uuid4()),
        operation=operation,
        data_change=data_change,
        remove_paths=remove_paths,
    )


def _run(plan: WritePlan, batch: pa.Table) -> int:
    message = writer.write_task(plan, iter(batch.to_batches()))
    return writer.commit_write(plan, [message])


def _create(path: str, ids: Sequence[int], lo: float, hi: float) -> None:
    batch = _batch(ids, lo, hi)
    planned = plan_revision(
        None,
        (ColumnSpec("x"),),
        {"x": "double"},
        {"x": ColumnStats(min=lo, max=hi)},
        {},
        None,
        path,
        1_700_000_000_000,
        random.Random(0),
    )
    assert planned.staging is not None
    config = {
        "qbeast.revision.0": planned.staging.to_json(),
        "qbeast.revision.1": planned.revision.to_json(),
        LAST: "1",
        "columnsToIndex": "x",
    }
    schema = arrow_schema_to_delta(batch.drop_columns([WEIGHT_COLUMN]).schema)
    assert (
        _run(_plan(path, -1, planned.revision, configuration=config, schema_string=schema), batch)
        == 0
    )


class _RevisionAppend:
    """An append planned against one snapshot whose data leaves the latest revision."""

    def __init__(
        self, path: str, snap: DeltaSnapshot, ids: Sequence[int], lo: float, hi: float
    ) -> None:
        self.batch = _batch(ids, lo, hi)
        planned = plan_revision(
            _latest(snap),
            (ColumnSpec("x"),),
            {"x": "double"},
            {"x": ColumnStats(min=lo, max=hi)},
            {},
            None,
            path,
            1_700_000_000_000,
            random.Random(len(ids) + int(lo)),
        )
        assert planned.is_new
        config = dict(snap.metadata.configuration)
        rid = planned.revision.revision_id
        config[f"qbeast.revision.{rid}"] = planned.revision.to_json()
        config[LAST] = str(rid)
        self.plan = _plan(path, snap.version, planned.revision, configuration=config)

    def run(self) -> int:
        return _run(self.plan, self.batch)


def _blind_append(
    path: str, snap: DeltaSnapshot, ids: Sequence[int], lo: float, hi: float
) -> WritePlan:
    return _plan(path, snap.version, _latest(snap))


def _ids(path: str) -> list[int]:
    return sorted(DeltaTable(path).to_pyarrow_table().column("id").to_pylist())


def _assert_qbeast_valid(path: str) -> dict[str, Any]:
    """Revision ids consecutive, keys match the JSON ids, every file names an existing
    revision whose space holds its rows; returns the latest configuration."""
    snap = read_snapshot(LocalStorage(path))
    config = dict(snap.metadata.configuration)
    revisions = {
        int(k.rsplit(".", 1)[1]): Revision.from_json(v)
        for k, v in config.items()
        if k.startswith("qbeast.revision.")
    }
    assert sorted(revisions) == list(range(int(config[LAST]) + 1))
    for rid, revision in revisions.items():
        assert revision.revision_id == rid
    for add in snap.files.values():
        assert add.tags is not None
        revision = revisions[int(add.tags["revision"])]
        transformation = revision.transformations[0]
        assert isinstance(transformation, LinearTransformation)
        xs = pq.read_table(Path(path) / add.path).column("x")
        assert pc.min(xs).as_py() >= transformation.min_number
        assert pc.max(xs).as_py() <= transformation.max_number
    return config


def _filtered_ids(path: str, low: float, high: float) -> tuple[list[int], int, int]:
    """Ids the index-planned read of ``low <= x < high`` returns, files read, total files."""
    snap = read_snapshot(LocalStorage(path))
    adds = [
        json.loads(
            json.dumps(
                {
                    "path": a.path,
                    "size": a.size,
                    "stats": a.stats,
                    "tags": dict(a.tags or {}),
                    "modificationTime": 0,
                    "dataChange": True,
                    "partitionValues": {},
                }
            )
        )
        for a in snap.files.values()
    ]
    qsnap = QbeastSnapshot.from_delta(snap.metadata.configuration, adds, snap.version)
    plan = plan_files(
        qsnap, from_sql(f"x >= {low} AND x < {high}"), None, file_stats=stats_by_path(adds)
    )
    ids: list[int] = []
    for f in plan.files:
        data = pq.read_table(Path(path) / f.path)
        mask = pc.and_(pc.greater_equal(data.column("x"), low), pc.less(data.column("x"), high))
        ids.extend(data.filter(mask).column("id").to_pylist())
    return sorted(ids), len(plan.files), len(adds)


def test_four_concurrent_revision_appends_all_commit(tmp_path: Path) -> None:
    """4 writers x 3 rounds, each round all planned on the same snapshot and each append
    leaving the space: all 12 commit, renumbered to consecutive revisions 2..13."""
    path = str(tmp_path / "t")
    _create(path, range(0, 50), 0.0, 100.0)
    storage = LocalStorage(path)
    workers, rounds, rows = 4, 3, 40
    barrier = threading.Barrier(workers)
    versions: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        try:
            for r in range(1, rounds + 1):
                barrier.wait()
                snap = read_snapshot(storage)
                barrier.wait()  # everybody has read the same version
                lo = 1000.0 * 10**r + 100.0 * w  # beyond the last round's headroom
                start = 10_000 * r + 1_000 * w
                append = _RevisionAppend(path, snap, range(start, start + rows), lo, lo + 50)
                version = append.run()
                with lock:
                    versions.append(version)
        except BaseException as exc:  # reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(versions) == list(range(1, workers * rounds + 1))

    config = _assert_qbeast_valid(path)
    assert config[LAST] == str(1 + workers * rounds)
    expected = sorted(
        [*range(50)]
        + [10_000 * r + 1_000 * w + i for r in range(1, 4) for w in range(4) for i in range(rows)]
    )
    assert _ids(path) == expected  # deltalake: every row exactly once
    assert (
        hashlib.sha256(str(_ids(path)).encode()).hexdigest()
        == hashlib.sha256(str(expected).encode()).hexdigest()
    )
    rebased = 0
    for v in range(1, workers * rounds + 1):
        info = json.loads((Path(path) / "_delta_log" / f"{v:020d}.json").read_text().split("\n")[0])
        rebased += info["commitInfo"]["readVersion"] != v - 1
    assert rebased >= rounds * (workers - 1)  # the losers of every round were rebased

    got, selected, total = _filtered_ids(path, 100_100.0, 100_130.0)
    assert got == [20_000 + 1_000 + i for i in range(rows) if 100 + 50 * i / (rows - 1) < 130]
    assert selected < total  # the index pruned the other revisions' files


def test_revision_append_rebases_over_a_blind_append(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    opening = _RevisionAppend(path, snap, range(100, 120), 500.0, 600.0)
    assert _run(_blind_append(path, snap, [], 0, 0), _batch(range(200, 220), 10.0, 20.0)) == 1
    assert opening.run() == 2
    config = _assert_qbeast_valid(path)
    assert config[LAST] == "2"
    assert _ids(path) == [*range(20), *range(100, 120), *range(200, 220)]


def test_blind_append_rebases_over_a_new_revision(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    blind = _blind_append(path, snap, [], 0, 0)
    assert _RevisionAppend(path, snap, range(100, 120), 500.0, 600.0).run() == 1
    assert _run(blind, _batch(range(200, 220), 10.0, 20.0)) == 2
    _assert_qbeast_valid(path)
    assert _ids(path) == [*range(20), *range(100, 120), *range(200, 220)]


def test_disjoint_optimizes_both_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    _run(
        _blind_append(path, read_snapshot(LocalStorage(path)), [], 0, 0),
        _batch(range(20, 40), 0.0, 100.0),
    )
    snap = read_snapshot(LocalStorage(path))
    first, second = sorted(snap.files)
    rev = _latest(snap)

    def optimize(file: str) -> WritePlan:
        return _plan(
            path, snap.version, rev, remove_paths=(file,), data_change=False, operation="OPTIMIZE"
        )

    data = {p: _reweighted(pq.read_table(Path(path) / p)) for p in (first, second)}
    a, b = optimize(first), optimize(second)
    assert _run(a, data[first]) == 2
    assert _run(b, data[second]) == 3
    assert first not in read_snapshot(LocalStorage(path)).files
    assert second not in read_snapshot(LocalStorage(path)).files
    assert _ids(path) == list(range(40))


def test_two_optimizes_of_the_same_files_still_conflict(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    (only,) = snap.files
    data = _reweighted(pq.read_table(Path(path) / only))
    plans = [
        _plan(path, 0, _latest(snap), remove_paths=(only,), data_change=False, operation="OPTIMIZE")
        for _ in range(2)
    ]
    assert _run(plans[0], data) == 1
    before = set(Path(path).glob("*.parquet"))
    with pytest.raises(CommitConflictError, match="ConcurrentDelete"):
        _run(plans[1], data)
    assert set(Path(path).glob("*.parquet")) == before  # the loser's files are deleted
    assert _ids(path) == list(range(20))


def _overwrite(path: str, snap: DeltaSnapshot, ids: Sequence[int]) -> tuple[WritePlan, pa.Table]:
    batch = _batch(ids, 0.0, 10.0)
    planned = plan_revision(
        None,
        (ColumnSpec("x"),),
        {"x": "double"},
        {"x": ColumnStats(min=0.0, max=10.0)},
        {},
        None,
        path,
        1_700_000_000_001,
        random.Random(5),
    )
    assert planned.staging is not None
    config = {
        "qbeast.revision.0": planned.staging.to_json(),
        "qbeast.revision.1": planned.revision.to_json(),
        LAST: "1",
    }
    return (
        _plan(
            path,
            snap.version,
            planned.revision,
            configuration=config,
            mode="overwrite",
            schema_string=snap.metadata.schema_string,
        ),
        batch,
    )


@pytest.mark.parametrize("append", ["blind", "new-revision"])
def test_append_after_a_concurrent_overwrite_still_conflicts(tmp_path: Path, append: str) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    if append == "blind":
        late_plan, late_batch = _blind_append(path, snap, [], 0, 0), _batch([7], 1.0, 1.0)
    else:
        opening = _RevisionAppend(path, snap, range(100, 110), 500.0, 600.0)
        late_plan, late_batch = opening.plan, opening.batch
    plan, batch = _overwrite(path, snap, range(1000, 1010))
    assert _run(plan, batch) == 1
    with pytest.raises(CommitConflictError, match="MetadataChanged"):
        _run(late_plan, late_batch)
    assert _ids(path) == list(range(1000, 1010))
    _assert_qbeast_valid(path)


def test_overwrite_after_a_concurrent_revision_append_still_conflicts(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    plan, batch = _overwrite(path, snap, range(1000, 1010))
    assert _RevisionAppend(path, snap, range(100, 110), 500.0, 600.0).run() == 1
    with pytest.raises(CommitConflictError):
        _run(plan, batch)
    assert _ids(path) == [*range(20), *range(100, 110)]


def test_winner_changing_schema_or_properties_still_conflicts(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    storage = LocalStorage(path)
    snap = read_snapshot(storage)
    opening = _RevisionAppend(path, snap, range(100, 110), 500.0, 600.0)
    changed = dataclasses.replace(
        snap.metadata,
        configuration=FrozenMap({**snap.metadata.configuration, "delta.appendOnly": "true"}),
    )
    commit(
        storage,
        [changed],
        TransactionReadSet(read_version=0),
        operation="SET TBLPROPERTIES",
        operation_parameters={},
    )
    with pytest.raises(CommitConflictError, match="delta.appendOnly"):
        opening.run()
    from server_plugin.revision_rebase import rebase_revisions

    with pytest.raises(CommitConflictError, match="schema"):
        rebase_revisions(
            [],
            snap.metadata,
            dataclasses.replace(snap.metadata, schema_string=snap.metadata.schema_string + " "),
            "version 9 (WRITE)",
        )


def test_rebase_renumbers_the_revision_and_the_file_tags(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    first = _RevisionAppend(path, snap, range(100, 110), 500.0, 600.0)
    second = _RevisionAppend(path, snap, range(200, 210), -600.0, -500.0)
    assert first.run() == 1
    assert second.run() == 2
    config = _assert_qbeast_valid(path)
    assert config[LAST] == "3"
    moved = Revision.from_json(config["qbeast.revision.3"])
    original = Revision.from_json(str(second.plan.revision_json))
    assert original.revision_id == 2
    assert dataclasses.replace(moved, revision_id=2) == original
    (metadata,) = [a["metaData"] for a in _commit_actions(path, 2) if "metaData" in a]
    assert metadata["configuration"]["qbeast.revision.2"] == first_json(path)
    tags = {a["add"]["tags"]["revision"] for a in _commit_actions(path, 2) if "add" in a}
    assert tags == {"3"}


def first_json(path: str) -> str:
    (metadata,) = [a["metaData"] for a in _commit_actions(path, 1) if "metaData" in a]
    return str(metadata["configuration"]["qbeast.revision.2"])


def _commit_actions(path: str, version: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_optimize_rebases_over_a_new_revision(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _create(path, range(0, 20), 0.0, 100.0)
    snap = read_snapshot(LocalStorage(path))
    (only,) = snap.files
    optimize = _plan(
        path, 0, _latest(snap), remove_paths=(only,), data_change=False, operation="OPTIMIZE"
    )
    assert _RevisionAppend(path, snap, range(100, 110), 500.0, 600.0).run() == 1
    assert _run(optimize, _reweighted(pq.read_table(Path(path) / only))) == 2
    after = read_snapshot(LocalStorage(path))
    assert only not in after.files
    assert sorted(a.tags["revision"] for a in after.files.values() if a.tags) == ["1", "2"]
    _assert_qbeast_valid(path)
    assert _ids(path) == [*range(20), *range(100, 110)]
