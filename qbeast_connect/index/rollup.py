"""Per-cube element counts of a write and their rollup into files (spec §5.7)."""

from __future__ import annotations

from collections.abc import Mapping

from qbeast_connect.index.cubes import cube_sort_key, parent_string, symbols_per_level

__all__ = ["estimated_counts", "rollup_groups"]

MIN_WEIGHT = -(2**31)
MAX_WEIGHT = 2**31 - 1
_WEIGHT_RANGE = 4294967295.0
_WEIGHT_OFFSET = -2147483648.0


def _fraction(w: int) -> float:
    return (float(w) - _WEIGHT_OFFSET) / _WEIGHT_RANGE


def estimated_counts(
    input_domains: Mapping[str, float], cube_weights: Mapping[str, int], dimensions: int
) -> dict[str, int]:
    """Estimated rows of this write per cube (spec §5.7, first paragraph).

    For every cube ``c`` of ``input_domains``:
    ``trunc((fraction(maxW(c)) - fraction(minW(c))) * inputDomain(c))`` with
    ``maxW(c) = W.get(c, MAX_WEIGHT)`` and ``minW(c) = maxW(parent)`` (``MIN_WEIGHT`` for the
    root).
    """
    out: dict[str, int] = {}
    for cube, domain in input_domains.items():
        max_w = int(cube_weights.get(cube, MAX_WEIGHT))
        parent = parent_string(cube, dimensions)
        min_w = MIN_WEIGHT if parent is None else int(cube_weights.get(parent, MAX_WEIGHT))
        out[cube] = int((_fraction(max_w) - _fraction(min_w)) * float(domain))
    return out


def rollup_groups(counts: Mapping[str, int], dimensions: int, limit: int) -> dict[str, int]:
    """Group cubes into files (spec §5.7 rollup).

    Groups start as one group per cube with its count. Deepest first, a group whose size is
    below ``limit`` and whose key is not the root merges into its parent's group, creating
    that group (keyed by the parent cube, which need not be in ``counts``) when absent.
    Returns member cube string -> group number; groups are numbered ``0..G-1`` in CubeId
    order of their key cube. Only the cubes of ``counts`` appear in the result (rows of other
    cubes use their nearest ancestor, see ``assignment.group_rows``).
    """
    s = symbols_per_level(dimensions)
    sizes: dict[str, int] = {}
    members: dict[str, list[str]] = {}
    for cube, cnt in counts.items():
        sizes[cube] = int(cnt)
        members[cube] = [cube]
    if not sizes:
        return {}
    max_depth = max(len(c) // s for c in sizes)
    for depth in range(max_depth, 0, -1):
        keys = sorted((c for c in sizes if len(c) // s == depth), key=cube_sort_key)
        for key in keys:
            size = sizes[key]
            if size >= limit:
                continue
            parent = key[: (depth - 1) * s]
            if parent in sizes:
                sizes[parent] += size
                members[parent].extend(members[key])
            else:
                sizes[parent] = size
                members[parent] = members[key]
            del sizes[key]
            del members[key]
    out: dict[str, int] = {}
    for number, key in enumerate(sorted(sizes, key=cube_sort_key)):
        for cube in members[key]:
            out[cube] = number
    return out
