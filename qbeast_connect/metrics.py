"""Index metrics of one revision, computed on the client from a snapshot (spec §7.4).

Mirrors qbeast-spark's ``QbeastTable.getIndexMetrics``: everything is derived from the
revision's *denormalized blocks* (one row per block of every file of the revision, see
:func:`denormalized_blocks`), so no Spark job and no data file is needed.

Statistics follow the reference's ``SizeStats.forColumn``:

* ``avg``: the mean truncated toward zero (Spark ``avg(c).cast(long)``);
* ``stddev``: the *sample* standard deviation truncated toward zero, 0 when undefined
  (fewer than two values);
* quartiles: Spark ``approx_percentile(c, [0, .25, .5, .75, 1], 1000)``. For up to 1,000
  values that function is exact and returns, for a percentage ``p``, the smallest value
  ``v`` such that at least ``p`` of the values are ``<= v`` (``sorted[ceil(p*n) - 1]``; the
  minimum for ``p = 0``). We always compute that exact value, also for larger inputs, where
  Spark's answer may differ by its 0.1 % rank error.

Two deliberate differences from the reference: ``bytes`` is the exact sum of the file sizes
(the reference multiplies the *truncated* average by the file count, which can be up to
``fileCount - 1`` bytes lower), and the per-depth stats are returned as data
(:class:`DepthStats`) as well as text, where recent reference versions print nothing.

Example:
    >>> metrics = compute_index_metrics(snapshot)  # doctest: +SKIP
    >>> print(metrics)  # doctest: +SKIP
    >>> metrics.to_dict()["cube_count"]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from qbeast_connect.exceptions import NotAQbeastTableError
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.estimation_math import min_height as _min_height
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.model.weight import fraction_from_weight

#: The sample fraction whose bytes :class:`IndexMetrics` reports.
SAMPLE_FRACTION = 0.01

__all__ = [
    "DenormalizedBlock",
    "DepthStats",
    "IndexMetrics",
    "SizeStats",
    "compute_index_metrics",
    "denormalized_blocks",
    "leaf_cubes",
    "size_stats",
]

_QUARTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------


def _trunc_div(a: int, b: int) -> int:
    """``a / b`` truncated toward zero, exactly (Java ``(long) (double) a / b`` up to rounding)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _percentile(ordered: Sequence[int], p: float) -> int:
    """Smallest value such that at least ``p`` of the data is ``<=`` it (``ordered`` sorted)."""
    n = len(ordered)
    rank = max(math.ceil(p * n), 1)
    return ordered[min(rank, n) - 1]


