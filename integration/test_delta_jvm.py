"""Delta Lake's own JVM engine against qbeast tables, both ways (issue #31).

One Connect server runs Delta's engine next to the qbeast plugin
(``qc.session(delta=True)``; the jars come from ``qbeast_connect/spark/delta-jvm.pom.xml``
through Maven, cached per machine). On it:

* every kind of table qbeast-connect writes (appends that open revisions, checkpoints,
  optimize, auto-compaction, vacuum, time partitions) reads through ``format("delta")``
  exactly as through ``QbeastTable``, at every version (time travel), and Delta's
  ``DESCRIBE HISTORY``/``DETAIL`` agree with our log;
* Delta's own writes on a qbeast table (append, DELETE, UPDATE, MERGE, OPTIMIZE, VACUUM,
  its checkpoints) leave a table qbeast-connect reads exactly as Delta does, whose samples
  are still exactly the rows below the weight; the files Delta wrote (no qbeast tags) are
  reported by ``getIndexMetrics``/``explainScan`` and ``optimize(0)`` indexes them again;
* a Delta job and qbeast-connect appending and optimizing one table at once lose nothing,
  and the table reads the same in Delta, ``deltalake`` and qbeast-connect.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import deltalake_table, live_adds, row_digest, spark_digest

# Delta's DML on two cores: a test takes a minute or two
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _events(spark: Any, start: int, end: int, salt: int = 0) -> Any:
    """Rows of several types, NULLs among them, for tables indexed on ``x, d, s``."""
    return spark.range(start, end, numPartitions=2).selectExpr(
        "id",
        f"cast(((id * 7919 + {salt}) % 10007) / 10.0 as double) as x",
        "date_add(date'2024-01-01', cast(id % 400 as int)) as d",
        "case when id % 13 = 0 then null else concat('k', cast(id % 97 as string)) end as s",
        "cast(id % 1000 as decimal(12, 2)) / 7 as m",
        "timestamp_seconds(1700000000 + id * 61) as ts",
    )


def _same_rows(dspark: Any, path: str, version: int | None = None) -> tuple[int, str]:
    """Assert that Delta's JVM and qbeast-connect read the same rows; return the digest."""
    reader = dspark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    delta = spark_digest(reader.load(path))
    ours = spark_digest(qc.QbeastTable.forPath(dspark, path, versionAsOf=version).toDF())
    assert ours == delta, f"version {version}: qbeast-connect {ours} vs Delta {delta}"
    return delta


def _history(dspark: Any, path: str) -> list[tuple[int, str]]:
    rows = dspark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    return sorted((int(r["version"]), str(r["operation"])) for r in rows)


def _exact_sample(dspark: Any, path: str, columns: str, fraction: float) -> None:
    """Our sample is exactly the rows Delta reads whose weight is below the fraction's."""
    threshold = weight_from_fraction(fraction)
    expected = dspark.read.format("delta").load(path).filter(f"hash({columns}) < {threshold}")
    got = qc.QbeastTable.forPath(dspark, path).sample(fraction)
    assert spark_digest(got) == spark_digest(expected)


