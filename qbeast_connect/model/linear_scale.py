"""Where a linear dimension puts every double, finite or not (NaN, ±infinity, huge spans).

A :class:`~qbeast_connect.model.transformation.LinearTransformation` stores finite bounds
``min < max`` (the revision JSON cannot hold NaN or infinities). A value ``x`` maps to:

* ``(x - min) * (1.0 / (max - min))``, exactly the reference's formula, whenever the span
  ``max - min`` and its inverse are normal finite doubles (every span between about
  ``2^-1022`` and ``2^1022``, which covers all ordinary tables);
* otherwise the same line computed on scaled operands,
  ``(x * f - min * f) * (1.0 / (max * f - min * f))`` with a power of two ``f``:
  ``f = 2^-8`` when the span overflows or its inverse is subnormal (e.g. ``min = -1.7e308``,
  ``max = 1.7e308``), ``f = 2^1000`` when the span is so small that its inverse overflows
  (bounds that are subnormal numbers). The scaled form never overflows for values inside
  ``[min, max]`` and keeps the order of values;
* ``-infinity`` → ``0.0``; ``+infinity`` → ``1.0``; ``NaN`` → ``1.0``. Spark orders
  ``-inf < finite < +inf < NaN``; the finite values of a revision lie in ``[min, max]``, so their
  coordinates lie in ``[0, 1]`` and the whole mapping is monotone in Spark's order.
  Non-finite values therefore never widen a revision, and the statistics job leaves them out
  of ``min``/``max``;
* ``-0.0`` maps like ``0.0`` (``+ 0.0`` turns a ``-0.0`` coordinate into ``0.0``).

:func:`scaled_form` gives the ``(f, min * f, scale)`` triple; the scalar
``LinearTransformation.transform`` and the vectorised ``index.normalize`` kernel both use it,
so they agree bit for bit.
"""

from __future__ import annotations

import math

__all__ = [
    "NAN_COORDINATE",
    "NEGATIVE_INFINITY_COORDINATE",
    "POSITIVE_INFINITY_COORDINATE",
    "linear_coordinate",
    "random_point",
    "scaled_form",
]

NAN_COORDINATE = 1.0
"""Coordinate of NaN (Spark orders NaN above every other double)."""

POSITIVE_INFINITY_COORDINATE = 1.0
"""Coordinate of ``+infinity``."""

NEGATIVE_INFINITY_COORDINATE = 0.0
"""Coordinate of ``-infinity``."""

_MIN_NORMAL = 2.0**-1022
_SHRINK = 2.0**-8
_GROW = 2.0**1000


def scaled_form(low: float, high: float) -> tuple[float, float, float]:
    """``(factor, offset, scale)`` with ``coordinate = (x * factor - offset) * scale``.

    ``factor`` is 1.0 (the reference's formula, bit for bit) unless the span ``high - low``
    or its inverse overflows or is subnormal; see the module docstring.

    Args:
        low: The finite lower bound.
        high: The finite upper bound, ``> low``.
    """
    span = high - low
    if math.isfinite(span):
        scale = 1.0 / span
        if math.isfinite(scale) and scale >= _MIN_NORMAL:
            return 1.0, low, scale
        factor = _GROW if math.isinf(scale) else _SHRINK
    else:
        factor = _SHRINK
    offset = low * factor
    return factor, offset, 1.0 / (high * factor - offset)


def linear_coordinate(x: float, factor: float, offset: float, scale: float) -> float:
    """The coordinate of the double ``x`` under a :func:`scaled_form` triple.

    Non-finite values follow the fixed rule (NaN and ``+inf`` → 1.0, ``-inf`` → 0.0); finite
    values outside the bounds give coordinates outside [0, 1] (the read side clips them).
    """
    if math.isnan(x):
        return NAN_COORDINATE
    if math.isinf(x):
        return POSITIVE_INFINITY_COORDINATE if x > 0 else NEGATIVE_INFINITY_COORDINATE
    return (x * factor - offset) * scale + 0.0


def random_point(low: float, high: float, r: float) -> float:
    """``low + r * (high - low)``, computed on halves when the span overflows a double."""
    span = high - low
    if math.isfinite(span):
        value = low + r * span
    else:
        value = 2.0 * (low * 0.5 + r * (high * 0.5 - low * 0.5))
    return min(max(value, low), high)
