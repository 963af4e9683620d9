"""Brute force: on synthetic tables, the planner never drops a file holding a matching row.

Each table has two revisions with different transformations (x linear int, y linear double,
s hashing string), rows assigned to cubes by the point-weight rule of spec §5.6 over a
random cube-weight map, blocks and Delta stats (with truncated strings) per file, plus
staging files. For random predicates (SQL NULL semantics) and sample fractions, every row
that satisfies the predicate and lies in the sample must be in a selected file.
"""

from __future__ import annotations

from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qbeast_connect.model import weight_from_fraction
from qbeast_connect.planning.file_planner import plan_files
from qbeast_connect.planning.predicate import (
    FALSE,
    TRUE,
    And,
    Comparison,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    from_sql,
    to_sql,
)

from ._helpers import STRINGS, SyntheticTable, build_table, eval3


@cache
def table(seed: int) -> SyntheticTable:
    """Odd seeds: one file per cube (every cube pruning is visible at the file level)."""
    if seed % 2:
        return build_table(seed, rows_per_revision=150, one_file_per_cube=True)
    return build_table(seed)


OPS = st.sampled_from(["=", "<", "<=", ">", ">="])
RANDOM_VALUES = {
    "x": st.one_of(st.integers(-700, 2200), st.integers(-28, 88).map(lambda k: 25 * k)),
    "y": st.one_of(
        st.integers(-300, 400).map(lambda i: i / 100), st.integers(-12, 16).map(lambda k: k / 4)
    ),
    "s": st.sampled_from((*STRINGS, "a", "alp", "zz", "Zo", "")),
    "z": st.integers(-5, 105),
}


def _atoms(t: SyntheticTable) -> st.SearchStrategy[Predicate]:
    options: list[st.SearchStrategy[Predicate]] = []
    for column, random_values in RANDOM_VALUES.items():
        # Literals equal to stored values make the boundary cases (x <= v with v a file's
        # min, or a coordinate on a cube edge) frequent.
        present = sorted({r.values[column] for r in t.rows if r.values[column] is not None})
        values = st.one_of(random_values, st.sampled_from(present))
        maybe_null = st.one_of(values, st.just(None)) if column == "x" else values
        options += [
            st.builds(Comparison, st.just(column), OPS, maybe_null),
            st.builds(
                InList,
                st.just(column),
                st.lists(st.one_of(values, st.none()), min_size=1, max_size=4).map(tuple),
            ),
            st.builds(IsNull, st.just(column)),
            st.builds(IsNotNull, st.just(column)),
        ]
    options.append(st.sampled_from([TRUE, FALSE]))
    return st.one_of(*options)


def _combine(children: st.SearchStrategy[Predicate]) -> st.SearchStrategy[Predicate]:
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs))),
        children.map(Not),
    )


@cache
def predicates(seed: int) -> st.SearchStrategy[Predicate]:
    return st.recursive(_atoms(table(seed)), _combine, max_leaves=6)


fractions = st.one_of(st.none(), st.just(1.0), st.floats(0.005, 0.999))
SEEDS = st.integers(0, 11)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.data(), fractions, st.booleans())
def test_no_false_negatives(
    seed: int, data: st.DataObject, fraction: float | None, use_stats: bool
) -> None:
    t = table(seed)
    predicate = data.draw(st.one_of(st.none(), predicates(seed)), label="predicate")
    plan = plan_files(t.snapshot, predicate, fraction, stats_pruning=use_stats, file_stats=t.stats)
    selected = set(plan.paths)
    upper = None if fraction is None or fraction >= 1.0 else weight_from_fraction(fraction)
    for row in t.rows:
        if upper is not None and not row.weight < upper:
            continue
        if predicate is not None and eval3(predicate, row.values) is not True:
            continue
        assert row.path in selected, (
            f"missed {row.path} for row {row.values} (weight {row.weight}); "
            f"filter {to_sql(predicate) if predicate else None}, fraction {fraction}"
        )
    assert plan.total_files == len(t.snapshot.files)
    assert len(plan.files) + plan.skipped_by_index + plan.skipped_by_stats == plan.total_files


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS, st.data(), fractions)
def test_stats_only_ever_remove_files(
    seed: int, data: st.DataObject, fraction: float | None
) -> None:
    t = table(seed)
    predicate = data.draw(predicates(seed), label="predicate")
    without = plan_files(t.snapshot, predicate, fraction, stats_pruning=False, file_stats=t.stats)
    with_stats = plan_files(t.snapshot, predicate, fraction, file_stats=t.stats)
    assert set(with_stats.paths) <= set(without.paths)
    assert without.skipped_by_stats == 0


@cache
def deep_table() -> SyntheticTable:
    return build_table(99, rows_per_revision=1500, one_file_per_cube=True, staging_rows=0)


def test_selective_predicates_select_fewer_files() -> None:
    t = deep_table()
    total = len(t.snapshot.files)
    everything = plan_files(t.snapshot, None, None, stats_pruning=False)
    assert len(everything.files) == total
    for sql in ("x < 50", "x > 1900", "s = 'alpha'", "s IN ('beta', 'mu')", "y < -0.9"):
        plan = plan_files(t.snapshot, from_sql(sql), None, stats_pruning=False)
        assert 0 < len(plan.files) < total, sql
        assert plan.skipped_by_index > 0, sql
    # a narrower filter never selects more
    wide = set(plan_files(t.snapshot, from_sql("x < 500"), None, stats_pruning=False).paths)
    narrow = set(plan_files(t.snapshot, from_sql("x < 50"), None, stats_pruning=False).paths)
    assert narrow < wide
    # smaller samples read fewer files
    sizes = [len(plan_files(t.snapshot, None, f).files) for f in (0.05, 0.3, 0.7, 1.0)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1] == total
    # a range on the hash column prunes nothing through the index
    assert (
        plan_files(t.snapshot, from_sql("s > 'm'"), None, stats_pruning=False).skipped_by_index == 0
    )
    # stats prune on a column that is not indexed
    assert plan_files(t.snapshot, from_sql("z > 1000"), None, file_stats=t.stats).files == ()
