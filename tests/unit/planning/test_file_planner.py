"""plan_files on the qbeast-spark reference log, sampling helpers and Delta-stats pruning."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    Block,
    IndexFile,
    QbeastSnapshot,
    weight_from_fraction,
)
from qbeast_connect.planning.file_planner import (
    ScanPlan,
    file_may_match,
    plan_files,
    sample_weight_sql,
    stats_by_path,
    validate_fraction,
    weight_range_for_fraction,
)
from qbeast_connect.planning.predicate import Comparison, Predicate, from_sql, to_dnf

from ._helpers import fixture_log

# Files of the reference log (first 4 characters of the uuid) and their blocks:
#   commit 0: 155c root [min -2147482543]; 7434 A (+AA AQ Ag Aw); 9435 Q (+QA…); e7e1 g (+gA…);
#             d76c w (+wA…). Children blocks have minWeight ≈ 5.3e8, the depth-1 cubes
#             ≈ -1.61e9.
#   commit 1: ab01 root [min -2147482543]; d8b9 A…; a302 Q…; 287f g…; 6b9c w…, with depth-1
#             minWeights ≈ -1.879e9 and children ≈ -8.0e8.
# Cube max weights M = min over blocks: root -1879048192 (= weight(0.0625)),
# A -801096427, Q -809289081, g -800348665, w -809909012, children MAX_WEIGHT.
ALL_FILES = {"155c", "ab01", "7434", "d8b9", "9435", "a302", "e7e1", "287f", "d76c", "6b9c"}


@pytest.fixture(scope="module")
def table() -> tuple[QbeastSnapshot, dict[str, Any]]:
    configuration, adds = fixture_log()
    return QbeastSnapshot.from_delta(configuration, adds, 1), stats_by_path(adds)


def short(plan: ScanPlan) -> set[str]:
    return {p[:4] for p in plan.paths}


def run(
    table: tuple[QbeastSnapshot, dict[str, Any]],
    sql: str | None,
    fraction: float | None,
    *,
    stats: bool = True,
) -> ScanPlan:
    snapshot, file_stats = table
    predicate = None if sql is None else from_sql(sql)
    return plan_files(snapshot, predicate, fraction, stats_pruning=stats, file_stats=file_stats)


def test_sample_010_reads_the_root_and_the_depth_one_cubes(table: Any) -> None:
    # to = weight(0.1) = -1717986918 > M(root) = -1879048192: descend to A, Q, g, w, whose
    # M (≈ -8.0e8) is above `to`, so the traversal stops there. A block is read when
    # to > block.minWeight: both root blocks, and the commit-1 depth-1 blocks (≈ -1.879e9);
    # the commit-0 depth-1 blocks start at ≈ -1.61e9 > to.
    plan = run(table, None, 0.1)
    assert short(plan) == {"155c", "ab01", "287f", "d8b9", "a302", "6b9c"}
    assert plan.weight_range == (MIN_WEIGHT, -1717986918)
    assert plan.skipped_by_index == 4 and plan.skipped_by_stats == 0
    (rev,) = plan.per_revision
    assert rev.revision_id == 1 and rev.indexed and rev.selected_cubes == 5


def test_sample_below_the_root_weight_reads_only_root_files(table: Any) -> None:
    assert weight_from_fraction(0.05) < -1879048192
    assert short(run(table, None, 0.05)) == {"155c", "ab01"}


def test_sample_050_reads_everything(table: Any) -> None:
    assert short(run(table, None, 0.5)) == ALL_FILES


def test_sample_one_has_no_weight_filter(table: Any) -> None:
    plan = run(table, None, 1.0)
    assert short(plan) == ALL_FILES
    assert plan.weight_range == (MIN_WEIGHT, None)


def test_no_filter_no_sample_reads_everything(table: Any) -> None:
    plan = run(table, None, None)
    assert short(plan) == ALL_FILES
    assert plan.weight_range is None
    assert plan.total_files == 10 and plan.selected_bytes == plan.total_bytes
    assert not plan.per_revision[0].indexed


def test_id_filter_uses_the_index(table: Any) -> None:
    # id in [1, 4e6] is dimension 0: id < 100 only reaches the lower half (A, Q) and, below
    # them, the lower quarter (AA, AQ, QA, QQ).
    plan = run(table, "id < 100", None, stats=False)
    assert short(plan) == {"155c", "ab01", "7434", "d8b9", "9435", "a302"}
    assert plan.skipped_by_index == 4
    assert plan.per_revision[0].selected_cubes == 7  # root, A, Q, AA, AQ, QA, QQ


def test_id_filter_with_sample(table: Any) -> None:
    assert short(run(table, "id < 100", 0.1)) == {"155c", "ab01", "d8b9", "a302"}


def test_index_and_stats_combine(table: Any) -> None:
    # index: upper half of id (root, g…, w…); stats: max id of e7e1 and 287f is 3999996
    plan = run(table, "id > 3999997", None)
    assert short(plan) == {"155c", "ab01", "d76c", "6b9c"}
    assert (plan.skipped_by_index, plan.skipped_by_stats) == (4, 2)
    assert run(table, "id > 3999997", None, stats=False).skipped_by_stats == 0


def test_hash_equality_uses_the_index_and_ranges_do_not(table: Any) -> None:
    assert short(run(table, "name = 'qbeast'", None, stats=False)) == {
        "155c", "ab01", "9435", "a302", "d76c", "6b9c",
    }  # fmt: skip
    assert short(run(table, "name > 'qbeast'", None, stats=False)) == ALL_FILES


def test_stats_prune_any_column(table: Any) -> None:
    plan = run(table, "name < 'Aaron Ac'", None)  # the min names are "Aaron Abbott" or later
    assert short(plan) == {"9435", "d76c", "a302", "6b9c"}
    assert (plan.skipped_by_index, plan.skipped_by_stats) == (0, 6)
    assert short(run(table, "age > 80", None)) == set()
    assert short(run(table, "age >= 80", None)) == ALL_FILES


def test_false_and_null_predicates_select_nothing(table: Any) -> None:
    assert short(run(table, "FALSE", None)) == set()
    assert short(run(table, "id = NULL", 0.3)) == set()


def test_stats_pruning_can_be_disabled_or_lack_stats(table: Any) -> None:
    snapshot, _ = table
    assert short(run(table, "age > 80", None, stats=False)) == ALL_FILES
    plan = plan_files(snapshot, from_sql("age > 80"), None)  # no file_stats given
    assert short(plan) == ALL_FILES


def test_opaque_filters_do_not_prune(table: Any) -> None:
    assert short(run(table, "lower(name) = 'x'", None)) == ALL_FILES


def test_staging_and_unknown_revision_files_are_always_candidates(table: Any) -> None:
    snapshot, file_stats = table
    staging = IndexFile("staging.parquet", 10, 0, 0, (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),))
    orphan = IndexFile("orphan.parquet", 10, 0, 7, (Block("", MIN_WEIGHT, MIN_WEIGHT, 1),))
    extended = QbeastSnapshot(snapshot.configuration, (*snapshot.files, staging, orphan), 2)
    stats = dict(file_stats)
    stats["staging.parquet"] = json.dumps(
        {"numRecords": 2, "minValues": {"id": 5}, "maxValues": {"id": 9}, "nullCount": {"id": 0}}
    )
    plan = plan_files(extended, from_sql("id < 100"), 0.01, file_stats=stats)
    assert {"staging.parquet", "orphan.parquet"} <= set(plan.paths)
    assert [r.revision_id for r in plan.per_revision] == [0, 1, 7]
    assert not plan.per_revision[0].indexed and not plan.per_revision[2].indexed
    plan = plan_files(extended, from_sql("id > 100"), None, file_stats=stats)
    assert "staging.parquet" not in plan.paths  # pruned by its stats
    assert plan.per_revision[0].skipped_by_stats == 1


def test_plan_keeps_snapshot_order(table: Any) -> None:
    snapshot, _ = table
    plan = run(table, None, 0.1)
    order = [f.path for f in snapshot.files]
    assert list(plan.paths) == sorted(plan.paths, key=order.index)


# ---------------------------------------------------------------------------------------------
# sampling helpers
# ---------------------------------------------------------------------------------------------


BAD_FRACTIONS = {
    "zero": 0, "zero-float": 0.0, "negative": -0.1, "above-one": 1.0000001, "two": 2,
    "nan": math.nan, "inf": math.inf, "string": "0.5", "bool": True, "none": None,
}  # fmt: skip


@pytest.mark.parametrize("bad", BAD_FRACTIONS.values(), ids=BAD_FRACTIONS.keys())
def test_invalid_fractions(bad: Any) -> None:
    with pytest.raises(InvalidOptionError, match="sample fraction"):
        validate_fraction(bad)
    if bad is not None:
        with pytest.raises(InvalidOptionError):
            plan_files(QbeastSnapshot({}, (), 0), None, bad)


def test_weight_ranges() -> None:
    assert weight_range_for_fraction(0.1) == (MIN_WEIGHT, -1717986918)
    assert weight_range_for_fraction(0.5) == (MIN_WEIGHT, 0)
    assert weight_range_for_fraction(1) == (MIN_WEIGHT, None)
    assert weight_range_for_fraction(Decimal("0.25")) == (MIN_WEIGHT, -1073741824)
    assert validate_fraction(1e-9) == 1e-9


def test_sample_weight_sql() -> None:
    assert sample_weight_sql(["id", "name"], 0.1) == "hash(`id`, `name`) < -1717986918"
    assert sample_weight_sql(("we`ird",), 0.5) == "hash(`we``ird`) < 0"
    assert sample_weight_sql(["id"], 1.0) == "TRUE"
    with pytest.raises(InvalidOptionError):
        sample_weight_sql([], 0.1)
    with pytest.raises(InvalidOptionError):
        sample_weight_sql("id", 0.1)
    with pytest.raises(InvalidOptionError):
        sample_weight_sql(["id"], 0.0)


def test_stats_by_path_accepts_wrapped_actions() -> None:
    adds = [{"add": {"path": "a", "stats": "{}"}}, {"path": "b"}]
    assert stats_by_path(adds) == {"a": "{}", "b": None}


# ---------------------------------------------------------------------------------------------
# Delta statistics
# ---------------------------------------------------------------------------------------------


def stats(mins: dict[str, Any], maxs: dict[str, Any], nulls: dict[str, Any] | None = None,
          n: int = 10) -> str:  # fmt: skip
    return json.dumps(
        {"numRecords": n, "minValues": mins, "maxValues": maxs, "nullCount": nulls or {}},
        ensure_ascii=False,
    )


def may(pred: Predicate | str, file_stats: Any) -> bool:
    p = from_sql(pred) if isinstance(pred, str) else pred
    return file_may_match(to_dnf(p), file_stats)


INT_STATS = stats({"x": 10}, {"x": 20}, {"x": 0})
DBL_STATS = '{"numRecords":3,"minValues":{"y":0.1},"maxValues":{"y":0.1},"nullCount":{"y":0}}'
FLOAT32_STATS = '{"numRecords":3,"minValues":{"f":0.1},"maxValues":{"f":0.1},"nullCount":{"f":0}}'
STR_STATS = stats({"s": "abd"}, {"s": "abf"}, {"s": 1})
TRUNC_STATS = stats({"s": "abc"}, {"s": "abc\U0010ffff"}, {"s": 0})
TS_STATS = stats(
    {"t": "2024-01-15T10:30:00.000Z", "u": "2024-01-15T11:30:00.000+01:00"},
    {"t": "2024-01-15T10:30:00.000Z", "u": "2024-01-15T11:30:00.000+01:00"},
)
DATE_STATS = stats({"d": "2024-01-15"}, {"d": "2024-01-15"})
NULL_STATS = stats({}, {}, {"x": 10, "s": 0})

STATS_CASES = [
    ("int-below-min", "x < 10", INT_STATS, False),
    ("int-at-min", "x <= 10", INT_STATS, True),
    ("int-above-max", "x > 20", INT_STATS, False),
    ("int-at-max", "x >= 20", INT_STATS, True),
    ("int-eq-out", "x = 21", INT_STATS, False),
    ("int-eq-in", "x = 15", INT_STATS, True),
    ("int-between-out", "x BETWEEN 21 AND 30", INT_STATS, False),
    ("int-in-out", "x IN (1, 2, 25)", INT_STATS, False),
    ("int-in-one-inside", "x IN (1, 12)", INT_STATS, True),
    ("int-not-eq", "x != 15", INT_STATS, True),
    ("int-not-in", "x NOT IN (15)", INT_STATS, True),
    ("int-vs-decimal", "x < 10.0", INT_STATS, True),  # inexact literal: slack keeps it
    ("int-vs-decimal-far", "x < 9.5", INT_STATS, False),
    ("or-one-branch", "x > 100 OR x < 11", INT_STATS, True),
    ("or-no-branch", "x > 100 OR x < 5", INT_STATS, False),
    ("other-column", "w > 100", INT_STATS, True),
    ("case-insensitive", "X > 100", INT_STATS, False),
    ("string-literal-vs-int", "x > 'zz'", INT_STATS, True),
    # doubles as written by Spark, compared against a DECIMAL literal of the same text
    ("double-eq-decimal", "y = 0.1", DBL_STATS, True),
    ("double-ge-decimal", "y >= 0.1", DBL_STATS, True),
    ("double-le-double", "y <= 0.1D", DBL_STATS, True),
    ("double-far", "y > 0.2", DBL_STATS, False),
    # FLOAT column: the stats text is the float32's shortest form, the value is wider
    ("float32-widened", "f >= 0.10000000149", FLOAT32_STATS, True),
    ("string-min", "s < 'abd'", STR_STATS, False),
    ("string-min-eq", "s <= 'abd'", STR_STATS, True),
    ("string-max", "s > 'abf'", STR_STATS, False),
    ("string-max-prefix", "s > 'abe'", STR_STATS, True),
    ("string-eq-out", "s = 'abz'", STR_STATS, False),
    ("string-truncated-max", "s > 'abcz'", TRUNC_STATS, True),
    ("string-truncated-min", "s < 'abca'", TRUNC_STATS, True),
    ("string-vs-number", "s > 5", STR_STATS, True),
    # old Delta writers cut the max and appended U+FFFD, which is below supplementary chars
    ("string-old-tie-breaker", "s >= 'ab\U0001f600'", stats({"s": "ab"}, {"s": "ab\ufffd"}), True),
    ("ts-equal", "t = TIMESTAMP '2024-01-15 10:30:00'", TS_STATS, True),
    ("ts-sub-ms", "t >= TIMESTAMP '2024-01-15 10:30:00.0009'", TS_STATS, True),
    ("ts-next-ms", "t >= TIMESTAMP '2024-01-15 10:30:00.001'", TS_STATS, False),
    ("ts-before", "t < TIMESTAMP '2024-01-15 10:30:00'", TS_STATS, False),
    ("ts-offset-stats", "u = TIMESTAMP '2024-01-15 10:30:00'", TS_STATS, True),
    ("ts-offset-stats-out", "u > TIMESTAMP '2024-01-15 10:31:00'", TS_STATS, False),
    ("ts-vs-date", "t >= DATE '2024-01-16'", TS_STATS, False),
    ("date-equal", "d = DATE '2024-01-15'", DATE_STATS, True),
    ("date-after", "d > DATE '2024-01-15'", DATE_STATS, False),
    ("date-vs-ts-noon", "d >= TIMESTAMP '2024-01-15 12:00:00'", DATE_STATS, False),
    ("date-vs-ts-midnight", "d <= TIMESTAMP '2024-01-15 00:00:00'", DATE_STATS, True),
    ("is-null-none", "x IS NULL", INT_STATS, False),
    ("is-null-some", "s IS NULL", STR_STATS, True),
    ("is-not-null-all-null", "x IS NOT NULL", NULL_STATS, False),
    ("comparison-all-null", "x > 0", NULL_STATS, False),
    ("in-all-null", "x IN (1)", NULL_STATS, False),
    ("no-bounds-some-values", "s = 'q'", NULL_STATS, True),
    ("unknown-null-count", "z IS NULL", INT_STATS, True),
    ("opaque", "lower(s) = 'x'", INT_STATS, True),
]


@pytest.mark.parametrize(("sql", "file_stats", "expected"), [c[1:] for c in STATS_CASES],
                         ids=[c[0] for c in STATS_CASES])  # fmt: skip
def test_stats_pruning(sql: str, file_stats: str, expected: bool) -> None:
    assert may(sql, file_stats) is expected


@pytest.mark.parametrize(
    "raw",
    [None, "", "not json", "[1, 2]", {"numRecords": 3}],
    ids=["none", "empty", "garbage", "list", "no-bounds"],
)
def test_missing_or_broken_stats_keep_the_file(raw: Any) -> None:
    assert may("x > 100", raw)


def test_parsed_stats_and_special_literals() -> None:
    parsed = {"numRecords": 2, "minValues": {"x": 1.5}, "maxValues": {"x": 2.5}, "nullCount": {}}
    assert not may("x > 3", parsed)
    assert may(Comparison("x", ">", math.nan), parsed)  # NaN: Spark orders it above all
    assert may(Comparison("x", "<", math.inf), parsed)
    big = stats({"x": 2**53 + 1}, {"x": 2**53 + 1})
    assert may(Comparison("x", "<=", float(2**53)), big)  # Spark compares as doubles
    assert not may(Comparison("x", "<=", 2**53), big)  # both integers: exact
    flags = stats({"b": True}, {"b": True})
    assert not may("b = FALSE", flags) and may("b = TRUE", flags)
    assert not file_may_match((), INT_STATS)  # FALSE


# ---------------------------------------------------------------------------------------------
# cube edges (1-D table built by hand)
# ---------------------------------------------------------------------------------------------


def edge_table() -> QbeastSnapshot:
    """x linear in [0, 1000]: x = 500 maps to 0.5 (cube g), x = 1000 to 1.0 (cube gg)."""
    from qbeast_connect.model import (
        CubeId,
        LinearTransformation,
        LinearTransformer,
        QDataType,
        Revision,
    )

    rev = Revision(1, 0, "t", 10, (LinearTransformer("x", QDataType.INTEGER),),
                   (LinearTransformation(0, 1000, 0, QDataType.INTEGER),))  # fmt: skip
    w0, w1 = weight_from_fraction(0.1), weight_from_fraction(0.5)

    def cube(depth: int, coord: int) -> str:
        return CubeId(1, depth, (coord,)).to_string()

    files = (
        IndexFile("root", 1, 0, 1, (Block(cube(0, 0), MIN_WEIGHT, w0, 5),)),
        IndexFile("lower", 1, 0, 1, (Block(cube(1, 0), w0 + 1, MAX_WEIGHT, 3),)),
        IndexFile("upper", 1, 0, 1, (Block(cube(1, 1), w0 + 1, w1, 3),)),
        IndexFile("mid", 1, 0, 1, (Block(cube(2, 2), w1 + 1, MAX_WEIGHT, 2),)),
        IndexFile("top", 1, 0, 1, (Block(cube(2, 3), w1 + 1, MAX_WEIGHT, 2),)),
    )
    conf = {"qbeast.lastRevisionID": "1", "qbeast.revision.1": rev.to_json()}
    return QbeastSnapshot(conf, files, 0)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("x <= 500", {"root", "lower", "upper", "mid"}),  # 0.5 belongs to the upper cubes
        ("x < 500", {"root", "lower", "upper", "mid"}),  # strict and non-strict alike
        ("x = 500", {"root", "upper", "mid"}),
        ("x >= 750", {"root", "upper", "top"}),
        ("x >= 1000", {"root", "upper", "top"}),  # 1.0 lives in the last cube
        ("x = 1000", {"root", "upper", "top"}),
        ("x > 1000", {"root", "upper", "top"}),
        ("x > 1001", set()),
        ("x <= 0", {"root", "lower"}),
        ("x < 0", {"root", "lower"}),  # treated like x <= 0
        ("x < -1", set()),
        ("x IS NULL", {"root", "lower"}),  # the null value 0 maps to 0.0
    ],
)
def test_cube_edges(sql: str, expected: set[str]) -> None:
    plan = plan_files(edge_table(), from_sql(sql), None)
    assert set(plan.paths) == expected


def test_cube_edges_with_sample() -> None:
    # to = weight(0.3) lies between the root's and g's max weights: descend one level only
    plan = plan_files(edge_table(), from_sql("x >= 750"), 0.3)
    assert set(plan.paths) == {"root", "upper"}
