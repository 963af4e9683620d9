"""Deletion vectors decoded exactly: Z85, descriptors, DV files, portable RoaringBitmaps.

The bitmaps here are built byte by byte from the format description (a tiny encoder
below, one function per container kind), so every container kind, several high keys,
the empty bitmap and each corruption are covered; ``integration/test_deletion_vectors_jvm.py``
checks the decoder against the vectors Delta's JVM writes.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from pathlib import Path

import numpy as np
import pytest

from qbeast_connect.exceptions import CorruptLogError, MetadataFormatError
from server_plugin.delta.deletion_vectors import (
    BITMAP_MAGIC,
    DeletionVectorDescriptor,
    decode_bitmap,
    read_deletion_vector,
    z85_decode,
)
from server_plugin.delta.storage import LocalStorage

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_encode(data: bytes) -> str:
    assert len(data) % 4 == 0
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        chars = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chars.append(_Z85[digit])
        out.append("".join(reversed(chars)))
    return "".join(out)


# -- a minimal portable-format encoder: ("array"|"bitmap"|"run", key, sorted low values) --


def _container_bytes(kind: str, values: list[int]) -> bytes:
    if kind == "array":
        return struct.pack(f"<{len(values)}H", *values)
    if kind == "bitmap":
        bits = np.zeros(65536, dtype=np.uint8)
        bits[values] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    assert kind == "run"
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] + 1 == v:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((v, 0))
    return struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", s, n) for s, n in runs)


def roaring32(
    containers: list[tuple[str, int, list[int]]], *, force_run_cookie: bool = False
) -> bytes:
    size = len(containers)
    has_run = force_run_cookie or any(kind == "run" for kind, _, _ in containers)
    bodies = [_container_bytes(kind, values) for kind, _, values in containers]
    header = b"".join(struct.pack("<HH", key, len(values) - 1) for _, key, values in containers)
    if has_run:
        flags = bytearray((size + 7) // 8)
        for i, (kind, _, _) in enumerate(containers):
            if kind == "run":
                flags[i // 8] |= 1 << (i % 8)
        head = struct.pack("<I", 12347 | ((size - 1) << 16)) + bytes(flags) + header
        with_offsets = size >= 4
    else:
        head = struct.pack("<II", 12346, size) + header
        with_offsets = True
    if with_offsets:
        pos = len(head) + 4 * size
        offsets = []
        for body in bodies:
            offsets.append(pos)
            pos += len(body)
        head += struct.pack(f"<{size}I", *offsets)
    return head + b"".join(bodies)


def bitmap_array(bitmaps: list[tuple[int, bytes]], magic: int = BITMAP_MAGIC) -> bytes:
    out = struct.pack("<I", magic) + struct.pack("<Q", len(bitmaps))
    for high, body in bitmaps:
        out += struct.pack("<I", high) + body
    return out


def expected(bitmaps: list[tuple[int, list[tuple[str, int, list[int]]]]]) -> list[int]:
    return sorted(
        (high << 32) | (key << 16) | v for high, cs in bitmaps for _, key, vs in cs for v in vs
    )


def encode(bitmaps: list[tuple[int, list[tuple[str, int, list[int]]]]]) -> bytes:
    return bitmap_array([(high, roaring32(cs)) for high, cs in bitmaps])


def dv_file(tmp_path: Path, name: str, payloads: list[bytes]) -> list[int]:
    """Write a DV file of several DVs; return the offset of each."""
    out = bytearray([1])
    offsets = []
    for data in payloads:
        offsets.append(len(out))
        out += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(out))
    return offsets


MIXED = [
    (
        0,
        [
            ("array", 0, [0, 1, 5, 4095]),
            ("bitmap", 1, list(range(0, 65536, 7))),
            ("run", 3, list(range(100, 200)) + list(range(300, 301)) + list(range(65000, 65536))),
        ],
    ),
    (1, [("array", 0, [2])]),
    (
        7,
        [
            ("run", 65535, [65535]),
        ],
    ),
]


# -- Z85 -------------------------------------------------------------------------------


def test_z85_reference_vector() -> None:
    # the ZeroMQ spec's test vector
    assert z85_decode("HelloWorld") == bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])
    data = bytes(range(256)) * 2
    assert z85_decode(z85_encode(data)) == data
    assert z85_decode("") == b""


@pytest.mark.parametrize("text", ["Hell", 'Hello"orld', "%%%%%"])
def test_z85_rejects_bad_text(text: str) -> None:
    with pytest.raises(MetadataFormatError, match="Z85"):
        z85_decode(text)


# -- bitmaps ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bitmaps",
    [
        [],
        [(0, [])],
        [(0, [("array", 0, [3])])],
        [(0, [("array", 2, list(range(0, 8192, 2)))])],  # 4096 values: still an array
        [(0, [("bitmap", 0, list(range(0, 65536, 3)))])],
        [(0, [("bitmap", 5, list(range(65536)))])],  # a full container
        [(0, [("run", 0, list(range(65536)))])],
        [(0, [("run", 9, [1, 2, 3, 10, 11, 60000])])],
        [(0, [("array", k, [k]) for k in range(6)])],  # >= 4 containers: offsets
        [
            (
                0,
                [
                    ("run", 0, [0, 1]),
                    ("array", 1, [9]),
                    ("run", 2, [4]),
                    ("bitmap", 3, list(range(5000))),
                ],
            )
        ],
        [(0, [("run", 0, [1]), ("array", 1, [9])])],  # run cookie, < 4 containers: no offsets
        MIXED,
        [(2**32 - 1, [("array", 65535, [65535])])],  # the largest row index
    ],
)
def test_decode_bitmap(bitmaps: list[tuple[int, list[tuple[str, int, list[int]]]]]) -> None:
    rows = decode_bitmap(encode(bitmaps))
    assert rows.dtype == np.uint64
    assert rows.tolist() == expected(bitmaps)


def test_run_cookie_without_runs() -> None:
    data = bitmap_array([(0, roaring32([("array", 0, [1, 2])], force_run_cookie=True))])
    assert decode_bitmap(data).tolist() == [1, 2]


def test_bad_magic() -> None:
    with pytest.raises(CorruptLogError, match="magic number"):
        decode_bitmap(bitmap_array([(0, roaring32([("array", 0, [1])]))], magic=1234))


def test_bad_cookie() -> None:
    data = bitmap_array([(0, struct.pack("<II", 999, 0))])
    with pytest.raises(CorruptLogError, match="cookie"):
        decode_bitmap(data)


def test_truncated_and_trailing_bytes() -> None:
    data = encode(MIXED)
    with pytest.raises(CorruptLogError, match="truncated"):
        decode_bitmap(data[:-3])
    with pytest.raises(CorruptLogError, match="after the bitmap"):
        decode_bitmap(data + b"\0")


def test_out_of_order() -> None:
    with pytest.raises(CorruptLogError, match="keys out of order"):
        decode_bitmap(encode([(3, [("array", 0, [1])]), (2, [("array", 0, [1])])]))
    with pytest.raises(CorruptLogError, match="container keys out of order"):
        decode_bitmap(encode([(0, [("array", 4, [1]), ("array", 2, [1])])]))
    with pytest.raises(CorruptLogError, match="values out of order"):
        decode_bitmap(encode([(0, [("array", 0, [5, 1])])]))


def test_container_header_disagrees() -> None:
    body = bytearray(roaring32([("bitmap", 0, list(range(5000)))]))
    struct.pack_into("<H", body, 10, 5999 - 1)  # the header's cardinality
    with pytest.raises(CorruptLogError, match="header says 5999"):
        decode_bitmap(bitmap_array([(0, bytes(body))]))


# -- descriptors -----------------------------------------------------------------------


def test_descriptor_from_json_and_path() -> None:
    u = uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
    encoded = z85_encode(u.bytes)
    d = DeletionVectorDescriptor.from_json(
        {
            "storageType": "u",
            "pathOrInlineDv": "ab" + encoded,
            "offset": 1,
            "sizeInBytes": 36,
            "cardinality": 2,
            "maxRowIndex": 9,
        }
    )
    assert d.file_path() == f"ab/deletion_vector_{u}.bin"
    assert d.unique_id == f"uab{encoded}@1"
    assert d.max_row_index == 9
    plain = DeletionVectorDescriptor("u", encoded, 1, 36, 2)
    assert plain.file_path() == f"deletion_vector_{u}.bin"
    assert DeletionVectorDescriptor("p", "s3://b/t/x.bin", 5, 36, 2).file_path() == "s3://b/t/x.bin"
    inline = DeletionVectorDescriptor.from_json(
        {"storageType": "i", "pathOrInlineDv": "HelloWorld", "sizeInBytes": 8, "cardinality": 0}
    )
    assert inline.is_inline and inline.unique_id == "iHelloWorld"


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        (
            {"storageType": "x", "pathOrInlineDv": "a", "sizeInBytes": 1, "cardinality": 1},
            "storageType",
        ),
        (
            {"storageType": "u", "pathOrInlineDv": "a" * 20, "sizeInBytes": 1, "cardinality": 1},
            "offset",
        ),
        (
            {
                "storageType": "u",
                "pathOrInlineDv": "abc",
                "offset": 1,
                "sizeInBytes": 1,
                "cardinality": 1,
            },
            "20",
        ),
        (
            {
                "storageType": "i",
                "pathOrInlineDv": "a",
                "offset": 1,
                "sizeInBytes": 1,
                "cardinality": 1,
            },
            "offset",
        ),
        ({"storageType": "i", "pathOrInlineDv": "a", "sizeInBytes": 1}, "cardinality"),
        (
            {"storageType": "i", "pathOrInlineDv": "a", "sizeInBytes": "1", "cardinality": 1},
            "sizeInBytes",
        ),
        (
            {"storageType": "i", "pathOrInlineDv": "a", "sizeInBytes": 1, "cardinality": -1},
            "negative",
        ),
    ],
)
def test_bad_descriptor(obj: dict[str, object], match: str) -> None:
    with pytest.raises(MetadataFormatError, match=match):
        DeletionVectorDescriptor.from_json(obj)


# -- reading: inline and on disk ------------------------------------------------------


def test_inline(tmp_path: Path) -> None:
    data = encode(MIXED)
    padded = data + b"\0" * (-len(data) % 4)
    want = expected(MIXED)
    d = DeletionVectorDescriptor("i", z85_encode(padded), None, len(data), len(want))
    assert read_deletion_vector(LocalStorage(tmp_path), d).tolist() == want


def test_on_disk_several_in_one_file(tmp_path: Path) -> None:
    u = uuid.uuid4()
    first = [(0, [("array", 0, [0, 3, 4])])]
    payloads = [encode(first), encode(MIXED)]
    offsets = dv_file(tmp_path, f"zz/deletion_vector_{u}.bin", payloads)
    storage = LocalStorage(tmp_path)
    for payload, offset, bitmaps in zip(payloads, offsets, [first, MIXED], strict=True):
        want = expected(bitmaps)
        d = DeletionVectorDescriptor(
            "u", "zz" + z85_encode(u.bytes), offset, len(payload), len(want)
        )
        assert read_deletion_vector(storage, d).tolist() == want
    # the same file by absolute path and by file URI
    absolute = str(tmp_path / f"zz/deletion_vector_{u}.bin")
    want = expected(MIXED)
    for path in (absolute, (tmp_path / f"zz/deletion_vector_{u}.bin").as_uri()):
        d = DeletionVectorDescriptor("p", path, offsets[1], len(payloads[1]), len(want))
        assert read_deletion_vector(storage, d).tolist() == want


def _one_dv(tmp_path: Path) -> tuple[LocalStorage, DeletionVectorDescriptor, Path]:
    u = uuid.uuid4()
    payload = encode(MIXED)
    (offset,) = dv_file(tmp_path, f"deletion_vector_{u}.bin", [payload])
    d = DeletionVectorDescriptor(
        "u", z85_encode(u.bytes), offset, len(payload), len(expected(MIXED))
    )
    return LocalStorage(tmp_path), d, tmp_path / f"deletion_vector_{u}.bin"


def test_bad_crc(tmp_path: Path) -> None:
    storage, d, file = _one_dv(tmp_path)
    raw = bytearray(file.read_bytes())
    raw[-1] ^= 0xFF
    file.write_bytes(bytes(raw))
    with pytest.raises(CorruptLogError, match="checksum mismatch"):
        read_deletion_vector(storage, d)


def test_flipped_data_bit_fails_crc(tmp_path: Path) -> None:
    storage, d, file = _one_dv(tmp_path)
    raw = bytearray(file.read_bytes())
    raw[20] ^= 0x01
    file.write_bytes(bytes(raw))
    with pytest.raises(CorruptLogError, match="checksum mismatch"):
        read_deletion_vector(storage, d)


def test_wrong_cardinality(tmp_path: Path) -> None:
    storage, d, _ = _one_dv(tmp_path)
    wrong = DeletionVectorDescriptor(
        d.storage_type, d.path_or_inline_dv, d.offset, d.size_in_bytes, d.cardinality + 1
    )
    with pytest.raises(CorruptLogError, match="cardinality"):
        read_deletion_vector(storage, wrong)


def test_wrong_size_and_version(tmp_path: Path) -> None:
    storage, d, file = _one_dv(tmp_path)
    wrong = DeletionVectorDescriptor(
        d.storage_type, d.path_or_inline_dv, d.offset, d.size_in_bytes - 4, d.cardinality
    )
    with pytest.raises(CorruptLogError, match="the file says"):
        read_deletion_vector(storage, wrong)
    past_end = DeletionVectorDescriptor(
        d.storage_type, d.path_or_inline_dv, d.offset, d.size_in_bytes + 100, d.cardinality
    )
    with pytest.raises(CorruptLogError, match="the file ends"):
        read_deletion_vector(storage, past_end)
    raw = bytearray(file.read_bytes())
    raw[0] = 2
    file.write_bytes(bytes(raw))
    with pytest.raises(CorruptLogError, match="version byte"):
        read_deletion_vector(storage, d)


def test_missing_file_and_outside_root(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "t")
    (tmp_path / "t").mkdir()
    d = DeletionVectorDescriptor("u", z85_encode(uuid.uuid4().bytes), 1, 20, 1)
    with pytest.raises(FileNotFoundError):
        read_deletion_vector(storage, d)
    outside = DeletionVectorDescriptor("p", str(tmp_path / "other.bin"), 1, 20, 1)
    with pytest.raises(MetadataFormatError, match="outside the table root"):
        read_deletion_vector(storage, outside)


def test_inline_shorter_than_size(tmp_path: Path) -> None:
    d = DeletionVectorDescriptor("i", "HelloWorld", None, 12, 0)
    with pytest.raises(CorruptLogError, match="sizeInBytes"):
        read_deletion_vector(LocalStorage(tmp_path), d)


def test_bad_magic_on_disk(tmp_path: Path) -> None:
    u = uuid.uuid4()
    payload = bitmap_array([(0, roaring32([("array", 0, [1])]))], magic=7)
    (offset,) = dv_file(tmp_path, f"deletion_vector_{u}.bin", [payload])
    d = DeletionVectorDescriptor("u", z85_encode(u.bytes), offset, len(payload), 1)
    with pytest.raises(CorruptLogError, match="magic number 7"):
        read_deletion_vector(LocalStorage(tmp_path), d)
