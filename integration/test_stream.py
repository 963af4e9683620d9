"""Kill the server in the middle of a streaming micro-batch: after a restart from the query's
checkpoint every input row is in the qbeast table exactly once.

A healthy server runs batch 0; a server started with ``QBEAST_CRASH_AT`` runs batch 1 and
kills itself (JVM and Python workers) either after the batch's data files are written and
before its commit, or after the qbeast commit and before Spark records the batch in the
checkpoint; the healthy server then restarts the query, which runs batch 1 again and
batch 2.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from tests.crash_server import run_until_crash
from tests.spark.helpers import deltalake_table, live_adds, row_digest, spark_digest
from tests.spark.test_streaming import SCHEMA, drop_batch_file, run_available, txn_versions

pytestmark = pytest.mark.slow

CLIENT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import qbeast_connect as qc
    from tests.spark.test_streaming import run_available
    spark = qc.session(remote=sys.argv[1])
    run_available(spark, Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]))
    """
)


@pytest.mark.parametrize(
    ("point", "committed"),
    [
        pytest.param("after_files", False, id="after-data-files"),
        pytest.param("after_commit", True, id="after-qbeast-commit"),
    ],
)
def test_stream_killed_mid_batch_restarts_with_each_row_once(
    remote_spark: Any, tmp_path: Path, point: str, committed: bool
) -> None:
    source, checkpoint, path = tmp_path / "in", tmp_path / "checkpoint", str(tmp_path / "t")
    rows = drop_batch_file(source, 0)
    first = run_available(remote_spark, source, path, checkpoint)
    assert [(v, t) for v, _, t in txn_versions(path)] == [(0, 0)]

    rows += drop_batch_file(source, 1)
    run_until_crash(point, CLIENT, str(source), path, str(checkpoint))
    # Spark planned batch 1 and never recorded it as done
    assert (checkpoint / "offsets" / "1").exists()
    assert not (checkpoint / "commits" / "1").exists()
    crashed = [(v, t) for v, _, t in txn_versions(path)]
    assert crashed == ([(0, 0), (1, 1)] if committed else [(0, 0)])
    if not committed:
        on_disk = {p.name for p in Path(path).glob("*.parquet")}
        assert on_disk - set(live_adds(path)), "the crash came after the data files"

    rows += drop_batch_file(source, 2)
    second = run_available(remote_spark, source, path, checkpoint)

    assert second.id == first.id
    # batch 1 committed once (by the crashed run or the restart), batch 2 after it
    assert txn_versions(path) == [(v, first.id, v) for v in range(3)]
    expected = spark_digest(remote_spark.createDataFrame(rows, SCHEMA))
    assert expected[0] == 120
    table = qc.QbeastTable.forPath(remote_spark, path).toDF()
    assert spark_digest(table) == expected
    assert row_digest(deltalake_table(path)) == expected
