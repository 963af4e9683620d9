"""Row weights: the int32 domain and its mapping to fractions of [0, 1] (spec §3.1).

A weight is a signed 32-bit integer. ``MIN_WEIGHT`` maps to fraction 0.0 and ``MAX_WEIGHT``
to 1.0. Conversions follow the Scala reference bit for bit: fractions are computed in IEEE
double arithmetic and converted back with Java's saturating ``double.toInt`` (truncation
toward zero, NaN gives 0).
"""

from __future__ import annotations

import math

__all__ = [
    "MAX_WEIGHT",
    "MIN_WEIGHT",
    "fraction_from_weight",
    "java_double_to_int",
    "java_double_to_long",
    "weight_from_fraction",
    "weight_from_normalized",
]

MIN_WEIGHT: int = -(2**31)
"""Smallest weight (``Int.MinValue``), fraction 0.0."""

MAX_WEIGHT: int = 2**31 - 1
"""Largest weight (``Int.MaxValue``), fraction 1.0; the max weight of every leaf cube."""

_WEIGHT_RANGE = 4294967295.0  # 2**32 - 1, as a double
_WEIGHT_OFFSET = -2147483648.0  # Int.MinValue, as a double

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _java_narrow(x: float, low: int, high: int) -> int:
    """Java's narrowing of a double to an integer type of range ``[low, high]``: truncation
    toward zero, saturation at the bounds, NaN gives 0.

    Python compares a float with an int exactly, and no double lies strictly between
    ``2**63 - 1`` and ``2**63``, so comparing with the int bounds is Java's rule."""
    if math.isnan(x):
        return 0
    if x >= high:
        return high
    if x <= low:
        return low
    return int(x)


def java_double_to_int(x: float) -> int:
    """Convert a double to int32 like Java's ``(int) x`` / Scala's ``x.toInt``.

    Args:
        x: Any double.

    Returns:
        ``x`` truncated toward zero and saturated to ``[-2**31, 2**31 - 1]``; NaN gives 0.
    """
    return _java_narrow(x, MIN_WEIGHT, MAX_WEIGHT)


def java_double_to_long(x: float) -> int:
    """Convert a double to int64 like Java's ``(long) x`` (truncation, saturation, NaN → 0).

    Args:
        x: Any double.

    Returns:
        ``x`` truncated toward zero and saturated to the int64 range; NaN gives 0.
    """
    return _java_narrow(x, _LONG_MIN, _LONG_MAX)


def weight_from_fraction(f: float) -> int:
    """Map a fraction of the weight domain to a weight (Scala ``Weight(fraction)``).

    Computes ``toInt(f * 4294967295.0 + (-2147483648.0))`` in double arithmetic. Values
    outside [0, 1] saturate to the int32 range.

    Args:
        f: A fraction, normally in [0, 1].

    Returns:
        The int32 weight, e.g. ``weight_from_fraction(0.1) == -1717986918``.
    """
    return java_double_to_int(f * _WEIGHT_RANGE + _WEIGHT_OFFSET)


def fraction_from_weight(w: int) -> float:
    """Map a weight to its fraction of the domain: ``(w - MIN_WEIGHT) / (2**32 - 1)``.

    Args:
        w: An int32 weight.

    Returns:
        A double in [0, 1]; ``MIN_WEIGHT`` gives 0.0 and ``MAX_WEIGHT`` gives 1.0.
    """
    return (float(w) - _WEIGHT_OFFSET) / _WEIGHT_RANGE


def weight_from_normalized(nw: float) -> int:
    """Convert a normalized weight back to a weight (``nw < 1.0 ? weight(nw) : MAX_WEIGHT``).

    Normalized weights of inner cubes are fractions (< 1); leaves have
    ``desiredCubeSize / elementCount``, which may be 1.0 or more and maps to ``MAX_WEIGHT``.

    Args:
        nw: A normalized weight.

    Returns:
        The int32 weight.
    """
    if nw < 1.0:
        return weight_from_fraction(nw)
    return MAX_WEIGHT
