"""Integer cube coordinates, packed keys and the vectorized codec vs the scalar CubeId."""

from __future__ import annotations

import numpy as np
import pytest

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.index.cubes import (
    MAX_COORD_DEPTH,
    MAX_DEPTH,
    cube_id_to_key,
    cube_keys,
    cube_strings,
    decode_cube_string,
    key_to_cube_id,
    parent_string,
    point_coords,
    sorted_cubes,
)
from qbeast_connect.model.cube_id import CubeId


def _strings(points: list[list[float]], depth: int) -> list[str]:
    p = np.asarray(points, dtype=np.float64)
    return cube_strings(point_coords(p, depth), depth, p.shape[1])


def test_spec_vectors_t1_to_t6() -> None:
    assert [_strings([[0.66, 0.83]], k)[0] for k in range(6)] == [
        "",
        "w",
        "wQ",
        "wQg",
        "wQgQ",
        "wQgQg",
    ]
    assert _strings([[1.0, 0.0]], 3) == ["ggg"]
    assert _strings([[0.0, 0.0]], 3) == ["AAA"]
    assert _strings([[0.5, 0.5]], 2) == ["wA"]
    p7 = [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.9] * 7]
    assert [_strings(p7, k) for k in (1, 2, 3)] == [
        ["Dg", "/g"],
        ["DgMA", "/g/g"],
        ["DgMAUg", "/g/g/g"],
    ]


def test_sort_order_t20() -> None:
    cubes = ["", "A", "AA", "AQ", "Ag", "Aw", "Q", "w", "wQ", "g"]
    assert sorted_cubes(cubes) == ["", "A", "AA", "AQ", "Ag", "Aw", "Q", "g", "w", "wQ"]


@pytest.mark.parametrize("d", [1, 2, 3, 6, 7, 13, 16])
def test_point_coords_and_codec_match_scalar(d: int) -> None:
    rng = np.random.default_rng(d)
    pts = rng.random((60, d))
    pts[0] = 1.0
    pts[1] = 0.0
    pts[2] = 0.5
    pts[3, 0] = np.nextafter(1.0, 0.0)
    pts[4, 0] = 5e-324  # subnormal
    for depth in (0, 1, 2, 5, 17, MAX_DEPTH):
        coords = point_coords(pts, depth)
        names = cube_strings(coords, depth, d)
        for i in range(0, 60, 3):
            cube = CubeId.container(pts[i].tolist(), depth)
            assert tuple(coords[i].tolist()) == cube.coords
            assert names[i] == cube.to_string()
            assert decode_cube_string(names[i], d) == (depth, cube.coords)
            assert CubeId.from_string(names[i], d) == cube


def test_point_coords_deep_and_edges() -> None:
    pts = np.array([[1.0, 0.0, 0.5]])
    c = point_coords(pts, MAX_COORD_DEPTH)
    assert c.tolist() == [[2**62 - 1, 0, 2**61]]
    assert CubeId.container([1.0, 0.0, 0.5], MAX_COORD_DEPTH).coords == tuple(c[0].tolist())
    with pytest.raises(InvalidOptionError):
        point_coords(pts, MAX_COORD_DEPTH + 1)
    for bad in (1.0000000000000002, -0.0 - 1e-300, np.nan, np.inf):
        with pytest.raises(InvalidOptionError):
            point_coords(np.array([[0.5, bad]]), 3)
    assert point_coords(np.array([[-0.0]]), 4).tolist() == [[0]]


@pytest.mark.parametrize(
    "d,depth", [(2, 5), (3, 20), (2, 31), (16, 3), (16, 4), (16, 30), (7, 12), (1, 62)]
)
def test_cube_keys_roundtrip(d: int, depth: int) -> None:
    rng = np.random.default_rng(depth * 100 + d)
    coords = point_coords(rng.random((40, d)), depth)
    keys = cube_keys(coords, depth)
    if d * depth <= 62:
        assert keys.dtype == np.int64
    else:
        assert keys.dtype == object
    names = cube_strings(coords, depth, d)
    for i in range(40):
        cube = key_to_cube_id(keys[i], depth, d)
        assert cube.coords == tuple(coords[i].tolist())
        assert cube_id_to_key(cube) == int(keys[i])
        assert cube.to_string() == names[i]
    # keys of one depth order cubes like the CubeId order
    order_keys = sorted(range(40), key=lambda i: int(keys[i]))
    order_cubes = sorted(range(40), key=lambda i: CubeId.from_string(names[i], d))
    assert [names[i] for i in order_keys] == [names[i] for i in order_cubes]
    # distinct cubes have distinct keys
    assert len({int(k) for k in keys}) == len(set(names))


def test_decode_errors_and_parent() -> None:
    with pytest.raises(MetadataFormatError):
        decode_cube_string("A*", 2)
    assert decode_cube_string("B", 2) == (1, (0, 0))  # unused bits ignored
    assert decode_cube_string("gAx", 7) == (1, (1, 0, 0, 0, 0, 0, 0))  # extra chars ignored
    assert parent_string("wQg", 2) == "wQ"
    assert parent_string("DgMA", 7) == "Dg"
    assert parent_string("", 3) is None
    assert cube_strings(np.zeros((0, 2), dtype=np.int64), 3, 2) == []
    assert cube_strings(np.zeros((2, 2), dtype=np.int64), 0, 2) == ["", ""]


@pytest.mark.parametrize("d", [1, 2, 6, 7, 16])
def test_vectorized_decode_order_and_unique(d: int) -> None:
    from qbeast_connect.index.cubes import decode_cube_strings, order_bytes, unique_cubes

    rng = np.random.default_rng(40 + d)
    names = [""]
    for depth in (1, 2, 3, 6, 9):
        coords = point_coords(rng.random((15, d)), depth)
        names += cube_strings(coords, depth, d)
    depths, coords = decode_cube_strings(names, d)
    for i, name in enumerate(names):
        assert (int(depths[i]), tuple(coords[i].tolist())) == decode_cube_string(name, d)
    ob = order_bytes(depths, coords, d)
    by_bytes = [names[i] for i in np.argsort(ob, kind="stable")]
    assert by_bytes == sorted(names, key=lambda s: CubeId.from_string(s, d))
    # unique per depth, both the packed-key and the lexsort path
    for depth in (3, 9):
        sel = np.flatnonzero(depths == depth)
        rows = np.concatenate([sel, sel[:5]])
        uniq, inv = unique_cubes(coords[rows], depth)
        assert uniq.shape[0] == len({names[i] for i in sel})
        assert (uniq[inv] == coords[rows]).all()
    with pytest.raises(MetadataFormatError):
        decode_cube_strings(["A", "A*"], 2)
    with pytest.raises(MetadataFormatError):
        decode_cube_strings(["Añ"], 2)
