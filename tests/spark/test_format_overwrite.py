"""An overwrite starts a table's revisions over, whichever writer makes it (spec §1.3).

``qc.write(..., mode="overwrite")`` and ``df.write.format("qbeast").mode("overwrite")`` both
leave exactly a staging revision 0 and revision 1 in the metadata, and every file of the
new version belongs to revision 1.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import qbeast_connect as qc
from tests.spark.helpers import deltalake_table, latest_configuration, live_adds


def _two_revisions(spark: Any, path: str) -> None:
    """A table whose metadata holds revisions 0, 1 and 2 (the append widens the space)."""
    first = spark.range(0, 200).selectExpr("id", "cast(id % 50 as double) as x")
    qc.write(first, path, columnsToIndex="x", cubeSize=100)
    wider = spark.range(200, 300).selectExpr("id", "cast(id as double) as x")
    assert qc.write(wider, path, mode="append").revision_id == 2
    assert _revision_keys(path) == ["0", "1", "2"]


def _revision_keys(path: str) -> list[str]:
    config = latest_configuration(path)
    assert config["qbeast.lastRevisionID"] == str(
        max(int(k.rsplit(".", 1)[1]) for k in config if k.startswith("qbeast.revision."))
    )
    return sorted(k.rsplit(".", 1)[1] for k in config if k.startswith("qbeast.revision."))


def _check_restarted(path: str, rows: int) -> dict[str, Any]:
    config = latest_configuration(path)
    assert _revision_keys(path) == ["0", "1"], path
    assert config["qbeast.lastRevisionID"] == "1"
    staging = json.loads(config["qbeast.revision.0"])
    assert [t["className"] for t in staging["columnTransformers"]] == [
        "io.qbeast.core.transform.EmptyTransformer"
    ]
    adds = live_adds(path)
    assert adds and {a["tags"]["revision"] for a in adds.values()} == {"1"}
    assert deltalake_table(path).num_rows == rows
    revision: dict[str, Any] = json.loads(config["qbeast.revision.1"])
    return revision


def test_format_overwrite_drops_old_revisions_like_qc_write(spark: Any, tmp_path: Path) -> None:
    data = spark.range(0, 150).selectExpr("id", "cast(id % 120 as double) as x")
    history = tmp_path / "history"
    _two_revisions(spark, str(history))
    by_qc, by_format, by_stats = (str(tmp_path / n) for n in ("qc", "format", "stats"))
    for copy in (by_qc, by_format, by_stats):
        shutil.copytree(history, copy)  # the log names its files relative to the table

    result = qc.write(data, by_qc, mode="overwrite", columnsToIndex="x", cubeSize=100)
    assert result.revision_id == 1
    _check_restarted(by_qc, 150)

    # no columnsToIndex: the format writer keeps the latest revision's space, the union
    # [0, 299] with the append's headroom above: [0, 598]
    data.write.format("qbeast").mode("overwrite").save(by_format)
    revision = _check_restarted(by_format, 150)
    linear = revision["transformations"][0]
    assert (linear["minNumber"], linear["maxNumber"]) == (0.0, 598.0)
    assert spark.read.format("qbeast").load(by_format).count() == 150
    assert qc.QbeastTable.forPath(spark, by_format).filter("x >= 100").count() == 20

    # columnsToIndex and columnStats given: a space from the options
    data.write.format("qbeast").option("columnsToIndex", "x").option(
        "columnStats", '{"x_min": 0, "x_max": 200}'
    ).mode("overwrite").save(by_stats)
    _check_restarted(by_stats, 150)
