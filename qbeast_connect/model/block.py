"""Blocks and index files: the ``tags`` of a Delta AddFile written by qbeast (spec §1.4, §1.5).

A data file holds rows of one or more cubes; each cube's part is a :class:`Block`. The
blocks are stored as a JSON array *string* in ``add.tags["blocks"]``, next to
``add.tags["revision"]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model import _json
from qbeast_connect.model.weight import MAX_WEIGHT, MIN_WEIGHT

__all__ = [
    "MAX_ROW_WEIGHT_TAG",
    "Block",
    "IndexFile",
    "decode_blocks",
    "encode_blocks",
    "index_file_from_add",
    "tags_for",
]

_INT64_MAX = 2**63 - 1

#: Add-action tag with the largest row weight of the file (decimal text), written by this
#: project's writer next to qbeast's ``revision`` and ``blocks`` tags. Other readers ignore
#: tags they do not know; a read uses it to skip the weight filter on files whose rows all
#: lie inside the sample it reads.
MAX_ROW_WEIGHT_TAG = "qbeastConnect.maxRowWeight"


@dataclass(frozen=True, slots=True)
class Block:
    """The rows of one cube inside one data file.

    Attributes:
        cube_id: Canonical cube id string (``""`` for the root).
        min_weight: Minimum row weight among the block's rows (int32).
        max_weight: The cube's max weight when written (int32; ``MAX_WEIGHT`` for leaves).
        element_count: Number of rows of the cube in the file.
    """

    cube_id: str
    min_weight: int
    max_weight: int
    element_count: int

    def __post_init__(self) -> None:
        """Check the ranges."""
        if not isinstance(self.cube_id, str):
            raise InvalidOptionError(f"block cube id must be a string, got {self.cube_id!r}")
        for name in ("min_weight", "max_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidOptionError(f"block {name} must be an int, got {value!r}")
            if not MIN_WEIGHT <= value <= MAX_WEIGHT:
                raise InvalidOptionError(f"block {name} {value} is outside the int32 range")
        count = self.element_count
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= _INT64_MAX:
            raise InvalidOptionError(f"block element count must be an int ≥ 0, got {count!r}")


def encode_blocks(blocks: Iterable[Block]) -> str:
    """Render the ``tags.blocks`` string exactly as the reference does.

    Example: ``[{"cubeId":"","minWeight":2147483647,"maxWeight":2147483647,"elementCount":1}]``.
    """
    return _json.dumps(
        [
            {
                "cubeId": b.cube_id,
                "minWeight": b.min_weight,
                "maxWeight": b.max_weight,
                "elementCount": b.element_count,
            }
            for b in blocks
        ]
    )


def _lenient_int(value: Any, key: str, text: str) -> int:
    """Read a number like Jackson's ``getValueAsInt``/``getValueAsLong`` (numeric strings too)."""
    if isinstance(value, bool):
        raise MetadataFormatError(
            f"blocks field {key!r} must be a number, got {value!r} in {text!r}"
        )
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            try:
                as_float = float(value)
            except ValueError:
                as_float = math.nan
            if math.isfinite(as_float):
                return int(as_float)
    raise MetadataFormatError(f"blocks field {key!r} must be a number, got {value!r} in {text!r}")


