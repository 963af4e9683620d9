"""Pure arithmetic of the OTree estimation heuristics (spec §5.3-5.5, §5.7, §7.4).

These are scalar reference versions of the reference's formulas. Their results only affect
index quality and file layout, not readability (spec §0), but they follow the reference
closely so that the layouts are similar.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from heapq import heappop, heappush

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.snapshot import CubeStatus
from qbeast_connect.model.weight import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    fraction_from_weight,
    weight_from_normalized,
)

__all__ = [
    "estimate_cube_counts",
    "existing_domains",
    "group_cube_size",
    "min_height",
    "normalized_weights_from_domains",
    "rollup",
    "weights_from_domains",
]


def group_cube_size(
    desired_cube_size: int, num_partitions: int, num_elements: int, buffer_capacity: int
) -> int:
    """Cube size of the per-partition local trees (spec §5.3, vector T18).

    ``max(30, desired_cube_size // max(num_partitions, num_elements // buffer_capacity))``
    with integer divisions (a zero divisor is taken as 1).

    Args:
        desired_cube_size: Target rows per cube.
        num_partitions: Number of input partitions (chunks).
        num_elements: Total input rows.
        buffer_capacity: Rows per local tree buffer (reference default 100,000).
    """
    if buffer_capacity <= 0:
        raise InvalidOptionError(f"buffer capacity must be > 0, got {buffer_capacity}")
    divisor = max(num_partitions, num_elements // buffer_capacity, 1)
    return max(30, desired_cube_size // divisor)


def min_height(num_elements: int, desired_cube_size: int, dimensions: int) -> int:
    """Theoretical minimum tree height (index metrics, spec §7.4, vector T23).

    ``ceil(log(ceil(n/dcs) * (2**d - 1) + 1) / log(2**d))``, in double arithmetic like the
    reference.
    """
    if desired_cube_size <= 0 or dimensions <= 0:
        raise InvalidOptionError("desired cube size and dimensions must be > 0")
    fanout = 2**dimensions
    cubes = -(-num_elements // desired_cube_size)
    return math.ceil(math.log(cubes * (fanout - 1) + 1) / math.log(fanout))


def existing_domains(
    cube_statuses: Mapping[CubeId, CubeStatus] | Mapping[CubeId, int],
) -> dict[CubeId, float]:
    """Domains of an existing index, from its cube element counts (spec §5.4, vector T21).

    Bottom-up, each present cube's tree size (own count plus its subtree) is added into its
    parent's; the grouping by level is fixed first, so a subtree under a missing parent stops
    there. Top-down, the root domain is its tree size and each present cube gets
    ``domain(parent) * tree_size(c) / Σ tree_size(present siblings)`` (0 under a missing
    parent).

    Args:
        cube_statuses: Per cube, a :class:`CubeStatus` or an element count.

    Returns:
        The domain of every cube of the input.
    """
    counts: dict[CubeId, float] = {}
    for cube, status in cube_statuses.items():
        count = status.element_count if isinstance(status, CubeStatus) else status
        counts[cube] = float(count)
    if not counts:
        return {}
    levels: dict[int, list[CubeId]] = {}
    for cube in counts:
        levels.setdefault(cube.depth, []).append(cube)
    tree_sizes = dict(counts)
    for depth in sorted(levels, reverse=True):
        if depth == 0:
            continue
        for cube in levels[depth]:
            parent = cube.parent
            assert parent is not None
            tree_sizes[parent] = tree_sizes.get(parent, 0.0) + tree_sizes[cube]
    domains: dict[CubeId, float] = {}
    for depth in sorted(levels):
        groups: dict[CubeId | None, list[CubeId]] = {}
        for cube in levels[depth]:
            groups.setdefault(cube.parent, []).append(cube)
        for parent, siblings in groups.items():
            if parent is None:
                for cube in siblings:
                    domains[cube] = tree_sizes[cube]
                continue
            parent_domain = domains.get(parent, 0.0)
            subtree = sum(tree_sizes[c] for c in siblings)
            for cube in siblings:
                domains[cube] = 0.0 if subtree == 0 else parent_domain * tree_sizes[cube] / subtree
    return domains


def normalized_weights_from_domains(
    domains: Mapping[CubeId, float], desired_cube_size: int
) -> dict[CubeId, float]:
    """Normalized max weights estimated top-down from cube domains (spec §5.5).

    Levels are processed from the root down. A non-root cube is skipped when its parent has no
    weight or the parent's normalized weight is ≥ 1 (a leaf). Otherwise, with ``pw`` the
    parent's normalized weight (0 for the root): ``1.0`` (forced leaf) when
    ``domain <= desired_cube_size``, else ``pw + desired_cube_size / floor(domain)``.
    """
    if desired_cube_size <= 0:
        raise InvalidOptionError(f"desired cube size must be > 0, got {desired_cube_size}")
    normalized: dict[CubeId, float] = {}
    for cube in sorted(domains, key=lambda c: c.depth):
        parent = cube.parent
        if parent is None:
            pw = 0.0
        else:
            parent_nw = normalized.get(parent)
            if parent_nw is None or parent_nw >= 1.0:
                continue
            pw = parent_nw
        domain = domains[cube]
        if domain <= desired_cube_size:
            normalized[cube] = 1.0
        else:
            normalized[cube] = pw + desired_cube_size / math.floor(domain)
    return normalized


def weights_from_domains(
    domains: Mapping[CubeId, float], desired_cube_size: int
) -> dict[CubeId, int]:
    """Cube max weights from domains (spec §5.5): ``weight(nw)`` if ``nw < 1`` else ``MAX_WEIGHT``.

    Cubes skipped by :func:`normalized_weights_from_domains` are absent from the result.
    """
    return {
        cube: weight_from_normalized(nw)
        for cube, nw in normalized_weights_from_domains(domains, desired_cube_size).items()
    }


def estimate_cube_counts(
    input_domains: Mapping[CubeId, float], weights: Mapping[CubeId, int]
) -> dict[CubeId, int]:
    """Estimated rows of this write per cube, for the rollup (spec §5.7).

    ``trunc((fraction(maxW(c)) - fraction(minW(c))) * domain(c))`` with
    ``maxW(c) = weights.get(c, MAX_WEIGHT)`` and ``minW(c) = maxW(parent)`` (``MIN_WEIGHT``
    for the root).
    """
    counts: dict[CubeId, int] = {}
    for cube, domain in input_domains.items():
        max_w = weights.get(cube, MAX_WEIGHT)
        parent = cube.parent
        min_w = MIN_WEIGHT if parent is None else weights.get(parent, MAX_WEIGHT)
        counts[cube] = int((fraction_from_weight(max_w) - fraction_from_weight(min_w)) * domain)
    return counts


def rollup(counts: Mapping[CubeId, int], limit: int) -> dict[CubeId, CubeId]:
    """Group small cubes into their ancestors' files (spec §5.7).

    Groups start as one per cube. Repeatedly the deepest group is taken; when its size is
    below ``limit`` and it is not the root it merges into its parent's group (created when
    absent). Every remaining group becomes one file.

    Args:
        counts: Rows per cube.
        limit: Minimum rows of a group that is not merged upward (the desired cube size).

    Returns:
        For every input cube, the cube naming its group (file).
    """
    sizes: dict[CubeId, int] = {}
    members: dict[CubeId, list[CubeId]] = {}
    heap: list[tuple[int, tuple[int, ...], CubeId]] = []
    for cube, count in counts.items():
        sizes[cube] = count
        members[cube] = [cube]
        heappush(heap, (-cube.depth, cube.sort_key(), cube))
    while heap:
        _, _, cube = heappop(heap)
        if cube not in sizes:
            continue
        parent = cube.parent
        if parent is None or sizes[cube] >= limit:
            continue
        if parent in sizes:
            sizes[parent] += sizes[cube]
            members[parent].extend(members[cube])
        else:
            sizes[parent] = sizes[cube]
            members[parent] = members[cube]
            heappush(heap, (-parent.depth, parent.sort_key(), parent))
        del sizes[cube]
        del members[cube]
    return {member: group for group, cubes in members.items() for member in cubes}
