"""A read-only view of a qbeast table at one Delta version: revisions, files, cube statuses.

Built from the Delta ``metaData.configuration`` map and the live add actions
(:meth:`QbeastSnapshot.from_delta`); every revision is parsed and checked on construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model._frozen import FrozenDict
from qbeast_connect.model._json import int_text
from qbeast_connect.model.block import IndexFile, index_file_from_add
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.weight import MAX_WEIGHT, fraction_from_weight

__all__ = [
    "LAST_REVISION_ID_KEY",
    "REVISION_KEY_PREFIX",
    "CubeStatus",
    "QbeastSnapshot",
    "revision_key",
]

LAST_REVISION_ID_KEY = "qbeast.lastRevisionID"
"""Configuration key of the latest revision id."""

REVISION_KEY_PREFIX = "qbeast.revision"
"""Every configuration key starting with this holds a revision (``qbeast.revision.<id>``)."""


def revision_key(revision_id: int) -> str:
    """Return the configuration key of a revision: ``qbeast.revision.<id>``."""
    return f"{REVISION_KEY_PREFIX}.{revision_id}"


@dataclass(frozen=True, slots=True)
class CubeStatus:
    """A cube of a revision, aggregated over its blocks.

    Attributes:
        cube_id: The cube.
        max_weight: Minimum of the blocks' ``maxWeight`` (the ``M(c)`` of spec §5.9).
        element_count: Sum of the blocks' element counts.
        files: Paths of the files holding blocks of the cube, in first-seen order.
    """

    cube_id: CubeId
    max_weight: int
    element_count: int
    files: tuple[str, ...]

    @property
    def normalized_max_weight(self) -> float:
        """``fraction(max_weight)``: 1.0 for leaves (``MAX_WEIGHT``)."""
        return fraction_from_weight(self.max_weight)

    @property
    def is_leaf_weight(self) -> bool:
        """Whether the max weight is ``MAX_WEIGHT`` (rows never descend below this cube)."""
        return self.max_weight == MAX_WEIGHT


def _parse_revisions(configuration: Mapping[str, str]) -> dict[int, Revision]:
    revisions: dict[int, Revision] = {}
    for key, text in configuration.items():
        if not key.startswith(REVISION_KEY_PREFIX):
            continue
        id_text = key.rsplit(".", 1)[-1]
        try:
            key_id = int(id_text)
        except ValueError:
            raise MetadataFormatError(
                f"configuration key {key!r} does not end with a revision id"
            ) from None
        if not isinstance(text, str):
            raise MetadataFormatError(f"configuration value of {key!r} must be a JSON string")
        try:
            revision = Revision.from_json(text)
        except MetadataFormatError as err:
            raise MetadataFormatError(f"configuration key {key!r}: {err.message}") from None
        if revision.revision_id != key_id:
            raise MetadataFormatError(
                f"configuration key {key!r} holds revisionID {revision.revision_id}; the key id "
                "and the JSON revisionID must be equal"
            )
        if key_id in revisions:
            raise MetadataFormatError(f"revision {key_id} is stored under two keys")
        revisions[key_id] = revision
    return revisions


@dataclass(frozen=True, slots=True, eq=False)
class QbeastSnapshot:
    """Revisions and index files of a qbeast table at one Delta version.

    Attributes:
        configuration: The Delta ``metaData.configuration`` (read-only).
        files: Every live data file with its blocks.
        version: The Delta version.
    """

    configuration: Mapping[str, str]
    files: tuple[IndexFile, ...]
    version: int
    _revisions: Mapping[int, Revision] = field(init=False, repr=False)
    _last_revision_id: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Freeze the inputs, parse the revisions and check the latest one exists."""
        object.__setattr__(self, "configuration", FrozenDict(self.configuration))
        object.__setattr__(self, "files", tuple(self.files))
        revisions = _parse_revisions(self.configuration)
        object.__setattr__(self, "_revisions", FrozenDict(sorted(revisions.items())))
        text = self.configuration.get(LAST_REVISION_ID_KEY)
        if text is None:
            last = -1
        else:
            last = int_text(text, f"{LAST_REVISION_ID_KEY} is {text!r}")
            if last not in revisions:
                raise MetadataFormatError(
                    f"{LAST_REVISION_ID_KEY} is {last} but there is no key {revision_key(last)!r}"
                )
        object.__setattr__(self, "_last_revision_id", last)

    @classmethod
    def from_delta(
        cls,
        configuration: Mapping[str, str],
        add_actions: Iterable[Mapping[str, Any]],
        version: int,
    ) -> QbeastSnapshot:
        """Build the snapshot from a Delta configuration map and the live add actions.

        Args:
            configuration: ``metaData.configuration``.
            add_actions: The add-action dicts (the content of ``{"add": …}``).
            version: The Delta version.

        Raises:
            MetadataFormatError: A revision or a blocks tag cannot be decoded.
        """
        return cls(configuration, tuple(index_file_from_add(a) for a in add_actions), version)

    # ---- revisions ----------------------------------------------------------------------------

    @property
    def is_qbeast(self) -> bool:
        """Whether the table has qbeast metadata (``qbeast.lastRevisionID`` is set)."""
        return self._last_revision_id >= 0

    @property
    def last_revision_id(self) -> int:
        """``qbeast.lastRevisionID``, or -1 when missing."""
        return self._last_revision_id

    @property
    def revisions(self) -> Mapping[int, Revision]:
        """Every revision by id, in id order."""
        return self._revisions

    @property
    def latest_revision(self) -> Revision | None:
        """The latest revision, or None for a table without qbeast metadata."""
        return self._revisions.get(self._last_revision_id)

    def revision(self, revision_id: int) -> Revision:
        """Return a revision by id.

        Raises:
            InvalidOptionError: No such revision.
        """
        found = self._revisions.get(revision_id)
        if found is None:
            known = ", ".join(str(i) for i in self._revisions) or "none"
            raise InvalidOptionError(
                f"revision {revision_id} does not exist; the table has revisions: {known}"
            )
        return found

    def table_properties(self) -> dict[str, str]:
        """The configuration without the ``qbeast.revision*`` keys (what users see)."""
        return {
            k: v for k, v in self.configuration.items() if not k.startswith(REVISION_KEY_PREFIX)
        }

    # ---- files ----------------------------------------------------------------------------------

    def files_of(self, revision_id: int) -> tuple[IndexFile, ...]:
        """Files of a revision (``files_of(0)`` is the staging files)."""
        return tuple(f for f in self.files if f.revision_id == revision_id)

    def staging_files(self) -> tuple[IndexFile, ...]:
        """Unindexed files: no tags, no ``revision`` tag, or ``revision == "0"``."""
        return self.files_of(0)

    def _dimensions_of(self, revision_id: int) -> int:
        revision = self._revisions.get(revision_id)
        if revision is not None:
            return revision.dimension_count
        if revision_id == 0 and self.latest_revision is not None:
            return self.latest_revision.dimension_count
        known = ", ".join(str(i) for i in self._revisions) or "none"
        raise InvalidOptionError(
            f"revision {revision_id} does not exist; the table has revisions: {known}"
        )

    def cube_statuses(self, revision_id: int) -> dict[CubeId, CubeStatus]:
        """Aggregate the blocks of a revision per cube, in cube order (spec §2.4).

        ``max_weight`` is the minimum of the blocks' max weights and ``element_count`` their
        sum. Staging files count as one root block with ``MAX_WEIGHT`` and 0 elements.

        Raises:
            InvalidOptionError: No such revision.
            MetadataFormatError: A block's cube id is not valid.
        """
        d = self._dimensions_of(revision_id)
        max_weights: dict[str, int] = {}
        counts: dict[str, int] = {}
        files: dict[str, dict[str, None]] = {}
        for f in self.files:
            if f.revision_id != revision_id:
                continue
            for b in f.blocks:
                key = b.cube_id
                if key in max_weights:
                    max_weights[key] = min(max_weights[key], b.max_weight)
                    counts[key] += b.element_count
                else:
                    max_weights[key] = b.max_weight
                    counts[key] = b.element_count
                    files[key] = {}
                files[key][f.path] = None
        by_cube: dict[CubeId, CubeStatus] = {}
        for key in max_weights:
            cube = CubeId.from_string(key, d)
            previous = by_cube.get(cube)  # a non-canonical string of the same cube
            if previous is None:
                by_cube[cube] = CubeStatus(cube, max_weights[key], counts[key], tuple(files[key]))
            else:
                by_cube[cube] = CubeStatus(
                    cube,
                    min(previous.max_weight, max_weights[key]),
                    previous.element_count + counts[key],
                    tuple(dict.fromkeys(previous.files + tuple(files[key]))),
                )
        return {cube: by_cube[cube] for cube in sorted(by_cube, key=CubeId.sort_key)}
