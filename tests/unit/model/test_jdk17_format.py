"""Java 17 number texts (the input of the ``hashing`` transformation) against a real JVM.

``tests/fixtures/jdk17/to_string.txt`` was printed by an OpenJDK 17 JVM
(``tests/fixtures/jdk17/Jdk17Vectors.java``): edge values, every power of two, ``1eN`` and
``5eN``, and random bit patterns, magnitudes, integers, prices and subnormals.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from qbeast_connect.index.java_text_np import java_double_texts, java_float_texts
from qbeast_connect.index.normalize import normalize
from qbeast_connect.model.hashing import (
    java_double_to_string,
    java_float_to_string,
    scala_bytes_hash,
)
from qbeast_connect.model.transformation import HashTransformation

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "jdk17" / "to_string.txt"


def _load() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    doubles: list[tuple[int, str]] = []
    floats: list[tuple[int, str]] = []
    for line in VECTORS.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        kind, hex_bits, text = line.split()
        (doubles if kind == "d" else floats).append((int(hex_bits, 16), text))
    return doubles, floats


DOUBLES, FLOATS = _load()


def _double(bits: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", bits))[0])


def _float(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def test_the_vector_table_covers_the_edges() -> None:
    texts = {t for _, t in DOUBLES}
    assert len(DOUBLES) > 4000 and len(FLOATS) > 1000
    for text in ("NaN", "Infinity", "-Infinity", "-0.0", "4.9E-324", "1.0E7", "9999999.999999998",
                 "0.001", "9.999999999999998E-4", "1.9999999999999998E23"):
        assert text in texts, text


def test_jvm_vectors_double_to_string() -> None:
    wrong = [(hex(b), t, java_double_to_string(_double(b))) for b, t in DOUBLES
             if java_double_to_string(_double(b)) != t]
    assert wrong == []


def test_jvm_vectors_float_to_string() -> None:
    wrong = [(hex(b), t, java_float_to_string(_float(b))) for b, t in FLOATS
             if java_float_to_string(_float(b)) != t]
    assert wrong == []


def test_jvm_vectors_vectorised_texts() -> None:
    dbits = np.array([b for b, _ in DOUBLES], dtype=np.uint64)
    assert java_double_texts(dbits.view(np.float64)) == [t for _, t in DOUBLES]
    fbits = np.array([b for b, _ in FLOATS], dtype=np.uint32)
    assert java_float_texts(fbits.view(np.float32)) == [t for _, t in FLOATS]


JDK17_NOT_SHORTEST = [
    pytest.param(2e23, "1.9999999999999998E23", id="2e23"),
    pytest.param(1e23, "9.999999999999999E22", id="1e23"),
    pytest.param(2.0**62, "4.6116860184273879E18", id="2^62"),
    pytest.param(6.84798354874497e18, "6.8479835487449702E18", id="long-digits"),
    pytest.param(4.455480889367369e16, "4.4554808893673688E16", id="integer-1e16"),
    pytest.param(5e-324, "4.9E-324", id="min-subnormal"),
    pytest.param(8e-323, "7.9E-323", id="subnormal"),
    pytest.param(7.120236347223045e-307, "7.1202363472230444E-307", id="power-of-two"),
    pytest.param(-1e7, "-1.0E7", id="1e7"),
    pytest.param(9999999.999999998, "9999999.999999998", id="below-1e7"),
    pytest.param(1e-3, "0.001", id="1e-3"),
    pytest.param(0.0009999999999999998, "9.999999999999998E-4", id="below-1e-3"),
    pytest.param(-0.0, "-0.0", id="negative-zero"),
    pytest.param(math.nan, "NaN", id="nan"),
    pytest.param(-math.inf, "-Infinity", id="-inf"),
]


@pytest.mark.parametrize(("x", "text"), JDK17_NOT_SHORTEST)
def test_jdk17_double_texts_where_shortest_repr_differs(x: float, text: str) -> None:
    assert java_double_to_string(x) == text
    assert java_double_texts(np.array([x]))[0] == text


@pytest.mark.parametrize(
    ("x", "text"),
    [
        pytest.param(3.259049e15, "3.2590491E15", id="large"),
        pytest.param(1.401298464324817e-45, "1.4E-45", id="min-subnormal"),
        pytest.param(3.4028234663852886e38, "3.4028235E38", id="max"),
        pytest.param(1e7, "1.0E7", id="1e7"),
        pytest.param(-0.0, "-0.0", id="negative-zero"),
        pytest.param(0.1, "0.1", id="0.1"),
    ],
)
def test_jdk17_float_texts(x: float, text: str) -> None:
    assert java_float_to_string(x) == text
    assert java_float_texts(np.array([x], dtype=np.float32))[0] == text


def _coordinate(text: str) -> float:
    return (scala_bytes_hash(text.encode()) & 0x7FFFFFFF) / 2147483647.0


def test_hashing_coordinates_of_doubles_are_those_of_the_jvm_text() -> None:
    """A hashed double column's coordinate hashes exactly the JVM's text, scalar and vector."""
    t = HashTransformation(null_value=7)
    values = [_double(b) for b, _ in DOUBLES]
    expected = [_coordinate(text) for _, text in DOUBLES]
    assert [t.transform(v) for v in values] == expected
    points = normalize([t], [pa.array(values, type=pa.float64())])
    assert points[:, 0].tolist() == expected


def test_hashing_coordinates_of_floats_are_those_of_the_jvm_text() -> None:
    t = HashTransformation(null_value=7)
    values = np.array([b for b, _ in FLOATS], dtype=np.uint32).view(np.float32)
    expected = [_coordinate(text) for _, text in FLOATS]
    points = normalize([t], [pa.array(values, type=pa.float32())])
    assert points[:, 0].tolist() == expected


def test_vectorised_texts_agree_with_the_exact_port_on_random_values() -> None:
    """The repr fast path is taken only where it is exact (module docstring's argument)."""
    rng = np.random.default_rng(20251125)
    parts = [
        rng.integers(0, 2**64, 20_000, dtype=np.uint64).view(np.float64),
        (rng.random(20_000) - 0.5) * 10.0 ** rng.integers(-25, 25, 20_000),
        np.rint(rng.random(5_000) * 10.0 ** rng.integers(0, 25, 5_000)),
        rng.integers(0, 1 << 20, 10_000) / 2.0 ** rng.integers(0, 40, 10_000),
    ]
    x = np.concatenate(parts)
    assert java_double_texts(x) == [java_double_to_string(v) for v in x.tolist()]