def _json_fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields by name, in declaration order, as JSON-ready values.

    Nested dataclasses become dicts the same way and tuples become lists.
    """
    return {f.name: _json_value(getattr(obj, f.name)) for f in fields(obj)}


def _json_value(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _json_fields(value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class SizeStats:
    """Summary of a set of integer sizes (the reference's ``SizeStats``).

    Attributes:
        count: Number of values.
        avg: Mean truncated toward zero; None when there is no value.
        stddev: Sample standard deviation truncated toward zero; 0 with fewer than two values.
        min: Smallest value (None when empty).
        q1: First quartile: smallest value with at least 25 % of the values ``<=`` it.
        median: Smallest value with at least 50 % of the values ``<=`` it.
        q3: Smallest value with at least 75 % of the values ``<=`` it.
        max: Largest value.
    """

    count: int
    avg: int | None
    stddev: int
    min: int | None
    q1: int | None
    median: int | None
    q3: int | None
    max: int | None

    @property
    def quartiles(self) -> tuple[int, int, int, int, int] | None:
        """``(min, q1, median, q3, max)``, or None when there is no value."""
        if self.min is None or self.q1 is None or self.median is None:
            return None
        if self.q3 is None or self.max is None:
            return None
        return (self.min, self.q1, self.median, self.q3, self.max)

    def to_dict(self) -> dict[str, int | None]:
        """Return the fields as a JSON-ready dict."""
        return _json_fields(self)

    def __str__(self) -> str:
        """Render like the reference: ``(count: 3, avg: 2, stddev: 1, quartiles: [1,2,2,3,3])``."""
        return (
            f"(count: {self.count}, avg: {_text(self.avg)}, stddev: {self.stddev}, "
            f"quartiles: {_quartiles_text(self.quartiles)})"
        )


def size_stats(values: Iterable[int]) -> SizeStats:
    """Compute the :class:`SizeStats` of integer values (exact integer arithmetic).

    Args:
        values: The sizes (element counts, bytes, block counts…).

    Returns:
        The statistics; for no value: count 0, stddev 0 and every other field None.
    """
    ordered = sorted(int(v) for v in values)
    n = len(ordered)
    if n == 0:
        return SizeStats(0, None, 0, None, None, None, None, None)
    total = sum(ordered)
    stddev = 0
    if n > 1:
        # sample variance = (n Σx² - (Σx)²) / (n (n - 1)); floor(sqrt(a/b)) = isqrt(a // b)
        numerator = n * sum(v * v for v in ordered) - total * total
        stddev = math.isqrt(numerator // (n * (n - 1)))
    mn, q1, median, q3, mx = (_percentile(ordered, p) for p in _QUARTILES)
    return SizeStats(n, _trunc_div(total, n), stddev, mn, q1, median, q3, mx)


# ---------------------------------------------------------------------------------------------
# denormalized blocks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DenormalizedBlock:
    """One block of a revision with its file's details (the reference's ``DenormalizedBlock``).

    Attributes:
        cube_id: Canonical cube id string (``""`` = root).
        is_leaf: Whether no other cube of the revision is a strict descendant of this one.
        file_path: Path of the file holding the block (relative to the table root).
        revision_id: The revision.
        file_size: Size of the whole file in bytes (shared by its blocks).
        file_modification_time: The file's modification time, epoch milliseconds.
        min_weight: Smallest row weight of the block (int32).
        max_weight: The cube's max weight when the block was written (int32).
        element_count: Rows of the block.
    """

    cube_id: str
    is_leaf: bool
    file_path: str
    revision_id: int
    file_size: int
    file_modification_time: int
    min_weight: int
    max_weight: int
    element_count: int

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return _json_fields(self)


def leaf_cubes(cubes: Iterable[CubeId]) -> frozenset[CubeId]:
    """Return the cubes of which no other given cube is a strict descendant.

    In cube order (spec §2.4, a pre-order DFS) the descendants of a cube follow it directly,
    so a cube is a leaf iff the next distinct cube is not below it.
    """
    ordered = sorted(set(cubes), key=CubeId.sort_key)
    leaves = []
    for i, cube in enumerate(ordered):
        if i + 1 == len(ordered) or not cube.is_ancestor_of(ordered[i + 1]):
            leaves.append(cube)
    return frozenset(leaves)


def _resolve_revision(snapshot: QbeastSnapshot, revision_id: int | None) -> Revision:
    if revision_id is None:
        latest = snapshot.latest_revision
        if latest is None:
            raise NotAQbeastTableError(
                "the table has no qbeast metadata (no qbeast.lastRevisionID), so it has no "
                "index to describe"
            )
        return latest
    return snapshot.revision(revision_id)


def _blocks_with_cubes(
    snapshot: QbeastSnapshot, revision: Revision
) -> tuple[list[DenormalizedBlock], list[CubeId]]:
    """Denormalized blocks (file order, then block order) and each block's decoded cube."""
    d = revision.dimension_count
    decoded: dict[str, CubeId] = {}
    raw: list[tuple[CubeId, Any, Any]] = []
    for f in snapshot.files_of(revision.revision_id):
        for b in f.blocks:
            cube = decoded.get(b.cube_id)
            if cube is None:
                cube = CubeId.from_string(b.cube_id, d)
                decoded[b.cube_id] = cube
            raw.append((cube, f, b))
    leaves = leaf_cubes(cube for cube, _, _ in raw)
    rows = [
        DenormalizedBlock(
            cube_id=cube.to_string(),
            is_leaf=cube in leaves,
            file_path=f.path,
            revision_id=revision.revision_id,
            file_size=f.size,
            file_modification_time=f.modification_time,
            min_weight=b.min_weight,
            max_weight=b.max_weight,
            element_count=b.element_count,
        )
        for cube, f, b in raw
    ]
    return rows, [cube for cube, _, _ in raw]


