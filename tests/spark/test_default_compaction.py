"""Automatic compaction is on by default for new tables, in size tiers (issue 35): small
appends with no option merge into runs, every sample stays exact and opens fewer bytes,
and a table created with ``autoCompact=false`` (or before this version) keeps its files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import (
    deltalake_table,
    latest_configuration,
    log_actions,
    row_digest,
    spark_digest,
)
from tests.spark.helpers import hourly_events as _events

COLUMNS = "event_time,user_id"


def _appends(spark: Any, path: str, hours: int, **options: Any) -> list[Any]:
    results = [qc.write(_events(spark, 0), path, columnsToIndex=COLUMNS, cubeSize=1000, **options)]
    for hour in range(1, hours):
        results.append(qc.write(_events(spark, hour), path, mode="append"))
    return results


def test_small_appends_with_default_settings_merge_in_size_tiers(
    spark: Any, tmp_path: Path
) -> None:
    """8 hourly appends of 400 rows, no compaction option: the table is created with
    ``qbeast.autoCompact=true``; the 4th and the 8th write each complete a tier of 4 runs
    (one file each) and merge them into one run of 1,600 rows (files named after the run),
    so each row is rewritten once and the table ends as 2 runs. Each run is cut by weight
    band down to cubeSize / 32 rows, so a 1% sample opens a few percent of the bytes. The table without
    compaction keeps its 8 appended files; both hold the same rows and samples."""
    compacted = str(tmp_path / "default")
    plain = str(tmp_path / "off")
    results = _appends(spark, compacted, 8)
    plain_results = _appends(spark, plain, 8, autoCompact="false")
    assert latest_configuration(compacted)["qbeast.autoCompact"] == "true"
    assert latest_configuration(plain)["qbeast.autoCompact"] == "false"
    assert all(r.compaction is None for r in plain_results)

    done = [(i, r.compaction) for i, r in enumerate(results) if r.compaction is not None]
    assert [i for i, _ in done] == [3, 7]
    for i, compaction in done:
        assert compaction.skipped is None and compaction.version == results[i].version + 1
        assert (compaction.removed_files, compaction.rows) == (4, 1600)
    rewritten = sum(c.rows for _, c in done)
    assert rewritten / (8 * 400) == 1.0

    table = qc.QbeastTable.forPath(spark, compacted)
    runs: dict[str, int] = {}
    for f in table.snapshot.files:
        assert f.path.startswith("run-")
        key = f.path.split("-")[1]
        runs[key] = runs.get(key, 0) + sum(b.element_count for b in f.blocks)
    assert sorted(runs.values()) == [1600, 1600]
    # each run is the files of one compaction commit, tagged with its id
    for _, compaction in done:
        commit = [a for v, a in log_actions(compacted) if v == compaction.version]
        info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
        assert info["tags"] == {"qbeast.autoCompaction": "true"}
        assert info["txnId"].replace("-", "")[:12] in runs
        assert not any("metaData" in a for a in commit)  # no revision opened
    # no compaction opened a revision: the same revisions as without compaction
    off = qc.QbeastTable.forPath(spark, plain)
    assert table.revisionIDs() == off.revisionIDs()
    assert len(off.snapshot.files) == 8

    data = _events(spark, 0)
    for hour in range(1, 8):
        data = data.unionByName(_events(spark, hour))
    assert spark_digest(table.toDF()) == spark_digest(data)
    assert spark_digest(table.sample(0.1)) == spark_digest(off.sample(0.1))
    assert spark_digest(table.sample(0.1)) == spark_digest(
        data.filter("hash(event_time, user_id) < -1717986918")  # weight(0.1)
    )
    # a 1% sample opens fewer bytes than on the table without compaction
    sample = table.explainScan(fraction=0.01)
    plain_sample = off.explainScan(fraction=0.01)
    assert sample.selected_files < plain_sample.selected_files == 8
    assert sample.selected_bytes < plain_sample.selected_bytes
    # each run is cut by weight band down to cubeSize / 32 rows (1/32 of its weights here):
    # a 1% sample opens the lowest band of each run, not whole runs (before: every byte)
    assert sample.selected_bytes <= 0.1 * sample.total_bytes
    assert spark_digest(table.sample(0.01)) == spark_digest(
        data.filter(f"hash(event_time, user_id) < {weight_from_fraction(0.01)}")
    )
    edge = weight_from_fraction(1 / 32)
    for f in table.snapshot.files:  # no file holds weights on both sides of the top band's
        assert f.max_row_weight is not None
        assert f.max_row_weight < edge or min(b.min_weight for b in f.blocks) >= edge, f.path


def test_micro_batches_of_a_new_table_are_compacted_by_default(spark: Any, tmp_path: Path) -> None:
    """The streaming batch writer creates the table with compaction on: its 4th batch
    merges the 4 batches' files into one run."""
    path = str(tmp_path / "t")
    write = qc.qbeast_batch_writer(path, txnAppId="app-1", columnsToIndex=COLUMNS, cubeSize=1000)
    compactions = []
    for batch in range(4):
        write(_events(spark, batch), batch)
        assert write.last_result is not None
        compactions.append(write.last_result.compaction)
    assert compactions[:3] == [None, None, None]
    last = compactions[3]
    assert last is not None and (last.removed_files, last.rows) == (4, 1600)
    table = qc.QbeastTable.forPath(spark, path)
    assert latest_configuration(path)["qbeast.autoCompact"] == "true"
    assert table.toDF().count() == 1600
    # one run left: the compaction's files
    assert all(f.path.startswith("run-") for f in table.snapshot.files)
    assert len({f.path.split("-")[1] for f in table.snapshot.files}) == 1


