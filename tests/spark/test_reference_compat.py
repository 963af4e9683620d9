"""What qbeast-spark would write, checked on real tables: hashing texts from the server's JVM,
the table configuration after an append, the optimize commit, DATE coordinates, and project
errors for bad read/operation arguments."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qbeast_connect as qc
from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.index.java_text_np import java_double_texts, java_float_texts
from qbeast_connect.model.block import decode_blocks
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.hashing import (
    java_double_to_string,
    java_float_to_string,
    scala_bytes_hash,
)
from qbeast_connect.model.revision import Revision
from tests.spark.helpers import latest_configuration, live_adds, log_actions

MAX_WEIGHT = 2147483647
FIXTURE_LOG = Path(__file__).resolve().parents[1] / "fixtures" / "qbeast_spark_table" / "_delta_log"


def _jvm_version(spark: Any) -> str:
    row = spark.sql(
        "SELECT java_method('java.lang.System', 'getProperty', 'java.specification.version') v"
    ).collect()[0]
    return str(row["v"])


def _random_doubles(n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    k = n // 5
    parts = [
        rng.integers(0, 2**64, k, dtype=np.uint64).view(np.float64),
        (rng.random(k) - 0.5) * 10.0 ** rng.integers(-30, 30, k),
        np.rint(rng.random(k) * 10.0 ** rng.integers(7, 19, k)),  # integers: JDK 17 digits
        rng.integers(1, 1 << 20, k) / 2.0 ** rng.integers(0, 40, k),
        rng.integers(0, 1 << 52, k, dtype=np.int64).view(np.float64),  # subnormals
    ]
    edges = [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 2.2250738585072014e-308,
             1.7976931348623157e308, 1e7, 9999999.999999998, 1e-3, 0.0009999999999999998,
             2e23, 1e23, 2.0**62, 2.0**63, 1e-5]
    return edges + np.concatenate(parts).tolist()


def test_double_and_float_texts_match_the_server_jvm(spark: Any) -> None:
    """Java's own Double/Float.toString on the server's JDK 17, for ~5000 values each."""
    assert _jvm_version(spark) == "17", "the reference formats numbers as JDK 17 does"
    doubles = _random_doubles(5000, 7)
    df = spark.createDataFrame([(i, v) for i, v in enumerate(doubles)], "i long, x double")
    rows = df.selectExpr(
        "i",
        "java_method('java.lang.Double', 'toString', x) AS d",
        "java_method('java.lang.Float', 'toString', cast(x AS float)) AS f",
        "cast(x AS float) AS xf",
    ).collect()
    rows.sort(key=lambda r: r["i"])
    jvm_doubles = [r["d"] for r in rows]
    assert [java_double_to_string(v) for v in doubles] == jvm_doubles
    assert java_double_texts(np.array(doubles)) == jvm_doubles
    floats = np.array([r["xf"] for r in rows], dtype=np.float32)
    jvm_floats = [r["f"] for r in rows]
    assert [java_float_to_string(float(v)) for v in floats] == jvm_floats
    assert java_float_texts(floats) == jvm_floats
    # the sample holds values where JDK 17 is not the shortest repr
    assert sum(t != repr(v) for t, v in zip(jvm_doubles, doubles, strict=True)) > 100


def _coordinate(text: str) -> float:
    return (scala_bytes_hash(text.encode()) & 0x7FFFFFFF) / 2147483647.0


def test_hashing_double_column_cube_assignment_matches_the_reference(
    spark: Any, table_path: str
) -> None:
    """Every row of a ``x:hashing`` double column sits in the cube the reference would pick:
    the point hashes the JVM's ``Double.toString`` text, the weight is Spark's ``hash``."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(11)
    values = np.concatenate([
        np.rint(rng.random(1500) * 10.0 ** rng.integers(16, 19, 1500)),  # JDK 17 digit rule
        (rng.random(1500) - 0.5) * 10.0 ** rng.integers(-12, 30, 1500),
    ]).tolist()
    df = spark.createDataFrame([(v,) for v in values], "x double")
    jvm = {
        r["x"]: (r["t"], r["h"])
        for r in df.selectExpr(
            "x", "java_method('java.lang.Double', 'toString', x) AS t", "hash(x) AS h"
        ).collect()
    }
    assert sum(t != repr(x) for x, (t, _) in jvm.items()) > 500
    qc.write(df, table_path, columnsToIndex="x:hashing", cubeSize=60)
    adds = live_adds(table_path)
    max_weight: dict[str, int] = {}
    for add in adds.values():
        for b in decode_blocks(add["tags"]["blocks"]):
            max_weight[b.cube_id] = min(max_weight.get(b.cube_id, MAX_WEIGHT), b.max_weight)
    assert len(max_weight) > 20
    checked = 0
    for name, add in adds.items():
        expected: Counter[str] = Counter()
        for x in pq.read_table(f"{table_path}/{name}").column("x").to_pylist():
            text, weight = jvm[x]
            point = [_coordinate(text)]
            cube = CubeId.root(1)
            while cube.to_string() in max_weight and weight > max_weight[cube.to_string()]:
                cube = CubeId.container(point, cube.depth + 1)
            expected[cube.to_string()] += 1
            checked += 1
        blocks = {b.cube_id: b.element_count for b in decode_blocks(add["tags"]["blocks"])}
        assert dict(expected) == blocks, name
    assert checked == len(values)