def denormalized_blocks(
    snapshot: QbeastSnapshot, revision_id: int | None = None
) -> tuple[DenormalizedBlock, ...]:
    """Return one row per block of the revision's files (spec §7.4), in file then block order.

    Args:
        snapshot: The table snapshot.
        revision_id: The revision; None for the latest.

    Raises:
        InvalidOptionError: No such revision.
        NotAQbeastTableError: ``revision_id`` is None and the table has no qbeast metadata.
        MetadataFormatError: A block's cube id cannot be decoded.
    """
    rows, _ = _blocks_with_cubes(snapshot, _resolve_revision(snapshot, revision_id))
    return tuple(rows)


# ---------------------------------------------------------------------------------------------
# index metrics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DepthStats:
    """Statistics of the inner (or leaf) cubes at one depth of the tree.

    Attributes:
        depth: Tree depth (0 = root).
        cube_count: Cubes at this depth.
        block_count: Blocks of these cubes.
        avg_element_count: Mean rows per cube, truncated.
        element_count_stddev: Sample standard deviation of rows per cube, truncated.
        element_count_quartiles: ``(min, q1, median, q3, max)`` of rows per cube.
        avg_normalized_max_weight: Mean of ``fraction(max weight)`` of the cubes (the cube's
            max weight is the minimum over its blocks; leaves written as such give 1.0).
    """

    depth: int
    cube_count: int
    block_count: int
    avg_element_count: int
    element_count_stddev: int
    element_count_quartiles: tuple[int, int, int, int, int]
    avg_normalized_max_weight: float

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return _json_fields(self)


_DEPTH_HEADERS = (
    "depth",
    "avgCubeElementCount",
    "cubeCount",
    "blockCount",
    "cubeElementCountStddev",
    "cubeElementCountQuartiles",
    "avgNormalizedMaxWeight",
)

_SIZE_STATS_FIELDS = (
    ("cube_element_count_stats", "cubeElementCountStats"),
    ("block_element_count_stats", "blockElementCountStats"),
    ("file_bytes_stats", "fileBytesStats"),
    ("block_count_per_cube_stats", "blockCountPerCubeStats"),
    ("block_count_per_file_stats", "blockCountPerFileStats"),
)


