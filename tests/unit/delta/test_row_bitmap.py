"""``row_bitmap``: the deleted rows of a vector as the flat bitmap Spark's reads look up
(``qbeast_connect.spark.vector_reads``): word ``(r - first) // 64``, bit ``(r - first) % 64``."""

from __future__ import annotations

import numpy as np

from server_plugin.delta.deletion_vectors import row_bitmap


def _rows_of(first: int, words: bytes) -> list[int]:
    bits = np.unpackbits(np.frombuffer(words, dtype=np.uint8), bitorder="little")
    return [first + int(i) for i in np.flatnonzero(bits)]


def test_every_deleted_row_and_no_other_is_set() -> None:
    rng = np.random.default_rng(7)
    for rows in (
        [5],
        [0, 63, 64, 127, 128],
        [1_000_000, 1_000_063, 1_000_064],
        [2**32 - 1, 2**32, 2**32 + 70],  # past 2**32 rows
        sorted(rng.choice(100_000, 9_000, replace=False).tolist()),
    ):
        first, last, words = row_bitmap(np.array(rows, dtype=np.uint64))
        assert (first, last) == (rows[0], rows[-1])
        assert len(words) == 8 * ((last - first) // 64 + 1)
        assert _rows_of(first, words) == rows


def test_no_rows_give_an_empty_range() -> None:
    assert row_bitmap(np.array([], dtype=np.uint64)) == (0, -1, b"")
