"""``VERSION AS OF`` on qbeast tables of the catalog, through the server's SQL extension.

Spark 4.2 refuses time travel on a session catalog table whose provider is not Delta while it
resolves the relation; the extension's time-travel rule hands the version to the plugin
before that (``QbeastTimeTravelRule``). The suite's embedded server runs the extension.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

STATS = '{"id_min": 0, "id_max": 1000}'


@pytest.fixture
def versioned(spark: Any, tmp_path: Path) -> Any:
    """``tt_versions``: version 0 holds ids 0-9, version 1 ids 0-29, version 2 ids 0-29 and 500."""
    spark.sql("DROP TABLE IF EXISTS tt_versions").collect()
    spark.sql(
        f"CREATE TABLE tt_versions (id BIGINT) USING qbeast OPTIONS (columnsToIndex 'id', "
        f"columnStats '{STATS}') LOCATION '{tmp_path / 'tt'}'"
    ).collect()
    for query in (
        "SELECT id FROM range(0, 10)",
        "SELECT id FROM range(10, 30)",
        "SELECT 500L AS id",
    ):
        spark.sql(f"INSERT INTO tt_versions {query}").collect()
    yield spark
    spark.sql("DROP TABLE IF EXISTS tt_versions").collect()


def _ids(spark: Any, query: str) -> list[int]:
    return sorted(row[0] for row in spark.sql(query).collect())


def test_version_as_of_reads_each_version(versioned: Any) -> None:
    spark = versioned
    assert _ids(spark, "SELECT id FROM tt_versions VERSION AS OF 0") == list(range(10))
    assert _ids(spark, "SELECT id FROM default.tt_versions VERSION AS OF 1") == list(range(30))
    assert _ids(spark, "SELECT id FROM spark_catalog.default.tt_versions FOR VERSION AS OF 1") == (
        list(range(30))
    )
    assert _ids(spark, "SELECT id FROM tt_versions") == [*range(30), 500]
    # with a filter the index prunes, and the DataFrame form
    assert _ids(spark, "SELECT id FROM tt_versions VERSION AS OF 1 WHERE id >= 25") == [
        25,
        26,
        27,
        28,
        29,
    ]
    df = spark.read.option("versionAsOf", 0).table("tt_versions")
    assert sorted(r.id for r in df.collect()) == list(range(10))


def test_what_time_travel_still_refuses(versioned: Any) -> None:
    spark = versioned
    with pytest.raises(Exception, match="QBEAST_INVALID_OPTION.*version 7 does not exist"):
        spark.sql("SELECT id FROM tt_versions VERSION AS OF 7").collect()
    # timestamps are Spark's to resolve, and it refuses them for this provider
    with pytest.raises(Exception, match="UNSUPPORTED_FEATURE.TIME_TRAVEL"):
        spark.sql("SELECT id FROM tt_versions TIMESTAMP AS OF '2020-01-01'").collect()
    # a temporary view of the same name is not the table
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW tt_view AS SELECT * FROM tt_versions").collect()
    with pytest.raises(Exception, match="UNSUPPORTED_FEATURE.TIME_TRAVEL"):
        spark.sql("SELECT id FROM tt_view VERSION AS OF 0").collect()
