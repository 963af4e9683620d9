"""CubeId: container rule, string codec, navigation, ordering (spec §2; T1-T7, T20)."""

from __future__ import annotations

import itertools
import pickle

import pytest

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model.cube_id import ALPHABET, CubeId, cube_string_sort_key

SEVEN_D = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)

CONTAINER_CASES = [
    # T1
    ("T1-depth0", (0.66, 0.83), 0, ""),
    ("T1-depth1", (0.66, 0.83), 1, "w"),
    ("T1-depth2", (0.66, 0.83), 2, "wQ"),
    ("T1-depth3", (0.66, 0.83), 3, "wQg"),
    ("T1-depth4", (0.66, 0.83), 4, "wQgQ"),
    ("T1-depth5", (0.66, 0.83), 5, "wQgQg"),
    # T3, T4
    ("T3-corner", (1.0, 0.0), 3, "ggg"),
    ("T4-origin", (0.0, 0.0), 3, "AAA"),
    ("T4-half", (0.5, 0.5), 2, "wA"),
    # T5, T6
    ("T5-depth1", SEVEN_D, 1, "Dg"),
    ("T5-depth2", SEVEN_D, 2, "DgMA"),
    ("T5-depth3", SEVEN_D, 3, "DgMAUg"),
    ("T6-depth1", (0.9,) * 7, 1, "/g"),
    ("T6-depth2", (0.9,) * 7, 2, "/g/g"),
    ("T6-depth3", (0.9,) * 7, 3, "/g/g/g"),
    # 1.0 always takes the upper half
    ("one-always-upper", (1.0,), 4, "gggg"),
]


@pytest.mark.parametrize(
    ("point", "depth", "expected"),
    [c[1:] for c in CONTAINER_CASES],
    ids=[c[0] for c in CONTAINER_CASES],
)
def test_container(point: tuple[float, ...], depth: int, expected: str) -> None:
    cube = CubeId.container(point, depth)
    assert cube.to_string() == expected
    assert str(cube) == expected
    assert cube.depth == depth
    assert cube.contains(point)
    assert CubeId.from_string(expected, len(point)) == cube


def test_containers_generator_matches_container() -> None:
    point = (0.66, 0.83)
    gen = CubeId.containers(point)
    got = [next(gen) for _ in range(8)]
    assert got == [CubeId.container(point, k) for k in range(8)]
    assert got[0] == CubeId.root(2)


def test_t5_level_bits() -> None:
    cube = CubeId.container(SEVEN_D, 3)
    levels = [
        "".join(str((c >> (cube.depth - 1 - level)) & 1) for c in cube.coords) for level in range(3)
    ]
    assert levels == ["0000111", "0011000", "0101001"]


BOUNDS_CASES = [
    ("T2-wQg", "wQg", 2, ((0.625, 0.75), (0.75, 0.875))),
    ("T3-ggg", "ggg", 2, ((0.875, 0.0), (1.0, 0.125))),
    ("root", "", 2, ((0.0, 0.0), (1.0, 1.0))),
]


@pytest.mark.parametrize(
    ("text", "dims", "bounds"), [c[1:] for c in BOUNDS_CASES], ids=[c[0] for c in BOUNDS_CASES]
)
def test_bounds(text: str, dims: int, bounds: tuple[tuple[float, ...], tuple[float, ...]]) -> None:
    assert CubeId.from_string(text, dims).bounds() == bounds


def test_t7_children_of_root() -> None:
    children = CubeId.root(2).children()
    assert [c.to_string() for c in children] == ["A", "Q", "g", "w"]
    assert [c.bounds()[0] for c in children] == [(0.0, 0.0), (0.0, 0.5), (0.5, 0.0), (0.5, 0.5)]
    assert [c.child_index for c in children] == [0, 1, 2, 3]


def test_t20_order() -> None:
    strings = ["", "A", "AA", "AQ", "Ag", "Aw", "Q", "w", "wQ", "g"]
    cubes = sorted(CubeId.from_string(s, 2) for s in strings)
    assert [c.to_string() for c in cubes] == ["", "A", "AA", "AQ", "Ag", "Aw", "Q", "g", "w", "wQ"]
    assert sorted(strings, key=cube_string_sort_key) == [c.to_string() for c in cubes]


def test_order_is_not_ascii_order() -> None:
    # In 1-D the symbols are A (0) and g (32); in 7-D '/' (63) sorts after 'z'.
    a, b = CubeId.from_string("zA", 7), CubeId.from_string("/A", 7)
    assert a < b and b > a and a <= b and b >= a
    assert "zA" > "/A"  # raw ASCII order disagrees


def test_order_matches_preorder_dfs() -> None:
    def dfs(cube: CubeId, depth: int) -> list[CubeId]:
        out = [cube]
        if cube.depth < depth:
            for child in cube.children():
                out.extend(dfs(child, depth))
        return out

    for dims in (1, 2, 3):
        preorder = dfs(CubeId.root(dims), 3)
        assert sorted(preorder) == preorder
        assert sorted(reversed(preorder), key=CubeId.sort_key) == preorder


def test_sort_key_is_alphabet_indices() -> None:
    for text, dims in [("", 2), ("wQg", 2), ("DgMAUg", 7), ("/g/g", 7), ("gAg", 1)]:
        cube = CubeId.from_string(text, dims)
        assert cube.sort_key() == tuple(ALPHABET.index(ch) for ch in text)