def test_a_time_partitioned_table_merges_the_tiers_of_each_partition(
    spark: Any, tmp_path: Path
) -> None:
    """Appends alternate between two days of a daily-partitioned table, no compaction
    option. Each partition is a tree of its own, so its runs are counted apart: the 4th
    append of each day completes that day's tier (appends 7 and 8 of the table), and each
    day ends as one run of 1,600 rows in its own directory. Before, time-partitioned tables
    were never compacted (8 files of 400 rows); a table-wide count would have merged at the
    4th append, two runs of each day. Rows and samples are those of the table created with
    ``autoCompact=false``, and a 1% sample opens a fraction of the bytes."""
    compacted = str(tmp_path / "default")
    plain = str(tmp_path / "off")
    hours = [0, 24, 1, 25, 2, 26, 3, 27]

    def series(path: str, **options: Any) -> list[Any]:
        first = qc.write(
            _events(spark, hours[0]),
            path,
            columnsToIndex=COLUMNS,
            cubeSize=1000,
            partitionBy="event_time:daily",
            **options,
        )
        return [first] + [qc.write(_events(spark, h), path, mode="append") for h in hours[1:]]

    results = series(compacted)
    plain_results = series(plain, autoCompact="false")
    assert all(r.compaction is None for r in plain_results)
    done = [i for i, r in enumerate(results) if r.compaction is not None]
    assert done == [6, 7]
    for i in done:
        compaction = results[i].compaction
        assert compaction.skipped is None and compaction.version == results[i].version + 1
        assert (compaction.removed_files, compaction.rows) == (4, 1600)

    table = qc.QbeastTable.forPath(spark, compacted)
    off = qc.QbeastTable.forPath(spark, plain)
    runs: dict[str, int] = {}
    for f in table.snapshot.files:
        directory, _, name = f.path.rpartition("/")
        assert name.startswith("run-")
        key = f"{directory}/{name.split('-')[1]}"
        runs[key] = runs.get(key, 0) + sum(b.element_count for b in f.blocks)
    assert sorted(runs.values()) == [1600, 1600]
    assert {k.split("/")[0] for k in runs} == {
        "event_time_partition=2024-01-01",
        "event_time_partition=2024-01-02",
    }
    assert len(off.snapshot.files) == 8
    assert table.revisionIDs() == off.revisionIDs()

    data = _events(spark, hours[0])
    for hour in hours[1:]:
        data = data.unionByName(_events(spark, hour))
    assert spark_digest(table.toDF().drop("event_time_partition")) == spark_digest(data)
    for fraction in (0.01, 0.1):
        assert spark_digest(table.sample(fraction)) == spark_digest(off.sample(fraction))
    one_day = "event_time < timestamp'2024-01-02 00:00:00'"
    assert spark_digest(table.toDF().filter(one_day)) == spark_digest(off.toDF().filter(one_day))
    sample = table.explainScan(fraction=0.01)
    plain_sample = off.explainScan(fraction=0.01)
    assert sample.selected_bytes < plain_sample.selected_bytes
    # each day's run is cut by weight band down to cubeSize / 32 rows, as unpartitioned
    assert sample.selected_bytes <= 0.2 * sample.total_bytes


def _format_write(spark: Any, hour: int, path: str, **options: str) -> None:
    """The events of ``hour`` written with ``df.write.format("qbeast")`` only: hour 0
    creates the table (``user_id`` indexed, its space given, ``options`` kept with it)."""
    writer = _events(spark, hour).write.format("qbeast")
    if hour == 0:
        writer = (
            writer.option("columnsToIndex", "user_id")
            .option("cubeSize", "1000")
            .option("columnStats", '{"user_id_min": 0, "user_id_max": 999}')
            .options(**options)
        )
    writer.mode("append" if hour else "overwrite").save(path)


