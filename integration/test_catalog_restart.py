"""Issue #34: table names outlive the embedded server when it keeps its catalog on disk.

Two client processes, one after the other, each with its own embedded server
(``qc.session(catalog=DIR)``): the first writes a qbeast table and names it with SQL text,
the second (a new server, the same directory) finds the name and reads the table through
it. A process of its own for each, because ``qc.stop()`` would also stop the shared
sessions of the other tests in this worker."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLIENT = textwrap.dedent(
    """
    import json, sys
    import qbeast_connect as qc
    from qbeast_connect.exceptions import InvalidOptionError
    from qbeast_connect.model.weight import weight_from_fraction

    phase, catalog, path = sys.argv[1:4]
    spark = qc.session(catalog=catalog)
    out = {"catalog": spark.conf.get("spark.sql.catalogImplementation")}
    if phase == "create":
        df = spark.range(0, 3000).selectExpr("id", "id % 13 AS k", "cast(id * 0.5 AS double) AS v")
        qc.write(df, path, columnsToIndex="id,k", cubeSize=500)
        spark.sql(f"CREATE TABLE events USING qbeast LOCATION '{path}'")
        try:
            qc.session(catalog=catalog + "-other")
        except InvalidOptionError as e:
            out["other_catalog"] = e.code
    out["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES").collect())
    row = spark.sql("SELECT count(*) AS n, sum(v) AS s FROM events WHERE k = 3").collect()[0]
    out["filtered"] = [row["n"], row["s"]]
    table = qc.QbeastTable.forName(spark, "events")
    out["sample_rows"] = table.sample(0.2).count()
    weight = weight_from_fraction(0.2)
    out["sample_expected"] = spark.read.parquet(path).where(f"hash(id, k) < {weight}").count()
    print("RESULT " + json.dumps(out))
    qc.stop()
    """
)


def _run(phase: str, catalog: Path, path: Path, tmp_path: Path) -> dict[str, object]:
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    done = subprocess.run(
        [sys.executable, str(script), phase, str(catalog), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    result: dict[str, object] = json.loads(lines[-1][len("RESULT ") :])
    return result


def test_a_name_made_before_a_restart_reads_the_table_after_it(tmp_path: Path) -> None:
    catalog, path = tmp_path / "catalog", tmp_path / "events"
    first = _run("create", catalog, path, tmp_path)
    second = _run("read", catalog, path, tmp_path)
    matching = [i for i in range(3000) if i % 13 == 3]
    expected = [len(matching), sum(i * 0.5 for i in matching)]
    assert first["catalog"] == second["catalog"] == "hive"
    assert first["other_catalog"] == "QBEAST_INVALID_OPTION"
    assert first["tables"] == second["tables"] == ["events"]
    assert first["filtered"] == second["filtered"] == expected
    # the sample through the name: exactly the rows of weight below the fraction's
    assert first["sample_rows"] == second["sample_rows"] == second["sample_expected"]
    assert 0 < int(str(second["sample_rows"])) < 3000
    # the metastore and its log live in the catalog directory
    assert (catalog / "metastore_db").is_dir()
    assert (catalog / "derby.log").exists()
