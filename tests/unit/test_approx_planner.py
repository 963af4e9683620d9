"""The planning of ``approx``'s weight bands: from the log alone, one band in the common case."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import pytest

from qbeast_connect.approx import run
from qbeast_connect.approx.aggregates import parse_aggregates
from qbeast_connect.approx.planner import Band, BandPlanner
from qbeast_connect.approx.result import rows_needed
from qbeast_connect.model import (
    MIN_WEIGHT,
    Block,
    CubeId,
    IndexFile,
    QbeastSnapshot,
    weight_from_fraction,
)
from qbeast_connect.planning.file_planner import ScanPlan, plan_files
from tests.unit.planning._helpers import make_revision

TOTAL_ROWS = 60_000_000
TOP = 1 / 60  # the top-band file holds every row below this weight fraction
MEAN, SD = 38_000.0, 23_000.0  # l_extendedprice-like: cv² = 0.37


def _sf10_like() -> QbeastSnapshot:
    """The layout of TPC-H sf 10 written with cubeSize 1M: one 40 MB file holding the root
    cube's million rows of weight fraction below 1/60, a 61 KB file of leftovers (23 root
    rows from fraction 0.000546, and deeper cubes' rows), and eight large files of the
    child cubes' rows above 1/60."""
    revision = make_revision(1, (0, 1000), (-1.0, 1.0), random.Random(7))
    root = CubeId.root(3)
    children = root.children()
    w = weight_from_fraction
    files = [
        IndexFile("top.parquet", 40_000_000, 0, 1, (Block("", MIN_WEIGHT, w(TOP), 1_000_000),)),
        IndexFile(
            "leftovers.parquet",
            61_000,
            0,
            1,
            (
                Block("", w(0.000546), w(TOP), 23),
                Block(children[0].to_string(), w(0.03), w(1.0), 977),
            ),
            1000,
        ),
    ]
    rest = (TOTAL_ROWS - 1_001_000) // len(children)
    for k, child in enumerate(children):
        block = Block(child.to_string(), w(TOP) + 1 + k, w(1.0), rest)
        files.append(IndexFile(f"child-{k}.parquet", 290_000_000, 0, 1, (block,), rest))
    configuration = {"qbeast.lastRevisionID": "1", "qbeast.revision.1": revision.to_json()}
    return QbeastSnapshot(configuration, tuple(files), 0)


def _moments(rows: int) -> dict[str, Any]:
    """The sums of ``rows`` sampled rows, each of its own weight, spread like MEAN, SD."""
    square = MEAN**2 + SD**2
    return {
        "rows": rows,
        "keys": rows,
        "r2": rows,
        "n0": rows,
        "k0": rows,
        "s0": rows * MEAN,
        "t0": rows * MEAN,
        "ss0": rows * square,
        "sn0": rows * MEAN,
        "nn0": rows,
    }


def _band_sums(
    frame: Any,
    aggregates: Any,
    group_by: Any,
    weight_columns: Any,
    last: bool,
    per_row: bool = False,
) -> list[tuple[tuple[Any, ...], Any]]:
    """What Spark would sum over a band of the table above: its expected rows and moments."""
    band: Band = frame
    rows = round((band.to_fraction - band.from_fraction) * TOTAL_ROWS)
    return [((), _moments(rows))]