def decode_blocks(text: str) -> tuple[Block, ...]:
    """Parse a ``tags.blocks`` string.

    Lenient like the reference reader: keys in any order, missing ``minWeight`` →
    ``MIN_WEIGHT``, missing ``maxWeight`` → ``MAX_WEIGHT``, missing ``elementCount`` → 0,
    numeric strings accepted, ``replicated`` and unknown keys ignored, text after the closing
    ``]`` ignored. ``cube`` (from outdated docs) is accepted as an alias of ``cubeId``.

    Raises:
        MetadataFormatError: Not a JSON array of objects, a block without cube id, or a
            weight/count out of range.
    """
    if not isinstance(text, str):
        raise MetadataFormatError(f"tags.blocks must be a string, got {text!r}")
    stripped = text.lstrip()
    if not stripped.startswith("["):
        raise MetadataFormatError(f"tags.blocks must be a JSON array, got {text[:200]!r}")
    try:
        value, _ = json.JSONDecoder().raw_decode(stripped)
    except ValueError as err:
        raise MetadataFormatError(f"cannot parse tags.blocks ({err}): {text[:200]!r}") from None
    blocks = []
    for item in value:
        if not isinstance(item, dict):
            raise MetadataFormatError(f"tags.blocks items must be objects, got {item!r}")
        cube = item.get("cubeId", item.get("cube"))
        if cube is None:
            raise MetadataFormatError(f"a block in tags.blocks has no cubeId: {item!r}")
        if not isinstance(cube, str):
            raise MetadataFormatError(f"block cubeId must be a string, got {cube!r}")
        min_weight = _lenient_int(item.get("minWeight", MIN_WEIGHT), "minWeight", text)
        max_weight = _lenient_int(item.get("maxWeight", MAX_WEIGHT), "maxWeight", text)
        count = _lenient_int(item.get("elementCount", 0), "elementCount", text)
        try:
            blocks.append(Block(cube, min_weight, max_weight, count))
        except InvalidOptionError as err:
            raise MetadataFormatError(f"invalid block {item!r}: {err.message}") from None
    return tuple(blocks)


def tags_for(
    revision_id: int, blocks: Iterable[Block], max_row_weight: int | None = None
) -> dict[str, str]:
    """Return the AddFile ``tags`` of an indexed file: ``revision`` and ``blocks``, and
    :data:`MAX_ROW_WEIGHT_TAG` when the largest row weight is given."""
    tags = {"revision": str(revision_id), "blocks": encode_blocks(blocks)}
    if max_row_weight is not None:
        tags[MAX_ROW_WEIGHT_TAG] = str(int(max_row_weight))
    return tags


@dataclass(frozen=True, slots=True)
class IndexFile:
    """A data file of the table with its qbeast blocks.

    Attributes:
        path: Path relative to the table root (as in ``add.path``).
        size: File size in bytes.
        modification_time: Epoch milliseconds.
        revision_id: The revision the blocks belong to; 0 for staging (unindexed) files.
        blocks: The file's blocks (one root block for staging files).
        num_records: ``numRecords`` from the Delta stats, if known.
        max_row_weight: the largest weight of a row in the file, if its writer recorded it
            (tag :data:`MAX_ROW_WEIGHT_TAG`). Blocks record the least row weight and the
            cube's max weight only, so without it a reader cannot tell that every row of
            the file is below a sample's threshold.
        deleted_rows: rows of the file a deletion vector marks deleted (its
            ``cardinality``); they are never read, but the blocks and ``num_records``
            still count them.
    """

    path: str
    size: int
    modification_time: int
    revision_id: int
    blocks: tuple[Block, ...]
    num_records: int | None = None
    max_row_weight: int | None = None
    deleted_rows: int = 0

    def __post_init__(self) -> None:
        """Freeze the blocks and check the fields."""
        object.__setattr__(self, "blocks", tuple(self.blocks))
        if not isinstance(self.path, str) or not self.path:
            raise InvalidOptionError(f"an index file needs a path, got {self.path!r}")
        if self.revision_id < 0:
            raise InvalidOptionError(f"revision id must be ≥ 0, got {self.revision_id}")

    @property
    def is_staging(self) -> bool:
        """Whether the file is unindexed (revision 0)."""
        return self.revision_id == 0

    @property
    def element_count(self) -> int:
        """Sum of the blocks' element counts."""
        return sum(b.element_count for b in self.blocks)

    @property
    def live_rows(self) -> int:
        """The rows a read of the file returns: ``numRecords`` (else the blocks' count)
        less the rows its deletion vector deletes."""
        return max(0, (self.num_records or self.element_count) - self.deleted_rows)

    @property
    def min_row_weight(self) -> int:
        """The least row weight the blocks record (spec §5.9: a lower bound of every row's)."""
        return min((b.min_weight for b in self.blocks), default=MIN_WEIGHT)


def _staging_blocks() -> tuple[Block, ...]:
    return (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),)


