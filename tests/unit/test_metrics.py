"""Index metrics (spec §7.4) over the qbeast-spark reference log, cross-checked independently.

The expected values are recomputed here from the raw JSON of the log with numpy/statistics,
without going through QbeastSnapshot, CubeId or the metrics module.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qbeast_connect.exceptions import InvalidOptionError, NotAQbeastTableError
from qbeast_connect.metrics import (
    DepthStats,
    IndexMetrics,
    SizeStats,
    compute_index_metrics,
    denormalized_blocks,
    size_stats,
)
from qbeast_connect.model.snapshot import QbeastSnapshot

LOG_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "qbeast_spark_table" / "_delta_log"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


# ---------------------------------------------------------------------------------------------
# an independent reading of the log
# ---------------------------------------------------------------------------------------------


def _commits() -> list[list[dict[str, Any]]]:
    out = []
    for path in sorted(LOG_DIR.glob("*.json")):
        with path.open(encoding="utf-8") as f:
            out.append([json.loads(line) for line in f if line.strip()])
    return out


def _replay(upto: int) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    conf: dict[str, str] = {}
    adds: dict[str, dict[str, Any]] = {}
    for actions in _commits()[: upto + 1]:
        for action in actions:
            if "metaData" in action:
                conf = action["metaData"]["configuration"]
            elif "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    return conf, adds


def _snapshot(upto: int = 1) -> QbeastSnapshot:
    conf, adds = _replay(upto)
    return QbeastSnapshot.from_delta(conf, list(adds.values()), upto)


def _raw_blocks(upto: int = 1) -> list[tuple[str, int, dict[str, Any]]]:
    """``(path, size, block)`` for every block of revision 1, straight from the JSON."""
    _, adds = _replay(upto)
    rows = []
    for add in adds.values():
        assert add["tags"]["revision"] == "1"
        for block in json.loads(add["tags"]["blocks"]):
            rows.append((add["path"], add["size"], block))
    return rows


def _expected_stats(values: list[int]) -> tuple[int, int, int, list[int]]:
    """count, trunc(mean), trunc(sample stddev), exact 'inverted CDF' quartiles."""
    arr = np.array(values, dtype=np.int64)
    count = len(values)
    avg = math.trunc(statistics.fmean(values))
    stddev = math.trunc(statistics.stdev(values)) if count > 1 else 0
    quartiles = [int(q) for q in np.percentile(arr, [0, 25, 50, 75, 100], method="inverted_cdf")]
    return count, avg, stddev, quartiles


def _assert_stats(stats: SizeStats, values: list[int]) -> None:
    count, avg, stddev, quartiles = _expected_stats(values)
    assert (stats.count, stats.avg, stats.stddev) == (count, avg, stddev)
    assert list(stats.quartiles or ()) == quartiles
    assert (stats.min, stats.max) == (min(values), max(values))


@pytest.fixture(scope="module")
def metrics() -> IndexMetrics:
    return compute_index_metrics(_snapshot(), 1)


# ---------------------------------------------------------------------------------------------
# fixture metrics
# ---------------------------------------------------------------------------------------------


def test_scalar_metrics_of_the_reference_log(metrics: IndexMetrics) -> None:
    raw = _raw_blocks()
    _, adds = _replay(1)
    n = sum(b["elementCount"] for _, _, b in raw)
    dcs, d = 500_000, 2
    assert metrics.revision_id == 1
    assert metrics.dimension_count == d
    assert metrics.desired_cube_size == dcs
    assert metrics.indexing_columns == "id:linear,name:hashing"
    assert metrics.element_count == n == 8_000_000
    assert metrics.cube_count == len({b["cubeId"] for _, _, b in raw}) == 21
    assert metrics.block_count == len(raw) == 42
    assert metrics.file_count == len(adds) == 10
    assert metrics.bytes == sum(a["size"] for a in adds.values()) == 454_072_430
    assert metrics.height == max(len(b["cubeId"]) for _, _, b in raw) + 1 == 3
    fanout = 2**d
    by_hand = math.ceil(math.log(math.ceil(n / dcs) * (fanout - 1) + 1) / math.log(fanout))
    assert metrics.min_height == by_hand == 3
    # the root has 4 children and each child 4 children
    assert metrics.avg_fanout == 4.0
    assert metrics.theoretical_fanout == 4.0


def test_size_stats_match_an_independent_computation(metrics: IndexMetrics) -> None:
    raw = _raw_blocks()
    per_cube: dict[str, int] = defaultdict(int)
    blocks_per_cube: Counter[str] = Counter()
    blocks_per_file: Counter[str] = Counter()
    sizes: dict[str, int] = {}
    for path, size, block in raw:
        per_cube[block["cubeId"]] += block["elementCount"]
        blocks_per_cube[block["cubeId"]] += 1
        blocks_per_file[path] += 1
        sizes[path] = size
    _assert_stats(metrics.cube_element_count_stats, list(per_cube.values()))
    _assert_stats(metrics.block_element_count_stats, [b["elementCount"] for _, _, b in raw])
    _assert_stats(metrics.file_bytes_stats, list(sizes.values()))
    _assert_stats(metrics.block_count_per_cube_stats, list(blocks_per_cube.values()))
    _assert_stats(metrics.block_count_per_file_stats, list(blocks_per_file.values()))
    # a few literal values, for the report
    assert str(metrics.cube_element_count_stats) == (
        "(count: 21, avg: 380952, stddev: 211516, quartiles: [261302,265581,266563,269076,751130])"
    )
    assert metrics.block_count_per_cube_stats.quartiles == (2, 2, 2, 2, 2)
    assert metrics.block_count_per_file_stats.quartiles == (1, 5, 5, 5, 5)


def test_denormalized_blocks_and_is_leaf() -> None:
    snap = _snapshot()
    rows = denormalized_blocks(snap, 1)
    raw = _raw_blocks()
    assert len(rows) == len(raw) == 42
    cube_strings = {b["cubeId"] for _, _, b in raw}
    for row in rows:
        has_descendant = any(
            other != row.cube_id and other.startswith(row.cube_id) for other in cube_strings
        )
        assert row.is_leaf is (not has_descendant), row.cube_id
        assert row.revision_id == 1
    assert sum(r.is_leaf for r in rows) == 32  # 16 depth-2 cubes x 2 commits
    # same rows as the raw JSON (file order, then block order)
    _, adds = _replay(1)
    by_path = {p: a for p, a in adds.items()}
    expected = [
        (
            b["cubeId"],
            p,
            s,
            by_path[p]["modificationTime"],
            b["minWeight"],
            b["maxWeight"],
            b["elementCount"],
        )
        for p, s, b in raw
    ]
    got = [
        (
            r.cube_id,
            r.file_path,
            r.file_size,
            r.file_modification_time,
            r.min_weight,
            r.max_weight,
            r.element_count,
        )
        for r in rows
    ]
    assert sorted(got) == sorted(expected)
    assert denormalized_blocks(snap) == rows  # default = latest revision
    json.dumps([r.to_dict() for r in rows])


def test_depth_wise_stats(metrics: IndexMetrics) -> None:
    raw = _raw_blocks()
    per_cube: dict[str, int] = defaultdict(int)
    min_max_weight: dict[str, int] = {}
    for _, _, b in raw:
        per_cube[b["cubeId"]] += b["elementCount"]
        min_max_weight[b["cubeId"]] = min(min_max_weight.get(b["cubeId"], INT_MAX), b["maxWeight"])
    assert [s.depth for s in metrics.inner_cube_stats] == [0, 1]
    assert [s.depth for s in metrics.leaf_cube_stats] == [2]
    for stats in (*metrics.inner_cube_stats, *metrics.leaf_cube_stats):
        cubes = [c for c in per_cube if len(c) == stats.depth]
        counts = [per_cube[c] for c in cubes]
        count, avg, stddev, quartiles = _expected_stats(counts)
        assert stats.cube_count == count == 4**stats.depth
        assert stats.block_count == 2 * count
        assert (stats.avg_element_count, stats.element_count_stddev) == (avg, stddev)
        assert list(stats.element_count_quartiles) == quartiles
        weights = [(min_max_weight[c] - INT_MIN) / (2**32 - 1) for c in cubes]
        assert stats.avg_normalized_max_weight == pytest.approx(statistics.fmean(weights))
    root = metrics.inner_cube_stats[0]
    assert root.avg_normalized_max_weight == pytest.approx(0.0625)  # weight(500000/8000000)
    assert metrics.leaf_cube_stats[0].avg_normalized_max_weight == 1.0


def test_after_the_first_commit_only() -> None:
    m = compute_index_metrics(_snapshot(0), 1)
    assert (m.element_count, m.cube_count, m.block_count, m.file_count) == (4_000_000, 21, 21, 5)
    assert m.inner_cube_stats[0].avg_normalized_max_weight == pytest.approx(0.125)
    assert m.block_count_per_cube_stats.quartiles == (1, 1, 1, 1, 1)


def test_report_text_dict_and_html(metrics: IndexMetrics) -> None:
    text = str(metrics)
    assert text.startswith("OTree Index Metrics:\nrevisionId: 1\n")
    for line in (
        "elementCount: 8000000",
        "indexingColumns: id:linear,name:hashing",
        "height: 3 (minHeight: 3)",
        "avgFanout: 4.0 (theoreticalFanout: 4.0)",
        "cubeCount: 21",
        "blockCount: 42",
        "fileCount: 10",
        "bytes: 454072430",
        "Multi-block files stats:",
        "Inner cubes depth-wise stats:",
        "Leaf cubes depth-wise stats:",
    ):
        assert line in text.splitlines(), line
    header = metrics.leaf_cube_stats_text.splitlines()[0].split()
    assert header[:4] == ["depth", "avgCubeElementCount", "cubeCount", "blockCount"]
    assert metrics.leaf_cube_stats_text.splitlines()[1].split()[:4] == ["2", "265567", "16", "32"]

    data = json.loads(json.dumps(metrics.to_dict()))
    assert data["cube_count"] == 21 and data["min_height"] == 3 and data["avg_fanout"] == 4.0
    assert data["file_bytes_stats"]["count"] == 10
    assert [s["depth"] for s in data["inner_cube_stats"]] == [0, 1]
    assert data["leaf_cube_stats"][0]["element_count_quartiles"] == list(
        metrics.leaf_cube_stats[0].element_count_quartiles
    )

    page = metrics._repr_html_()
    assert page.count("<table") == 4 and "454072430" in page
    nasty = dataclasses.replace(metrics, indexing_columns='<script>alert("x")</script>&')
    page = nasty._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page


def test_staging_revision_and_missing_revisions() -> None:
    snap = _snapshot()
    empty = compute_index_metrics(snap, 0)  # revision 0 exists but holds no file
    assert (empty.element_count, empty.cube_count, empty.height, empty.min_height) == (0, 0, 0, 0)
    assert empty.avg_fanout == 0.0 and empty.inner_cube_stats == () == empty.leaf_cube_stats
    assert empty.file_bytes_stats == SizeStats(0, None, 0, None, None, None, None, None)
    assert "(no cubes)" in str(empty)
    json.dumps(empty.to_dict())
    assert compute_index_metrics(snap) == compute_index_metrics(snap, 1)
    with pytest.raises(InvalidOptionError, match="revision 7 does not exist"):
        compute_index_metrics(snap, 7)
    plain = QbeastSnapshot.from_delta({}, [{"path": "a.parquet", "size": 3}], 0)
    with pytest.raises(NotAQbeastTableError):
        compute_index_metrics(plain)


def test_staging_files_count_as_root_blocks() -> None:
    conf, _ = _replay(1)
    files = [{"path": "s1.parquet", "size": 10}, {"path": "s2.parquet", "size": 20, "tags": {}}]
    snap = QbeastSnapshot.from_delta(conf, files, 3)
    m = compute_index_metrics(snap, 0)
    assert (m.cube_count, m.block_count, m.file_count, m.bytes, m.height) == (1, 2, 2, 30, 1)
    assert m.leaf_cube_stats == (DepthStats(0, 1, 2, 0, 0, (0, 0, 0, 0, 0), 1.0),)


# ---------------------------------------------------------------------------------------------
# size_stats
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], SizeStats(0, None, 0, None, None, None, None, None)),
        ([7], SizeStats(1, 7, 0, 7, 7, 7, 7, 7)),
        ([1, 2, 3, 4], SizeStats(4, 2, 1, 1, 1, 2, 3, 4)),
        ([4, 1, 3, 2, 5], SizeStats(5, 3, 1, 1, 2, 3, 4, 5)),
        ([-3, -4], SizeStats(2, -3, 0, -4, -4, -4, -3, -3)),  # avg -3.5 truncates to -3
        ([10, 10, 10], SizeStats(3, 10, 0, 10, 10, 10, 10, 10)),
    ],
    ids=["empty", "single", "four", "five-unsorted", "negative", "constant"],
)
def test_size_stats_cases(values: list[int], expected: SizeStats) -> None:
    assert size_stats(values) == expected


def test_size_stats_against_numpy_on_random_inputs() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 60)
        values = [rng.randint(0, rng.choice([5, 1000, 10**12])) for _ in range(n)]
        _assert_stats(size_stats(values), values)