def test_delta_reads_every_version_of_a_table_we_write(dspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    qc.write(
        _events(dspark, 0, 3000),
        path,
        columnsToIndex="x,d,s",
        cubeSize=400,
        **{"delta.checkpointInterval": "2"},
    )
    qc.write(_events(dspark, 3000, 3400, salt=5), path, mode="append")
    # values beyond the space of x and d: a new revision
    wider = _events(dspark, 3400, 3800).selectExpr(
        "id", "x + 5000 as x", "date_add(d, 900) as d", "s", "m", "ts"
    )
    assert qc.write(wider, path, mode="append").new_revision
    qc.write(_events(dspark, 3800, 3950), path, mode="append")
    table = qc.QbeastTable.forPath(dspark, path)
    table.optimize()
    qc.write(
        _events(dspark, 5000, 5040),
        path,
        mode="append",
        autoCompact="true",
        autoCompactMinNumFiles="2",
    )
    latest = qc.QbeastTable.forPath(dspark, path).version()
    assert (Path(path) / "_delta_log" / f"{2:020d}.checkpoint.parquet").is_file()
    for version in range(latest + 1):
        _same_rows(dspark, path, version)
    count, _ = _same_rows(dspark, path)
    assert count == 3000 + 400 + 400 + 150 + 40
    assert [v for v, _ in _history(dspark, path)] == list(range(latest + 1))
    detail = dspark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert int(detail["numFiles"]) == len(live_adds(path))
    assert detail["format"] == "delta"
    # our vacuum: Delta still reads the latest version, and the rows are the same
    removed = qc.QbeastTable.forPath(dspark, path).vacuum(
        retentionHours=0, enforceRetentionDuration=False
    )
    assert removed
    assert _same_rows(dspark, path)[0] == count
    _exact_sample(dspark, path, "x, d, s", 0.1)
    # deltalake, the third reader, agrees
    assert row_digest(deltalake_table(path)) == _same_rows(dspark, path)


def test_delta_reads_a_time_partitioned_table(dspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "tp")
    data = _events(dspark, 0, 2000)
    qc.write(data, path, columnsToIndex="x,s", cubeSize=300, partitionBy="ts:daily")
    qc.write(_events(dspark, 2000, 2300), path, mode="append")
    assert _same_rows(dspark, path)[0] == 2300
    assert _same_rows(dspark, path, 0)[0] == 2000
    day = "2023-11-15"
    ours = qc.QbeastTable.forPath(dspark, path).filter(f"to_date(ts) = date'{day}'")
    theirs = dspark.read.format("delta").load(path).filter(f"to_date(ts) = date'{day}'")
    assert spark_digest(ours) == spark_digest(theirs) and spark_digest(ours)[0] > 0


def test_delta_writes_leave_a_table_we_read_as_delta_does(dspark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "dml")
    qc.write(
        _events(dspark, 0, 4000),
        path,
        columnsToIndex="x,d,s",
        cubeSize=500,
        **{"delta.checkpointInterval": "3"},
    )
    expected = 4000

    def step(
        sql: str | None = None, delta_rows: Any = None, check: bool = True, sample: bool = False
    ) -> None:
        if sql is not None:
            dspark.sql(sql)
        if delta_rows is not None:
            delta_rows.write.format("delta").mode("append").save(path)
        if check:
            assert _same_rows(dspark, path)[0] == expected
        if sample:
            _exact_sample(dspark, path, "x, d, s", 0.2)

    expected += 300
    step(delta_rows=_events(dspark, 4000, 4300), check=False)
    expected -= 430
    step(f"DELETE FROM delta.`{path}` WHERE id % 10 = 3")
    step(
        f"UPDATE delta.`{path}` SET s = 'updated', x = x + 1 WHERE id BETWEEN 200 AND 260",
        check=False,
    )
    _events(dspark, 4250, 4450).createOrReplaceTempView("late")
    expected += 155  # 4300..4449 are new, and so are the 5 ids of 4250..4299 the DELETE took
    step(
        f"MERGE INTO delta.`{path}` t USING late ON t.id = late.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        sample=True,
    )
    # a filter on an indexed column prunes and answers as Delta does
    where = "x BETWEEN 100 AND 200 AND s IS NOT NULL"
    ours = qc.QbeastTable.forPath(dspark, path).filter(where)
    assert spark_digest(ours) == spark_digest(dspark.read.format("delta").load(path).filter(where))
    # Delta's files carry no qbeast tags: the index reports them, and optimize(0) takes
    # them back into the index
    table = qc.QbeastTable.forPath(dspark, path)
    untagged = {p for p, a in live_adds(path).items() if not (a.get("tags") or {})}
    assert untagged
    metrics = table.getIndexMetrics()
    assert metrics.unindexed_files == len(untagged)
    assert f"{len(untagged)} files" in str(metrics) and "optimize(0)" in str(metrics)
    scan = str(table.explainScan(where="x < 50"))
    assert "revision 0 (full)" in scan and "optimize(0) indexes them" in scan
    step(f"OPTIMIZE delta.`{path}`", check=False)
    table = qc.QbeastTable.forPath(dspark, path)
    assert table.getIndexMetrics().unindexed_files == len(live_adds(path))  # all rewritten
    table.optimize(0)
    after = live_adds(path)
    assert all((a.get("tags") or {}) for a in after.values())
    assert qc.QbeastTable.forPath(dspark, path).getIndexMetrics().unindexed_files == 0
    step(sample=True)
    dspark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")
    assert {p.name for p in Path(path).glob("*.parquet")} == {Path(p).name for p in after}
    checkpoints = sorted(Path(path, "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints  # Delta wrote its own checkpoints, and we read through them
    count_digest = _same_rows(dspark, path)
    assert count_digest[0] == expected
    assert row_digest(deltalake_table(path)) == count_digest


def test_delta_and_qbeast_writers_at_once(dspark: Any, tmp_path: Path) -> None:
    """A Delta job appends while qbeast-connect appends and optimizes: every commit lands
    or fails with a clean conflict, and no row is lost or doubled."""
    path = str(tmp_path / "mixed")
    qc.write(_events(dspark, 0, 2000), path, columnsToIndex="x,d,s", cubeSize=300)
    landed: dict[str, list[tuple[int, int]]] = {"delta": [], "qbeast": []}
    errors: list[BaseException] = []

    def delta_job() -> None:
        try:
            for i in range(6):
                lo = 10_000 + 100 * i
                _events(dspark, lo, lo + 100).write.format("delta").mode("append").save(path)
                landed["delta"].append((lo, lo + 100))
        except BaseException as exc:  # reported below
            errors.append(exc)

    def qbeast_job() -> None:
        try:
            for i in range(6):
                lo = 20_000 + 100 * i
                qc.write(_events(dspark, lo, lo + 100), path, mode="append")
                landed["qbeast"].append((lo, lo + 100))
                # a clean conflict leaves the table as the optimize found it
                if i == 2:
                    with contextlib.suppress(qc.CommitConflictError):
                        qc.QbeastTable.forPath(dspark, path).optimize()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=delta_job), threading.Thread(target=qbeast_job)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    ids = set(range(2000))
    for lo, hi in landed["delta"] + landed["qbeast"]:
        ids |= set(range(lo, hi))
    assert len(landed["delta"]) == 6 and len(landed["qbeast"]) == 6
    count, digest = _same_rows(dspark, path)
    assert count == len(ids)
    got = {r["id"] for r in qc.QbeastTable.forPath(dspark, path).toDF().select("id").collect()}
    assert got == ids
    assert row_digest(deltalake_table(path)) == (count, digest)


def test_delta_on_a_server_without_it_says_how(remote_url: str) -> None:
    """``delta=True`` against a server that does not run Delta's extension is refused with
    the way to start one, before any Delta call fails on the server."""
    with pytest.raises(qc.MissingDependencyError, match="server start --delta"):
        qc.session(remote=remote_url, delta=True)