def _num_records(stats: Any) -> int | None:
    if isinstance(stats, str):
        try:
            stats = json.loads(stats)
        except ValueError:
            return None
    if isinstance(stats, Mapping):
        n = stats.get("numRecords")
        if isinstance(n, int) and not isinstance(n, bool):
            return n
    return None


def _deleted_rows(add: Mapping[str, Any], path: str) -> int:
    """The ``cardinality`` of the add's deletion vector (0 without one)."""
    vector = add.get("deletionVector")
    if vector is None:
        return 0
    count = vector.get("cardinality") if isinstance(vector, Mapping) else None
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise MetadataFormatError(
            f"file {path!r} has a deletionVector without a valid cardinality: {vector!r}"
        )
    return count


def _int_field(add: Mapping[str, Any], key: str, default: int) -> int:
    value = add.get(key, default)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MetadataFormatError(
            f"add action field {key!r} must be an integer, got {value!r}"
        ) from None


def _max_row_weight(tags: Mapping[str, Any]) -> int | None:
    """The tag :data:`MAX_ROW_WEIGHT_TAG` as an int weight, or None when absent or not an
    int weight (it is a reading hint: a reader without it filters every row by weight)."""
    text = tags.get(MAX_ROW_WEIGHT_TAG)
    if not isinstance(text, str):
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if MIN_WEIGHT <= value <= MAX_WEIGHT else None


def index_file_from_add(add: Mapping[str, Any]) -> IndexFile:
    """Build an :class:`IndexFile` from a Delta add action (the dict inside ``{"add": …}``).

    * no tags, or tags without ``revision``, or ``revision == "0"``: a staging file with
      one root block (``MIN_WEIGHT``, ``MAX_WEIGHT``, 0 elements);
    * ``revision`` and ``blocks``: the decoded blocks;
    * ``revision`` but no ``blocks``: legacy flat tags (``cube``, ``minWeight``,
      ``maxWeight``, ``elementCount``) give one block, otherwise one root block with weights
      ``[MIN_WEIGHT, MAX_WEIGHT]`` and 0 elements.

    Raises:
        MetadataFormatError: Missing path, a non-integer revision, or undecodable blocks.
    """
    if "add" in add and isinstance(add["add"], Mapping) and "path" not in add:
        add = add["add"]
    path = add.get("path")
    if not isinstance(path, str) or not path:
        raise MetadataFormatError(f"add action without a path: {dict(add)!r}")
    size = _int_field(add, "size", 0)
    modification_time = _int_field(add, "modificationTime", 0)
    num_records = _num_records(add.get("stats"))
    deleted = _deleted_rows(add, path)
    tags = add.get("tags") or {}
    revision_text = tags.get("revision") if isinstance(tags, Mapping) else None
    if revision_text is None:
        return IndexFile(
            path, size, modification_time, 0, _staging_blocks(), num_records, None, deleted
        )
    revision_id = _json.int_text(revision_text, f"file {path!r} has tag revision={revision_text!r}")
    if revision_id < 0:
        raise MetadataFormatError(f"file {path!r} has a negative revision tag {revision_text!r}")
    if revision_id == 0:
        return IndexFile(
            path, size, modification_time, 0, _staging_blocks(), num_records, None, deleted
        )
    blocks_text = tags.get("blocks")
    if blocks_text is not None:
        blocks = decode_blocks(blocks_text)
    elif "cube" in tags:  # legacy flat tags (< 0.6.0)
        text = f"legacy tags of {path!r}"
        try:
            blocks = (
                Block(
                    str(tags["cube"]),
                    _lenient_int(tags.get("minWeight", MIN_WEIGHT), "minWeight", text),
                    _lenient_int(tags.get("maxWeight", MAX_WEIGHT), "maxWeight", text),
                    _lenient_int(tags.get("elementCount", 0), "elementCount", text),
                ),
            )
        except InvalidOptionError as err:
            raise MetadataFormatError(f"invalid legacy tags of {path!r}: {err.message}") from None
    else:
        blocks = (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),)
    return IndexFile(
        path,
        size,
        modification_time,
        revision_id,
        blocks,
        num_records,
        _max_row_weight(tags),
        deleted,
    )
