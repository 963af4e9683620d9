"""The revision several revisions merge into (qbeast_connect.model.revision_merge)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.column_spec import parse_columns_to_index
from qbeast_connect.model.revision import Revision, plan_revision, staging_revision
from qbeast_connect.model.revision_merge import merged_revision, plan_into, revisions_to_merge
from qbeast_connect.model.transformation import ColumnStats, LinearTransformation

SPECS = parse_columns_to_index("t,name:hashing")
TYPES = {"t": "long", "name": "string"}


def _revisions() -> list[Revision]:
    """Revisions 1..3 of a table whose ``t`` grew upward, then downward."""
    rng = random.Random(3)
    first = plan_revision(None, SPECS, TYPES, {"t": ColumnStats(0, 100)}, {}, 50, "/t", 1, rng)
    out = [first.revision]
    for low, high in ((100, 300), (-500, 0)):
        stats = {"t": ColumnStats(low, high)}
        plan = plan_revision(out[-1], SPECS, TYPES, stats, {}, None, "/t", 2, rng)
        assert plan.is_new
        out.append(plan.revision)
    return out


def _bounds(revision: Revision) -> tuple[object, object]:
    t = revision.transformations[0]
    assert isinstance(t, LinearTransformation)
    return t.min_number, t.max_number


def test_merged_revision_covers_every_space() -> None:
    revs = _revisions()
    assert [_bounds(r) for r in revs] == [(0, 100), (0, 600), (-1600, 600)]
    merged = merged_revision(revs[:2], revs[1], "/t", 9, random.Random(1))
    assert (merged.revision_id, merged.timestamp, merged.desired_cube_size) == (3, 9, 50)
    assert _bounds(merged) == (0, 600)
    # the latest revision's space is kept even when its rows are not merged
    merged = merged_revision(revs[:2], revs[2], "/t", 9, random.Random(1))
    assert (merged.revision_id, _bounds(merged)) == (4, (-1600, 600))
    assert merged.column_transformers == revs[2].column_transformers
    assert merged.transformations[1] == revs[0].transformations[1]  # the hash is shared
    assert _bounds(merged_revision([revs[0], revs[2]], revs[2], "/t", 9, random.Random(1))) == (
        -1600,
        600,
    )


def test_revisions_of_other_columns_do_not_merge() -> None:
    revs = _revisions()
    other = plan_revision(
        None,
        parse_columns_to_index("t:hashing,name"),
        TYPES,
        {"t": ColumnStats(0, 9)},
        {},
        50,
        "/t",
        1,
        random.Random(1),
    ).revision
    with pytest.raises(InvalidOptionError, match="cannot be merged"):
        merged_revision([revs[0], other], revs[2], "/t", 9, random.Random(1))
    with pytest.raises(InvalidOptionError, match="at least one"):
        merged_revision([], revs[2], "/t", 9, random.Random(1))


def test_plan_into_indexes_into_the_target() -> None:
    revs = _revisions()
    target = merged_revision(revs, revs[2], "/t", 9, random.Random(1))
    inside = plan_revision(
        target, SPECS, TYPES, {"t": ColumnStats(-5, 5)}, {}, None, "/t", 10, random.Random(1)
    )
    assert plan_into(inside, target).revision is target and plan_into(inside, target).is_new
    beyond = plan_revision(
        target, SPECS, TYPES, {"t": ColumnStats(0, 900)}, {}, None, "/t", 10, random.Random(1)
    )
    widened = plan_into(beyond, target).revision
    assert widened.revision_id == target.revision_id and _bounds(widened)[1] == 900 + 2500


def _snapshot(file_revisions: list[int]) -> Any:
    revs = {0: staging_revision("/t", 50, ("t", "name"), 0)}
    revs.update({r.revision_id: r for r in _revisions()})
    files = [SimpleNamespace(revision_id=r) for r in file_revisions]
    return SimpleNamespace(files=files, revisions=revs)


def test_revisions_to_merge() -> None:
    snap = _snapshot([0, 1, 1, 3])
    assert revisions_to_merge(snap, True) == [1, 3]
    assert revisions_to_merge(snap, [3, 1, 2]) == [1, 3]  # revision 2 holds no files
    assert revisions_to_merge(snap, [1]) == []
    assert revisions_to_merge(_snapshot([0, 2, 2]), True) == []
    with pytest.raises(InvalidOptionError, match="does not have"):
        revisions_to_merge(snap, [1, 7])
    with pytest.raises(InvalidOptionError, match="staging"):
        revisions_to_merge(snap, [0, 1])
    for bad in ("1,2", [1, True], 2):
        with pytest.raises(InvalidOptionError, match="mergeRevisions must be"):
            revisions_to_merge(snap, bad)
