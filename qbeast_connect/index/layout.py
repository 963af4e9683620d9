"""Which rows of a write go to which file: weight bands, then runs of cubes.

(Pure Python apart from the two row-level methods, which import numpy when called: the
client imports this module through the write plan.)

The format leaves the grouping of cubes into files to the writer (spec §5.7 calls the
reference's rollup a heuristic; §5.9 lists what a reader relies on, and a block may hold any
subset of a cube's rows as long as its ``minWeight`` is the least row weight in it). The
reference rolls small cubes into their parent's file. That mixes depths: the file of a
cube near the root then also carries deep rows with large weights, and a sample, which
reads every file having a block with ``minWeight`` below its threshold, reads them all.
On TPC-H SF1 indexed on three columns this made ``sample(0.1)`` read 90% of the bytes.

This layout cuts rows in two steps:

1. **Weight band.** Band edges are the weights of the fractions ``2**-K, ..., 1/4, 1/2``
   with ``K`` such that the top band ``[0, 2**-K)`` still expects about ``limit`` rows;
   with larger files, one more edge cuts the top band's first ~64k rows
   (:data:`SAMPLE_BAND_ROWS`) into a sample band of their own.
   A sample of fraction ``f`` then reads only the bands starting below ``f``: at most
   twice the rows it returns, whatever the tree's shape.
2. **Run of cubes.** Inside a band, cubes are taken in CubeId order (pre-order depth
   first, so a run of consecutive cubes is one compact region of the space) and cut into
   runs of about ``limit`` rows. Filters keep their cube-level pruning: each file covers a
   small region in the bands that hold many rows, a larger one in the sparse top bands.

Row counts per (cube, band) are estimated before writing, assuming that the weights of the
rows of a cube are uniform over the cube's weight range — true in expectation, since a
row's weight is a hash. The plan is a list of run starts per band; a row goes to the run
of its band that contains its cube in CubeId order, so rows in cubes the estimation did not
foresee still land in the file of their neighbours.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.cube_id import cube_string_sort_key as cube_sort_key
from qbeast_connect.model.cube_id import symbols_per_level
from qbeast_connect.model.weight import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    fraction_from_weight,
    weight_from_fraction,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "COMPACTION_BAND_DIVISOR",
    "FileLayout",
    "Segment",
    "band_edges",
    "compaction_top_rows",
    "estimated_counts",
    "plan_layout",
    "segments_from_blocks",
    "segments_from_counts",
]

#: Deepest band edge: fraction ``2**-MAX_BANDS`` (a write would need ~10**9 x limit rows).
MAX_BANDS = 30

#: Expected rows of the sample band of a write with files larger than that: the top band
#: ``[0, 2**-K)`` is cut once more at the power of two holding about this many rows. A
#: small sample, or the first step of ``approx``, then opens a file of about the rows it
#: wants, not a cube-sized one. One cut only: every band adds a file (one per write task)
#: to the root cube's region, which every filter opens (``bench/top_bands_bench.py``).
SAMPLE_BAND_ROWS = 65_536

#: The top band of a compaction's output expects ``desiredCubeSize / COMPACTION_BAND_DIVISOR``
#: rows (:func:`compaction_top_rows`).
COMPACTION_BAND_DIVISOR = 32

#: ``(cube, low weight, high weight, rows)``: rows of ``cube`` with weights spread
#: uniformly over ``[low, high]``.
Segment = tuple[str, int, int, float]


def band_edges(rows: float, limit: int, top_rows: int | None = None) -> tuple[int, ...]:
    """Ascending band edges (int weights) for a write of ``rows`` rows.

    Band ``i`` holds weights ``edges[i-1] <= w < edges[i]`` (open-ended at both ends). The
    edges are ``weight(2**-k)`` for ``k = K..1`` where ``K = floor(log2(rows / top))``,
    ``top`` being ``top_rows`` (default ``limit``): the top band keeps at least ``top``
    expected rows. A compaction's output passes a small ``top_rows``
    (:func:`compaction_top_rows`): its rows join a tree many times their number, whose
    samples want far fewer of them than ``limit``. When ``limit`` is above
    :data:`SAMPLE_BAND_ROWS`, one more edge ``weight(2**-S)``, ``S = floor(log2(rows /
    SAMPLE_BAND_ROWS))``, cuts the top band: its rows are the root cube's of least weight,
    so the root's first 64k-128k rows get files of their own, each a valid block of the root
    (its ``minWeight`` the least weight in it, its ``maxWeight`` the cube's). Writes of
    fewer than ``2 * limit`` rows get one band.
    """
    if limit <= 0:
        raise InvalidOptionError(f"file row limit must be positive, got {limit}")
    top = limit if top_rows is None else max(1, min(limit, top_rows))
    if rows < 2 * top:
        return ()
    k = min(MAX_BANDS, math.floor(math.log2(rows / top)))
    powers = list(range(k, 0, -1))
    if limit > SAMPLE_BAND_ROWS:
        sample = min(MAX_BANDS, math.floor(math.log2(rows / SAMPLE_BAND_ROWS)))
        if sample > k:
            powers.insert(0, sample)
    return tuple(weight_from_fraction(2.0**-j) for j in powers)


def compaction_top_rows(limit: int) -> int:
    """Expected rows of the top band of a compaction's output (automatic compaction,
    :mod:`qbeast_connect.rules.auto_compact`).

    A compaction merges a few small runs of a table many times bigger. A sample of
    fraction ``f`` reads, in every run, the files of the bands starting below ``f``; with
    bands down to ``limit`` rows, a run of fewer than ``2 * limit`` rows is one band, read
    whole by every sample. With top bands of ``limit / 32`` rows, a run of ``r`` rows
    costs a sample about ``max(2 f r, limit / 32)`` rows; the per-file cost of the extra
    bands (a parquet footer each) stays small next to ``limit / 32`` rows.
    """
    return max(1, limit // COMPACTION_BAND_DIVISOR)


def _band_shares(low: int, high: int, edges: Sequence[int]) -> list[tuple[int, float]]:
    """``(band, share)`` of a uniform weight range ``[low, high]`` over the bands."""
    first = bisect.bisect_right(edges, low)
    last = bisect.bisect_right(edges, high)
    if first == last or high <= low:
        return [(first, 1.0)]
    lo, hi = fraction_from_weight(low), fraction_from_weight(high)
    width = hi - lo
    out = []
    for band in range(first, last + 1):
        b_lo = lo if band == first else fraction_from_weight(edges[band - 1])
        b_hi = hi if band == last else fraction_from_weight(edges[band])
        if b_hi > b_lo:
            out.append((band, (b_hi - b_lo) / width))
    return out


@dataclass(frozen=True)
class FileLayout:
    """The file group of every row, from its weight and cube.

    Attributes:
        edges: ascending band edges (int weights), see :func:`band_edges`.
        runs: per band (``len(edges) + 1`` of them), ``(first cube, group)`` pairs in
            CubeId order of the first cube. A cube belongs to the last run starting at or
            before it (the first run if it precedes them all).
    """

    edges: tuple[int, ...]
    runs: tuple[tuple[tuple[str, int], ...], ...]
    _keys: tuple[list[tuple[int, ...]], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if list(self.edges) != sorted(set(self.edges)):
            raise InvalidOptionError(f"layout band edges must increase: {self.edges}")
        if len(self.runs) != len(self.edges) + 1 or any(not r for r in self.runs):
            raise InvalidOptionError(
                f"a layout needs a non-empty run list for each of its {len(self.edges) + 1} bands"
            )
        keys = tuple([cube_sort_key(cube) for cube, _ in band] for band in self.runs)
        for band_keys in keys:
            if band_keys != sorted(band_keys):
                raise InvalidOptionError("layout runs must be in CubeId order")
        object.__setattr__(self, "_keys", keys)

    @classmethod
    def single(cls) -> FileLayout:
        """Every row in one group (one file per task)."""
        return cls((), ((("", 0),),))

    @property
    def group_count(self) -> int:
        return len({g for band in self.runs for _, g in band})

    def band_of(self, weights: np.ndarray) -> np.ndarray:
        """Band index of every weight."""
        import numpy as np

        edges = np.asarray(self.edges, dtype=np.int64)
        return np.searchsorted(edges, np.asarray(weights, dtype=np.int64), side="right")

    def groups(
        self, cube_index_per_row: np.ndarray, unique_cubes: Sequence[str], weights: np.ndarray
    ) -> np.ndarray:
        """Group of every row, given its cube (an index into ``unique_cubes``) and weight."""
        import numpy as np

        table = np.empty((len(unique_cubes), len(self.runs)), dtype=np.int32)
        for i, cube in enumerate(unique_cubes):
            key = cube_sort_key(cube)
            for band, band_keys in enumerate(self._keys):
                pos = max(0, bisect.bisect_right(band_keys, key) - 1)
                table[i, band] = self.runs[band][pos][1]
        idx = np.asarray(cube_index_per_row, dtype=np.int64)
        if idx.size == 0:
            return np.zeros(0, dtype=np.int32)
        groups: np.ndarray = table[idx, self.band_of(weights)]
        return groups

    def to_json_value(self) -> dict[str, Any]:
        return {"edges": list(self.edges), "runs": [[list(r) for r in band] for band in self.runs]}

    @classmethod
    def from_json_value(cls, value: Mapping[str, Any]) -> FileLayout:
        try:
            edges = tuple(int(e) for e in value["edges"])
            runs = tuple(
                tuple((str(cube), int(group)) for cube, group in band) for band in value["runs"]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidOptionError(f"malformed file layout: {exc}") from exc
        return cls(edges, runs)

    def to_json(self) -> str:
        return json.dumps(self.to_json_value(), separators=(",", ":"))


def plan_layout(
    segments: Iterable[Segment],
    limit: int,
    rows: float | None = None,
    top_rows: int | None = None,
) -> FileLayout:
    """Plan the files of a write from its expected rows per cube and weight range.

    Args:
        segments: expected rows, see :data:`Segment`; several segments of one cube add up.
        limit: target rows per file (the revision's ``desiredCubeSize``).
        rows: rows of the write, for the band edges (default: the segments' total).
        top_rows: expected rows of the top band at least (default ``limit``), see
            :func:`band_edges`.
    """
    segs = list(segments)
    total = float(rows) if rows is not None else sum(max(0.0, s[3]) for s in segs)
    edges = band_edges(total, limit, top_rows)
    per_band: list[dict[str, float]] = [{} for _ in range(len(edges) + 1)]
    for cube, low, high, count in segs:
        if count <= 0:
            continue
        for band, share in _band_shares(int(low), int(high), edges):
            per_band[band][cube] = per_band[band].get(cube, 0.0) + count * share
    runs: list[list[tuple[str, int]]] = []
    group = 0
    for counts in per_band:
        band_runs: list[tuple[str, float]] = []
        for cube in sorted(counts, key=cube_sort_key):
            if band_runs and band_runs[-1][1] < limit:
                band_runs[-1] = (band_runs[-1][0], band_runs[-1][1] + counts[cube])
            else:
                band_runs.append((cube, counts[cube]))
        if len(band_runs) > 1 and band_runs[-1][1] < limit / 2:
            band_runs.pop()  # a small tail joins the run before it
        if band_runs:
            band_runs[0] = ("", band_runs[0][1])  # the band's first run starts the order
        runs.append([(cube, group + i) for i, (cube, _) in enumerate(band_runs)])
        group += len(band_runs)
    # a band without expected rows shares the groups of the nearest band below it (or above)
    for band in range(len(runs)):
        if not runs[band]:
            near = next(
                (runs[b] for b in [*range(band - 1, -1, -1), *range(band + 1, len(runs))]
                 if runs[b]),
                [("", 0)],
            )
            runs[band] = list(near)
    return FileLayout(edges, tuple(tuple(r) for r in runs))


def estimated_counts(
    input_domains: Mapping[str, float], cube_weights: Mapping[str, int], dimensions: int
) -> dict[str, int]:
    """Estimated rows of this write per cube (spec §5.7, first paragraph).

    For every cube ``c`` of ``input_domains``:
    ``trunc((fraction(maxW(c)) - fraction(minW(c))) * inputDomain(c))`` with
    ``maxW(c) = W.get(c, MAX_WEIGHT)`` and ``minW(c) = maxW(parent)`` (``MIN_WEIGHT`` for the
    root).
    """
    out: dict[str, int] = {}
    for cube, domain in input_domains.items():
        max_w = int(cube_weights.get(cube, MAX_WEIGHT))
        parent = _parent(cube, dimensions)
        min_w = MIN_WEIGHT if parent is None else int(cube_weights.get(parent, MAX_WEIGHT))
        out[cube] = int((fraction_from_weight(max_w) - fraction_from_weight(min_w)) * domain)
    return out


def _parent(cube: str, dimensions: int) -> str | None:
    return None if cube == "" else cube[: len(cube) - symbols_per_level(dimensions)]


def segments_from_counts(
    counts: Mapping[str, float], cube_weights: Mapping[str, int], dimensions: int
) -> list[Segment]:
    """Segments of a write whose rows per cube are ``counts``: the rows of cube ``c`` have
    weights in ``(maxW(parent), maxW(c)]`` under the write's cube max weights."""
    out: list[Segment] = []
    for cube, count in counts.items():
        parent = _parent(cube, dimensions)
        low = MIN_WEIGHT if parent is None else int(cube_weights.get(parent, MAX_WEIGHT))
        high = int(cube_weights.get(cube, MAX_WEIGHT))
        out.append((cube, low, max(low, high), float(count)))
    return out


def segments_from_blocks(blocks: Iterable[Any], context: Iterable[Any] = ()) -> list[Segment]:
    """Segments of existing blocks (anything with ``cube_id``, ``min_weight``,
    ``max_weight``, ``element_count``): rows of a block in ``[minWeight, high]``.

    ``high`` is the block's ``maxWeight`` (its cube's), cut at the least ``minWeight``
    above the block's own among the other blocks of its cube in ``blocks`` and ``context``
    (the other files of the tree). A banded write leaves one block of a cube per weight
    band, each holding only its band's slice of the cube's range; taken as spread up to the
    cube's max weight, a top band's block looked a few times emptier than it is, and a
    rewrite merged the root's children into the root's run (``sample(0.01)`` after an
    optimize read 1.75x its bytes before)."""
    blocks = list(blocks)
    starts: dict[str, list[int]] = {}
    for b in [*blocks, *context]:
        starts.setdefault(str(b.cube_id), []).append(int(b.min_weight))
    for values in starts.values():
        values.sort()
    out: list[Segment] = []
    for b in blocks:
        low, high = int(b.min_weight), max(int(b.min_weight), int(b.max_weight))
        values = starts[str(b.cube_id)]
        above = bisect.bisect_right(values, low)
        if above < len(values):
            high = min(high, values[above])
        out.append((str(b.cube_id), low, high, float(b.element_count)))
    return out
