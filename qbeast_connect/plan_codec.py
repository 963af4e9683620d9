"""The JSON encoding shared by the plans the client ships to the server plugin's writers.

A plan (``write_plan.WritePlan``, ``timeline.plan.TimelineWritePlan``) travels as one
compact JSON option; whatever part of it cannot be read back is one ``InvalidOptionError``
that names the plan. Pure standard library.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError

__all__ = ["plan_to_json", "reading_plan"]


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
