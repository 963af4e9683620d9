"""A consolidating write's shuffle: every file group in a partition of its own."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from qbeast_connect.spark.tasks import assign_groups, partition_keys, spark_partition_of
from qbeast_connect.write_plan import WEIGHT_COLUMN
from tests.unit.test_write_task import _data, _plan


@pytest.mark.parametrize("partitions", [1, 2, 7, 66, 1000])
def test_partition_keys_reach_every_partition_once(partitions: int) -> None:
    keys = partition_keys(partitions)
    assert keys.dtype == np.int32 and (keys >= 0).all()
    assert spark_partition_of(keys, partitions).tolist() == list(range(partitions))


def test_consolidating_write_sends_each_file_group_to_its_own_partition(tmp_path: object) -> None:
    table = _data(20_000)
    plan = _plan(table, str(tmp_path), cube_size=1_000)
    groups = plan.layout.group_count
    assert groups > 10
    params = json.dumps(
        {
            "revision": plan.revision_json,
            "cubeWeights": dict(plan.cube_weights),
            "layout": plan.layout.to_json_value(),
        }
    )
    keys = assign_groups(
        params, table.column(WEIGHT_COLUMN).combine_chunks(),
        table.column("x").combine_chunks(), table.column("y").combine_chunks(),
    )
    assert keys.type == pa.int32()
    # the write repartitions by this column into `groups` partitions (write.group_by_file)
    partition = spark_partition_of(keys.to_numpy(), groups)
    assert len(np.unique(keys.to_numpy())) == groups
    # one partition per group: no task holds two groups and none is left empty
    assert sorted(np.unique(partition).tolist()) == list(range(groups))