def test_columns_to_index_after_append_matches_the_reference(spark: Any, table_path: str) -> None:
    """The ``columnsToIndex`` key holds the option as given; on an append without the option
    it is the latest revision's column names (qbeast-spark's default), with no suffixes."""

    def rows(lo: int, hi: int) -> Any:
        return spark.range(lo, hi).selectExpr("cast(id as string) AS s", "cast(id as double) AS y")

    qc.write(rows(0, 500), table_path, columnsToIndex="s:hashing,y:linear", cubeSize=1000)
    assert latest_configuration(table_path)["columnsToIndex"] == "s:hashing,y:linear"
    qc.write(rows(1000, 1500), table_path, mode="append")  # y outside the space: revision 2
    config = latest_configuration(table_path)
    assert config["qbeast.lastRevisionID"] == "2"
    assert config["columnsToIndex"] == "s,y"
    rev = Revision.from_json(config["qbeast.revision.2"])
    assert [t.type_name for t in rev.column_transformers] == ["hashing", "linear"]
    qc.write(rows(3000, 3500), table_path, mode="append", columnsToIndex="s:hashing,y")
    config = latest_configuration(table_path)
    assert config["qbeast.lastRevisionID"] == "3"
    assert config["columnsToIndex"] == "s:hashing,y"


def test_optimize_commit_info_matches_the_reference(spark: Any, table_path: str) -> None:
    """An optimize commits a Delta WRITE in mode Append (the reference fixture's form), all
    file actions with ``dataChange: false``."""
    reference = next(
        json.loads(line)["commitInfo"]
        for line in (FIXTURE_LOG / "00000000000000000001.json").read_text().splitlines()
        if "commitInfo" in line
    )
    data = spark.range(0, 3000, numPartitions=2).selectExpr("id", "cast(id % 97 as double) x")
    qc.write(data, table_path, columnsToIndex="x", cubeSize=400)
    for i in range(1, 3):
        qc.write(data.selectExpr(f"id + {i * 3000} as id", "x"), table_path, mode="append")
    table = qc.QbeastTable.forPath(spark, table_path)
    result = table.optimize()
    assert result.version == table.version() + 1 and result.removed_files >= 3
    actions = [a for v, a in log_actions(table_path) if v == result.version]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert (info["operation"], info["operationParameters"]) == (
        reference["operation"],
        reference["operationParameters"],
    ) == ("WRITE", {"mode": "Append"})
    assert info["isBlindAppend"] is False
    changes = [a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a]
    assert len(changes) > 3 and not any(changes)
    assert qc.QbeastTable.forPath(spark, table_path).toDF().count() == 9000


def test_date_coordinates_are_utc_midnight_in_any_session_time_zone(
    spark: Any, table_path: str
) -> None:
    """DATE values index as ``days * 86_400_000`` (UTC midnight) whatever the session and
    JVM time zones: the reference uses the writer JVM's zone, which equals this under UTC."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        df = spark.range(0, 400).selectExpr("id", "date_add(DATE'2020-03-01', cast(id AS int)) d")
        qc.write(df, table_path, columnsToIndex="d", cubeSize=100)
        rev = Revision.from_json(latest_configuration(table_path)["qbeast.revision.1"])
        t = rev.transformations[0]
        first = (18322 + 0) * 86_400_000  # 2020-03-01 is day 18322 of the epoch
        assert (t.min_number, t.max_number) == (first, first + 399 * 86_400_000)  # type: ignore[attr-defined]
        table = qc.QbeastTable.forPath(spark, table_path)
        assert table.read("d = DATE'2020-03-05'").collect()[0]["id"] == 4
        assert table.read("d >= DATE'2020-12-01'").count() == 400 - 275
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_read_version_as_of_fraction_is_a_project_error(spark: Any, table_path: str) -> None:
    qc.write(spark.range(0, 50).selectExpr("id"), table_path, columnsToIndex="id")
    qc.write(spark.range(50, 60).selectExpr("id"), table_path, mode="append")
    table = qc.QbeastTable.forPath(spark, table_path)
    for bad in (1.5, 1.0, -1, True, "1"):
        with pytest.raises(InvalidOptionError, match="versionAsOf must be a whole number >= 0"):
            table.read(versionAsOf=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="versionAsOf"):
        qc.QbeastTable.forPath(spark, table_path, versionAsOf=0.5)  # type: ignore[arg-type]
    assert table.read(versionAsOf=0).count() == 50


def test_vacuum_nan_is_a_project_error(spark: Any, table_path: str) -> None:
    qc.write(spark.range(0, 50).selectExpr("id"), table_path, columnsToIndex="id")
    table = qc.QbeastTable.forPath(spark, table_path)
    for bad in (float("nan"), float("inf"), -1.0, "168", None):
        with pytest.raises(InvalidOptionError, match="retentionHours must be a finite number"):
            table.vacuum(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="dryRun must be True or False"):
        table.vacuum(168, dryRun="yes")  # type: ignore[arg-type]
    assert table.vacuum(168, dryRun=True) == []


def test_convert_garbage_parquet_is_a_project_error(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "src"
    spark.range(0, 20).selectExpr("id").coalesce(1).write.parquet(str(source))
    (source / "garbage.parquet").write_bytes(b"this is not a parquet file")
    with pytest.raises(InvalidOptionError, match=r"garbage\.parquet is not a readable parquet"):
        qc.convertToQbeast(spark, str(source), columnsToIndex="id")
    assert not (source / "_delta_log").exists()
