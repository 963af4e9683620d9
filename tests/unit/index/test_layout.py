"""Estimated counts (spec §5.7) and the file layout: weight bands, then runs of cubes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qbeast_connect.exceptions import InvalidOptionError, QbeastError
from qbeast_connect.index.assignment import CubeAssigner
from qbeast_connect.index.cubes import cube_sort_key
from qbeast_connect.index.estimation import DomainEstimator
from qbeast_connect.index.layout import (
    FileLayout,
    band_edges,
    compaction_top_rows,
    estimated_counts,
    plan_layout,
    segments_from_blocks,
    segments_from_counts,
)
from qbeast_connect.model.block import Block
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.estimation_math import weights_from_domains
from qbeast_connect.model.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction


def test_worked_example_counts() -> None:
    domains = {"": 100.0, "A": 40 / 0.7, "Q": 30 / 0.7, "AA": 10 / 0.3}
    weights = {"": -858993459, "A": 1401515643, "Q": MAX_WEIGHT, "AA": MAX_WEIGHT}
    assert estimated_counts(domains, weights, 2) == {"": 30, "A": 30, "Q": 29, "AA": 5}


def test_estimated_counts_missing_cubes() -> None:
    # a cube absent from W counts up to MAX_WEIGHT; its parent bound is W[parent]
    counts = estimated_counts({"": 10.0, "g": 8.0, "gA": 4.0}, {"": 0}, 2)
    assert counts["g"] == int((1.0 - (2147483648.0 / 4294967295.0)) * 8.0)
    assert counts["gA"] == 0  # parent g missing: both bounds MAX_WEIGHT
    assert counts[""] == int((2147483648.0 / 4294967295.0) * 10.0)


def test_band_edges() -> None:
    assert band_edges(0, 100) == ()
    assert band_edges(199, 100) == ()
    assert band_edges(200, 100) == (weight_from_fraction(0.5),)
    edges = band_edges(6_000_000, 10_000)  # log2(600) = 9.2
    assert edges == tuple(weight_from_fraction(2.0**-k) for k in range(9, 0, -1))
    assert len(band_edges(1e300, 1)) == 30
    with pytest.raises(InvalidOptionError, match="positive"):
        band_edges(10, 0)


def test_plan_splits_a_cube_across_bands_and_cuts_runs() -> None:
    # root with weights in [0, 1/8]: 800 rows; 4 leaves with weights in (1/8, 1]: 1,000 each
    w8 = weight_from_fraction(1 / 8)
    segments = [("", MIN_WEIGHT, w8, 800.0)] + [
        (c, w8, MAX_WEIGHT, 1000.0) for c in ("A", "Q", "g", "w")
    ]
    layout = plan_layout(segments, 200)
    # 4,800 rows / 200 -> K = 4: bands [0,1/16) [1/16,1/8) [1/8,1/4) [1/4,1/2) [1/2,1]
    assert layout.edges == tuple(weight_from_fraction(2.0**-k) for k in (4, 3, 2, 1))
    band0, band1, band2, band3, band4 = layout.runs
    assert band0 == (("", 0),) and band1 == (("", 1),)  # 400 root rows each: one run
    # (1/8,1/4): 4 x 1000/7 = 571 rows -> runs of >= 200 rows: A+Q, g+w
    assert [c for c, _ in band2] == ["", "g"]
    # (1/2, 1]: 4 x 571 rows: one run per leaf
    assert [c for c, _ in band4] == ["", "Q", "g", "w"]
    groups = [g for band in layout.runs for _, g in band]
    assert groups == list(range(len(groups))) == list(range(layout.group_count))
    assert band3  # every band has runs


def test_small_tail_joins_previous_run() -> None:
    segments = [(c, MIN_WEIGHT, MAX_WEIGHT, n) for c, n in (("A", 100.0), ("Q", 100.0), ("g", 30.0))]
    layout = plan_layout(segments, 100, rows=100)  # one band
    assert layout.runs == ((("", 0), ("Q", 1)),)  # g (30 < 50) rides with Q


def test_empty_band_borrows_neighbour_groups() -> None:
    # rows expected only above 1/2: the lower bands reuse the groups of the band below/above
    layout = plan_layout([("", weight_from_fraction(0.6), MAX_WEIGHT, 1000.0)], 100, rows=1000)
    assert len(layout.runs) == len(layout.edges) + 1 > 1
    top = layout.runs[-1]
    assert all(band == top for band in layout.runs)
    assert layout.group_count == len(top)


def test_groups_of_rows_follow_band_and_cube_order() -> None:
    layout = FileLayout(
        (weight_from_fraction(0.5),),
        ((("", 0), ("Q", 1)), (("", 2), ("AQ", 3), ("g", 4))),
    )
    cubes = ["", "A", "AA", "AQ", "Ag", "Q", "gA", "w"]
    low = weight_from_fraction(0.25)
    high = weight_from_fraction(0.75)
    idx = np.arange(len(cubes) * 2) % len(cubes)
    weights = np.array([low] * len(cubes) + [high] * len(cubes))
    got = layout.groups(idx, cubes, weights).tolist()
    assert got[: len(cubes)] == [0, 0, 0, 0, 0, 1, 1, 1]
    # unseen cubes (AA, Ag, gA, w) go to the run covering them in CubeId order
    assert got[len(cubes):] == [2, 2, 2, 3, 3, 3, 4, 4]
    assert layout.groups(np.array([], dtype=np.int64), [], np.array([])).tolist() == []


def test_layout_json_round_trip_and_errors() -> None:
    layout = plan_layout(
        [("", MIN_WEIGHT, MAX_WEIGHT, 5000.0), ("A", 0, MAX_WEIGHT, 5000.0)], 1000
    )
    text = layout.to_json()
    assert FileLayout.from_json_value(json.loads(text)) == layout
    assert FileLayout.single().group_count == 1
    with pytest.raises(InvalidOptionError, match="malformed file layout") as info:
        FileLayout.from_json_value({"edges": [1]})
    assert isinstance(info.value, QbeastError)
    with pytest.raises(InvalidOptionError, match="increase"):
        FileLayout((5, 1), ((("", 0),),) * 3)
    with pytest.raises(InvalidOptionError, match="non-empty run list"):
        FileLayout((5,), ((("", 0),), ()))
    with pytest.raises(InvalidOptionError, match="CubeId order"):
        FileLayout((), ((("Q", 0), ("A", 1)),))


def test_segments_from_blocks_and_counts() -> None:
    blocks = [Block("A", -5, MAX_WEIGHT, 7), Block("", MIN_WEIGHT, -5, 3)]
    assert segments_from_blocks(blocks) == [
        ("A", -5, MAX_WEIGHT, 7.0),
        ("", MIN_WEIGHT, -5, 3.0),
    ]
    segs = segments_from_counts({"": 10, "A": 4, "AA": 1}, {"": -5}, 2)
    assert segs == [
        ("", MIN_WEIGHT, -5, 10.0),
        ("A", -5, MAX_WEIGHT, 4.0),
        ("AA", MAX_WEIGHT, MAX_WEIGHT, 1.0),
    ]


def test_a_blocks_rows_end_where_the_next_block_of_its_cube_starts() -> None:
    """A banded write leaves one block of a cube per band: each block's rows end where the
    next block of the cube (in the blocks given, or the context) starts, not at the cube's
    max weight."""
    top = weight_from_fraction(1 / 32)
    mid = weight_from_fraction(1 / 16)
    cube_max = weight_from_fraction(0.25)
    parent_max = weight_from_fraction(0.0166)
    band0 = Block("A", parent_max, cube_max, 300)
    band1 = Block("A", top, cube_max, 400)
    band2 = Block("A", mid, cube_max, 800)
    assert segments_from_blocks([band0, band1], [band2]) == [
        ("A", parent_max, top, 300.0),
        ("A", top, mid, 400.0),
    ]
    # alone, a block spreads up to its cube's max weight
    assert segments_from_blocks([band0]) == [("A", parent_max, cube_max, 300.0)]
    # the root's 10,000 rows and its children's 6,000 of the top band are two runs, so a
    # sample below the root's max weight reads only the root's (before: one run)
    root = Block("", MIN_WEIGHT, parent_max, 10_000)
    children = [Block(c, parent_max, cube_max, 750) for c in "AIQYgow4"]
    more = [Block(c, top, cube_max, 5_000) for c in "AIQYgow4"]
    layout = plan_layout(segments_from_blocks([root, *children], more), 10_000, 600_000)
    assert layout.edges[0] == top
    assert layout.runs[0] == (("", 0), ("A", 1))


@pytest.mark.parametrize(("dims", "skew"), [(2, False), (3, True)])
def test_layout_of_a_real_tree(dims: int, skew: bool) -> None:
    """Estimate a tree for 200k rows, plan files, assign every row: files stay inside one
    band, are CubeId runs within it, hold about ``limit`` rows, and a sample of fraction f
    reads at most about 2 f of the rows."""
    rng = np.random.default_rng(11)
    n, limit = 200_000, 2_000
    points = rng.random((n, dims))
    if skew:
        points = points**3  # dense near the origin
    weights = rng.integers(MIN_WEIGHT, MAX_WEIGHT, n, endpoint=True).astype(np.int32)
    estimator = DomainEstimator(dims, limit, 50_000)
    estimator.add(points, weights)
    domains = estimator.finish()
    cube_weights = {
        str(c): int(w)
        for c, w in weights_from_domains(
            {CubeId.from_string(k, dims): v for k, v in domains.items()}, limit
        ).items()
    }
    counts = estimated_counts(domains, cube_weights, dims)
    layout = plan_layout(segments_from_counts(counts, cube_weights, dims), limit, rows=n)
    labels, inverse = CubeAssigner(dims, cube_weights).assign_labels(points, weights)
    groups = layout.groups(inverse, labels, weights)
    bands = layout.band_of(weights)

    sizes = np.bincount(groups, minlength=layout.group_count)
    assert sizes.sum() == n
    assert 0.5 * n / limit <= layout.group_count <= 1.5 * n / limit
    assert np.median(sizes[sizes > 0]) == pytest.approx(limit, rel=0.5)
    for g in np.flatnonzero(sizes):
        assert len(set(bands[groups == g].tolist())) == 1  # one band per file
    # inside a band, groups follow CubeId order of the rows' cubes
    keys = {i: cube_sort_key(c) for i, c in enumerate(labels)}
    order = sorted(range(len(labels)), key=keys.__getitem__)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    for band in np.unique(bands):
        sel = bands == band
        by_cube = np.argsort(rank[inverse[sel]], kind="stable")
        assert np.all(np.diff(groups[sel][by_cube]) >= 0)
    # sampling: files having a row below weight(f) hold at most ~2 f of the rows
    for f in (0.01, 0.1, 0.5):
        cut = weight_from_fraction(f)
        read = np.unique(groups[weights < cut])
        read_rows = sizes[read].sum()
        assert (weights < cut).sum() <= read_rows <= 2.0 * f * n + 2 * limit, f


def test_large_cubes_keep_a_small_sample_band() -> None:
    """A cube size above SAMPLE_BAND_ROWS still gets a top band of ~64k-128k rows: the
    root cube's rows of least weight go to files of their own, so a small sample opens a
    small file instead of a cube-sized one (approx's first step at sf 10, cubeSize 1M).
    One cut only: the root's other rows stay in the files they had."""
    from qbeast_connect.index.layout import SAMPLE_BAND_ROWS

    # 60M rows at 1M rows a file: regular bands down to 1/32, and the sample band 1/512
    edges = band_edges(60_000_000, 1_000_000)
    regular = tuple(weight_from_fraction(2.0**-k) for k in range(5, 0, -1))
    assert edges == (weight_from_fraction(2.0**-9), *regular)
    # no sample band at or below SAMPLE_BAND_ROWS, nor when the top band is that small
    assert band_edges(6_000_000, SAMPLE_BAND_ROWS) == tuple(
        weight_from_fraction(2.0**-k) for k in range(6, 0, -1)
    )
    assert band_edges(200_000, 70_000) == (weight_from_fraction(0.5),)
    # small writes still get one band
    assert band_edges(1_999_999, 1_000_000) == ()
    # the root (weights below 1/60) of a 60M-row write, as the write plans it
    root_top = weight_from_fraction(1 / 60)
    segments = [("", MIN_WEIGHT, root_top, 1_000_000.0), ("A", root_top, MAX_WEIGHT, 59e6)]
    layout = plan_layout(segments, 1_000_000, rows=60_000_000)
    rng = np.random.default_rng(5)
    weights = rng.integers(MIN_WEIGHT, root_top, 1_000_000, endpoint=False).astype(np.int32)
    groups = layout.groups(np.zeros(len(weights), dtype=np.int64), [""], weights)
    sizes = np.bincount(groups)
    sizes = sizes[sizes > 0]
    # the root lands in 2 files: [0, 1/512) and [1/512, 1/60)
    assert len(sizes) == 2
    assert 0.9 * 60e6 / 512 <= sizes[0] <= 1.1 * 60e6 / 512
    # a sample of 1/1000 reads the first file only: ~117k rows, not the root's 1M
    first = groups[weights < weight_from_fraction(0.001)]
    assert len(set(first.tolist())) == 1


def test_compaction_top_bands_reach_down_to_cube_size_over_32_rows() -> None:
    """A compaction's layout (``top_rows``): bands down to ``2**-K`` with
    ``K = floor(log2(rows / top_rows))``, so a 1,600-row run at cube size 2,000 (one band
    with the default) gets edges 1/16 ... 1/2; ``top_rows`` above the limit is the limit."""
    assert compaction_top_rows(2_000) == 62 and compaction_top_rows(10) == 1
    assert band_edges(1_600, 2_000) == ()
    assert band_edges(1_600, 2_000, compaction_top_rows(2_000)) == tuple(
        weight_from_fraction(2.0**-k) for k in (4, 3, 2, 1)
    )
    assert band_edges(123, 2_000, 62) == ()
    assert band_edges(50_000, 2_000, 10**9) == band_edges(50_000, 2_000)
