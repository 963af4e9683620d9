"""``format("qbeast")`` samples: option ``sampleFraction`` returns exactly
``QbeastTable.sample(f)``'s rows and opens only the files the index selects for it.

Spark's ``TABLESAMPLE`` and ``DataFrame.sample`` never reach a Python data source (the plan
keeps a ``Sample`` above the scan), so this option, on a read or on a catalog table, is how a
client that does not import qbeast-connect gets a qbeast sample.
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
    got = (
        spark.read.format("qbeast").option("sampleFraction", "0.2").load(indexed).where(where)
    )
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
