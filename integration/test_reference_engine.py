"""qbeast-spark 0.7's engine against our tables, both ways (issue #31).

qbeast-spark's jars are not obtainable here; the engine it runs on is: Spark 3.5.0 in
classic mode with Delta Lake 3.1.0 (Scala 2.12, JDK 17), built by
``integration/reference/env.py`` into a cache (a venv with ``pyspark`` 3.5, Delta's jars
through Maven) and driven by one long-lived ``integration/reference/driver.py`` process.

* (a) Tables qbeast-connect writes (double, float, date, timestamp, decimal, strings with
  NULLs; appends, one opening a revision; optimize; checkpoints; time partitions) read in
  Delta 3.1 with exactly our rows at every version, and qbeast's sample, computed by the
  reference as "rows whose Spark ``hash`` of the indexed columns is below the weight", is
  exactly ours.
* (b) Delta 3.1's writes on a qbeast table (append, DELETE, UPDATE, MERGE, OPTIMIZE, its
  checkpoints) read by qbeast-connect exactly as Delta 3.1 reads them; then our append and
  ``optimize(0)``, each read by Delta 3.1 as we read it; then Delta 3.1's VACUUM.
* (c) Spark 3.5's ``hash`` (qbeast's row weight) and Scala 2.12's ``bytesHash`` of the JVM's
  text (the ``hashing`` coordinate) equal ours for every type, edge values included.

Rows are compared as :func:`tests.spark.helpers.row_key` texts (the digest's
normalisation), so a difference names the rows.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import qbeast_connect as qc
from integration.reference.env import ReferenceEngine, reference_jars, venv_python
from qbeast_connect.index.hashing_np import spark_hash_columns
from qbeast_connect.index.normalize import normalize
from qbeast_connect.model.hashing import spark_hash
from qbeast_connect.model.transformation.hash import HashTransformation
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import live_adds, row_key, rows_digest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: The columns of every table here, as SQL both Sparks evaluate alike over ``range``.
COLUMNS = (
    "id",
    "cast(((id * 7919) % 10007) / 10.0 as double) as x",
    "case when id % 17 = 0 then null else cast(((id * 104729) % 5003) / 7.0 as float) end as f",
    "date_add(date'2024-01-01', cast(id % 400 as int)) as d",
    "timestamp_seconds(1700000000 + id * 61) as ts",
    "cast(((id * 37) % 100000) / 100.0 as decimal(12, 2)) as m",
    "case when id % 13 = 0 then null when id % 11 = 0 then concat('ü€', cast(id % 7 as string)) "
    "else concat('k', cast(id % 97 as string)) end as s",
)
SCHEMA = "id bigint, x double, f float, d date, ts timestamp, m decimal(12,2), s string"


@pytest.fixture(scope="session")
def reference_build() -> None:
    """The reference venv and jars, built on first use (minutes); a failure is an error."""
    reference_jars()
    venv_python()


@pytest.fixture(scope="session")
def ref(reference_build: None) -> Iterator[ReferenceEngine]:
    """One reference driver for the module; listed first, so that its JVM boots while the
    Spark 4 server starts."""
    engine = ReferenceEngine()
    yield engine
    engine.stop()


def test_reference_engine_is_qbeast_spark_s_engine(ref: ReferenceEngine) -> None:
    info = ref.info
    assert (info["spark"], info["delta"]) == ("3.5.0", "3.1.0"), info
    assert info["scala"].startswith("2.12.") and info["java"].startswith("17"), info
    assert info["timezone"] == "UTC"


def _data(spark: Any, lo: int, hi: int, **replace: str) -> Any:
    exprs = [replace.get(c.rsplit(" as ", 1)[-1], c) for c in COLUMNS]
    return spark.sql(f"SELECT {', '.join(exprs)} FROM range({lo}, {hi}, 1, 2)")


def _theirs(
    ref: ReferenceEngine, path: str, version: int | None = None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    got = ref.call({"op": "read", "path": path, "version": version})
    return got["columns"], [tuple(r) for r in got["rows"]]


def _as_tuples(df: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    table = df.toArrow().select(columns)
    return [tuple(r[c] for c in columns) for r in table.to_pylist()]


def _assert_same_rows(
    ours: list[tuple[Any, ...]], theirs: list[tuple[Any, ...]], what: str
) -> None:
    a, b = Counter(map(row_key, ours)), Counter(map(row_key, theirs))
    if a != b:
        only_ours, only_theirs = list((a - b).elements()), list((b - a).elements())
        raise AssertionError(
            f"{what}: qbeast-connect {len(ours)} rows, Delta 3.1 {len(theirs)}; "
            f"{len(only_ours)} only ours, e.g. {only_ours[:3]}; "
            f"{len(only_theirs)} only Delta 3.1's, e.g. {only_theirs[:3]}"
        )
    assert rows_digest(ours) == rows_digest(theirs)


def _same_rows(spark: Any, ref: ReferenceEngine, path: str, version: int | None = None) -> int:
    """Delta 3.1 on Spark 3.5 and qbeast-connect read the same rows; their count."""
    columns, theirs = _theirs(ref, path, version)
    ours = _as_tuples(qc.QbeastTable.forPath(spark, path, versionAsOf=version).toDF(), columns)
    _assert_same_rows(ours, theirs, f"{path} version {version}")
    return len(theirs)


def _same_sample(spark: Any, ref: ReferenceEngine, path: str, columns: str, fraction: float) -> int:
    """Our sample is exactly the rows whose Spark 3.5 ``hash`` is below the fraction's weight."""
    got = ref.call(
        {
            "op": "sample_hash",
            "path": path,
            "by": columns,
            "threshold": weight_from_fraction(fraction),
        }
    )
    ours = _as_tuples(qc.QbeastTable.forPath(spark, path).sample(fraction), got["columns"])
    theirs = [tuple(r) for r in got["rows"]]
    _assert_same_rows(ours, theirs, f"sample({fraction}) of {path}")
    assert len(theirs) > 0
    return len(theirs)


