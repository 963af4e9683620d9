"""Time-ordered appends (issue 20): headroom keeps revisions logarithmic, and optimize
merges revisions into one."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.transformation import LinearTransformation
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    live_adds,
    log_actions,
    row_digest,
    spark_digest,
)
from tests.spark.helpers import hourly_events as _events

START = 1_704_067_200  # 2024-01-01 00:00:00 UTC, in seconds
HOURS, ROWS = 12, 50
HOUR_FILTER = "event_time >= TIMESTAMP '2024-01-01 03:00:00Z' AND event_time < TIMESTAMP '2024-01-01 04:00:00Z'"
READS = (
    HOUR_FILTER,
    "user_id < 100",
    "user_id >= 900 AND event_time < TIMESTAMP '2024-01-01 02:00:00Z'",
)


def _hour(spark: Any, hour: int) -> Any:
    """The events of one hour: one a minute from the hour's start (50 of them), users 0 to
    999 (both always present: only the time grows)."""
    return spark.range(ROWS, numPartitions=1).selectExpr(
        f"timestamp_seconds({START} + {hour} * 3600 + id * 60) AS event_time",
        f"CASE id WHEN 0 THEN 0 WHEN {ROWS - 1} THEN 999 "
        f"ELSE cast(pmod(hash(id, {hour}), 1000) AS int) END AS user_id",
        f"concat('event-', {hour}, '-', id) AS payload",
    )


@pytest.fixture(scope="module")
def appended(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    """A table written by 12 hourly appends, with the results of its writes and the rows
    (automatic compaction off: these tests count each revision's own files)."""
    path = str(tmp_path_factory.mktemp("hourly") / "t")
    results = [
        qc.write(
            _hour(spark, 0),
            path,
            columnsToIndex="event_time,user_id",
            cubeSize=100,
            autoCompact="false",
        )
    ]
    data = _hour(spark, 0)
    for hour in range(1, HOURS):
        results.append(qc.write(_hour(spark, hour), path, mode="append"))
        data = data.unionByName(_hour(spark, hour))
    yield path, (data, results)


def test_time_ordered_appends_open_logarithmic_revisions(
    spark: Any, appended: tuple[str, Any]
) -> None:
    """12 hourly appends open 4 revisions (the reference: 12): the appends of hours 1, 3
    and 7 leave the space and get twice the span on the grown side; the others fit."""
    path, (data, results) = appended
    table = qc.QbeastTable.forPath(spark, path)
    assert table.revisionIDs() == [0, 1, 2, 3, 4]
    assert [r.revision_id for r in results] == [1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4]
    # appends inside the space took the one-job path; those beyond it were declined there
    # and planned by the statistics job: both paths agree on where the space ends
    for hour, result in enumerate(results[1:], start=1):
        grew = hour in (1, 3, 7)
        assert ("declined" in result.timings) is grew, hour
        assert ("statistics" in result.timings) is grew, hour
    # revision 4 spans twice the union of revision 3 and hour 7 (epoch milliseconds)
    space = table.revision(4).transformations[0]
    assert isinstance(space, LinearTransformation)
    union_max = (START + 7 * 3600 + 49 * 60) * 1000
    assert (space.min_number, space.max_number) == (
        START * 1000,
        START * 1000 + 2 * (union_max - START * 1000),
    )
    # answers equal a plain read of the same rows; deltalake reads the same rows
    assert spark_digest(table.toDF()) == spark_digest(data)
    assert row_digest(deltalake_table(path)) == spark_digest(data)
    for where in READS:
        assert spark_digest(table.filter(where)) == spark_digest(data.filter(where)), where
    assert spark_digest(table.sample(0.1)) == spark_digest(
        data.filter("hash(event_time, user_id) < -1717986918")  # weight(0.1)
    )
    scan = table.explainScan(HOUR_FILTER)
    assert scan.selected_files < scan.total_files  # revisions of other hours are pruned


def test_optimize_merges_revisions_into_one(
    spark: Any, appended: tuple[str, Any], tmp_path: Path
) -> None:
    source, (data, _) = appended
    path = str(tmp_path / "t")
    shutil.copytree(source, path)
    table = qc.QbeastTable.forPath(spark, path)
    before = {r: len(table.snapshot.files_of(r)) for r in (1, 2, 3, 4)}
    with pytest.raises(qc.InvalidOptionError, match="does not have"):
        table.optimize(mergeRevisions=[1, 9])
    with pytest.raises(qc.InvalidOptionError, match="staging"):
        table.optimize(mergeRevisions=[0, 1])

    result = table.optimize(mergeRevisions=[2, 3, 4])
    assert (result.removed_files, result.rows) == (sum(before[r] for r in (2, 3, 4)), 550)
    assert result.revision_id == 5
    table = table.refresh()
    assert table.revisionIDs() == [0, 1, 2, 3, 4, 5]
    assert {f.revision_id for f in table.snapshot.files} == {1, 5}
    merged = table.revision(5).transformations[0]
    assert isinstance(merged, LinearTransformation)
    old = [table.revision(r).transformations[0] for r in (2, 4)]
    assert isinstance(old[0], LinearTransformation) and isinstance(old[1], LinearTransformation)
    assert (merged.min_number, merged.max_number) == (old[0].min_number, old[1].max_number)

    result = table.optimize(mergeRevisions=True)  # revisions 1 and 5
    assert (result.revision_id, result.rows) == (6, HOURS * ROWS)
    table = table.refresh()
    assert {f.revision_id for f in table.snapshot.files} == {6}
    assert table.optimize(mergeRevisions=True).version is None  # one revision: nothing to do
    last = [a for v, a in log_actions(path) if v == result.version]
    assert all(a[k]["dataChange"] is False for a in last for k in a if k in ("add", "remove"))
    assert all(a["tags"]["revision"] == "6" for a in live_adds(path).values())
    assert spark_digest(table.toDF()) == spark_digest(data)
    assert row_digest(deltalake_table(path)) == spark_digest(data)
    assert spark_digest(table.filter(HOUR_FILTER)) == spark_digest(data.filter(HOUR_FILTER))
    assert spark_digest(table.sample(0.1)) == spark_digest(
        data.filter("hash(event_time, user_id) < -1717986918")
    )


def test_time_ordered_small_appends_keep_sample_cheap(spark: Any, tmp_path: Path) -> None:
    """With autoCompact on, the append that makes 4 small files holding root rows (the
    default autoCompactMinNumFiles) is followed by one compaction commit into the latest
    revision: no revision is opened, the rows and every sample stay the same, and a small
    sample opens fewer bytes than before it (issue 20: every small append's file holds root
    rows, so every sample opened every file). The option, given to one append that keeps
    the table's revision, is kept with the table for the appends after it (the table was
    created with it off)."""
    path = str(tmp_path / "t")
    results = [
        qc.write(
            _events(spark, 0),
            path,
            columnsToIndex="event_time,user_id",
            cubeSize=1000,
            autoCompact="false",
        )
    ]
    data = _events(spark, 0)
    for hour in range(1, 6):
        options: dict[str, Any] = {"autoCompact": "true"} if hour == 2 else {}
        results.append(qc.write(_events(spark, hour), path, mode="append", **options))
        data = data.unionByName(_events(spark, hour))
        if hour == 2:
            assert latest_configuration(path)["qbeast.autoCompact"] == "true"
    compactions = [r.compaction for r in results]
    assert compactions[:3] == [None, None, None] and compactions[4:] == [None, None]
    done = compactions[3]
    assert done is not None and done.skipped is None
    appended = results[3].version
    assert appended is not None and done.version == appended + 1
    assert (done.removed_files, done.rows) == (4, 1600)

    table = qc.QbeastTable.forPath(spark, path)
    # hours 1 and 4 left the space, as without compaction; the compaction opened none
    assert table.revisionIDs() == [0, 1, 2, 3]
    assert [r.revision_id for r in results] == [1, 2, 2, 2, 3, 3]
    commit = [a for v, a in log_actions(path) if v == done.version]
    info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
    assert info["tags"] == {"qbeast.autoCompaction": "true"}
    # the compaction's files are one run, named after its txnId
    run = info["txnId"].replace("-", "")[:12]
    assert all(a["add"]["path"].startswith(f"run-{run}-") for a in commit if "add" in a)
    assert not any("txn" in a or "metaData" in a for a in commit)
    changes = [a[k] for a in commit for k in ("add", "remove") if k in a]
    assert len(changes) == 4 + done.added_files and all(c["dataChange"] is False for c in changes)
    assert {a["add"]["tags"]["revision"] for a in commit if "add" in a} == {"2"}
    # the table holds the written rows, also for deltalake; the compaction's run is cut in
    # weight bands (1/32, 1/16, ..., 1/2 of its weights: top band cubeSize / 32 rows)
    assert len(table.snapshot.files) == done.added_files + 2 and done.added_files == 6
    assert spark_digest(table.toDF()) == spark_digest(data)
    assert row_digest(deltalake_table(path)) == spark_digest(data)
    # re-indexed rows keep their weights: samples before and after the compaction are equal
    before = table.read(fraction=0.25, versionAsOf=results[3].version)
    after = table.read(fraction=0.25, versionAsOf=done.version)
    assert spark_digest(before) == spark_digest(after)
    assert spark_digest(table.sample(0.25)) == spark_digest(
        data.filter("hash(event_time, user_id) < -1073741824")  # weight(0.25)
    )
    small = table.explainScan(fraction=0.01, versionAsOf=done.version)
    assert small.selected_files == 1
    assert (
        small.selected_bytes
        < table.explainScan(fraction=0.01, versionAsOf=results[3].version).selected_bytes
    )