def test_format_qbeast_appends_are_compacted_in_the_plugins_commit(
    spark: Any, tmp_path: Path
) -> None:
    """A client that only uses ``df.write.format("qbeast")`` (or SQL ``INSERT INTO``) never
    runs qbeast-connect's client code, whose compaction starts a Spark job. The plugin's
    commit compacts instead: the create and 7 appends of 400 rows make 8 runs, the 4th and
    8th writes each merge a tier of 4 into one run of 1,600 rows, in commits of their own
    tagged as compactions, with the rows and samples of the table created with
    ``autoCompact=false`` (before: 8 files, every sample opening all of them)."""
    compacted = str(tmp_path / "default")
    plain = str(tmp_path / "off")

    def series(path: str, **options: str) -> None:
        for hour in range(8):
            _format_write(spark, hour, path, **options)

    series(compacted)
    series(plain, autoCompact="false")
    assert latest_configuration(compacted)["qbeast.autoCompact"] == "true"
    tagged = [
        v
        for v, a in log_actions(compacted)
        if "commitInfo" in a and (a["commitInfo"].get("tags") or {}).get("qbeast.autoCompaction")
    ]
    assert tagged == [4, 9]  # right after the 4th and the 8th write (versions 3 and 8)
    for version in tagged:
        commit = [a for v, a in log_actions(compacted) if v == version]
        removed = [a["remove"] for a in commit if "remove" in a]
        added = [a["add"] for a in commit if "add" in a]
        assert len(removed) == 4 and all(not r["dataChange"] for r in removed)
        assert sum(json.loads(a["stats"])["numRecords"] for a in added) == 1600
    table = qc.QbeastTable.forPath(spark, compacted)
    off = qc.QbeastTable.forPath(spark, plain)
    assert len(off.snapshot.files) == 8
    runs = {f.path.split("-")[1] for f in table.snapshot.files}
    assert len(runs) == 2
    data = _events(spark, 0)
    for hour in range(1, 8):
        data = data.unionByName(_events(spark, hour))
    assert spark_digest(table.toDF()) == spark_digest(data)
    assert spark_digest(spark.read.format("qbeast").load(compacted)) == spark_digest(data)
    for fraction in (0.01, 0.1):
        assert spark_digest(table.sample(fraction)) == spark_digest(off.sample(fraction))
    sample = table.explainScan(fraction=0.01)
    assert sample.selected_bytes < off.explainScan(fraction=0.01).selected_bytes
    assert sample.selected_bytes <= 0.2 * sample.total_bytes


def test_a_failing_compaction_in_the_plugins_commit_leaves_the_append_committed(
    spark: Any, tmp_path: Path
) -> None:
    """A file of a run the commit would merge was deleted by hand: the 4th write's append
    commits, its compaction reads nothing it could commit, and leaves no file behind (the
    files written before the failure are deleted)."""
    path = tmp_path / "t"
    for hour in range(4):
        if hour == 3:
            (path / qc.QbeastTable.forPath(spark, str(path)).snapshot.files[0].path).unlink()
        _format_write(spark, hour, str(path))
    versions = sorted({v for v, _ in log_actions(str(path))})
    assert versions == [0, 1, 2, 3]  # the append committed; no compaction did
    last = [a for v, a in log_actions(str(path)) if v == 3]
    assert not any((a.get("commitInfo") or {}).get("tags") for a in last)
    live = {f.path for f in qc.QbeastTable.forPath(spark, str(path)).snapshot.files}
    on_disk = {p.name for p in path.glob("*.parquet")}
    # the 4 appended files, less the one deleted by hand: no compaction output is left
    assert len(live) == 4 and on_disk < live and len(on_disk) == 3