@dataclass(frozen=True, slots=True)
class IndexMetrics:
    """Index metrics of one revision (the reference's ``IndexMetrics``, spec §7.4).

    ``str(metrics)`` prints a multi-section report, :meth:`to_dict` returns JSON-ready data
    and notebooks render :meth:`_repr_html_`.

    Attributes:
        revision_id: The revision described.
        dimension_count: Number of indexed columns ``d``.
        desired_cube_size: Target rows per cube (``desiredCubeSize``).
        indexing_columns: Transformer specs joined by ``,`` (``"id:linear,name:hashing"``).
        element_count: Rows of the revision (sum of block element counts).
        height: Maximum cube depth + 1 (0 without blocks).
        min_height: Height of a perfectly balanced tree with this many rows:
            ``ceil(log(ceil(n/dcs) * (2^d - 1) + 1) / log(2^d))``.
        avg_fanout: Mean number of present children per parent of a present cube, truncated
            to 2 decimals (0.0 when only the root exists).
        cube_count: Distinct cubes.
        block_count: Blocks.
        file_count: Distinct files holding at least one block.
        bytes: Total size of those files (bytes).
        cube_element_count_stats: Rows per cube.
        block_element_count_stats: Rows per block.
        file_bytes_stats: Bytes per file.
        block_count_per_cube_stats: Blocks per cube.
        block_count_per_file_stats: Blocks per file.
        inner_cube_stats: Per depth, the cubes with a present descendant.
        leaf_cube_stats: Per depth, the cubes without one.
        unindexed_files: Live files of the table outside every indexed revision: files
            without qbeast tags (written by Delta's own append, DELETE, UPDATE, MERGE or
            OPTIMIZE, or by plain Delta writers) and staging files. Samples and filters read
            them whole; ``optimize(0)`` indexes them into the latest revision.
        unindexed_bytes: Their total size (bytes).
        unindexed_rows: Their live rows, where the log records them (``numRecords``
            less the rows deletion vectors delete).
        deleted_rows: Rows of the table's files (any revision) that deletion vectors mark
            deleted: never read, still stored and still counted by the blocks
            (``element_count`` includes them); ``optimize`` rewrites their files without
            them.
        auto_compact: Whether the table compacts its small appends (``qbeast.autoCompact``;
            :mod:`qbeast_connect.rules.auto_compact`). The fields below are table-wide and
            show how far the table is from its compacted shape.
        small_runs: Runs (the files of one write) small enough to be compacted
            (under ``autoCompactMinFileSize``, in revisions the latest covers, or staging
            files whose statistics put them inside its space).
        compaction_due_files: Files the next compaction would rewrite (0: none is due).
        revisions_with_files: Indexed revisions holding live files; each is a tree of its
            own that samples and filters plan apart (``optimize(mergeRevisions=True)``
            re-indexes them into one).
        sample_bytes: Bytes a ``sample(0.01)`` reads now.
        sample_bytes_optimized: About the bytes it would read after a full optimize into
            one tree: the indexed bytes times the weight band of the layout that holds
            fraction 0.01 (:func:`qbeast_connect.index.layout.band_edges`).
    """

    revision_id: int
    dimension_count: int
    desired_cube_size: int
    indexing_columns: str
    element_count: int
    height: int
    min_height: int
    avg_fanout: float
    cube_count: int
    block_count: int
    file_count: int
    bytes: int
    cube_element_count_stats: SizeStats
    block_element_count_stats: SizeStats
    file_bytes_stats: SizeStats
    block_count_per_cube_stats: SizeStats
    block_count_per_file_stats: SizeStats
    inner_cube_stats: tuple[DepthStats, ...]
    leaf_cube_stats: tuple[DepthStats, ...]
    unindexed_files: int = 0
    unindexed_bytes: int = 0
    unindexed_rows: int = 0
    deleted_rows: int = 0
    auto_compact: bool = False
    small_runs: int = 0
    compaction_due_files: int = 0
    revisions_with_files: int = 0
    sample_bytes: int = 0
    sample_bytes_optimized: int = 0

    @property
    def theoretical_fanout(self) -> float:
        """``2^d``: the fanout of a complete tree."""
        return float(2**self.dimension_count)

    @property
    def inner_cube_stats_text(self) -> str:
        """The inner cubes' per-depth stats as a text table."""
        return _depth_table_text(self.inner_cube_stats)

    @property
    def leaf_cube_stats_text(self) -> str:
        """The leaf cubes' per-depth stats as a text table."""
        return _depth_table_text(self.leaf_cube_stats)

    def _scalars(self) -> list[tuple[str, str]]:
        return [
            ("revisionId", str(self.revision_id)),
            ("elementCount", str(self.element_count)),
            ("dimensionCount", str(self.dimension_count)),
            ("desiredCubeSize", str(self.desired_cube_size)),
            ("indexingColumns", self.indexing_columns),
            ("height", f"{self.height} (minHeight: {self.min_height})"),
            ("avgFanout", f"{self.avg_fanout!r} (theoreticalFanout: {self.theoretical_fanout!r})"),
            ("cubeCount", str(self.cube_count)),
            ("blockCount", str(self.block_count)),
            ("fileCount", str(self.file_count)),
            ("bytes", str(self.bytes)),
            ("unindexedFiles", self._unindexed_text()),
            ("deletedRows", self._deleted_text()),
            ("autoCompact", self._compaction_text()),
            (
                "sample(0.01) bytes",
                f"{self.sample_bytes} (after a full optimize: about "
                f"{self.sample_bytes_optimized}; revisions with files: "
                f"{self.revisions_with_files})",
            ),
        ]

    def _compaction_text(self) -> str:
        state = "on" if self.auto_compact else "off"
        due = (
            f"a compaction of {self.compaction_due_files} files is due"
            if self.compaction_due_files
            else "no compaction due"
        )
        return f"{state} ({self.small_runs} small runs; {due})"

    def _deleted_text(self) -> str:
        if not self.deleted_rows:
            return "0"
        return (
            f"{self.deleted_rows} rows are deleted by deletion vectors (left out of every "
            "read, still stored and counted in elementCount); optimize rewrites their files "
            "without them"
        )

    def _unindexed_text(self) -> str:
        if not self.unindexed_files:
            return "0"
        return (
            f"{self.unindexed_files} files ({self.unindexed_bytes} bytes, "
            f"{self.unindexed_rows} rows) are outside the index (no qbeast tags: written by "
            "Delta's own DML/OPTIMIZE or a plain Delta writer, or staged); samples and filters "
            "read them whole: optimize(0) indexes them"
        )

    def __str__(self) -> str:
        """Render the multi-section report (scalars, size stats, per-depth tables)."""
        lines = ["OTree Index Metrics:"]
        lines += [f"{name}: {value}" for name, value in self._scalars()]
        lines += ["", "Multi-block files stats:"]
        lines += [f"{label}: {getattr(self, field)}" for field, label in _SIZE_STATS_FIELDS]
        lines += ["", "Inner cubes depth-wise stats:", self.inner_cube_stats_text]
        lines += ["", "Leaf cubes depth-wise stats:", self.leaf_cube_stats_text]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return every metric as JSON-ready data (snake_case keys, lists, no text tables)."""
        out: dict[str, Any] = {}
        for name, value in _json_fields(self).items():
            out[name] = value
            if name == "avg_fanout":  # the derived fanout is listed next to the measured one
                out["theoretical_fanout"] = self.theoretical_fanout
        return out

    def _repr_html_(self) -> str:
        """Render the report as HTML tables (every value escaped)."""
        stats_rows = []
        for field, label in _SIZE_STATS_FIELDS:
            s: SizeStats = getattr(self, field)
            stats_rows.append([label, s.count, s.avg, s.stddev, s.min, s.q1, s.median, s.q3, s.max])
        parts = [
            '<div class="qbeast-index-metrics">',
            f"<h4>OTree index metrics, revision {html.escape(str(self.revision_id))}</h4>",
            _html_grid(("metric", "value"), self._scalars()),
            _html_grid(
                ("stats", "count", "avg", "stddev", "min", "q1", "median", "q3", "max"),
                stats_rows,
                caption="Multi-block files stats",
            ),
            _html_grid(
                _DEPTH_HEADERS,
                _depth_rows(self.inner_cube_stats),
                caption="Inner cubes depth-wise stats",
            ),
            _html_grid(
                _DEPTH_HEADERS,
                _depth_rows(self.leaf_cube_stats),
                caption="Leaf cubes depth-wise stats",
            ),
            "</div>",
        ]
        return "\n".join(parts)


def _depth_stats(
    cube_counts: Mapping[CubeId, int],
    cube_blocks: Mapping[CubeId, int],
    cube_max_weights: Mapping[CubeId, int],
    cubes: Iterable[CubeId],
) -> tuple[DepthStats, ...]:
    by_depth: dict[int, list[CubeId]] = {}
    for cube in cubes:
        by_depth.setdefault(cube.depth, []).append(cube)
    out = []
    for depth in sorted(by_depth):
        group = by_depth[depth]
        stats = size_stats(cube_counts[c] for c in group)
        quartiles = stats.quartiles
        assert quartiles is not None and stats.avg is not None
        weights = [fraction_from_weight(cube_max_weights[c]) for c in group]
        out.append(
            DepthStats(
                depth=depth,
                cube_count=len(group),
                block_count=sum(cube_blocks[c] for c in group),
                avg_element_count=stats.avg,
                element_count_stddev=stats.stddev,
                element_count_quartiles=quartiles,
                avg_normalized_max_weight=sum(weights) / len(weights),
            )
        )
    return tuple(out)


def _truncate_2(value: float) -> float:
    """The reference's ``round(value, 2)``: ``(value * 100).toLong.toDouble / 100``."""
    return float(int(value * 100.0)) / 100.0


