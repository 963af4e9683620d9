"""Merging revisions: one new revision whose space covers several old ones.

Appends that leave a table's space open new revisions, each with a tree of its own (with
headroom they are few, but not one). ``QbeastTable.optimize(mergeRevisions=...)`` re-indexes
the rows of several revisions into one new revision: :func:`revisions_to_merge` picks
them, :func:`merged_revision` builds the revision (the union of their spaces, the latest
revision's columns, transformers and cube size, id ``latest + 1``), and
:func:`plan_into` makes a write's revision plan index into exactly that revision.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.revision import Revision, RevisionPlan
from qbeast_connect.model.snapshot import QbeastSnapshot

__all__ = ["merged_revision", "plan_into", "revisions_to_merge"]


def revisions_to_merge(snapshot: QbeastSnapshot, request: object) -> list[int]:
    """The indexed revisions a ``mergeRevisions`` argument names, ascending.

    ``True`` names every indexed revision that holds files; a list of ids names those
    (each must be an indexed revision of the table). Fewer than two revisions holding
    files leave nothing to merge: the result is then empty.

    Raises:
        InvalidOptionError: ``request`` is neither True nor a list of revision ids, or
            names the staging revision or a revision the table does not have.
    """
    with_files = {f.revision_id for f in snapshot.files if f.revision_id > 0}
    if request is True:
        chosen = with_files
    elif isinstance(request, list | tuple | set | frozenset) and all(
        isinstance(r, int) and not isinstance(r, bool) for r in request
    ):
        chosen = set(request)
        unknown = sorted(r for r in chosen if r not in snapshot.revisions)
        if unknown:
            raise InvalidOptionError(
                f"mergeRevisions names revisions {unknown} the table does not have; its "
                f"revisions are {sorted(snapshot.revisions)}"
            )
        staging = sorted(r for r in chosen if snapshot.revisions[r].is_staging)
        if staging:
            raise InvalidOptionError(
                "mergeRevisions cannot merge the staging revision 0; index it first with "
                "optimize(0)"
            )
        chosen &= with_files
    else:
        raise InvalidOptionError(
            "mergeRevisions must be True (every revision holding files) or a list of "
            f"revision ids such as [1, 2, 3], got {request!r}"
        )
    return sorted(chosen) if len(chosen) >= 2 else []


def merged_revision(
    revisions: Sequence[Revision],
    latest: Revision,
    table_id: str,
    timestamp_ms: int,
    rng: random.Random,
) -> Revision:
    """The revision ``latest + 1`` whose space is the union of ``revisions``' spaces and
    ``latest``'s.

    Columns, transformers and cube size are ``latest``'s. Each column's transformation is
    the first revision's, merged with every later one that supersedes it (spec §4.7), so
    the result holds every row of every revision (linear spaces are the union of their
    bounds, headroom included). ``latest``'s space is merged in even when its rows are not:
    the result becomes the latest revision, and later appends that fit ``latest`` must fit
    it too (else merging older revisions would make the next append open one more).

    Raises:
        InvalidOptionError: no revision is given, or the revisions index different columns
            or with different transformers (they cannot share one tree).
    """
    if not revisions:
        raise InvalidOptionError("merging revisions needs at least one revision")
    specs = latest.columns_to_index
    for revision in (*revisions, latest):
        if revision.columns_to_index != specs or not revision.transformations:
            raise InvalidOptionError(
                f"revision {revision.revision_id} indexes ({revision.columns_to_index}) and "
                f"the latest revision ({specs}): revisions with different column "
                "transformers cannot be merged; merge only revisions of the same columns"
            )
    merged = list(revisions[0].transformations)
    for revision in (*revisions[1:], latest):
        for i, other in enumerate(revision.transformations):
            if merged[i].is_superseded_by(other):
                merged[i] = merged[i].merge(other, rng)
    return Revision(
        latest.revision_id + 1,
        timestamp_ms,
        table_id,
        latest.desired_cube_size,
        latest.column_transformers,
        tuple(merged),
    )


def plan_into(plan: RevisionPlan, target: Revision) -> RevisionPlan:
    """A write's plan, planned against ``target`` as the latest revision, made to index
    into ``target`` itself as a new revision: ``target`` when the rows fit its space, else
    the widened revision ``plan_revision`` made, renumbered to ``target``'s id."""
    if not plan.is_new:
        return RevisionPlan(target, True, None)
    return RevisionPlan(replace(plan.revision, revision_id=target.revision_id), True, None)
