"""The reference engine's driver: Spark 3.5 (classic) with Delta Lake 3.1.0.

Run by the reference venv's python (``integration/reference/env.py``), never by the
project's: ``python driver.py <comma-separated jars>``. It reads one JSON command per line on
stdin and writes one JSON answer per line on stdout (``{"result": ...}`` or
``{"error": ...}``); at the end of its input it stops the session. Values that JSON has no
type for travel tagged, as ``env.encode``/``env.decode`` write them (kept in step by hand:
this file imports nothing of the project). Timestamps are naive UTC: the process runs with
``TZ=UTC`` and the session time zone is UTC.

Commands (``op``):

* ``ping``: Spark's and Delta's versions.
* ``read``: ``path`` [``version``, ``where``, ``columns``] -> ``{"columns", "rows"}`` of
  ``format("delta")`` at that version.
* ``sample_hash``: ``path``, ``by`` (SQL columns), ``threshold`` [``version``] -> the rows
  whose Spark ``hash(by) < threshold``: what a qbeast sample returns.
* ``sql``: ``sql`` -> the rows of its result.
* ``append``: ``path``, ``schema`` (DDL), ``rows`` -> Delta appends them.
* ``view``: ``name``, ``schema``, ``rows`` -> a temporary view of them.
* ``history``: ``path`` -> ``[[version, operation], ...]`` from ``DESCRIBE HISTORY``.
* ``bytes_hash``: ``texts`` -> Scala 2.12's ``MurmurHash3.bytesHash`` of each text's
  UTF-8 bytes (qbeast's ``hashing`` transformation), computed in the driver's JVM.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import sys
import traceback
from decimal import Decimal
from typing import Any


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return {"$ts": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"$bin": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "$ts" in value:  # aware: pyspark converts it without the local zone's help
            return dt.datetime.fromisoformat(value["$ts"]).replace(tzinfo=dt.UTC)
        if "$date" in value:
            return dt.date.fromisoformat(value["$date"])
        if "$dec" in value:
            return Decimal(value["$dec"])
        if "$bin" in value:
            return bytearray(base64.b64decode(value["$bin"]))
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _session(jars: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this venv's python
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("qbeast-reference")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.driver.memory", "768m")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "1")
        .config("spark.databricks.delta.snapshotPartitions", "1")
        # VACUUM lists the table in as many tasks as this says (10,000 by default): two
        # minutes of empty tasks on one core
        .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "1")
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _rows(df: Any) -> dict[str, Any]:
    return {"columns": df.columns, "rows": [_encode(list(r)) for r in df.collect()]}


def _delta(spark: Any, cmd: dict[str, Any]) -> Any:
    reader = spark.read.format("delta")
    if cmd.get("version") is not None:
        reader = reader.option("versionAsOf", int(cmd["version"]))
    df = reader.load(cmd["path"])
    if cmd.get("where"):
        df = df.filter(cmd["where"])
    if cmd.get("columns"):
        df = df.select(*cmd["columns"])
    return df


def _frame(spark: Any, cmd: dict[str, Any]) -> Any:
    return spark.createDataFrame([tuple(_decode(r)) for r in cmd["rows"]], cmd["schema"])


def _run(spark: Any, cmd: dict[str, Any]) -> Any:
    op = cmd["op"]
    if op == "ping":
        jvm = spark.sparkContext._jvm
        # spark.jars are on the context class loader, not on the JVM's class path
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        delta_class = jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
        return {
            "spark": spark.version,
            "delta": delta_class.getPackage().getImplementationVersion(),
            "java": jvm.java.lang.System.getProperty("java.version"),
            "scala": jvm.scala.util.Properties.versionNumberString(),
            "timezone": jvm.java.util.TimeZone.getDefault().getID(),
        }
    if op == "read":
        return _rows(_delta(spark, cmd))
    if op == "sample_hash":
        df = _delta(spark, cmd).filter(f"hash({cmd['by']}) < {int(cmd['threshold'])}")
        return _rows(df)
    if op == "sql":
        return _rows(spark.sql(cmd["sql"]))
    if op == "append":
        _frame(spark, cmd).write.format("delta").mode("append").save(cmd["path"])
        return None
    if op == "view":
        _frame(spark, cmd).createOrReplaceTempView(cmd["name"])
        return None
    if op == "history":
        rows = spark.sql(f"DESCRIBE HISTORY delta.`{cmd['path']}`").collect()
        return sorted([int(r["version"]), r["operation"]] for r in rows)
    if op == "bytes_hash":
        jvm = spark.sparkContext._jvm
        # the Scala object itself: py4j does not see its static forwarders
        module = jvm.java.lang.Class.forName("scala.util.hashing.MurmurHash3$")
        murmur = module.getField("MODULE$").get(None)
        return [int(murmur.bytesHash(bytearray(t.encode("utf-8")))) for t in cmd["texts"]]
    raise ValueError(f"unknown op {op!r}")


def main() -> None:
    # answers go to the original stdout; everything else that writes to fd 1 (the JVM,
    # py4j, print) goes to stderr, so nothing but answers reaches the reader
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    spark = None
    try:
        # the session starts before the first command: its JVM boots while the caller
        # prepares its own work
        try:
            spark = _session(sys.argv[1])
        except Exception as exc:
            traceback.print_exc()
            failed = f"the session did not start: {type(exc).__name__}: {exc}"
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                cmd = json.loads(line)
                if spark is None:
                    raise RuntimeError(failed)
                answer = {"result": _run(spark, cmd)}
            except Exception as exc:  # reported to the caller, the driver goes on
                traceback.print_exc()
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(answer) + "\n")
    finally:
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