DECODE_CASES = [
    ("empty-is-root", "", 2, ""),
    ("unused-bits-ignored", "B", 2, "A"),
    ("unused-bits-ignored-2", "xR", 2, "wQ"),
    ("extra-chars-ignored-7d", "DgM", 7, "Dg"),
    ("extra-bad-char-ignored-7d", "Dg!", 7, "Dg"),
    ("seven-d-second-symbol", "Dh", 7, "Dg"),
    ("one-dim", "gA", 1, "gA"),
]


@pytest.mark.parametrize(
    ("text", "dims", "canonical"), [c[1:] for c in DECODE_CASES], ids=[c[0] for c in DECODE_CASES]
)
def test_from_string_rules(text: str, dims: int, canonical: str) -> None:
    assert CubeId.from_string(text, dims).to_string() == canonical


@pytest.mark.parametrize("text", ["w!", "é", "A A"], ids=["bang", "non-ascii", "space"])
def test_from_string_rejects_bad_characters(text: str) -> None:
    with pytest.raises(MetadataFormatError, match="not in the cube id alphabet"):
        CubeId.from_string(text, 2)


def test_round_trip_all_cubes_small_trees() -> None:
    for dims in (1, 2, 3, 6, 7, 13):
        per_level = (dims + 5) // 6
        cube = CubeId.root(dims)
        assert cube.to_string() == ""
        point = [((j * 37) % 11) / 11 for j in range(dims)]
        for depth in range(5):
            c = CubeId.container(point, depth)
            text = c.to_string()
            assert len(text) == depth * per_level
            assert CubeId.from_string(text, dims) == c


def test_navigation() -> None:
    cube = CubeId.from_string("wQg", 2)
    parent = cube.parent
    assert parent is not None and parent.to_string() == "wQ"
    assert CubeId.root(2).parent is None
    assert cube.first_child().to_string() == "wQgA"
    siblings = []
    s: CubeId | None = CubeId.from_string("wQA", 2)
    while s is not None:
        siblings.append(s.to_string())
        s = s.next_sibling()
    assert siblings == ["wQA", "wQQ", "wQg", "wQw"]
    assert CubeId.root(2).next_sibling() is None
    assert cube.child_index == 2
    assert all(c.parent == cube for c in cube.children())
    assert cube.child(3).to_string() == "wQgw"
    with pytest.raises(InvalidOptionError):
        cube.child(4)


def test_is_ancestor_of() -> None:
    root = CubeId.root(2)
    w, wq, a = (CubeId.from_string(s, 2) for s in ("w", "wQ", "A"))
    assert root.is_ancestor_of(wq)
    assert w.is_ancestor_of(wq)
    assert wq.is_ancestor_of(wq)  # a cube is its own ancestor
    assert not wq.is_ancestor_of(w)
    assert not a.is_ancestor_of(wq)
    assert not CubeId.root(3).is_ancestor_of(wq)


@pytest.mark.parametrize(
    ("point", "inside"),
    [
        ((0.625, 0.75), True),
        ((0.7, 0.8), True),
        ((0.75, 0.8), False),
        ((0.7, 0.875), False),
        ((0.6, 0.8), False),
    ],
    ids=["lower-corner", "middle", "upper-edge-x", "upper-edge-y", "outside"],
)
def test_contains(point: tuple[float, float], inside: bool) -> None:
    assert CubeId.from_string("wQg", 2).contains(point) is inside


def test_contains_upper_edge_of_unit_square() -> None:
    assert CubeId.from_string("ggg", 2).contains((1.0, 0.0))
    assert CubeId.from_string("w", 2).contains((1.0, 1.0))
    assert not CubeId.from_string("A", 2).contains((0.5, 0.0))


@pytest.mark.parametrize(
    "point",
    [(1.5, 0.0), (-0.1, 0.0), (float("nan"), 0.0), ()],
    ids=["above", "below", "nan", "empty"],
)
def test_container_rejects_points_outside_unit_cube(point: tuple[float, ...]) -> None:
    with pytest.raises(InvalidOptionError):
        CubeId.container(point, 2)


@pytest.mark.parametrize(
    ("dims", "depth", "coords"),
    [(0, 0, ()), (2, -1, (0, 0)), (2, 1, (0,)), (2, 1, (2, 0)), (2, 1, (-1, 0))],
    ids=["no-dims", "neg-depth", "coords-length", "coord-too-big", "coord-negative"],
)
def test_invariants(dims: int, depth: int, coords: tuple[int, ...]) -> None:
    with pytest.raises(InvalidOptionError):
        CubeId(dims, depth, coords)


def test_equality_hash_repr_pickle() -> None:
    a = CubeId(2, 2, (2, 3))  # dim0 bits 1,0; dim1 bits 1,1
    b = CubeId.from_string("wQ", 2)
    assert a == b and hash(a) == hash(b)
    assert a != CubeId(2, 2, (3, 2))
    assert a != CubeId(3, 2, (2, 3, 0))
    assert repr(a) == "CubeId('wQ', dimensions=2)"
    assert pickle.loads(pickle.dumps(a)) == a
    assert CubeId(2, 1, [1, 0]).coords == (1, 0)  # type: ignore[arg-type]


def test_ordering_across_dimensions_is_an_error() -> None:
    with pytest.raises(InvalidOptionError):
        _ = CubeId.root(2) < CubeId.root(3)


def test_string_codec_is_prefix_closed() -> None:
    for a, b in itertools.product("AQgw", repeat=2):
        child = CubeId.from_string(a + b, 2)
        assert child.parent == CubeId.from_string(a, 2)
        assert child.to_string().startswith(a)
