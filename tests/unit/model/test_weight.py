"""Weights ↔ fractions (spec §3.1; vectors T8, T9)."""

from __future__ import annotations

import math

import pytest

from qbeast_connect.model.weight import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    fraction_from_weight,
    java_double_to_int,
    weight_from_fraction,
    weight_from_normalized,
)


def test_constants() -> None:
    assert MIN_WEIGHT == -2147483648
    assert MAX_WEIGHT == 2147483647


T8 = [
    (0.0, -2147483648),
    (0.01, -2104533975),
    (0.1, -1717986918),
    (0.125, -1610612736),
    (0.0625, -1879048192),
    (0.25, -1073741824),
    (0.5, 0),
    (0.75, 1073741823),
    (1.0, 2147483647),
]


@pytest.mark.parametrize(("fraction", "weight"), T8, ids=[f"T8-{f}" for f, _ in T8])
def test_weight_from_fraction_t8(fraction: float, weight: int) -> None:
    assert weight_from_fraction(fraction) == weight


T9 = [
    (0, 0.5000000001164153),
    (-1610612736, 0.12500000002910383),
    (546816660, 0.6273156750545175),
    (MIN_WEIGHT, 0.0),
    (MAX_WEIGHT, 1.0),
]


@pytest.mark.parametrize(("weight", "fraction"), T9, ids=[f"T9-{w}" for w, _ in T9])
def test_fraction_from_weight_t9(weight: int, fraction: float) -> None:
    assert fraction_from_weight(weight) == fraction


@pytest.mark.parametrize(
    ("fraction", "weight"),
    [
        (-0.5, MIN_WEIGHT),
        (1.5, MAX_WEIGHT),
        (math.inf, MAX_WEIGHT),
        (-math.inf, MIN_WEIGHT),
        (math.nan, 0),
    ],
    ids=["below-0", "above-1", "inf", "-inf", "nan"],
)
def test_weight_from_fraction_saturates_like_java(fraction: float, weight: int) -> None:
    assert weight_from_fraction(fraction) == weight


@pytest.mark.parametrize(
    ("x", "expected"),
    [(1.9, 1), (-1.9, -1), (2147483647.5, MAX_WEIGHT), (-2147483648.9, MIN_WEIGHT), (-0.0, 0)],
    ids=["trunc-pos", "trunc-neg", "sat-high", "sat-low", "neg-zero"],
)
def test_java_double_to_int(x: float, expected: int) -> None:
    assert java_double_to_int(x) == expected


@pytest.mark.parametrize(
    ("nw", "weight"),
    [
        (0.125, -1610612736),
        (0.9999, weight_from_fraction(0.9999)),
        (1.0, MAX_WEIGHT),
        (3.0, MAX_WEIGHT),
    ],
    ids=["inner", "almost-1", "exactly-1", "leaf"],
)
def test_weight_from_normalized(nw: float, weight: int) -> None:
    assert weight_from_normalized(nw) == weight


def test_round_trip_is_stable_for_every_sampled_weight() -> None:
    for w in range(MIN_WEIGHT, MAX_WEIGHT, 9_999_991):
        assert weight_from_fraction(fraction_from_weight(w)) in (w, w - 1, w + 1)
