"""Concurrent appends that open revisions, and operations on one handle, through Connect.

Writers racing to open a new revision all commit (the losers are renumbered after the
winners); a ``QbeastTable`` handle runs every operation on the latest table version.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

import qbeast_connect as qc
from tests.spark.helpers import (
    latest_configuration,
    live_adds,
    log_actions,
    row_digest,
    spark_digest,
)

STATS = json.dumps({"x_min": 0.0, "x_max": 100.0, "y_min": 0.0, "y_max": 100.0})


def _rows(spark: Any, start: int, n: int, dx: float = 0.0, dy: float = 0.0) -> Any:
    return spark.range(start, start + n, numPartitions=2).selectExpr(
        "id",
        f"cast(id % 50 as double) + 25.0 + {dx} as x",
        f"cast(id % 7 as double) * 10.0 + 20.0 + {dy} as y",
    )


def _race(*jobs: Any) -> list[Any]:
    results: list[Any] = [None] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = jobs[i]()
        except Exception as exc:  # collected for the assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return results


def _assert_revisions_valid(path: str) -> list[int]:
    config = latest_configuration(path)
    ids = sorted(int(k.rsplit(".", 1)[1]) for k in config if k.startswith("qbeast.revision."))
    assert ids == list(range(int(config["qbeast.lastRevisionID"]) + 1)), "consecutive ids"
    for rid in ids:
        assert json.loads(config[f"qbeast.revision.{rid}"])["revisionID"] == rid
    for add in live_adds(path).values():
        assert int(add["tags"]["revision"]) in ids, "every file names an existing revision"
    return ids


def test_four_concurrent_revision_appends_all_commit(spark: Any, table_path: str) -> None:
    base = _rows(spark, 0, 400)
    qc.write(base, table_path, columnsToIndex="x,y", cubeSize=100, columnStats=STATS)
    # each writer leaves the space in its own direction, so each opens a new revision
    # whatever the order in which the others commit
    shifts = [(1000.0, 0.0), (-1000.0, 0.0), (0.0, 1000.0), (0.0, -1000.0)]
    batches = [_rows(spark, 10_000 * (w + 1), 300, dx, dy) for w, (dx, dy) in enumerate(shifts)]

    def append(df: Any) -> Any:
        return lambda: qc.write(df, table_path, mode="append")

    outcomes = _race(*[append(df) for df in batches])
    for outcome in outcomes:
        assert isinstance(outcome, qc.WriteResult), repr(outcome)
    assert sorted(o.version for o in outcomes) == [1, 2, 3, 4]
    assert all(o.new_revision for o in outcomes)
    by_version = {o.version: o.revision_id for o in outcomes}
    assert [by_version[v] for v in (1, 2, 3, 4)] == [2, 3, 4, 5]  # reported as committed
    rebased = [
        v
        for v, action in log_actions(table_path)
        if "commitInfo" in action and action["commitInfo"].get("readVersion", v - 1) != v - 1
    ]
    assert rebased, "no append lost a race: the rebase was not exercised"
    assert _assert_revisions_valid(table_path) == [0, 1, 2, 3, 4, 5]

    everything = base
    for df in batches:
        everything = everything.unionByName(df)
    expected = spark_digest(everything)
    delta = DeltaTable(table_path).to_pyarrow_table()
    assert row_digest(delta, ["id", "x", "y"]) == expected  # deltalake: each row once
    table = qc.QbeastTable.forPath(spark, table_path)
    assert table.revisionIDs() == [0, 1, 2, 3, 4, 5]
    for condition in ("x >= 1030 and x < 1040", "y < -900", "x < 40 and y > 50"):
        got = table.filter(condition)
        assert spark_digest(got) == spark_digest(everything.filter(condition)), condition
    explanation = table.explainScan("x >= 1030 and x < 1040")
    assert explanation.selected_files < explanation.total_files


def test_sequential_optimizes_on_one_handle(spark: Any, table_path: str) -> None:
    data = _rows(spark, 0, 600)
    qc.write(data, table_path, columnsToIndex="x,y", cubeSize=100, columnStats=STATS)
    more = _rows(spark, 5_000, 600, dx=500.0)
    assert qc.write(more, table_path, mode="append").revision_id == 2
    everything = data.unionByName(more)
    before = set(live_adds(table_path))

    table = qc.QbeastTable.forPath(spark, table_path)
    first = table.optimize(1)
    second = table.optimize(2)
    assert (first.version, second.version) == (2, 3)
    assert first.removed_files > 0 and second.removed_files > 0
    assert first.removed_files + second.removed_files == len(before)
    assert not before & set(live_adds(table_path)), "every original file was rewritten"
    assert spark_digest(table.refresh().toDF()) == spark_digest(everything)


@pytest.mark.parametrize("offset", [0.0, 500.0], ids=["same-revision", "new-revision"])
def test_optimize_after_an_append_from_another_handle(
    spark: Any, table_path: str, offset: float
) -> None:
    data = _rows(spark, 0, 600)
    qc.write(data, table_path, columnsToIndex="x,y", cubeSize=100, columnStats=STATS)
    table = qc.QbeastTable.forPath(spark, table_path)
    more = _rows(spark, 5_000, 600, dx=offset)
    appended = qc.write(more, table_path, mode="append")
    assert appended.new_revision == (offset > 0)
    latest = appended.revision_id
    files_of_latest = {
        p for p, a in live_adds(table_path).items() if a["tags"]["revision"] == str(latest)
    }

    result = table.optimize()
    assert result.version == 2
    assert result.revision_id == latest
    assert result.removed_files == len(files_of_latest)
    assert not files_of_latest & set(live_adds(table_path))
    assert spark_digest(table.refresh().toDF()) == spark_digest(data.unionByName(more))
    on_disk = {p.name for p in Path(table_path).glob("*.parquet")}
    assert set(live_adds(table_path)) <= on_disk