# --------------------------------------------------------------------------------------
# (a) Delta 3.1 reads what we write
# --------------------------------------------------------------------------------------


def test_reference_reads_every_version_of_our_tables(
    ref: ReferenceEngine, remote_spark: Any, tmp_path: Path
) -> None:
    spark = remote_spark
    path = str(tmp_path / "ours")
    # every type of the suite indexed: double, float with NULLs, date, timestamp, decimal,
    # a hashed string with NULLs
    qc.write(
        _data(spark, 0, 2000),
        path,
        columnsToIndex="x,f,d,ts,m,s:hashing",
        cubeSize=250,
        **{"delta.checkpointInterval": "2"},
    )
    qc.write(_data(spark, 2000, 2300), path, mode="append")
    wider = _data(
        spark,
        2300,
        2600,
        x="cast(5000 + id as double) as x",
        d="date_add(date'2026-01-01', cast(id % 400 as int)) as d",
    )
    assert qc.write(wider, path, mode="append").new_revision
    qc.QbeastTable.forPath(spark, path).optimize()
    latest = qc.QbeastTable.forPath(spark, path).version()
    assert latest == 3 and (Path(path) / "_delta_log" / f"{2:020d}.checkpoint.parquet").is_file()
    counts = [_same_rows(spark, ref, path, v) for v in range(latest + 1)]
    assert counts == [2000, 2300, 2600, 2600]
    assert [v for v, _ in ref.call({"op": "history", "path": path})] == list(range(latest + 1))
    detail = ref.call({"op": "sql", "sql": f"DESCRIBE DETAIL delta.`{path}`"})
    row = dict(zip(detail["columns"], detail["rows"][0], strict=True))
    assert row["numFiles"] == len(live_adds(path)) and row["format"] == "delta"
    _same_sample(spark, ref, path, "x, f, d, ts, m, s", 0.1)


def test_reference_reads_our_time_partitioned_table(
    ref: ReferenceEngine, remote_spark: Any, tmp_path: Path
) -> None:
    spark = remote_spark
    path = str(tmp_path / "tp")
    qc.write(
        _data(spark, 0, 1000), path, columnsToIndex="x,s", cubeSize=200, partitionBy="ts:daily"
    )
    qc.write(_data(spark, 1000, 1300), path, mode="append")
    assert _same_rows(spark, ref, path, 0) == 1000
    assert _same_rows(spark, ref, path) == 1300
    day = "to_date(ts) = date'2023-11-15'"
    got = ref.call({"op": "read", "path": path, "where": day})
    ours = _as_tuples(qc.QbeastTable.forPath(spark, path).filter(day), got["columns"])
    _assert_same_rows(ours, [tuple(r) for r in got["rows"]], "one day")
    assert len(ours) > 0