def compute_index_metrics(
    snapshot: QbeastSnapshot,
    revision_id: int | None = None,
    file_stats: Mapping[str, Any] | None = None,
) -> IndexMetrics:
    """Compute the index metrics of a revision from the snapshot's blocks.

    Args:
        snapshot: The table snapshot.
        revision_id: The revision; None for the latest.
        file_stats: each file's Delta statistics by path (``stats_by_path``): with them the
            compaction fields count the staging files a compaction would index, as it does
            (:func:`qbeast_connect.rules.auto_compact.eligible_runs`).

    Returns:
        The metrics.

    Raises:
        InvalidOptionError: No such revision.
        NotAQbeastTableError: ``revision_id`` is None and the table has no qbeast metadata.
        MetadataFormatError: A block's cube id cannot be decoded.

    Example:
        >>> print(compute_index_metrics(snapshot, 1))  # doctest: +SKIP
    """
    revision = _resolve_revision(snapshot, revision_id)
    rows, cubes_of_rows = _blocks_with_cubes(snapshot, revision)

    cube_counts: dict[CubeId, int] = {}
    cube_blocks: dict[CubeId, int] = {}
    cube_max_weights: dict[CubeId, int] = {}
    file_sizes: dict[tuple[str, int], None] = {}
    file_blocks: dict[str, int] = {}
    for row, cube in zip(rows, cubes_of_rows, strict=True):
        if cube in cube_counts:
            cube_counts[cube] += row.element_count
            cube_blocks[cube] += 1
            cube_max_weights[cube] = min(cube_max_weights[cube], row.max_weight)
        else:
            cube_counts[cube] = row.element_count
            cube_blocks[cube] = 1
            cube_max_weights[cube] = row.max_weight
        file_sizes[(row.file_path, row.file_size)] = None
        file_blocks[row.file_path] = file_blocks.get(row.file_path, 0) + 1

    cubes = sorted(cube_counts, key=CubeId.sort_key)
    children: dict[CubeId, int] = {}
    for cube in cubes:
        parent = cube.parent
        if parent is not None:
            children[parent] = children.get(parent, 0) + 1
    avg_fanout = _truncate_2(sum(children.values()) / len(children)) if children else 0.0

    element_count = sum(row.element_count for row in rows)
    d = revision.dimension_count
    leaves = leaf_cubes(cubes)
    file_bytes = size_stats(size for _, size in file_sizes)
    cube_stats = size_stats(cube_counts[c] for c in cubes)
    block_stats = size_stats(row.element_count for row in rows)
    unindexed = [f for f in snapshot.files if f.revision_id == 0]
    return IndexMetrics(
        revision_id=revision.revision_id,
        dimension_count=d,
        desired_cube_size=revision.desired_cube_size,
        indexing_columns=revision.columns_to_index,
        element_count=element_count,
        height=max((c.depth for c in cubes), default=-1) + 1,
        min_height=_min_height(element_count, revision.desired_cube_size, d),
        avg_fanout=avg_fanout,
        cube_count=cube_stats.count,
        block_count=block_stats.count,
        file_count=file_bytes.count,
        bytes=sum(size for _, size in file_sizes),
        cube_element_count_stats=cube_stats,
        block_element_count_stats=block_stats,
        file_bytes_stats=file_bytes,
        block_count_per_cube_stats=size_stats(cube_blocks[c] for c in cubes),
        block_count_per_file_stats=size_stats(file_blocks.values()),
        inner_cube_stats=_depth_stats(
            cube_counts, cube_blocks, cube_max_weights, (c for c in cubes if c not in leaves)
        ),
        leaf_cube_stats=_depth_stats(
            cube_counts, cube_blocks, cube_max_weights, (c for c in cubes if c in leaves)
        ),
        unindexed_files=len(unindexed),
        unindexed_bytes=sum(f.size for f in unindexed),
        unindexed_rows=sum(f.live_rows if f.num_records is not None else 0 for f in unindexed),
        deleted_rows=sum(f.deleted_rows for f in snapshot.files),
        **_compaction_state(snapshot, revision, file_stats),
    )


