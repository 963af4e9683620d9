"""``format("qbeast")`` samples: option ``sampleFraction`` returns exactly
``QbeastTable.sample(f)``'s rows and opens only the files the index selects for it.

Spark's ``TABLESAMPLE`` and ``DataFrame.sample`` never reach a Python data source by
themselves (the plan keeps a ``Sample`` above the scan): this option, on a read or on a
catalog table, works on any server. On a server running qbeast-connect's SQL extension (the
suite's embedded server does: the machine has a JDK), the extension's rule takes the sample off
the plan and hands it to the source, so ``TABLESAMPLE`` and ``df.sample`` return the same rows
from the same files (the tests at the end).
"""

from __future__ import annotations

from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import InvalidOptionError, NotAQbeastTableError
from server_plugin.qbeast_format import QbeastDataSource


@pytest.fixture(scope="module")
def indexed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Many cubes (cubeSize 300 over 9,000 rows), an indexed column with NULLs."""
    path = str(tmp_path_factory.mktemp("format_sample") / "events")
    df = spark.range(9_000, numPartitions=3).selectExpr(
        "id",
        "case when id % 11 = 0 then null else cast(id % 1000 as double) / 10 end as x",
        "concat('k', cast(id % 37 as string)) as k",
    )
    qc.write(df, path, columnsToIndex="x,k", cubeSize=300)
    return path


def _opened_files(path: str, **options: str) -> set[str]:
    """The files a ``format("qbeast")`` read plans, run in-process as Spark's driver runs it."""
    source = QbeastDataSource({"path": path, **options})
    reader = source.reader(source.schema())
    return {entry[0] for p in reader.partitions() for entry in p.value}


@pytest.mark.parametrize("fraction", [0.02, 0.3, 1.0])
def test_sample_option_returns_the_qbeast_sample(spark: Any, indexed: str, fraction: float) -> None:
    table = qc.QbeastTable.forPath(spark, indexed)
    expected = sorted(table.sample(fraction).collect())
    got = sorted(
        spark.read.format("qbeast").option("sampleFraction", str(fraction)).load(indexed).collect()
    )
    assert got == expected
    assert 0 < len(got) <= 9_000
    if fraction < 1.0:
        assert len(got) < 9_000 * min(1.0, fraction * 2 + 0.05)
        opened = _opened_files(indexed, sampleFraction=str(fraction))
        everything = _opened_files(indexed)
        assert opened < everything  # the index left files out
        assert {p.rsplit("/", 1)[-1] for p in table.sample(fraction).inputFiles()} == {
            p.rsplit("/", 1)[-1] for p in opened
        }


def test_sample_option_with_a_filter(spark: Any, indexed: str) -> None:
    table = qc.QbeastTable.forPath(spark, indexed)
    where = "x < 30 and k in ('k1', 'k2', 'k3')"
    expected = sorted(table.read(where=where, fraction=0.2).collect())
    got = spark.read.format("qbeast").option("sampleFraction", "0.2").load(indexed).where(where)
    assert sorted(got.collect()) == expected
    assert expected


def test_a_catalog_table_created_as_a_sample(spark: Any, indexed: str) -> None:
    table = qc.QbeastTable.forPath(spark, indexed)
    spark.sql("DROP TABLE IF EXISTS events_sample")
    spark.sql(
        f"CREATE TABLE events_sample USING qbeast OPTIONS (sampleFraction '0.1') "
        f"LOCATION '{indexed}'"
    ).collect()
    try:
        got = sorted(spark.sql("SELECT * FROM events_sample").collect())
        assert got == sorted(table.sample(0.1).collect())
        counts = spark.sql("SELECT k, count(*) AS n FROM events_sample GROUP BY k").collect()
        assert sum(r.n for r in counts) == len(got)
        with pytest.raises(Exception, match="sampleFraction reads a sample of a table"):
            spark.sql("INSERT INTO events_sample VALUES (1, 1.0, 'k1')").collect()
    finally:
        spark.sql("DROP TABLE IF EXISTS events_sample").collect()
    assert table.toDF().count() == 9_000  # dropping the external table kept the data
    with pytest.raises(Exception, match=r"sampleFraction must be a number in \(0, 1\]"):
        spark.sql(
            f"CREATE TABLE bad_sample USING qbeast OPTIONS (sampleFraction 'half') "
            f"LOCATION '{indexed}'"
        ).collect()


@pytest.mark.parametrize("text", ["0", "1.5", "nan", "half"])
def test_a_bad_fraction_is_refused(indexed: str, text: str) -> None:
    with pytest.raises(InvalidOptionError, match="sampleFraction|fraction"):
        QbeastDataSource({"path": indexed, "sampleFraction": text}).reader(
            QbeastDataSource({"path": indexed}).schema()
        )


def test_a_plain_delta_table_has_no_weights_to_sample(spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "plain")
    import deltalake
    import pyarrow as pa

    deltalake.write_deltalake(path, pa.table({"id": list(range(10))}))
    with pytest.raises(NotAQbeastTableError, match="convertToQbeast"):
        QbeastDataSource({"path": path, "sampleFraction": "0.5"}).reader(
            QbeastDataSource({"path": path}).schema()
        )


# --------------------------------------------------------------------------------------
# TABLESAMPLE and DataFrame.sample through the server's SQL extension
# --------------------------------------------------------------------------------------


def _optimized_plan(spark: Any, query: str) -> str:
    text = spark.sql(f"EXPLAIN EXTENDED {query}").collect()[0][0]
    return text.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]