def test_reference_reads_the_deletion_vectors_our_deletes_write(
    ref: ReferenceEngine, remote_spark: Any, tmp_path: Path
) -> None:
    """Issue #33: a table we create with deletion vectors on, after two of our deletes
    (the second joins the first's vectors), reads in Delta 3.1 as it reads in ours, at
    every version, and the sample stays exactly the rows below the weight."""
    spark = remote_spark
    path = str(tmp_path / "dv")
    qc.write(
        _data(spark, 0, 1500),
        path,
        columnsToIndex="x,d",
        cubeSize=300,
        **{"delta.enableDeletionVectors": "true"},
    )
    table = qc.QbeastTable.forPath(spark, path)
    assert table.delete("s IS NULL OR x < 100").num_deletion_vectors > 0
    assert qc.QbeastTable.forPath(spark, path).delete("id % 9 = 4").num_deletion_vectors > 0
    assert not [p for p in Path(path).glob("*.parquet") if p.name not in set(live_adds(path))]
    counts = [_same_rows(spark, ref, path, v) for v in range(3)]
    assert counts[0] == 1500 and counts[0] > counts[1] > counts[2]
    _same_sample(spark, ref, path, "x, d", 0.3)


# --------------------------------------------------------------------------------------
# (b) we read what Delta 3.1 writes, and it reads what we write after it
# --------------------------------------------------------------------------------------


def _py_rows(lo: int, hi: int) -> list[list[Any]]:
    """Rows built in Python for the reference's ``append``: edge doubles and NULLs."""
    edges = [-0.0, math.nan, 5e-324, 1e300, -1e-300]
    out = []
    for i in range(lo, hi):
        x = edges[i % len(edges)] if i % 3 == 0 else (i % 1000) / 3.0
        f = None if i % 4 == 0 else struct.unpack("<f", struct.pack("<f", i / 9.0))[0]
        out.append(
            [
                i,
                x,
                f,
                dt.date(1999, 12, 31) + dt.timedelta(days=i % 50),
                dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=dt.UTC)
                + dt.timedelta(minutes=i),
                Decimal(i % 7000).scaleb(-2),
                None if i % 5 == 0 else f"py{i % 23}\u00e9",
            ]
        )
    return out


