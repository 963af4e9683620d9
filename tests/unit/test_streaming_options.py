"""The streaming batch writer checks its options on the client, before a query starts."""

from __future__ import annotations

import pickle
from types import SimpleNamespace
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.streaming import QbeastBatchWriter


def test_batch_writer_refuses_options_it_sets_itself() -> None:
    with pytest.raises(qc.InvalidOptionError, match="txnVersion"):
        qc.qbeast_batch_writer("/tmp/t", txnAppId="a", txnVersion=3)
    with pytest.raises(qc.InvalidOptionError, match="mode"):
        qc.qbeast_batch_writer("/tmp/t", txnAppId="a", mode="overwrite")
    with pytest.raises(qc.InvalidOptionError, match="exactly one"):
        qc.qbeast_batch_writer("/tmp/t", columnsToIndex="x")
    with pytest.raises(qc.InvalidOptionError, match="exactly one"):
        qc.qbeast_batch_writer("/tmp/t", txnAppId="a", checkpointLocation="/tmp/c")
    with pytest.raises(qc.InvalidOptionError, match="unknown option"):
        qc.qbeast_batch_writer("/tmp/t", txnAppId="a", cubesize_typo=3)


def test_batch_writer_pickles_with_its_options() -> None:
    func = qc.qbeast_batch_writer("/tmp/t", checkpointLocation="/tmp/c", columnsToIndex="x,y")
    copy = pickle.loads(pickle.dumps(func))
    assert isinstance(copy, QbeastBatchWriter)
    assert (copy.path, copy.checkpoint_location, copy.app_id) == ("/tmp/t", "/tmp/c", None)
    assert copy.options.columns_to_index == "x,y"
    assert copy.options.txn_version is None


class _FailingStart:
    """Stands for ``df.writeStream`` on a server whose foreachBatch process lacks the package."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self

    def start(self) -> None:
        raise RuntimeError(
            "[STREAMING_PYTHON_RUNNER_INITIALIZATION_FAILURE] Streaming Runner initialization "
            "failed, returned -2. Cause: ModuleNotFoundError: No module named 'qbeast_connect'"
        )


def test_write_stream_names_the_server_install_when_foreach_batch_cannot_import_it() -> None:
    df = SimpleNamespace(writeStream=_FailingStart())
    with pytest.raises(qc.PluginUnavailableError, match="install qbeast-connect in the server"):
        qc.write_stream(df, "/tmp/t", checkpointLocation="/tmp/c")  # type: ignore[arg-type]


def test_batch_dataframe_is_released_by_the_server_not_by_its_finaliser() -> None:
    from pyspark.sql.connect.plan import CachedRemoteRelation

    from qbeast_connect.streaming import leave_release_to_server

    plan = CachedRemoteRelation("batch-df-id", None)  # type: ignore[arg-type]
    leave_release_to_server(SimpleNamespace(_plan=plan))  # type: ignore[arg-type]
    assert plan._relation_id is None  # the finaliser then sends no release call
    other = SimpleNamespace(_plan=SimpleNamespace(_relation_id="kept"))
    leave_release_to_server(other)  # type: ignore[arg-type]
    assert other._plan._relation_id == "kept"  # only a batch's cached relation is touched
