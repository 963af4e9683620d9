"""The JSON encoding shared by the plans the client ships to the server plugin's writers.

A plan (``write_plan.WritePlan``, ``timeline.plan.TimelineWritePlan``) travels as one
compact JSON option; whatever part of it cannot be read back is one ``InvalidOptionError``
that names the plan. Pure standard library.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError

__all__ = ["decode_row_positions", "encode_row_positions", "plan_to_json", "reading_plan"]


def plan_to_json(data: Mapping[str, Any]) -> str:
    """Compact JSON of a plan's fields (a plan never holds NaN or infinity)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False)


@contextmanager
def reading_plan(what: str) -> Iterator[None]:
    """Turn any failure to read a plan's JSON into ``InvalidOptionError("malformed <what>")``.

    Errors of the plan's own checks (``InvalidOptionError`` is a ``ValueError``) are wrapped
    too, so every unreadable plan fails the same way.
    """
    try:
        yield
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidOptionError(f"malformed {what}: {exc}") from exc


def encode_row_positions(rows: Iterable[int]) -> str:
    """Row positions of one file as a plan carries them: sorted and distinct, each as its
    distance from the previous one (int64, little-endian), zlib-compressed, base64."""
    values = sorted(set(int(r) for r in rows))
    deltas = [b - a for a, b in zip([0, *values], values, strict=False)]
    raw = struct.pack(f"<{len(deltas)}q", *deltas)
    return base64.b64encode(zlib.compress(raw)).decode("ascii")


def decode_row_positions(text: str) -> list[int]:
    """The inverse of :func:`encode_row_positions`.

    Raises:
        InvalidOptionError: the text does not decode to distinct positions >= 0.
    """
    try:
        raw = zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True))
    except (ValueError, binascii.Error, zlib.error) as exc:
        raise InvalidOptionError(f"malformed row positions: {exc}") from None
    if len(raw) % 8:
        raise InvalidOptionError("malformed row positions: not whole int64 values")
    out: list[int] = []
    position = 0
    for i, delta in enumerate(struct.unpack(f"<{len(raw) // 8}q", raw)):
        if delta < 0 or (i and delta == 0):
            raise InvalidOptionError("malformed row positions: not distinct and ascending")
        position += delta
        out.append(position)
    return out
