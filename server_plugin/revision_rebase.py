"""Rebase a qbeast commit over concurrent commits that only opened new revisions (or
added time partitions).

Two appends that both leave the current space both add revision ``N`` (``last + 1``). At
the Delta level the second one sees a concurrent ``metaData`` and would have to give up,
although nothing it wrote depends on the winner: its rows were assigned to cubes with its
own revision's transformations, and every revision is planned on its own at read time.
So the loser *rebases*: it takes the winner's configuration, renumbers its own new
revisions after the winner's (in the ``qbeast.revision.<id>`` key, in the revision JSON's
``revisionID`` and in the ``revision`` tag of every file it adds), and commits on top.

A concurrent metaData is rebased over only when it leaves the table as the transaction
read it apart from new revisions:

* same schema, partition columns, format, table id, name and description;
* every revision the transaction read is still there, unchanged (an overwrite restarts the
  revisions and so still conflicts);
* its partition timelines (time-partitioned tables) only gained partitions: the
  transaction's own new partitions are then added to the winner's timelines
  (:mod:`server_plugin.timeline_rebase`), while a dropped partition, an overwritten
  timeline or a changed implementation conflicts;
* any other configuration key it changed is one of the informational qbeast keys
  (:data:`INFORMATIONAL_KEYS`) or was set to the same value by the transaction itself.

The rebased revision keeps its own space: it covers the rows it was built for and the
revision the transaction read, but not necessarily the winner's revision. Readers never
need more (each revision prunes its own files), and the next append compares its data with
the latest revision and opens a wider one when the data leaves it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from qbeast_connect.exceptions import CommitConflictError, QbeastError
from qbeast_connect.model.revision import Revision
from server_plugin.delta.actions import Action, AddFile, FrozenMap, Metadata
from server_plugin.timeline_rebase import is_timeline_key, merged_timelines, timelines_only_grow

__all__ = [
    "INFORMATIONAL_KEYS",
    "LAST_REVISION_KEY",
    "metadata_commutes",
    "rebase_revisions",
]

LAST_REVISION_KEY = "qbeast.lastRevisionID"
_REVISION_PREFIX = "qbeast.revision."
#: Configuration keys that only describe the write options; no reader relies on them.
INFORMATIONAL_KEYS = frozenset({"columnsToIndex", "cubeSize", "tableFormat", "columnStats"})


def _is_revision_key(key: str) -> bool:
    return key == LAST_REVISION_KEY or key.startswith("qbeast.revision")


def _revisions(configuration: Mapping[str, str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for key, value in configuration.items():
        if key.startswith(_REVISION_PREFIX):
            try:
                out[int(key[len(_REVISION_PREFIX) :])] = value
            except ValueError:
                continue
    return out


def _last(configuration: Mapping[str, str]) -> int:
    try:
        return int(configuration.get(LAST_REVISION_KEY, "-1"))
    except ValueError:
        return -1


def _same_shape(a: Metadata, b: Metadata) -> bool:
    return (
        a.id == b.id
        and a.schema_string == b.schema_string
        and tuple(a.partition_columns) == tuple(b.partition_columns)
        and a.format_provider == b.format_provider
        and a.name == b.name
        and a.description == b.description
    )


def _other_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str | None]:
    """Keys other than revision and timeline keys whose value differs (None: removed)."""
    keys = {
        k for k in set(before) | set(after) if not _is_revision_key(k) and not is_timeline_key(k)
    }
    return {k: after.get(k) for k in keys if before.get(k) != after.get(k)}


def _only_adds_revisions(before: Metadata, after: Metadata) -> bool:
    """True when ``after`` keeps ``before``'s shape and revisions and adds newer ones."""
    if not _same_shape(before, after):
        return False
    old, new = _revisions(before.configuration), _revisions(after.configuration)
    if any(new.get(rid) != text for rid, text in old.items()):
        return False
    last_before, last_after = _last(before.configuration), _last(after.configuration)
    if last_after < last_before or (last_after != last_before and last_after not in new):
        return False
    return all(rid > last_before or rid == 0 for rid in set(new) - set(old))


def metadata_commutes(before: Metadata, ours: Metadata | None) -> bool:
    """Whether a transaction's metaData change commutes with concurrent appends.

    True when the transaction changes no metaData, or only adds qbeast revisions and
    partitions to the timelines (and rewrites informational keys): files other writers add
    meanwhile stay valid under it, and a concurrent metaData of the same kind can be
    rebased over with :func:`rebase_revisions`.
    """
    if ours is None:
        return True
    if not _only_adds_revisions(before, ours):
        return False
    if not timelines_only_grow(before.configuration, ours.configuration):
        return False
    changed = _other_changes(before.configuration, ours.configuration)
    return all(key in INFORMATIONAL_KEYS for key in changed)


