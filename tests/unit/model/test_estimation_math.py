"""Estimation arithmetic: group cube size, domains, weights, counts, rollup (T18, T21-T23)."""

from __future__ import annotations

import pytest

from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.estimation_math import (
    estimate_cube_counts,
    existing_domains,
    group_cube_size,
    min_height,
    normalized_weights_from_domains,
    rollup,
    weights_from_domains,
)
from qbeast_connect.model.snapshot import CubeStatus
from qbeast_connect.model.weight import MAX_WEIGHT


def c(text: str, dims: int = 2) -> CubeId:
    return CubeId.from_string(text, dims)


T18 = [
    ((1_000_000, 1, 10_000, 100_000), 1_000_000),
    ((1_000_000, 10, 1_000_000, 100_000), 100_000),
    ((1_000_000, 20, 1_000_000, 100_000), 50_000),
    ((1_000_000, 15, 2_000_000, 100_000), 50_000),
    ((30, 4, 10, 100_000), 30),
    ((1000, 0, 0, 100_000), 1000),
]


@pytest.mark.parametrize(("args", "expected"), T18, ids=[f"T18-{i}" for i in range(len(T18))])
def test_t18_group_cube_size(args: tuple[int, int, int, int], expected: int) -> None:
    assert group_cube_size(*args) == expected


T23 = [((309008, 3000, 2), 5), ((1_000_000, 1000, 2), 6), ((4_000_000, 500_000, 2), 3)]


@pytest.mark.parametrize(("args", "expected"), T23, ids=[f"T23-{a[0]}" for a, _ in T23])
def test_t23_min_height(args: tuple[int, int, int], expected: int) -> None:
    assert min_height(*args) == expected


def test_t21_existing_domains() -> None:
    counts = {c(""): 30, c("A"): 30, c("Q"): 30, c("AA"): 5}
    domains = existing_domains(counts)
    assert domains[c("")] == 95
    assert domains[c("A")] == pytest.approx(51.1538461538, rel=1e-10)
    assert domains[c("Q")] == pytest.approx(43.8461538461, rel=1e-10)
    assert domains[c("AA")] == pytest.approx(51.1538461538, rel=1e-10)
    assert set(domains) == set(counts)
    statuses = {cube: CubeStatus(cube, 0, n, ()) for cube, n in counts.items()}
    assert existing_domains(statuses) == domains


def test_existing_domains_missing_parent() -> None:
    # "A" is absent: "AA" does not reach the root and gets domain 0.
    domains = existing_domains({c(""): 10, c("Q"): 4, c("AA"): 6})
    assert domains == {c(""): 14.0, c("Q"): 14.0, c("AA"): 0.0}
    assert existing_domains({}) == {}


def test_t22_weights_counts_rollup() -> None:
    domains = {
        c(""): 100.0,
        c("A"): 40 / (1 - 0.3),
        c("Q"): 30 / (1 - 0.3),
        c("AA"): 10 / (1 - 0.7),
    }
    nws = normalized_weights_from_domains(domains, 30)
    assert nws[c("")] == 0.3
    weights = weights_from_domains(domains, 30)
    assert weights == {
        c(""): -858993459,
        c("A"): 1401515643,
        c("Q"): MAX_WEIGHT,
        c("AA"): MAX_WEIGHT,
    }
    counts = estimate_cube_counts(domains, weights)
    assert counts == {c(""): 30, c("A"): 30, c("Q"): 29, c("AA"): 5}
    groups = rollup(counts, 30)
    assert groups == {c(""): c(""), c("Q"): c(""), c("A"): c("A"), c("AA"): c("A")}


def test_weights_small_domain_is_leaf_and_children_of_leaves_skipped() -> None:
    domains = {c(""): 20.0, c("A"): 500.0, c("AA"): 500.0}
    assert weights_from_domains(domains, 30) == {c(""): MAX_WEIGHT}
    # a cube whose parent has no weight is skipped
    assert weights_from_domains({c("A"): 100.0}, 30) == {}


def test_rollup_creates_missing_ancestors_and_keeps_big_groups() -> None:
    counts = {c("AA"): 3, c("AQ"): 4, c("w"): 100, c("wQg"): 1}
    groups = rollup(counts, 10)
    # AA and AQ merge into A (absent → created, 7 < 10) which merges into the root;
    # wQg climbs to wQ (absent, 1) then into w (101).
    assert groups == {c("AA"): c(""), c("AQ"): c(""), c("w"): c("w"), c("wQg"): c("w")}
    assert rollup({c(""): 1}, 10) == {c(""): c("")}
    assert rollup({}, 10) == {}
