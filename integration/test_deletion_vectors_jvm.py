"""Deletion vectors written by Delta's JVM, decoded by ``server_plugin.delta.deletion_vectors``.

A table with ``delta.enableDeletionVectors=true`` gets several DELETEs (a few rows in
several files, then a larger share, then more rows of files that already carry a vector);
for every live ``add`` of the log, the decoded row indexes must be exactly the rows of the
data file (``_metadata.row_index``) that Delta's ``format("delta")`` no longer returns,
under both settings of ``spark.databricks.delta.deletionVectors.useMetadataRowIndex``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from server_plugin.delta.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from server_plugin.delta.storage import LocalStorage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _live_adds(table: Path) -> list[dict[str, Any]]:
    """Live adds replayed from the JSON commits, keyed by (path, deletion vector id)."""
    live: dict[tuple[str, str | None], dict[str, Any]] = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            for kind in ("remove", "add"):
                if kind in action:
                    file = action[kind]
                    dv = file.get("deletionVector")
                    key = (
                        file["path"],
                        None if dv is None else DeletionVectorDescriptor.from_json(dv).unique_id,
                    )
                    if kind == "add":
                        live[key] = file
                    else:
                        live.pop(key, None)
    return list(live.values())


def _check_vectors(dspark: Any, table: Path) -> tuple[int, int]:
    """Assert every live add's decoded vector is what Delta hides; return (files, rows)."""
    live_ids = {int(r["id"]) for r in dspark.read.format("delta").load(str(table)).collect()}
    storage = LocalStorage(table)
    with_dv = deleted = 0
    for add in _live_adds(table):
        rows = (
            dspark.read.parquet(str(table / unquote(add["path"])))
            .select("id", "_metadata.row_index")
            .collect()
        )
        hidden = sorted(int(r["row_index"]) for r in rows if int(r["id"]) not in live_ids)
        dv = add.get("deletionVector")
        decoded = (
            []
            if dv is None
            else read_deletion_vector(storage, DeletionVectorDescriptor.from_json(dv)).tolist()
        )
        assert decoded == hidden, f"{add['path']}: {dv}"
        with_dv += dv is not None
        deleted += len(decoded)
    return with_dv, deleted


@pytest.mark.parametrize("use_metadata_row_index", ["true", "false"])
def test_decoded_vectors_are_the_rows_delta_hides(
    dspark: Any, tmp_path: Path, use_metadata_row_index: str, request: pytest.FixtureRequest
) -> None:
    setting = "spark.databricks.delta.deletionVectors.useMetadataRowIndex"
    dspark.conf.set(setting, use_metadata_row_index)
    # the session is shared with the other tests against Delta's JVM
    request.addfinalizer(lambda: dspark.conf.unset(setting))
    table = tmp_path / "dv"
    dspark.sql(
        f"CREATE TABLE delta.`{table}` (id BIGINT, k STRING) USING delta "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    # four files of 1000 rows each, ids shuffled inside a file
    dspark.range(0, 4000, numPartitions=4).selectExpr(
        "id", "concat('k', cast(id % 97 as string)) as k"
    ).repartition(4, "k").write.format("delta").mode("append").save(str(table))
    config = json.loads(
        next(
            line
            for line in (table / "_delta_log" / "00000000000000000000.json")
            .read_text()
            .splitlines()
            if '"metaData"' in line
        )
    )["metaData"]["configuration"]
    assert config.get("delta.enableDeletionVectors") == "true"

    # a few rows in several files
    dspark.sql(f"DELETE FROM delta.`{table}` WHERE id IN (3, 999, 1500, 2001, 3998)")
    small = _check_vectors(dspark, table)
    assert small[0] >= 2 and small[1] == 5
    # a larger share: vectors merged with the existing ones, bitmap containers
    dspark.sql(f"DELETE FROM delta.`{table}` WHERE id % 10 = 7 OR id BETWEEN 1000 AND 1999")
    dspark.sql(f"DELETE FROM delta.`{table}` WHERE k = 'k5'")
    with_dv, deleted = _check_vectors(dspark, table)
    assert with_dv >= 3
    assert deleted == 4000 - dspark.read.format("delta").load(str(table)).count()
    dvs = [a["deletionVector"] for a in _live_adds(table) if a.get("deletionVector")]
    assert any(d["storageType"] == "u" for d in dvs), dvs


def test_dense_vectors_of_one_large_file(dspark: Any, tmp_path: Path) -> None:
    """More than 4096 deleted rows of one file: bitmap or run containers, not arrays."""
    table = tmp_path / "dense"
    dspark.sql(
        f"CREATE TABLE delta.`{table}` (id BIGINT, k STRING) USING delta "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    dspark.range(0, 6000, numPartitions=1).selectExpr("id", "cast(id as string) as k").write.format(
        "delta"
    ).mode("append").save(str(table))
    dspark.sql(f"DELETE FROM delta.`{table}` WHERE id < 4500 OR id % 3 = 0")
    with_dv, deleted = _check_vectors(dspark, table)
    assert (with_dv, deleted) == (1, 4500 + 500)
    dspark.sql(f"DELETE FROM delta.`{table}` WHERE id % 3 = 1 AND id > 5000")
    assert _check_vectors(dspark, table) == (1, 5000 + 333)