def _renumbered(text: str, new_id: int) -> str:
    try:
        revision = Revision.from_json(text)
    except QbeastError as exc:
        raise CommitConflictError(
            f"cannot renumber revision JSON {text[:80]!r} ({exc}); re-read the table and "
            "retry the write"
        ) from exc
    return dataclasses.replace(revision, revision_id=new_id).to_json()


def rebase_revisions(
    actions: Sequence[Action], before: Metadata, winner: Metadata, who: str
) -> list[Action]:
    """Return ``actions`` rewritten to commit on top of a concurrent ``winner`` metaData.

    Args:
        actions: The transaction's actions, valid on top of ``before``.
        before: The table metadata the actions were made for.
        winner: The metadata a concurrent commit installed on top of ``before``.
        who: The winning commit, for messages ("version 7 (WRITE)").

    Returns:
        The actions with the winner's configuration merged into the transaction's
        metaData (if it has one): the transaction's new revisions renumbered after the
        winner's, in the configuration and in the ``revision`` tag of every added file,
        and its new time partitions added to the winner's timelines.

    Raises:
        CommitConflictError: The winner changed more than the revisions and timelines
            (schema, a table property, the revisions the transaction read or a partition
            of the timeline, as an overwrite or a drop_partition does), or the
            transaction's own metaData change does not commute with it.
    """

    def conflict(reason: str) -> CommitConflictError:
        return CommitConflictError(
            f"concurrent commit {who} conflicts with this transaction: {reason} "
            "(MetadataChanged); re-read the table and retry the operation"
        )

    if not _only_adds_revisions(before, winner):
        raise conflict(
            "it changed the table schema or replaced the revisions this transaction read"
        )
    if not timelines_only_grow(before.configuration, winner.configuration):
        raise conflict(
            "it removed time partitions from the table's timeline or replaced it "
            "(drop_partition, an overwrite or a new timeline implementation)"
        )
    ours = next((a for a in actions if isinstance(a, Metadata)), None)
    ours_changed = {} if ours is None else _other_changes(before.configuration, ours.configuration)
    for key, value in _other_changes(before.configuration, winner.configuration).items():
        if key not in INFORMATIONAL_KEYS and (
            key not in ours_changed or ours_changed[key] != value
        ):
            raise conflict(f"it changed table property {key!r}")
    winner_revisions = _revisions(winner.configuration)
    if ours is None:
        missing = sorted(
            {
                str(a.tags["revision"])
                for a in actions
                if isinstance(a, AddFile) and a.tags and a.tags.get("revision") is not None
            }
            - {str(rid) for rid in winner_revisions}
            - {"0"}
        )
        if missing:
            raise conflict(f"revisions {missing} named by the added files are gone")
        return list(actions)
    if not metadata_commutes(before, ours):
        raise conflict("this transaction also changes the table metadata")

    old = _revisions(before.configuration)
    new_ours = {rid: text for rid, text in _revisions(ours.configuration).items() if rid not in old}
    mapping: dict[int, int] = {}
    next_id = max(_last(winner.configuration), *winner_revisions, 0) + 1
    for rid in sorted(new_ours):
        if rid == 0:
            continue  # a staging revision the winner may have added too: keep the winner's
        mapping[rid] = next_id
        next_id += 1
    config = dict(winner.configuration)
    for key, value in ours_changed.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    config = merged_timelines(before.configuration, config, ours.configuration)
    if 0 in new_ours and 0 not in winner_revisions:
        config[f"{_REVISION_PREFIX}0"] = new_ours[0]
    for rid, new_id in mapping.items():
        config[f"{_REVISION_PREFIX}{new_id}"] = _renumbered(new_ours[rid], new_id)
    our_last = _last(ours.configuration)
    config[LAST_REVISION_KEY] = str(mapping.get(our_last, _last(winner.configuration)))
    rebased_meta = dataclasses.replace(winner, configuration=FrozenMap(config))

    tags_map = {str(old_id): str(new_id) for old_id, new_id in mapping.items()}
    out: list[Action] = []
    for action in actions:
        if isinstance(action, Metadata):
            out.append(rebased_meta)
        elif isinstance(action, AddFile) and action.tags:
            old_tag = action.tags.get("revision")
            if old_tag is None or old_tag not in tags_map:
                out.append(action)
                continue
            tags = dict(action.tags)
            tags["revision"] = tags_map[old_tag]
            out.append(dataclasses.replace(action, tags=FrozenMap(tags)))
        else:
            out.append(action)
    return out
