"""``qc.write`` and ``format("qbeast")`` apply the same write rules (``qbeast_connect.rules``).

The same data written by each, with the same options, gives the same table configuration
(the qbeast keys and the revision), the same Delta schema, the same file tag keys and the
same revision tags; an append through each (adding a column with ``mergeSchema``) gives
identical results again.

What may legitimately differ, and is not compared:

* the revision's ``timestamp`` and ``tableID`` (the write time and the table's path) and
  the transformations' ``nullValue`` (drawn at random per revision, as qbeast-spark does);
* the cubes: ``qc.write`` estimates cube max weights with two Spark jobs, while the
  one-pass ``format("qbeast")`` writer knows no weights for a new revision and puts every
  row in the root cube (see ``server_plugin/qbeast_format.py``). So the ``cube``,
  ``minWeight``, ``maxWeight``, ``state`` and ``elementCount`` tag values and the number
  of files differ; both tables hold the same rows.
"""

from __future__ import annotations

import json
from typing import Any

import qbeast_connect as qc
from tests.spark.helpers import latest_configuration, live_adds, log_actions

STATS = {"x_min": -10.0, "x_max": 200.0, "d_min": "2023-12-01", "d_max": "2025-01-31"}
OPTIONS = {"columnsToIndex": "x,d,s:hashing", "cubeSize": 50, "columnStats": json.dumps(STATS)}


def _data(spark: Any, start: int, n: int, extra: bool = False) -> Any:
    columns = [
        "id",
        "cast(id as double) / 2 as x",
        "date_add(date'2024-01-01', cast(id % 300 as int)) as d",
        "concat('k', cast(id % 13 as string)) as s",
        "case when id % 5 = 0 then null else cast(id as int) end as n",
        "cast(id % 7 as decimal(6, 2)) as price",
    ]
    if extra:
        columns.append("id % 2 = 0 as even")
    return spark.range(start, start + n, numPartitions=2).selectExpr(*columns)


def _comparable_revision(text: str) -> dict[str, Any]:
    revision = json.loads(text)
    revision.pop("timestamp")
    revision.pop("tableID")
    for transformation in revision["transformations"]:
        transformation.pop("nullValue", None)
    return dict(revision)


def _comparable_configuration(path: str) -> dict[str, Any]:
    config: dict[str, Any] = dict(latest_configuration(path))
    for key in [k for k in config if k.startswith("qbeast.revision.")]:
        config[key] = _comparable_revision(config[key])
    return config


def _schema_string(path: str) -> str:
    schema = ""
    for _, action in log_actions(path):
        if "metaData" in action:
            schema = action["metaData"]["schemaString"]
    return schema


def _tags(path: str) -> tuple[set[frozenset[str]], set[str]]:
    """(the distinct tag key sets of the live files, their revision tags)."""
    adds = live_adds(path).values()
    return {frozenset(a["tags"]) for a in adds}, {a["tags"]["revision"] for a in adds}


def _rows(spark: Any, path: str) -> list[Any]:
    return sorted(spark.read.format("qbeast").load(path).collect())


def _assert_same_tables(
    spark: Any, p1: str, p2: str, rows: int, revisions: set[str] | None = None
) -> None:
    revisions = revisions or {"1"}
    config1, config2 = _comparable_configuration(p1), _comparable_configuration(p2)
    assert config1 == config2
    assert config1["qbeast.lastRevisionID"] == max(revisions)
    assert _schema_string(p1) == _schema_string(p2)
    keys1, revisions1 = _tags(p1)
    keys2, revisions2 = _tags(p2)
    assert keys1 == keys2 and len(keys1) == 1
    assert revisions1 == revisions2 == revisions
    expected = _rows(spark, p1)
    assert len(expected) == rows
    assert _rows(spark, p2) == expected


def test_both_writers_apply_the_same_write_rules(spark: Any, tmp_path: Any) -> None:
    p1, p2 = str(tmp_path / "client"), str(tmp_path / "format")
    qc.write(_data(spark, 0, 200), p1, **OPTIONS)
    # format("qbeast") writes in append or overwrite mode; append creates a missing table
    writer = _data(spark, 0, 200).write.format("qbeast").mode("append")
    for key, value in OPTIONS.items():
        writer = writer.option(key, value)
    writer.save(p2)
    _assert_same_tables(spark, p1, p2, 200)
    config = latest_configuration(p1)
    assert config["columnsToIndex"] == "x,d,s:hashing" and config["cubeSize"] == "50"
    revision = json.loads(config["qbeast.revision.1"])
    assert revision["transformations"][0]["minNumber"] == -10.0
    schema = json.loads(_schema_string(p1))
    assert [f["name"] for f in schema["fields"]] == ["id", "x", "d", "s", "n", "price"]
    assert all(f["nullable"] for f in schema["fields"])

    # an append within the space, adding a column
    qc.write(_data(spark, 200, 100, extra=True), p1, mode="append", mergeSchema=True, **OPTIONS)
    appender = _data(spark, 200, 100, extra=True).write.format("qbeast").mode("append")
    for key, value in {**OPTIONS, "mergeSchema": "true"}.items():
        appender = appender.option(key, value)
    appender.save(p2)
    _assert_same_tables(spark, p1, p2, 300)
    merged = json.loads(_schema_string(p1))
    assert [f["name"] for f in merged["fields"]][-1] == "even"

    # an append with another cubeSize and no columnsToIndex starts revision 2 in the same
    # space; the columnsToIndex option then records the revision's column names
    again = {"cubeSize": 80, "columnStats": OPTIONS["columnStats"]}
    qc.write(_data(spark, 300, 50, extra=True), p1, mode="append", **again)
    appender = _data(spark, 300, 50, extra=True).write.format("qbeast").mode("append")
    for key, value in again.items():
        appender = appender.option(key, value)
    appender.save(p2)
    _assert_same_tables(spark, p1, p2, 350, {"1", "2"})
    config = latest_configuration(p2)
    assert config["columnsToIndex"] == "x,d,s" and config["cubeSize"] == "80"
    first = _comparable_revision(config["qbeast.revision.1"])
    second = _comparable_revision(config["qbeast.revision.2"])
    assert second["transformations"] == first["transformations"]
    assert second["desiredCubeSize"] == 80