def test_a_one_percent_sum_over_a_table_whose_top_files_hold_enough_rows_reads_one_band(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At sf 10 ``approx("sum(x)", relativeError=0.01)`` read a first band of 2^-14 (the top
    file, stopped at 0.000546 by the leftovers file) and then the top file again with the
    leftovers: two Spark queries. Sized from the log, the first band opens both files at
    once, reaches 1/60 (a million rows) and is the only one."""
    snapshot = _sf10_like()
    plans: list[tuple[float | None, float | None]] = []

    def plan(fraction: float | None, from_fraction: float | None) -> ScanPlan:
        plans.append((fraction, from_fraction))
        return plan_files(snapshot, None, fraction, from_fraction=from_fraction)

    reads: list[Band] = []

    def read_band(band: Band) -> Any:
        reads.append(band)
        return band

    monkeypatch.setattr(run, "_band_sums", _band_sums)
    result = run.run_approx(
        BandPlanner(plan),
        read_band,
        "sum(price) AS revenue",
        group_by=None,
        relative_error=0.01,
        confidence=0.95,
        fraction=None,
        progress=None,
        indexed_columns=("x", "y", "s"),
        total_bytes=sum(f.size for f in snapshot.files),
    )
    assert len(reads) == 1, [(b.from_fraction, b.to_fraction, b.plan.paths) for b in reads]
    (band,) = reads
    assert set(band.plan.paths) == {"top.parquet", "leftovers.parquet"}
    assert band.from_fraction == 0.0
    assert band.to_fraction == pytest.approx(TOP, rel=1e-6)
    assert result.done and result.converged() and len(result.steps) == 1
    assert result.rowsRead == round(TOP * TOTAL_ROWS)
    assert result.bytesRead == 40_061_000 <= 0.05 * result.totalBytes
    # the candidate files were planned once, not once per band
    assert plans.count((None, None)) == 1


def test_rows_needed_sizes_for_the_widest_estimate() -> None:
    z = 1.96
    count, total, low = parse_aggregates(["count(*) AS n", "sum(x) AS s", "min(x) AS lo"])
    assert rows_needed([count], 0.01, z) == math.ceil((z / 0.01) ** 2) == 38_416
    assert rows_needed([count, total], 0.01, z) == math.ceil(2 * (z / 0.01) ** 2)
    assert rows_needed([low], 0.01, z) == 0  # bounds are not narrowed by rows
    assert rows_needed([total], 0.1, z) == math.ceil(2 * (z / 0.1) ** 2)


def test_a_band_widened_past_a_power_of_two_grows_to_the_next_one_not_to_the_whole_table() -> None:
    """A first band asked at 1/8 whose files hold rows up to 0.12508 wanted 0.23 next: the
    step used to double 0.12508 (0.25016), round that up to 1/2 and so read everything;
    it grows from the power of two the band reaches, to 1/4."""
    from qbeast_connect.approx.estimators import inclusion_probability, z_value
    from qbeast_connect.approx.result import ApproxResult, next_fraction

    fraction = 0.12507917199402097
    p = inclusion_probability(fraction)
    rows = 1629
    sums = _moments(rows)
    z = z_value(0.95)
    half_share = z * math.sqrt((1 - p) * sums["ss0"]) / sums["t0"]

    def result(relative_error: float) -> ApproxResult:
        return ApproxResult(
            aggregates=parse_aggregates("sum(price) AS revenue"),
            group_by=(),
            groups={(): sums},
            fraction=fraction,
            bytesRead=0,
            confidence=0.95,
            z=z,
            relativeError=relative_error,
        )

    assert next_fraction(result(0.9 * half_share)) == 0.25
    assert next_fraction(result(0.5 * half_share)) == 1.0  # predicted to need half or more
    assert next_fraction(result(1.01 * half_share)) is None


def test_the_first_band_also_opens_the_files_that_may_hold_all_null_rows() -> None:
    """The files whose statistics allow rows with every indexed column NULL (planned once,
    from the log) are opened by the first band only: later bands leave those rows out."""
    snapshot = _sf10_like()
    child = next(f for f in snapshot.files if f.path.startswith("child-"))
    null_plans: list[tuple[float | None, float | None]] = []

    def plan(fraction: float | None, from_fraction: float | None) -> ScanPlan:
        return plan_files(snapshot, None, fraction, from_fraction=from_fraction)

    def plan_nulls(fraction: float | None, from_fraction: float | None) -> ScanPlan:
        null_plans.append((fraction, from_fraction))
        whole = plan_files(snapshot, None, None)
        return dataclasses.replace(whole, files=(child,))

    planner = BandPlanner(plan, plan_nulls)
    first = planner.band(0.0, TOP / 4)
    alone = BandPlanner(plan).band(0.0, TOP / 4)
    assert set(first.plan.paths) == set(alone.plan.paths) | {child.path}
    assert first.bytes == alone.bytes + child.size
    later = planner.band(first.to_fraction, 4 * first.to_fraction)
    assert (
        child.path not in later.plan.paths
        or child.path in BandPlanner(plan).band(first.to_fraction, 4 * first.to_fraction).plan.paths
    )
    planner.band(0.0, TOP / 2)
    assert null_plans == [(None, None)]  # planned once


def _banded(max_top: int | None, deleted: int = 0) -> QbeastSnapshot:
    """A table of three files: 900 rows below weight(1/64) (largest row weight ``max_top``,
    the writer's tag), and 2 files of 50,000 rows from weight(1/64) on."""
    revision = make_revision(1, (0, 1000), (-1.0, 1.0), random.Random(7))
    w = weight_from_fraction
    top = IndexFile(
        "top.parquet",
        1000,
        0,
        1,
        (Block("", MIN_WEIGHT, w(1 / 64), 900),),
        900,
        max_row_weight=max_top,
        deleted_rows=deleted,
    )
    rest = [
        IndexFile(f"r{k}.parquet", 9000, 0, 1, (Block("", w(1 / 64) + k, w(1.0), 50_000),), 50_000)
        for k in range(2)
    ]
    configuration = {"qbeast.lastRevisionID": "1", "qbeast.revision.1": revision.to_json()}
    return QbeastSnapshot(configuration, (top, *rest), 0)


def test_the_rows_a_sample_holds_come_from_the_log_when_files_do_not_straddle_its_end() -> None:
    """The sample's realized share of the candidate rows replaces p when the log tells it:
    900 rows of 100,900 below weight(1/64) is 0.892%, not the 1.5625% p says (an unlucky
    draw of the hash: every estimate dividing by p would be 43% low)."""
    w = weight_from_fraction

    def planner(snapshot: QbeastSnapshot, revisions: frozenset[int]) -> BandPlanner:
        def plan(fraction: float | None, from_fraction: float | None) -> ScanPlan:
            return plan_files(snapshot, None, fraction, from_fraction=from_fraction)

        return BandPlanner(plan, weighted_revisions=revisions)

    inside = planner(_banded(w(1 / 64) - 1), frozenset({1}))
    assert inside.sampled_share(1 / 64) == pytest.approx(900 / 100_900)
    assert inside.sampled_share(1 / 128) is None  # the top file straddles 1/128
    assert inside.sampled_share(1.0) is None  # a full read needs no share
    # unknown: no tag, deleted rows, a revision hashing other columns
    assert planner(_banded(None), frozenset({1})).sampled_share(1 / 64) is None
    assert planner(_banded(w(1 / 64) - 1, deleted=3), frozenset({1})).sampled_share(1 / 64) is None
    assert planner(_banded(w(1 / 64) - 1), frozenset()).sampled_share(1 / 64) is None
    # the estimators divide by it
    from qbeast_connect.approx.result import ApproxResult

    aggregates = parse_aggregates("count(*) AS n")
    sums = {"rows": 900, "keys": 900, "r2": 900, "n0": 900, "k0": 900}
    result = ApproxResult(
        aggregates=aggregates,
        group_by=(),
        groups={(): sums},
        fraction=1 / 64,
        bytesRead=0,
        confidence=0.95,
        z=1.96,
        sampledShare=inside.sampled_share(1 / 64),
    )
    assert result.probability == pytest.approx(900 / 100_900)
    assert result.estimates()[()][0].value == pytest.approx(100_900)


def test_the_rows_known_from_the_log_leave_out_rows_deleted_by_vectors() -> None:
    """Without filter nor group, ``count(*)`` is the log's row count, given as exact. It
    summed ``numRecords``, which counts the rows a deletion vector marks deleted too: on a
    table where Delta deleted 3 of the top file's 900 rows, approx answered 100,900 rows
    exactly for 100,897."""
    snapshot = _banded(weight_from_fraction(1 / 64) - 1, deleted=3)

    def plan(fraction: float | None, from_fraction: float | None) -> ScanPlan:
        return plan_files(snapshot, None, fraction, from_fraction=from_fraction)

    planner = BandPlanner(plan, weighted_revisions=frozenset({1}))
    assert planner.known_rows() == 100_897
    assert planner.candidate_rows() == 100_897


def test_the_extremes_of_the_files_a_sample_has_not_read_come_from_their_statistics() -> None:
    """``unread_extremes`` takes each measure's range from the Delta statistics of every
    candidate file that may hold a row at or above the band's end: all but the top file
    once the band reaches weight(1/64) (its tag says its rows are below), all three before.
    A file whose statistics do not tell the range leaves the column out; a file of NULLs
    only holds no value."""
    snapshot = _banded(weight_from_fraction(1 / 64) - 1)

    def plan(fraction: float | None, from_fraction: float | None) -> ScanPlan:
        return plan_files(snapshot, None, fraction, from_fraction=from_fraction)

    stats = {
        "top.parquet": '{"numRecords": 900, "minValues": {"v": -5}, "maxValues": {"v": 9e9}}',
        "r0.parquet": {
            "numRecords": 50000,
            "minValues": {"v": 1.5},
            "maxValues": {"v": 70},
            "nullCount": {"n": 50000},
        },
        "r1.parquet": '{"numRecords": 50000, "minValues": {"V": -2, "s": "a"},'
        ' "maxValues": {"V": 40, "s": "z"}, "nullCount": {"n": 50000}}',
    }
    planner = BandPlanner(plan, weighted_revisions=frozenset({1}), file_stats=stats)
    after = planner.unread_extremes(["v", "s", "n"], 1 / 64)
    assert set(after) == {"v", "n"}  # "s" is no number
    assert after["v"].maxima == (40.0, 70.0) and after["v"].minima == (-2.0, 1.5)
    assert after["n"].maxima == () == after["n"].minima[:0]
    before = planner.unread_extremes(["v"], 1 / 128)  # the top file straddles 1/128
    assert before["v"].maxima == (40.0, 70.0, 9e9)
    assert planner.unread_extremes(["v"], 1.0) == {}
    assert BandPlanner(plan, file_stats=None).unread_extremes(["v"], 1 / 64) == {}
    nan = {**stats, "r0.parquet": '{"minValues": {"v": "NaN"}, "maxValues": {"v": "NaN"}}'}
    assert BandPlanner(plan, file_stats=nan).unread_extremes(["v"], 1 / 64) == {}


def test_the_weight_level_is_skipped_only_when_the_bands_read_show_one_row_per_weight() -> None:
    aggregates = parse_aggregates(["sum(x) AS s", "count(*) AS n"])
    unique = {
        ("A",): {"rows": 700, "null_rows": 0, "keys": 700, "r2": 700.0},
        ("B",): {"rows": 400, "keys": 400, "r2": 400.0},
    }
    assert run._one_row_per_weight(unique, aggregates)
    # all-NULL rows share one weight but are read in full, outside the sampled weights
    nulls = {("A",): {"rows": 1500, "null_rows": 300, "keys": 1200, "r2": 1200.0}}
    assert run._one_row_per_weight(nulls, aggregates)
    # TPC-H sf 10's first band: 314 of 117,102 rows in pairs
    pairs = {("A",): {"rows": 117_102, "keys": 116_788, "r2": 117_102.0 + 2 * 314}}
    assert run._one_row_per_weight(pairs, aggregates)
    # 1% of the rows in weights of 100 rows: few rows share, but they double the variance
    clustered = {("A",): {"rows": 10_000, "keys": 9_901, "r2": 9_900.0 + 100 * 100.0}}
    assert not run._one_row_per_weight(clustered, aggregates)
    dates = {(): {"rows": 25_000, "keys": 100, "r2": 100 * 250.0**2}}
    assert not run._one_row_per_weight(dates, aggregates)
    assert not run._one_row_per_weight({(): {"rows": 999, "keys": 999, "r2": 999.0}}, aggregates)
    distinct = parse_aggregates(["count(DISTINCT x, a) AS d"])
    assert not run._one_row_per_weight(unique, distinct)