def test_we_read_reference_writes_and_it_reads_ours_after(
    ref: ReferenceEngine, remote_spark: Any, tmp_path: Path
) -> None:
    spark = remote_spark
    path = str(tmp_path / "dml")
    qc.write(
        _data(spark, 0, 3000),
        path,
        columnsToIndex="x,d,s",
        cubeSize=400,
        **{"delta.checkpointInterval": "3"},
    )
    table = f"delta.`{path}`"
    expected = 3000

    def check(sample: bool = False) -> None:
        assert _same_rows(spark, ref, path) == expected
        if sample:
            _same_sample(spark, ref, path, "x, d, s", 0.2)

    ref.call({"op": "append", "path": path, "schema": SCHEMA, "rows": _py_rows(3000, 3200)})
    expected += 200
    check(sample=True)
    ref.call({"op": "sql", "sql": f"DELETE FROM {table} WHERE id % 10 = 3"})
    expected -= 320
    check()
    ref.call(
        {
            "op": "sql",
            "sql": f"UPDATE {table} SET s = 'updated', x = x + 1 WHERE id BETWEEN 100 AND 160",
        }
    )
    check()
    cols = ", ".join(COLUMNS)
    ref.call(
        {
            "op": "sql",
            "sql": f"CREATE OR REPLACE TEMP VIEW late AS SELECT {cols} FROM range(3150, 3400)",
        }
    )
    ref.call(
        {
            "op": "sql",
            "sql": f"MERGE INTO {table} t USING late ON t.id = late.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        }
    )
    expected += 200 + 5  # 3200..3399 are new, and so are the 5 ids of 3150..3199 the DELETE took
    check(sample=True)
    where = "x BETWEEN 100 AND 200 AND s IS NOT NULL"
    got = ref.call({"op": "read", "path": path, "where": where})
    ours = _as_tuples(qc.QbeastTable.forPath(spark, path).filter(where), got["columns"])
    _assert_same_rows(ours, [tuple(r) for r in got["rows"]], "an indexed filter")
    # Delta's DML above left one file (one task): a second one for OPTIMIZE to compact
    ref.call({"op": "sql", "sql": f"INSERT INTO {table} SELECT {cols} FROM range(3400, 3500)"})
    expected += 100
    optimized = ref.call({"op": "sql", "sql": f"OPTIMIZE {table}"})
    added, removed = optimized["rows"][0][1][:2]  # metrics: numFilesAdded, numFilesRemoved
    assert added == 1 and removed >= 2, optimized
    check(sample=True)
    assert sorted(Path(path, "_delta_log").glob("*.checkpoint.parquet"))  # Delta 3.1's own
    after_reference = qc.QbeastTable.forPath(spark, path).version()

    # our turn: an append and optimize(0), which indexes the files Delta 3.1 wrote
    qc.write(_data(spark, 5000, 5400), path, mode="append")
    expected += 400
    untagged = [a for a in live_adds(path).values() if not (a.get("tags") or {})]
    assert untagged
    qc.QbeastTable.forPath(spark, path).optimize(0)
    assert all((a.get("tags") or {}) for a in live_adds(path).values())
    latest = qc.QbeastTable.forPath(spark, path).version()
    assert latest == after_reference + 2
    assert _same_rows(spark, ref, path, after_reference + 1) == expected
    check(sample=True)
    history = ref.call({"op": "history", "path": path})
    assert [v for v, _ in history] == list(range(latest + 1))
    operations = [op for _, op in history]
    assert operations[1:7] == ["WRITE", "DELETE", "UPDATE", "MERGE", "WRITE", "OPTIMIZE"]
    # Delta 3.1's VACUUM deletes the files our optimize replaced: what is left is the
    # latest version's files, which both read alike
    ref.call({"op": "sql", "sql": f"VACUUM {table} RETAIN 0 HOURS"})
    assert {p.name for p in Path(path).glob("*.parquet")} == {Path(a).name for a in live_adds(path)}
    check()


# --------------------------------------------------------------------------------------
# (c) the hashes: Spark 3.5's weight and Scala 2.12's coordinate hash, ours
# --------------------------------------------------------------------------------------


def _values(kind: str, n: int, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    if kind == "int":
        edges = [0, 1, -1, 42, 2**31 - 1, -(2**31)]
        return edges + rng.integers(-(2**31), 2**31, n).tolist()
    if kind == "bigint":
        edges = [0, -1, 2**63 - 1, -(2**63), 2**31, -(2**31) - 1]
        return edges + rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64).tolist()
    if kind == "double":
        edges = [
            0.0,
            -0.0,
            math.nan,
            math.inf,
            -math.inf,
            5e-324,
            2.2250738585072014e-308,
            1.7976931348623157e308,
            1e7,
            1e-3,
            2e23,
            2.0**62,
            0.1,
            -2.5,
        ]
        parts = [
            rng.integers(0, 2**64, n // 3, dtype=np.uint64).view(np.float64),
            rng.integers(1, 1 << 52, n // 3, dtype=np.int64).view(np.float64),  # subnormals
            (rng.random(n // 3) - 0.5) * 10.0 ** rng.integers(-20, 25, n // 3),
        ]
        return edges + [float(v) for v in np.concatenate(parts) if not math.isnan(v)]
    if kind == "float":
        edges = [
            0.0,
            -0.0,
            math.nan,
            math.inf,
            -math.inf,
            1.401298464324817e-45,
            3.4028234663852886e38,
            0.1,
        ]
        bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
        return [float(np.float32(v)) for v in edges] + [float(v) for v in bits if np.isfinite(v)]
    if kind == "date":
        days = [0, -1, 1, -719162, 2932896, *rng.integers(-719162, 2932896, n).tolist()]
        return [dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in days]
    if kind == "timestamp":
        lo, hi = -62135596800 * 10**6, 253402300799 * 10**6  # years 1 to 9999
        micros = [0, -1, 1, 999999, lo, hi, *rng.integers(lo, hi, n).tolist()]
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return [epoch + dt.timedelta(microseconds=int(m)) for m in micros]
    if kind == "decimal(12,2)":
        top = 10**12 - 1
        unscaled = [0, 1, -1, top, -top, *rng.integers(-top, top + 1, n).tolist()]
        return [Decimal(int(u)).scaleb(-2) for u in unscaled]
    if kind == "decimal(38,10)":
        out = [
            Decimal("0e-10"),
            Decimal(f"{10**38 - 1}e-10"),
            Decimal(f"{1 - 10**38}e-10"),
        ]
        for _ in range(n):
            digits = int(rng.integers(1, 39))
            u = int("".join(str(int(d)) for d in rng.integers(0, 10, digits)))
            out.append(
                Decimal(f"{u if rng.random() < 0.5 else -u}e-10")
            )  # exact: no context rounding
        return out
    if kind == "string":
        alphabet = [*"abcXYZ019 _-", "é", "ü", "€", "中", "文", "😀", "\u0301", "\x00", "ß"]
        out = ["", "qbeast", "😀" * 5, "a" * 100]
        for _ in range(n):
            length = int(rng.integers(0, 30))
            out.append("".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), length)))
        return out
    raise AssertionError(kind)


_ARROW = {
    "int": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "float": pa.float32(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "decimal(12,2)": pa.decimal128(12, 2),
    "decimal(38,10)": pa.decimal128(38, 10),
    "string": pa.string(),
}

#: The JVM's text of a value, as qbeast-spark's hashing transformation takes it.
_JVM_TEXT = {
    "int": "java_method('java.lang.String', 'valueOf', v)",
    "bigint": "java_method('java.lang.String', 'valueOf', v)",
    "double": "java_method('java.lang.String', 'valueOf', v)",
    "float": "java_method('java.lang.String', 'valueOf', v)",
    "decimal(12,2)": "java_method('java.math.BigDecimal', 'valueOf', cast(v * 100 as bigint), 2)",
    "string": "v",
}


@pytest.mark.parametrize("kind", list(_ARROW))
def test_spark35_hash_and_scala_bytes_hash_are_ours(ref: ReferenceEngine, kind: str) -> None:
    values = [*_values(kind, 300, seed=len(kind)), None]
    rows = [[i, v] for i, v in enumerate(values)]
    view = "h_" + kind.replace("(", "_").replace(",", "_").replace(")", "")
    ref.call({"op": "view", "name": view, "schema": f"i int, v {kind}", "rows": rows})
    selected = ["i", "hash(v) AS h", "hash(i, v) AS h2"]
    if kind in ("date", "timestamp"):  # the instant the reference got, to make it count
        selected.append("unix_date(v) AS e" if kind == "date" else "unix_micros(v) AS e")
    if kind in _JVM_TEXT:
        selected.append(f"CASE WHEN v IS NULL THEN NULL ELSE {_JVM_TEXT[kind]} END AS t")
    got = ref.call({"op": "sql", "sql": f"SELECT {', '.join(selected)} FROM {view} ORDER BY i"})
    jvm = [dict(zip(got["columns"], r, strict=True)) for r in got["rows"]]
    assert [r["i"] for r in jvm] == list(range(len(values)))

    arr = pa.array(values, type=_ARROW[kind])
    ids = pa.array(range(len(values)), type=pa.int32())
    if kind == "date":
        assert [r["e"] for r in jvm[:-1]] == [(v - dt.date(1970, 1, 1)).days for v in values[:-1]]
    if kind == "timestamp":
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        assert [r["e"] for r in jvm[:-1]] == [
            (v - epoch) // dt.timedelta(microseconds=1) for v in values[:-1]
        ]
    # the row weight: Spark 3.5's hash, our vectorised and scalar ports
    weights = spark_hash_columns([arr]).tolist()
    assert weights == [r["h"] for r in jvm]
    assert [spark_hash([v], [kind]) for v in values] == weights
    assert spark_hash_columns([ids, arr]).tolist() == [r["h2"] for r in jvm]
    assert jvm[-1]["h"] == 42  # a NULL leaves the seed
    # the hashing coordinate: Scala 2.12's bytesHash of the JVM's text of the value
    if kind in _JVM_TEXT:
        texts = [r["t"] for r in jvm[:-1]]
        hashes = ref.call({"op": "bytes_hash", "texts": texts})
        theirs = [(h & 0x7FFFFFFF) / 2147483647.0 for h in hashes]
        ours = normalize([HashTransformation(null_value=0)], [arr[:-1]])[:, 0].tolist()
        assert ours == theirs