def test_staging_files_inside_the_latest_revision_are_indexed_by_the_compaction(
    spark: Any, tmp_path: Path
) -> None:
    """A converted Delta table gets a revision from a qc.write append; another Delta writer
    (``deltalake``) then appends small files, which are staging files (no qbeast tags):
    every sample and filter reads them whole. The next compaction indexes those whose
    statistics prove their rows inside the latest revision's space into it, and leaves the
    one whose ``k`` lies outside as it is (indexing it would need a new revision)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    path = str(tmp_path / "dl")

    def rows(low: int, count: int) -> pa.Table:
        ks = list(range(low, low + count))
        return pa.table({"k": ks, "v": [float(k) / 3 for k in ks]})

    write_deltalake(path, rows(0, 300))
    qc.convertToQbeast(spark, path, columnsToIndex="k", cubeSize=100, sourceFormat="delta")
    frame = spark.range(300, 1000).selectExpr("id AS k", "cast(id AS double) / 3 AS v")
    qc.write(frame, path, mode="append", autoCompact="true")
    for low in (300, 400, 500, 600):
        write_deltalake(path, rows(low, 50), mode="append")
    # outside k's space, [300, 999] (the first append's range): as the converted file's
    write_deltalake(path, rows(5000, 50), mode="append")
    before = qc.QbeastTable.forPath(spark, path)
    staged = {
        f.path: pq.read_table(os.path.join(path, f.path)) for f in before.snapshot.staging_files()
    }
    assert sorted(t.num_rows for t in staged.values()) == [50, 50, 50, 50, 50, 300]
    outside = next(p for p, t in staged.items() if pc.min(t["k"]).as_py() == 5000)
    fitting = [p for p, t in staged.items() if t.num_rows == 50 and p != outside]

    result = qc.write(frame.limit(10), path, mode="append")
    assert result.compaction is not None and result.compaction.skipped is None
    after = qc.QbeastTable.forPath(spark, path)
    left = {f.path for f in after.snapshot.staging_files()}
    assert outside in left and not left & set(fitting)
    latest = after.latestRevision.revision_id
    assert after.revisionIDs() == before.revisionIDs()
    assert all(f.revision_id == latest for f in after.snapshot.files if f.path not in left)
    assert row_digest(deltalake_table(path)) == spark_digest(after.toDF())
    assert after.toDF().count() == 300 + 700 + 250 + 10
    assert spark_digest(after.sample(0.3)) == spark_digest(
        after.toDF().filter(f"hash(k) < {weight_from_fraction(0.3)}")
    )


def test_a_compaction_counts_its_rows_from_the_log_instead_of_running_jobs(
    spark: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The log tells a compaction's rows before it reads any, and the policy chose files
    inside the latest revision's space. So a compaction runs no statistics job (the
    estimation's partitions are the files), and when its rows are more than a one-job
    attempt takes (its cap, lowered here to 1,000 rows) it makes none: the attempt could
    only read 1,000 rows and decline (both cost a 400,000-row compaction 1.1-2.9 s of its
    5.5-7.6 s). At the cap it still takes the one job. Either way the rows and samples are
    the appended ones."""
    from qbeast_connect.spark import small_append
    from qbeast_connect.spark.write import _Writer

    monkeypatch.setattr(small_append, "SMALL_APPEND_MAX_ROWS", 1000)
    attempts: list[bool] = []  # per one-job write job run: whether a compaction's
    commit = _Writer._commit

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("append_task") is not None:
            attempts.append(self.keep_revision)
        return commit(self, *args, **kwargs)

    monkeypatch.setattr(_Writer, "_commit", spy)
    jobs: list[tuple[str, bool]] = []  # write phases run: whether a compaction's
    phase = _Writer._phase

    def phase_spy(self: Any, name: str) -> Any:
        jobs.append((name, self.keep_revision))
        return phase(self, name)

    monkeypatch.setattr(_Writer, "_phase", phase_spy)
    path = str(tmp_path / "capped")
    results = _appends(spark, path, 4)
    compaction = results[3].compaction
    assert compaction is not None and compaction.skipped is None
    assert (compaction.removed_files, compaction.rows) == (4, 1600)
    # the three appends after the first tried the one job (unknown size, under its cap of
    # 10,000 for a scan); the compaction of 1,600 known rows did not
    assert attempts == [False, False, False]
    # nor did it count its rows with a statistics job (the creating write ran one): the
    # log counted them (4 x 400)
    assert ("statistics", False) in jobs and ("statistics", True) not in jobs, jobs
    table = qc.QbeastTable.forPath(spark, path)
    data = _events(spark, 0)
    for hour in range(1, 4):
        data = data.unionByName(_events(spark, hour))
    assert spark_digest(table.toDF()) == spark_digest(data)
    threshold = weight_from_fraction(0.1)
    expected = data.filter(f"hash(event_time, user_id) < {threshold}")
    assert spark_digest(table.sample(0.1)) == spark_digest(expected)

    monkeypatch.setattr(small_append, "SMALL_APPEND_MAX_ROWS", 1600)
    attempts.clear()
    results = _appends(spark, str(tmp_path / "at_cap"), 4)
    assert results[3].compaction is not None and results[3].compaction.rows == 1600
    assert attempts == [False, False, False, True]
