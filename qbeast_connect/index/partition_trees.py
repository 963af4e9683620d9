"""One OTree per time partition: the cube max weights and file layout of each partition.

In a time-partitioned qbeast table (``partitionBy="event_time:daily"``) every partition
is a tree of its own inside the revision: its cubes are sized by the revision's cube size
over the partition's rows, not over the table's. A write therefore carries one
:class:`PartitionTree` per partition value it writes (``WritePlan.partition_trees``),
computed from that partition's estimated domains and that partition's existing blocks;
the writer assigns each row with the tree of its partition. Blocks keep their own
``maxWeight``/``minWeight`` tags, so reading, sampling and pruning work per file as for
any qbeast table.

A partition the plan has no tree for (a sampled estimation may miss a tiny partition)
gets :data:`EMPTY_TREE`: all its rows in one root block, which is the right tree for a
partition of fewer than ``cubeSize`` rows.

Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from qbeast_connect.index.layout import FileLayout

__all__ = [
    "EMPTY_TREE",
    "PartitionTree",
    "group_offsets",
    "trees_from_json",
    "trees_to_json",
]


@dataclass(frozen=True)
class PartitionTree:
    """The cube max weights and file layout of one partition's rows."""

    cube_weights: Mapping[str, int] = field(default_factory=dict)
    layout: FileLayout = field(default_factory=FileLayout.single)

    def to_json_value(self) -> dict[str, Any]:
        """JSON value: ``{"w": {cube: weight}, "l": layout}``."""
        return {"w": dict(self.cube_weights), "l": self.layout.to_json_value()}

    @classmethod
    def from_json_value(cls, value: Mapping[str, Any]) -> PartitionTree:
        """Decode :meth:`to_json_value`."""
        return cls(
            {str(k): int(v) for k, v in value["w"].items()},
            FileLayout.from_json_value(value["l"]),
        )


#: The tree of a partition without an estimate: every row in the root.
EMPTY_TREE = PartitionTree()


def trees_to_json(trees: Mapping[str, PartitionTree] | None) -> dict[str, Any] | None:
    """The JSON value of a plan's partition trees (None: no partitions)."""
    if trees is None:
        return None
    return {value: tree.to_json_value() for value, tree in sorted(trees.items())}


def trees_from_json(value: Mapping[str, Any] | None) -> dict[str, PartitionTree] | None:
    """Decode :func:`trees_to_json`."""
    if value is None:
        return None
    return {str(k): PartitionTree.from_json_value(v) for k, v in value.items()}


def group_offsets(trees: Mapping[str, PartitionTree]) -> tuple[dict[str, int], int]:
    """A distinct range of file-group numbers for every partition's groups.

    Returns ``(offsets, count)``: partition value -> its first group number (values in
    sorted order), and the number of groups, one more than the partitions' groups: the
    last one collects rows of partitions without a tree.
    """
    offsets: dict[str, int] = {}
    at = 0
    for value in sorted(trees):
        offsets[value] = at
        at += max(1, trees[value].layout.group_count)
    return offsets, at + 1



def rows_by_value(column: Any) -> Iterator[tuple[Any, Any]]:
    """Each distinct value of ``column`` (an Arrow array of a batch's partition values, null
    included) with the indices of its rows (numpy and pyarrow are imported here: the
    model's importers must not pay for them)."""
    import numpy as np
    import pyarrow as pa

    encoded = column.dictionary_encode()
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    for code, value in enumerate(encoded.dictionary.to_pylist()):
        rows = np.flatnonzero(indices == code)
        if rows.size:
            yield value, rows
