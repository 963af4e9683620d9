"""Time partitions in the ``qbeast_write`` data source (see
:mod:`qbeast_connect.rules.time_partitioning`).

Write tasks cut their rows by the partition column (:class:`PartitionCodes`): every file
holds the rows of one partition, under ``<column>=<value>/``, and its ``add`` carries the
value in ``partitionValues``. The driver-side commit stores the partitioning and the
column's partition timeline in the table configuration of the SAME commit as the files
(:func:`committed_configuration`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.rules.time_partitioning import PARTITIONING_KEY, TimePartitioning
from qbeast_connect.timeline.partition import TimePartition
from qbeast_connect.timeline.timeline import (
    PartitionTimeline,
    build_timelines,
    column_prefix,
    configured_impl,
    new_timeline,
    read_timelines,
    timelines_present,
    write_timelines,
)
from qbeast_connect.timeline.update_period import UpdatePeriod
from server_plugin.delta.snapshot import DeltaSnapshot

__all__ = ["PartitionCodes", "committed_configuration", "current_timelines"]


class PartitionCodes:
    """The partition of every row a write task buffers, as small integer codes.

    Codes index :attr:`labels`, the canonical partition strings seen so far, each checked
    once against the period.
    """

    def __init__(self, partitioning: TimePartitioning) -> None:
        self.partitioning = partitioning
        self.labels: list[str] = []
        self._ids: dict[str, int] = {}

    def codes(self, batch: pa.RecordBatch) -> np.ndarray:
        """The codes of the rows of ``batch``.

        Raises:
            InvalidOptionError: the batch has no partition column, a null time, or a
                string that is not a canonical partition of the period.
        """
        column = self.partitioning.column
        index = batch.schema.get_field_index(column)
        if index < 0:
            raise InvalidOptionError(
                f"the rows have no partition column {column!r}; columns are {batch.schema.names}"
            )
        values = batch.column(index)
        if values.null_count:
            raise InvalidOptionError(
                f"time column {self.partitioning.time_column!r} holds "
                f"{values.null_count} null(s); every row of a table partitioned by "
                f"{self.partitioning.text!r} needs a time"
            )
        if not pa.types.is_string(values.type) and not pa.types.is_large_string(values.type):
            values = pc.cast(values, pa.string())
        encoded = values.dictionary_encode()
        local = [self._id(str(label)) for label in encoded.dictionary.to_pylist()]
        mapping = np.asarray(local, dtype=np.int64)
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        return mapping[indices] if len(mapping) else np.zeros(0, dtype=np.int64)

    def _id(self, label: str) -> int:
        found = self._ids.get(label)
        if found is None:
            self.partitioning.period.parse(label)  # InvalidOptionError names the form
            found = self._ids[label] = len(self.labels)
            self.labels.append(label)
        return found


def current_timelines(
    base: DeltaSnapshot | None, column: str, *, rebuild: bool = False
) -> dict[UpdatePeriod, PartitionTimeline]:
    """The partition timelines of ``column`` in the table ``base`` (empty for a new table).

    They are read from the table configuration when it holds them, and rebuilt from the
    partition values of the table's files when it does not, when the stored ones are
    malformed, or when ``rebuild`` asks for it: the files are the truth.
    """
    if base is None:
        return {}
    configuration = base.metadata.configuration
    if timelines_present(configuration, column) and not rebuild:
        try:
            return read_timelines(configuration, column)
        except MetadataFormatError:
            pass  # rebuilt from the files below
    values = [add.partition_values.get(column) for add in base.files.values()]
    return build_timelines(values, configuration, column)


def committed_configuration(
    partitioning: TimePartitioning | None,
    configuration: Mapping[str, str] | None,
    base: DeltaSnapshot | None,
    overwrite: bool,
    values: Sequence[str | None],
) -> Mapping[str, str] | None:
    """The configuration a write commits, or None to keep the table's.

    Args:
        partitioning: the plan's time partitioning (None: ``configuration`` unchanged).
        configuration: the configuration the plan commits, or None to keep the table's.
        base: the table at the plan's read version (None for a new table).
        overwrite: whether the write replaces every file (the timeline starts empty).
        values: the partition values of the files the write adds.

    The partitioning is stored under :data:`PARTITIONING_KEY` and the timeline of its
    column is extended by the partitions of ``values``: a write that adds files to new
    partitions changes the configuration in the same commit.
    """
    if partitioning is None:
        return configuration
    old: Mapping[str, Any] = base.metadata.configuration if base is not None else {}
    start = dict(configuration if configuration is not None else old)
    column = partitioning.column
    if overwrite:
        start = {k: v for k, v in start.items() if not k.startswith(column_prefix(column))}
    timelines = {} if overwrite else current_timelines(base, column)
    period = partitioning.period
    if period not in timelines:
        timelines[period] = new_timeline(period, configured_impl(start, column, period))
    for value in values:
        if value is not None:
            timelines[period].add(TimePartition.parse(value, period))
    start[PARTITIONING_KEY] = json.dumps(partitioning.to_json_value(), sort_keys=True)
    new = write_timelines(start, column, timelines)
    if configuration is None and base is not None and new == dict(old):
        return None
    return new
