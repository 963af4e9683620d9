"""Rows of a write task set aside by file group between buffer flushes.

A write task whose rows do not fit its buffer (``writer.FLUSH_ROWS``/``FLUSH_BYTES``) used
to write one file per file group at every flush, so a task streaming many input splits
wrote ``groups x flushes`` files. Instead, a full buffer is cut by file group and each
group's rows are appended, with their cube, weight and Z-order key, to a local Arrow IPC
file of that group; at the end of the task every group is read back alone, sorted and
written as one parquet file. The task's memory stays that of one buffer (or one group),
its files are one per file group, and no row crosses the JVM a second time: this is what
lets a write of many input partitions narrow them (``coalesce``) instead of shuffling
them by file group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from qbeast_connect.write_plan import INTERNAL_PREFIX

__all__ = ["CUBE_FIELD", "KEY_FIELD", "WEIGHT_FIELD", "GroupSpill"]

#: Helper columns a spilled row carries (dropped before its file is written).
CUBE_FIELD = f"{INTERNAL_PREFIX}SpillCube"
WEIGHT_FIELD = f"{INTERNAL_PREFIX}SpillWeight"
KEY_FIELD = f"{INTERNAL_PREFIX}SpillKey"
#: Compression of the spill files: lz4 costs little CPU and halves the local disk used.
SPILL_COMPRESSION = "lz4"


def _local_dir() -> str | None:
    """Spark's scratch directory of this executor when known, else the system's."""
    dirs = os.environ.get("SPARK_LOCAL_DIRS", "")
    first = dirs.split(",")[0].strip()
    return first if first and os.path.isdir(first) else None


class GroupSpill:
    """Per file group Arrow IPC files of one write task, in a private temporary directory."""

    def __init__(self) -> None:
        self._dir: str | None = None
        self._writers: dict[int, tuple[Any, Any]] = {}
        self.rows = 0

    def __bool__(self) -> bool:
        return self.rows > 0

    def add(
        self,
        table: pa.Table,
        groups: np.ndarray,
        cubes: np.ndarray,
        weights: np.ndarray,
        keys: np.ndarray,
    ) -> None:
        """Append the rows of ``table`` to the files of their groups (one sort by group)."""
        if table.num_rows == 0:
            return
        order = np.argsort(groups, kind="stable")
        ordered = table.take(pa.array(order)).append_column(
            CUBE_FIELD, pa.array(np.asarray(cubes, dtype=np.int32)[order])
        )
        ordered = ordered.append_column(
            WEIGHT_FIELD, pa.array(np.asarray(weights, dtype=np.int32)[order])
        )
        ordered = ordered.append_column(
            KEY_FIELD, pa.array(np.asarray(keys, dtype=np.uint64)[order])
        )
        counts = np.bincount(groups, minlength=int(groups.max()) + 1)
        start = 0
        for group in np.flatnonzero(counts).tolist():
            end = start + int(counts[group])
            self._writer(group, ordered.schema).write_table(ordered.slice(start, end - start))
            start = end
        self.rows += table.num_rows

    def _writer(self, group: int, schema: pa.Schema) -> Any:
        found = self._writers.get(group)
        if found is None:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="qbeast-spill-", dir=_local_dir())
            sink = pa.OSFile(os.path.join(self._dir, f"{group}.arrows"), "wb")
            options = pa.ipc.IpcWriteOptions(compression=SPILL_COMPRESSION)
            found = (sink, pa.ipc.new_stream(sink, schema, options=options))
            self._writers[group] = found
        return found[1]

    def groups(self) -> Iterator[tuple[int, pa.Table, np.ndarray, np.ndarray, np.ndarray]]:
        """``(group, rows, cubes, weights, keys)`` of every spilled group, one at a time in
        group order; each group's file is deleted once read."""
        for sink, writer in self._writers.values():
            writer.close()
            sink.close()
        for group in sorted(self._writers):
            assert self._dir is not None
            name = os.path.join(self._dir, f"{group}.arrows")
            with pa.OSFile(name, "rb") as source:
                table = pa.ipc.open_stream(source).read_all()
            os.remove(name)
            del self._writers[group]
            cubes = table.column(CUBE_FIELD).to_numpy()
            weights = table.column(WEIGHT_FIELD).to_numpy()
            keys = table.column(KEY_FIELD).to_numpy()
            rows = table.drop_columns([CUBE_FIELD, WEIGHT_FIELD, KEY_FIELD])
            yield group, rows, cubes, weights, keys

    def close(self) -> None:
        """Close and delete whatever is left (also after a failure)."""
        for sink, writer in self._writers.values():
            for item in (writer, sink):
                with contextlib.suppress(Exception):  # best effort cleanup
                    item.close()
        self._writers.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.rows = 0
