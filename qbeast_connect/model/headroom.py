"""Headroom: how far a revision's linear space grows when an append leaves it.

The reference widens a superseded linear column to exactly the union of the old bounds and
the new data's. Steady appends of growing values (event times, sequence numbers) then leave
the space on every write, and each write opens a revision of its own. Here the grown side
gets headroom instead: the union's span is doubled in the direction of growth
(``new_max = union_min + 2 * (union_max - union_min)`` when the data grew upward, the
mirror image downward, and both when it grew both ways). A series that grows steadily then
opens O(log n) revisions for n appends, each one covering twice the span of the last.

Only columns whose data left the space get headroom, and only on the side they left it;
not a column whose data only found a new extreme of a steady range (an append covering most
of the old space and leaving it by less than a tenth of its span): that side grows to the
union, as in the reference.
Bounds the user gave in ``columnStats`` are taken as stated: a column with user statistics
in the write gets none. The result is an ordinary, wider ``LinearTransformation``, so the
revision JSON is the reference's. Bounds stop at the data type's limits.
"""

from __future__ import annotations

import math
import random

from qbeast_connect.model.hashing import to_float32
from qbeast_connect.model.transformation import (
    IdentityTransformation,
    LinearTransformation,
    QDataType,
    Transformation,
)
from qbeast_connect.model.transformation.datatypes import Number

__all__ = ["HEADROOM_FACTOR", "with_headroom"]

HEADROOM_FACTOR = 2
"""The grown revision spans this many times the union of the old space and the new data
(on the side the data grew)."""

_MS_PER_DAY = 86_400_000
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_FLOAT32_MAX = float(to_float32(3.4028234663852886e38))


def _bounds(t: Transformation) -> tuple[Number, Number] | None:
    """The old space's bounds on one column, or None when it has none to grow from."""
    if isinstance(t, LinearTransformation):
        return t.min_number, t.max_number
    if isinstance(t, IdentityTransformation) and t.identity_value is not None:
        return t.identity_value, t.identity_value
    return None


def _limits(dt: QDataType) -> tuple[Number, Number]:
    if dt is QDataType.INTEGER:
        return _INT32
    if dt is QDataType.DATE:
        # keep the bounds whole days, as dates are
        low, high = _INT64
        return -(-low // _MS_PER_DAY) * _MS_PER_DAY, (high // _MS_PER_DAY) * _MS_PER_DAY
    if dt in (QDataType.LONG, QDataType.TIMESTAMP):
        return _INT64
    if dt is QDataType.FLOAT:
        return -_FLOAT32_MAX, _FLOAT32_MAX
    return -1.7976931348623157e308, 1.7976931348623157e308


def _grow(low: Number, high: Number, up: bool, down: bool, dt: QDataType) -> tuple[Number, Number]:
    """``[low, high]`` extended by ``(HEADROOM_FACTOR - 1)`` spans on the grown sides."""
    extra_spans = HEADROOM_FACTOR - 1
    floor, ceiling = _limits(dt)
    if isinstance(low, int) and isinstance(high, int):
        span = high - low
        new_low = max(floor, low - extra_spans * span) if down else low
        new_high = min(ceiling, high + extra_spans * span) if up else high
        return new_low, new_high
    span_f = float(high) - float(low)
    new_low_f = float(low) - extra_spans * span_f if down else float(low)
    new_high_f = float(high) + extra_spans * span_f if up else float(high)
    if not math.isfinite(new_low_f) or new_low_f < floor:
        new_low_f = float(floor) if down else float(low)
    if not math.isfinite(new_high_f) or new_high_f > ceiling:
        new_high_f = float(ceiling) if up else float(high)
    return new_low_f, new_high_f


#: An append whose data spans at least this share of the old space on a column ...
STEADY_OVERLAP = 0.9
#: ... and leaves it by less than this share of its span on a side is a steady column that
#: found a new extreme, not a drifting one: that side grows to the union only.
STEADY_EXCESS = 0.1


def _steady(old: tuple[Number, Number], new: Transformation | None) -> tuple[bool, bool]:
    """``(up, down)``: whether each side of the column only found a new extreme.

    A column whose values keep one range (a user id, a price) leaves the space of the
    first write by a sliver whenever an append holds a value beyond the extremes seen so
    far. Doubling the span for that would leave most of the new space empty and every
    filter on the column reading more cubes; the append's data then covers most of the old
    space and pokes out by little. Drifting columns (times, sequence numbers, a sliding
    window) leave it by much or beside it, and keep their headroom.
    """
    if new is None:
        return False, False
    batch = _bounds(new)
    if batch is None:
        return False, False
    low, high = float(old[0]), float(old[1])
    new_low, new_high = float(batch[0]), float(batch[1])
    span = high - low
    if not (math.isfinite(span) and span > 0 and math.isfinite(new_high - new_low)):
        return False, False
    overlap = max(0.0, min(high, new_high) - max(low, new_low))
    if overlap < STEADY_OVERLAP * span:
        return False, False
    return new_high - high < STEADY_EXCESS * span, low - new_low < STEADY_EXCESS * span


def with_headroom(
    old: Transformation,
    merged: Transformation,
    rng: random.Random,
    new: Transformation | None = None,
) -> Transformation:
    """``merged`` (the union of ``old`` and an append's data) with headroom on the sides
    where it grew beyond ``old``; ``merged`` itself when it is not linear or did not grow.
    A side where ``new`` (the append's data) only found a new extreme of a steady range
    (:func:`_steady`) grows to the union only.

    Args:
        old: The latest revision's transformation of the column.
        merged: ``old.merge(new)``, the reference's widened transformation.
        rng: Source of the widened transformation's random null value.
        new: The append's data on the column (None: every grown side gets headroom).
    """
    if not isinstance(merged, LinearTransformation):
        return merged
    before = _bounds(old)
    if before is None:
        return merged
    dt = merged.ordered_data_type
    assert isinstance(old, LinearTransformation | IdentityTransformation)
    if old.ordered_data_type is not dt:
        return merged
    old_low, old_high = before
    steady_up, steady_down = _steady(before, new)
    up = merged.max_number > old_high and not steady_up
    down = merged.min_number < old_low and not steady_down
    if not (up or down):
        return merged
    low, high = _grow(merged.min_number, merged.max_number, up, down, dt)
    if (low, high) == (merged.min_number, merged.max_number):
        return merged
    return LinearTransformation.with_random_null(low, high, dt, rng)