def test_the_suite_server_runs_the_sql_extension(spark: Any) -> None:
    from qbeast_connect.spark.sql_extension import EXTENSION_CLASS

    assert EXTENSION_CLASS in spark.conf.get("spark.sql.extensions").split(",")


@pytest.mark.parametrize("fraction", [0.02, 0.3])
def test_dataframe_sample_is_the_qbeast_sample(spark: Any, indexed: str, fraction: float) -> None:
    table = qc.QbeastTable.forPath(spark, indexed)
    sampled = spark.read.format("qbeast").load(indexed).sample(fraction=fraction, seed=7)
    assert sorted(sampled.collect()) == sorted(table.sample(fraction).collect())
    # the seed does not matter: the weights are the rows'
    again = spark.read.format("qbeast").load(indexed).sample(fraction=fraction, seed=8)
    assert sorted(again.collect()) == sorted(sampled.collect())
    assert "Sample" not in sampled._explain_string(extended=True).split("Optimized")[1]


def test_tablesample_of_a_catalog_table_reads_the_qbeast_sample(spark: Any, indexed: str) -> None:
    table = qc.QbeastTable.forPath(spark, indexed)
    spark.sql("DROP TABLE IF EXISTS events_ts").collect()
    spark.sql(f"CREATE TABLE events_ts USING qbeast LOCATION '{indexed}'").collect()
    try:
        query = "SELECT id, x, k FROM events_ts TABLESAMPLE (10 PERCENT) WHERE x < 50"
        got = sorted(spark.sql(query).collect())
        assert got == sorted(table.read(where="x < 50", fraction=0.1).collect())
        assert 0 < len(got) < 900
        assert "Sample" not in _optimized_plan(spark, query)
        # BUCKET 1 OUT OF 4 is a sample of a quarter
        buckets = sorted(
            spark.sql("SELECT * FROM events_ts TABLESAMPLE (BUCKET 1 OUT OF 4)").collect()
        )
        assert buckets == sorted(table.sample(0.25).collect())
    finally:
        spark.sql("DROP TABLE IF EXISTS events_ts").collect()


def test_samples_of_samples_multiply_their_fractions(spark: Any, indexed: str) -> None:
    """A sample g of the rows below weight(f) is the rows below weight(f * g): stacked
    samples, and TABLESAMPLE of a table created as a sample, keep that meaning."""
    table = qc.QbeastTable.forPath(spark, indexed)
    stacked = spark.read.format("qbeast").load(indexed).sample(0.5).sample(0.4)
    assert sorted(stacked.collect()) == sorted(table.sample(0.2).collect())
    spark.sql("DROP TABLE IF EXISTS events_half").collect()
    spark.sql(
        f"CREATE TABLE events_half USING qbeast OPTIONS (sampleFraction '0.5') LOCATION '{indexed}'"
    ).collect()
    try:
        got = sorted(spark.sql("SELECT * FROM events_half TABLESAMPLE (20 PERCENT)").collect())
        assert got == sorted(table.sample(0.1).collect())
    finally:
        spark.sql("DROP TABLE IF EXISTS events_half").collect()


def test_tablesample_opens_only_the_files_of_the_sample(indexed: str) -> None:
    """What the rule hands the source plans the files of ``sampleFraction``, no more."""
    pushed = _opened_files(indexed, tableSampleFraction="0.05", tableSampleSeed="3")
    assert pushed == _opened_files(indexed, sampleFraction="0.05")
    assert pushed < _opened_files(indexed)


def test_what_the_rule_leaves_to_spark(spark: Any, indexed: str) -> None:
    df = spark.read.format("qbeast").load(indexed)
    with_replacement = df.sample(True, 0.3, seed=1)
    assert "Sample" in with_replacement._explain_string(extended=True).split("Optimized")[1]
    assert 1_500 < with_replacement.count() < 4_000
    # randomSplit's ranges: Spark's, so the parts still add up to the table
    parts = df.randomSplit([0.5, 0.5], seed=3)
    assert sorted(parts[0].collect() + parts[1].collect()) == sorted(df.collect())


def test_tablesample_of_a_table_without_weights_is_a_bernoulli_sample(
    spark: Any, tmp_path: Any
) -> None:
    """A plain Delta table read through ``format("qbeast")`` has no weights: the source draws
    each row with the sample's probability, the same rows for the same seed."""
    path = str(tmp_path / "plain_sampled")
    import deltalake
    import pyarrow as pa

    deltalake.write_deltalake(path, pa.table({"id": list(range(20_000))}))
    df = spark.read.format("qbeast").load(path)
    first = sorted(r.id for r in df.sample(fraction=0.2, seed=5).collect())
    assert first == sorted(r.id for r in df.sample(fraction=0.2, seed=5).collect())
    assert first != sorted(r.id for r in df.sample(fraction=0.2, seed=6).collect())
    assert 3_600 < len(first) < 4_400 and len(set(first)) == len(first)
    assert (
        "Sample"
        not in df.sample(fraction=0.2, seed=5)._explain_string(extended=True).split("Optimized")[1]
    )


@pytest.mark.parametrize(
    "options",
    [{"tableSampleFraction": "2"}, {"tableSampleFraction": "0.1", "tableSampleSeed": "x"}],
)
def test_a_bad_pushed_sample_is_refused(indexed: str, options: dict[str, str]) -> None:
    with pytest.raises(InvalidOptionError, match="tableSampleFraction|fraction"):
        QbeastDataSource({"path": indexed, **options}).reader(
            QbeastDataSource({"path": indexed}).schema()
        )
