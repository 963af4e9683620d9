"""The one call of a pyspark private name (``spark/execute.py``) still matches pyspark."""

from __future__ import annotations

import inspect
from typing import Any

import pyarrow as pa
from pyspark.sql.connect.dataframe import DataFrame

from qbeast_connect.spark.execute import arrow_in_one_call


def test_installed_pyspark_connect_dataframe_still_runs_a_plan_in_one_call() -> None:
    to_table = DataFrame._to_table
    assert list(inspect.signature(to_table).parameters) == ["self"]
    # the plan alone: no schema request (toArrow) and no setting request (collect)
    source = inspect.getsource(to_table)
    assert "client.to_table(" in source
    assert "self.schema" not in source and "get_config" not in source.lower()


def test_arrow_in_one_call_takes_the_table_and_declines_other_frames() -> None:
    table = pa.table({"kind": ["a", "b"], "payload": ["1", "2"]})

    class ConnectLike:
        def _to_table(self) -> tuple[pa.Table, Any]:
            return table, None

    assert arrow_in_one_call(ConnectLike()) is table
    assert arrow_in_one_call(object()) is None