def _compaction_state(
    snapshot: QbeastSnapshot, revision: Revision, file_stats: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The table-wide fields of :class:`IndexMetrics` that show how far the table is from
    its compacted shape."""
    from qbeast_connect.index.layout import band_edges
    from qbeast_connect.planning.file_planner import plan_files
    from qbeast_connect.rules.auto_compact import eligible_runs, files_to_compact, settings_of

    settings = settings_of(snapshot.configuration)
    on = dataclasses.replace(settings, enabled=True)
    indexed = [f for f in snapshot.files if f.revision_id > 0]
    rows = sum(b.element_count for f in indexed for b in f.blocks)
    edges = [fraction_from_weight(e) for e in band_edges(rows, revision.desired_cube_size)]
    share = min((e for e in edges if e > SAMPLE_FRACTION), default=1.0)
    return {
        "auto_compact": settings.enabled,
        "small_runs": len(eligible_runs(snapshot, on, file_stats)),
        "compaction_due_files": len(files_to_compact(snapshot, settings, file_stats=file_stats)),
        "revisions_with_files": len({f.revision_id for f in indexed}),
        "sample_bytes": plan_files(snapshot, None, SAMPLE_FRACTION).selected_bytes,
        "sample_bytes_optimized": round(share * sum(f.size for f in indexed)),
    }


# ---------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------


def _text(value: object) -> str:
    return "null" if value is None else str(value)


def _quartiles_text(quartiles: Sequence[int] | None) -> str:
    if quartiles is None:
        return "[]"
    return "[" + ",".join(str(q) for q in quartiles) + "]"


def _depth_rows(stats: Sequence[DepthStats]) -> list[list[str]]:
    return [
        [
            str(s.depth),
            str(s.avg_element_count),
            str(s.cube_count),
            str(s.block_count),
            str(s.element_count_stddev),
            _quartiles_text(s.element_count_quartiles),
            f"{s.avg_normalized_max_weight:.6f}",
        ]
        for s in stats
    ]


def _depth_table_text(stats: Sequence[DepthStats]) -> str:
    """Left-aligned columns separated by one space (the reference's ``Tabulator``)."""
    if not stats:
        return "(no cubes)"
    table = [list(_DEPTH_HEADERS), *_depth_rows(stats)]
    widths = [max(len(row[i]) for row in table) for i in range(len(_DEPTH_HEADERS))]
    return "\n".join(
        " ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    )


def _html_cell(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _html_grid(
    headers: Sequence[object], rows: Iterable[Sequence[object]], *, caption: str | None = None
) -> str:
    """An HTML table with a header row; every header, cell and the caption are escaped."""
    parts = ['<table class="qbeast-table" style="border-collapse:collapse;margin:0.5em 0">']
    if caption is not None:
        parts.append(
            f'<caption style="text-align:left;font-weight:bold">{html.escape(caption)}</caption>'
        )
    parts.append(
        "<thead><tr>"
        + "".join(f'<th style="text-align:left">{_html_cell(h)}</th>' for h in headers)
        + "</tr></thead>"
    )
    body = [
        "<tr>" + "".join(f'<td style="text-align:left">{_html_cell(c)}</td>' for c in row) + "</tr>"
        for row in rows
    ]
    if not body:
        body = [f'<tr><td colspan="{max(len(headers), 1)}"><em>none</em></td></tr>']
    parts.append("<tbody>" + "".join(body) + "</tbody>")
    parts.append("</table>")
    return "".join(parts)
