"""Any DataFrame can be written, and bad write options are refused before anything is written.

Inputs that give different rows to the jobs of one write (non-deterministic expressions, a
source directory that changes) end with exactly the rows of one evaluation in the table, all
inside their revision's space, checked on the rows the independent deltalake reader returns.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import qbeast_connect as qc
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.transformation import IdentityTransformation, LinearTransformation
from qbeast_connect.spark import write as write_module
from tests.spark.helpers import deltalake_table, latest_configuration, live_adds, log_actions

ROOT = Path(__file__).resolve().parents[2]


def _revision(path: str) -> Revision:
    config = latest_configuration(path)
    return Revision.from_json(config[f"qbeast.revision.{config['qbeast.lastRevisionID']}"])


def _domain_values(column: pa.ChunkedArray) -> list[float]:
    """Values as the revision's transformations see them (timestamps in epoch ms)."""
    if pa.types.is_timestamp(column.type):
        micros = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        return [float(v // 1000) for v in micros.to_pylist() if v is not None]
    return [float(v) for v in column.to_pylist() if v is not None]


def _assert_inside_revision(path: str, table: pa.Table) -> Revision:
    """Every value of every linear/identity indexed column lies in the revision's space."""
    revision = _revision(path)
    for name, t in zip(revision.column_names, revision.transformations, strict=True):
        if not isinstance(t, (LinearTransformation, IdentityTransformation)):
            continue  # hashing and quantiles map every value inside
        values = _domain_values(table.column(name))
        assert values
        if isinstance(t, LinearTransformation):
            low, high = float(t.min_number), float(t.max_number)
            outside = [v for v in values if not low <= v <= high]
            assert not outside, (name, low, high, outside[:5])
        elif isinstance(t, IdentityTransformation):
            assert t.identity_value is not None
            assert set(values) == {float(t.identity_value)}, (name, t.identity_value)
    return revision


def _assert_no_orphans(path: str) -> None:
    on_disk = {p.name for p in Path(path).glob("*.parquet")}
    assert on_disk == set(live_adds(path))


def _assert_failed_attempt_left_only_orphans(spark: Any, path: str) -> None:
    """After a redone write: the log names only the redo's files; vacuum removes the rest.

    A task Spark kills while the failed attempt's job is cancelled may have written a file
    it never reported, so the attempt's abort cannot know it: such files are orphans, named
    by no version of the log, invisible to readers, and deleted by vacuum.
    """
    live = set(live_adds(path))
    on_disk = {p.name for p in Path(path).glob("*.parquet")}
    assert live <= on_disk
    ever_added = {
        a["add"]["path"] for _, a in log_actions(path) if isinstance(a, dict) and "add" in a
    }
    assert not (on_disk - live) & ever_added
    qc.QbeastTable.forPath(spark, path).vacuum(0, enforceRetentionDuration=False)
    assert {p.name for p in Path(path).glob("*.parquet")} == live


# --------------------------------------------------------------------------------------
# inputs that change between the jobs of a write
# --------------------------------------------------------------------------------------


def _cached_relations_alive() -> list[Any]:
    """Checkpointed DataFrames whose server copy the client still has to free (from GC)."""
    import gc

    from pyspark.sql.connect.plan import CachedRemoteRelation

    gc.collect()
    return [
        o
        for o in gc.get_objects()
        if isinstance(o, CachedRemoteRelation) and o._relation_id is not None
    ]


def test_a_frozen_input_is_released_by_the_write_not_by_the_garbage_collector(
    spark: Any, table_path: str
) -> None:
    before = {id(r) for r in _cached_relations_alive()}
    df = spark.range(0, 200, numPartitions=2).selectExpr("id", "rand() as x")
    result = qc.write(df, table_path, columnsToIndex="x")
    # the result keeps the write (its lazy commit details) and so the frozen input alive,
    # whose server copy the write has freed: no __del__ has a call left to make, whenever
    # and in whatever thread the input is collected
    left = [r for r in _cached_relations_alive() if id(r) not in before]
    assert left == []
    assert "materialize" in result.timings and result.num_rows == 200
    assert sorted(deltalake_table(table_path).column("id").to_pylist()) == list(range(200))


def test_a_frozen_input_stays_in_its_own_session_when_another_is_active(
    spark: Any, table_path: str
) -> None:
    """Pyspark 4.2 gives a ``localCheckpoint`` result to the thread's active session, while
    the server keeps the copy in the DataFrame's own. With a second session active (as
    ``qc.session(delta=True)`` next to ``qc.session()``), a write of a ``rand()`` input
    failed with ``CONNECT_INVALID_PLAN`` (found when the suite's file order changed)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from qbeast_connect.spark.session import embedded_server
    from qbeast_connect.spark.write_input import freeze, release

    server = embedded_server()
    assert server is not None
    holder = ConnectSession._active_session
    active, default = getattr(holder, "session", None), ConnectSession._default_session
    other = ConnectSession.builder.remote(server.url).create()
    try:
        holder.session = other  # the other session is the thread's active one
        df = spark.range(0, 300, numPartitions=2).selectExpr("id", "rand() as x")
        frozen = freeze(df)
        assert frozen.sparkSession is spark
        assert frozen.count() == 300
        release(frozen)
        result = qc.write(df, table_path, columnsToIndex="x")
        assert result.num_rows == 300
    finally:
        holder.session = active
        ConnectSession._default_session = default
        other.stop()
        holder.session = active
    assert sorted(deltalake_table(table_path).column("id").to_pylist()) == list(range(300))


def test_rand_input_is_written_once_inside_its_revision(spark: Any, table_path: str) -> None:
    df = spark.range(0, 6000, numPartitions=3).selectExpr("id", "rand() as x")
    result = qc.write(df, table_path, columnsToIndex="x", cubeSize=500)
    assert result.num_rows == 6000
    assert "materialize" in result.timings
    table = deltalake_table(table_path)
    assert sorted(table.column("id").to_pylist()) == list(range(6000))
    revision = _assert_inside_revision(table_path, table)
    xs = table.column("x").to_pylist()
    linear = revision.transformations[0]
    assert isinstance(linear, LinearTransformation)
    # the space is the one of the rows written, not of another evaluation
    assert linear.min_number == min(xs) and linear.max_number == max(xs)
    _assert_no_orphans(table_path)


def test_uuid_input_hashing_indexed_holds_each_row_once(spark: Any, table_path: str) -> None:
    df = spark.range(0, 6000, numPartitions=6).selectExpr(
        "id", "uuid() as u", "rand() * 10 as x"
    )
    result = qc.write(df, table_path, columnsToIndex="u:hashing,x", cubeSize=500)
    assert result.num_rows == 6000
    table = deltalake_table(table_path)
    assert sorted(table.column("id").to_pylist()) == list(range(6000))
    assert len(set(table.column("u").to_pylist())) == 6000
    _assert_inside_revision(table_path, table)
    _assert_no_orphans(table_path)


def test_current_timestamp_input_is_inside_its_revision(spark: Any, table_path: str) -> None:
    df = spark.range(0, 3000, numPartitions=2).selectExpr("id", "current_timestamp() as t")
    result = qc.write(df, table_path, columnsToIndex="t,id", cubeSize=500)
    assert result.num_rows == 3000
    table = deltalake_table(table_path)
    assert sorted(table.column("id").to_pylist()) == list(range(3000))
    assert len(set(table.column("t").to_pylist())) == 1  # one instant: one evaluation
    _assert_inside_revision(table_path, table)
    _assert_no_orphans(table_path)


def test_source_directory_changing_between_jobs_is_redone_on_a_frozen_copy(
    spark: Any, table_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    first = pa.table({"id": list(range(1000)), "x": [float(i % 100) for i in range(1000)]})
    pq.write_table(first, source / "part-0.parquet")
    late = pa.table({"id": list(range(1000, 1010)), "x": [5000.0 + i for i in range(10)]})

    original = write_module._Writer._estimate
    calls = []

    def estimate_then_add_a_file(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 1:  # between the statistics/estimation jobs and the write job
            pq.write_table(late, source / "part-1.parquet")
        return out

    monkeypatch.setattr(write_module._Writer, "_estimate", estimate_then_add_a_file)
    df = spark.read.parquet(str(source))
    result = qc.write(df, table_path, columnsToIndex="x", cubeSize=200)
    assert len(calls) == 2  # the write was redone once, on the frozen input
    assert "materialize" in result.timings
    assert result.num_rows == 1010
    table = deltalake_table(table_path)
    assert sorted(table.column("id").to_pylist()) == list(range(1010))
    revision = _assert_inside_revision(table_path, table)
    linear = revision.transformations[0]
    assert isinstance(linear, LinearTransformation) and linear.max_number == 5009.0
    assert max(v for v, _ in log_actions(table_path)) == 0
    _assert_failed_attempt_left_only_orphans(spark, table_path)


def test_deterministic_input_is_not_materialised(spark: Any, table_path: str) -> None:
    df = spark.range(0, 2000, numPartitions=2).selectExpr("id", "rand(7) as x")
    result = qc.write(df, table_path, columnsToIndex="x", cubeSize=500)
    assert "materialize" not in result.timings
    assert result.num_rows == 2000


# --------------------------------------------------------------------------------------
# idempotent retries
# --------------------------------------------------------------------------------------


def test_retry_whose_first_attempt_commits_meanwhile_is_skipped(
    spark: Any, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = spark.range(0, 100).selectExpr("id", "cast(id as double) as x")
    qc.write(base, table_path, columnsToIndex="x", cubeSize=500)
    more = spark.range(100, 600, numPartitions=2).selectExpr("id", "cast(id as double) as x")
    original = write_module._Writer._estimate
    landed = []

    def first_attempt_lands_now(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not landed:
            landed.append(1)
            # the first attempt of the same logical write commits while the retry runs
            first = qc.write(more, table_path, mode="append", txnAppId="job", txnVersion=7)
            assert first.version == 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(write_module._Writer, "_estimate", first_attempt_lands_now)
    retry = qc.write(more, table_path, mode="append", txnAppId="job", txnVersion=7)
    assert retry.skipped and retry.version is None and "job@7" in (retry.reason or "")
    from deltalake import DeltaTable

    dt_ = DeltaTable(table_path)
    assert dt_.version() == 1 and dt_.transaction_version("job") == 7
    assert sorted(deltalake_table(table_path).column("id").to_pylist()) == list(range(600))
    _assert_no_orphans(table_path)


_KILLED_CLIENT = textwrap.dedent(
    """
    import sys, time
    import qbeast_connect as qc
    from pyspark.sql import functions as F
    from qbeast_connect.spark import write as w

    url, path = sys.argv[1], sys.argv[2]
    spark = qc.session(remote=url)
    original = w._Writer._commit

    def announce(self, *args, **kwargs):
        print("write-job", flush=True)
        return original(self, *args, **kwargs)

    w._Writer._commit = announce
    slow = F.udf(lambda v: time.sleep(0.004) or v, "long")
    df = spark.range(100, 1100, numPartitions=2).selectExpr("id", "cast(id as double) as x")
    df = df.withColumn("id", slow("id"))
    qc.write(df, path, mode="append", txnAppId="job", txnVersion=7)
    print("done", flush=True)
    """
)


def test_retry_after_a_killed_client_never_duplicates_rows(spark: Any, table_path: str) -> None:
    from qbeast_connect.spark.session import embedded_server

    server = embedded_server()
    url = server.url if server is not None else os.environ["SPARK_REMOTE"]
    base = spark.range(0, 100).selectExpr("id", "cast(id as double) as x")
    qc.write(base, table_path, columnsToIndex="x", cubeSize=500)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CLIENT, url, table_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "write-job"
        time.sleep(1.0)  # the write job is running on the server
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    more = spark.range(100, 1100, numPartitions=2).selectExpr("id", "cast(id as double) as x")
    retry = qc.write(more, table_path, mode="append", txnAppId="job", txnVersion=7)
    # the killed attempt may still commit or fail on the server: wait until its files are
    # committed or deleted, then the table must hold each row once
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if {p.name for p in Path(table_path).glob("*.parquet")} == set(live_adds(table_path)):
            time.sleep(3)
            if {p.name for p in Path(table_path).glob("*.parquet")} == set(live_adds(table_path)):
                break
        time.sleep(1)
    from deltalake import DeltaTable

    dt_ = DeltaTable(table_path)
    assert dt_.transaction_version("job") == 7
    assert sorted(deltalake_table(table_path).column("id").to_pylist()) == list(range(1100))
    txn_commits = [v for v, a in log_actions(table_path) if "txn" in a]
    assert len(txn_commits) == 1
    assert retry.skipped == (txn_commits[0] != retry.version)
    _assert_no_orphans(table_path)


# --------------------------------------------------------------------------------------
# options and names
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2**63, -1], ids=["2**63", "negative"])
def test_txn_version_outside_int64_is_refused(
    spark: Any, table_path: str, version: int
) -> None:
    df = spark.range(10).selectExpr("id", "cast(id as double) as x")
    with pytest.raises(qc.InvalidOptionError, match="txnVersion must be between 0 and 2"):
        qc.write(df, table_path, columnsToIndex="x", txnAppId="app", txnVersion=version)
    assert not os.path.exists(table_path)
    with pytest.raises(Exception, match="QBEAST_INVALID_OPTION.*txnVersion must be between"):
        (
            df.write.format("qbeast")
            .option("columnsToIndex", "x")
            .option("columnStats", '{"x_min": 0, "x_max": 10}')
            .option("txnAppId", "app")
            .option("txnVersion", str(version))
            .mode("overwrite")
            .save(table_path)
        )
    assert not os.path.exists(table_path)


def test_mode_none_is_the_default_mode(spark: Any, table_path: str) -> None:
    df = spark.range(50).selectExpr("id", "cast(id as double) as x")
    assert qc.write(df, table_path, columnsToIndex="x", mode=None).version == 0
    with pytest.raises(qc.TableAlreadyExistsError):
        qc.write(df, table_path, mode=None)
    with pytest.raises(qc.TableAlreadyExistsError):
        qc.writer(df).mode(None).option("columnsToIndex", "x").save(table_path)
    assert deltalake_table(table_path).num_rows == 50


def test_dotted_and_backticked_column_names_are_indexed(spark: Any, table_path: str) -> None:
    # six partitions: the consolidating write (an Arrow UDF over the indexed columns) too
    df = spark.range(0, 2000, numPartitions=6).selectExpr(
        "id as `a.b`", "cast(id % 37 as double) as `c``d`", "id * 2 as `e.f`"
    )
    result = qc.write(df, table_path, columnsToIndex="a.b,`c``d`", cubeSize=300)
    assert result.num_rows == 2000
    table = deltalake_table(table_path)
    assert table.column_names == ["a.b", "c`d", "e.f"]
    assert sorted(table.column("a.b").to_pylist()) == list(range(2000))
    assert _revision(table_path).column_names == ("a.b", "c`d")
    _assert_inside_revision(table_path, table)
    appended = qc.write(df, table_path, mode="append")
    assert appended.num_rows == 2000 and deltalake_table(table_path).num_rows == 4000


def test_columns_to_index_match_names_case_insensitively(spark: Any, table_path: str) -> None:
    df = spark.range(0, 500).selectExpr("id as Abc", "cast(id as double) as x")
    result = qc.write(df, table_path, columnsToIndex="ABC", cubeSize=100)
    assert result.num_rows == 500
    assert _revision(table_path).column_names == ("Abc",)
    assert sorted(deltalake_table(table_path).column("Abc").to_pylist()) == list(range(500))


def test_case_duplicated_column_names_are_refused(spark: Any, table_path: str) -> None:
    df = spark.range(10).selectExpr("id as a", "id as A", "id as c")
    for columns in ("c", "a"):
        with pytest.raises(qc.UnsupportedInputError, match="differ only in case"):
            qc.write(df, table_path, columnsToIndex=columns)
    with pytest.raises(Exception, match="QBEAST_UNSUPPORTED_INPUT.*differ only in case"):
        (
            df.write.format("qbeast")
            .option("columnsToIndex", "c")
            .option("columnStats", '{"c_min": 0, "c_max": 10}')
            .mode("overwrite")
            .save(table_path)
        )
    assert not os.path.exists(table_path)


@pytest.mark.parametrize(
    ("key", "value", "error", "match"),
    [
        ("delta.checkpointInterval", "0", qc.InvalidOptionError, "positive integer"),
        ("delta.checkpointInterval", "-1", qc.InvalidOptionError, "positive integer"),
        ("delta.logRetentionDuration", "30 fortnights", qc.InvalidOptionError, "duration"),
        ("delta.deletedFileRetentionDuration", "soon", qc.InvalidOptionError, "duration"),
        ("delta.deletedFileRetentionDuration", "interval -1 days", qc.InvalidOptionError,
         "negative"),
        ("delta.enableChangeDataFeed", "true", qc.UnsupportedProtocolError, "changeDataFeed"),
        ("delta.appendOnly", "maybe", qc.InvalidOptionError, "true' or 'false"),
    ],
)
def test_bad_delta_property_is_refused_and_nothing_is_written(
    spark: Any, table_path: str, key: str, value: str, error: type[Exception], match: str
) -> None:
    df = spark.range(20).selectExpr("id", "cast(id as double) as x")
    with pytest.raises(error, match=match):
        qc.write(df, table_path, columnsToIndex="x", **{key: value})
    assert not os.path.exists(table_path)
    with pytest.raises(Exception, match=f"{error.code}.*{match}"):  # type: ignore[attr-defined]
        (
            df.write.format("qbeast")
            .option("columnsToIndex", "x")
            .option("columnStats", '{"x_min": 0, "x_max": 20}')
            .option(key, value)
            .mode("overwrite")
            .save(table_path)
        )
    assert not os.path.exists(table_path)


def test_bad_delta_property_on_append_adds_no_version(spark: Any, table_path: str) -> None:
    df = spark.range(20).selectExpr("id", "cast(id as double) as x")
    qc.write(df, table_path, columnsToIndex="x", **{"delta.checkpointInterval": "5"})
    with pytest.raises(qc.InvalidOptionError, match="positive integer"):
        qc.write(df, table_path, mode="append", **{"delta.checkpointInterval": "0"})
    assert max(v for v, _ in log_actions(table_path)) == 0
    assert latest_configuration(table_path)["delta.checkpointInterval"] == "5"
    _assert_no_orphans(table_path)


def test_num_rows_counts_files_with_nan_and_infinite_values(
    spark: Any, table_path: str
) -> None:
    df = spark.range(0, 300, numPartitions=2).selectExpr(
        "id",
        "case when id % 3 = 0 then double('NaN') when id % 3 = 1 then double('inf') "
        "else -double('inf') end as y",
    )
    result = qc.write(df, table_path, columnsToIndex="id", cubeSize=100)
    assert result.num_rows == 300 and result.num_files >= 1
    assert all(add.get("stats") is None for add in live_adds(table_path).values())
    ys = deltalake_table(table_path).column("y").to_pylist()
    assert len(ys) == 300
    assert sum(1 for y in ys if math.isnan(y)) == 100
    assert sorted(y for y in ys if not math.isnan(y)).count(math.inf) == 100


def test_column_stats_given_as_a_dict(spark: Any, table_path: str) -> None:
    df = spark.range(0, 100).selectExpr("id", "cast(id as double) as x")
    stats = {"x_min": -1000.0, "x_max": 1000.0}
    qc.write(df, table_path, columnsToIndex="x", columnStats=stats)
    linear = _revision(table_path).transformations[0]
    assert isinstance(linear, LinearTransformation)
    assert (linear.min_number, linear.max_number) == (-1000.0, 1000.0)
    assert json.loads(latest_configuration(table_path)["columnStats"]) == stats
    with pytest.raises(qc.InvalidOptionError, match="JSON values"):
        qc.write(df, str(Path(table_path).parent / "other"), columnsToIndex="x",
                 columnStats={"x_min": dt.datetime(2020, 1, 1)})


def test_non_deterministic_plans_are_recognised_without_a_job(spark: Any) -> None:
    from pyspark.sql import functions as F

    from qbeast_connect.spark.write_input import plan_looks_nondeterministic as looks

    base = spark.range(10)
    changing = [
        base.selectExpr("id", "rand() as x"),
        base.selectExpr("id", "UUID() as u"),
        base.withColumn("t", F.current_timestamp()),
        base.where("id < now()"),
        spark.sql("select id, shuffle(array(1, 2)) as s from range(3)"),
        base.withColumn("u", F.udf(lambda v: v, "long").asNondeterministic()("id")),
    ]
    steady = [
        base.selectExpr("id", "rand(7) as x", "'brand' as b"),
        base.withColumn("x", F.rand()),  # the Connect client draws the seed once
        base.withColumn("u", F.udf(lambda v: v, "long")("id")),
        base.selectExpr("id * 2 as y"),
    ]
    assert [looks(df) for df in changing] == [True] * len(changing)
    assert [looks(df) for df in steady] == [False] * len(steady)


def test_timeline_write_counts_rows_of_files_with_nan(spark: Any, table_path: str) -> None:
    from qbeast_connect.timeline.writer import write_partitioned

    df = spark.range(0, 40).selectExpr(
        "date_add(date'2024-01-01', cast(id % 2 as int)) as dt",
        "case when id % 2 = 0 then double('NaN') else double('inf') end as y",
    )
    result = write_partitioned(df, table_path, partitionColumn="dt", updatePeriod="daily")
    assert result.num_rows == 40
    assert deltalake_table(table_path).num_rows == 40
