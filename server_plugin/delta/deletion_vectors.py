"""Deletion vectors: an ``add``'s ``deletionVector`` descriptor, decoded to row indexes.

A deletion vector (DV) marks rows of one data file as deleted without rewriting it: the
rows at the listed 0-based positions (``_metadata.row_index`` in Spark) are gone. This
module decodes the descriptor and its bitmap exactly, checking every length, checksum and
count it can; it does not decide which tables are read. Until every read path applies
DVs, :mod:`.protocol` keeps refusing the ``deletionVectors`` feature (rows would
reappear), so nothing here changes what qbeast-connect accepts.

Descriptor (the ``deletionVector`` field of ``add``/``remove``):

* ``storageType`` ``'u'``: ``pathOrInlineDv`` is an optional random prefix followed by a
  20-character Z85 encoding of a UUID; the file is
  ``<prefix>/deletion_vector_<uuid>.bin`` relative to the table root.
* ``'p'``: ``pathOrInlineDv`` is an absolute path (URI) of the file.
* ``'i'``: ``pathOrInlineDv`` is the Z85-encoded serialized bitmap itself (padded to a
  multiple of 4 bytes; ``sizeInBytes`` is its real length); no ``offset``.
* ``offset`` (file DVs): where the DV starts in the file; ``sizeInBytes``: the length of
  the serialized bitmap; ``cardinality``: the number of deleted rows.

DV file: one version byte ``1``, then DVs, each at its ``offset`` as a 4-byte big-endian
size, the serialized bitmap, and a 4-byte big-endian CRC-32 of the bitmap bytes.

Serialized bitmap: the magic number 1681511377 (little-endian int32), then a 64-bit
RoaringBitmapArray in the "portable" format: an 8-byte little-endian count of 32-bit
bitmaps, each a 4-byte little-endian high key followed by a standard portable 32-bit
RoaringBitmap (cookie 12346 without run containers, 12347 with; array, bitmap and run
containers). Row index = ``high_key << 32 | low value``.

Written from the format description of the Delta protocol and of RoaringBitmap.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from qbeast_connect.exceptions import (
    CorruptLogError,
    DataFileMissingError,
    MetadataFormatError,
    QbeastError,
)
from qbeast_connect.paths import is_relative

from .storage.base import Storage
from .uris import normalize_path

__all__ = [
    "DeletionVectorDescriptor",
    "decode_bitmap",
    "encode_bitmap",
    "read_deletion_vector",
    "storage_key",
    "write_deletion_vectors",
    "z85_decode",
    "z85_encode",
]

#: The magic number that opens a serialized RoaringBitmapArray (little-endian int32).
BITMAP_MAGIC = 1681511377
#: The version byte that opens a DV file.
DV_FILE_VERSION = 1

_Z85_ALPHABET = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
_Z85_VALUES = {c: i for i, c in enumerate(_Z85_ALPHABET)}

_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_NO_OFFSET_THRESHOLD = 4  # a run-cookie bitmap with fewer containers has no offset header
_ARRAY_MAX = 4096  # containers with more values are bitmaps (unless run-encoded)
_BITMAP_BYTES = 8192  # 65536 bits

_EMPTY = np.zeros(0, dtype=np.uint64)


def z85_decode(text: str) -> bytes:
    """Decode Z85 (ZeroMQ's Base85): every 5 characters give 4 bytes, big-endian.

    Raises:
        MetadataFormatError: The length is not a multiple of 5, a character is not in the
            alphabet, or a group overflows 32 bits.
    """
    if len(text) % 5:
        raise MetadataFormatError(
            f"Z85 text of length {len(text)} is not a multiple of 5: {text[:40]!r}"
        )
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for char in text[start : start + 5]:
            digit = _Z85_VALUES.get(char)
            if digit is None:
                raise MetadataFormatError(f"invalid Z85 character {char!r} in {text[:40]!r}")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise MetadataFormatError(f"Z85 group {text[start : start + 5]!r} overflows 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


def z85_encode(data: bytes) -> str:
    """Encode ``data`` (a multiple of 4 bytes) in Z85: the inverse of :func:`z85_decode`."""
    if len(data) % 4:
        raise ValueError(f"Z85 encodes whole 4-byte groups, got {len(data)} bytes")
    out = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start : start + 4], "big")
        group = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            group.append(_Z85_ALPHABET[digit])
        out.append("".join(reversed(group)))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` field of an ``add`` or ``remove``.

    Attributes:
        storage_type: ``'u'`` (UUID-named file), ``'i'`` (inline) or ``'p'`` (absolute path).
        path_or_inline_dv: The encoded UUID with its optional prefix, the Z85 bitmap, or
            the absolute path.
        offset: Where the DV starts in its file; None for inline DVs.
        size_in_bytes: Length of the serialized bitmap.
        cardinality: Number of deleted rows.
        max_row_index: Optional largest deleted row index, when written.
    """

    storage_type: str
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int
    max_row_index: int | None = None

    def __post_init__(self) -> None:
        if self.storage_type not in ("u", "i", "p"):
            raise MetadataFormatError(
                f"deletion vector storageType {self.storage_type!r} is not 'u', 'i' or 'p'"
            )
        if self.size_in_bytes < 0 or self.cardinality < 0:
            raise MetadataFormatError(
                f"deletion vector with negative sizeInBytes ({self.size_in_bytes}) or "
                f"cardinality ({self.cardinality})"
            )
        if self.storage_type == "i":
            if self.offset is not None:
                raise MetadataFormatError("an inline deletion vector has an offset")
        elif self.offset is None or self.offset < 1:
            raise MetadataFormatError(
                f"deletion vector in a file needs an offset >= 1, not {self.offset}"
            )
        if self.storage_type == "u" and len(self.path_or_inline_dv) < 20:
            raise MetadataFormatError(
                f"deletion vector UUID {self.path_or_inline_dv!r} is shorter than 20 Z85 characters"
            )

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DeletionVectorDescriptor:
        """Build from the parsed JSON object of a ``deletionVector`` field.

        Raises:
            MetadataFormatError: A required field is missing or of the wrong type.
        """
        if not isinstance(obj, Mapping):
            raise MetadataFormatError(f"deletionVector is not an object: {obj!r}")

        def field(name: str, kind: type, required: bool = True) -> Any:
            value = obj.get(name)
            if value is None:
                if required:
                    raise MetadataFormatError(f"deletionVector has no {name}: {dict(obj)}")
                return None
            if not isinstance(value, kind) or isinstance(value, bool):
                raise MetadataFormatError(
                    f"deletionVector.{name} is {type(value).__name__}, not {kind.__name__}"
                )
            return value

        return cls(
            storage_type=field("storageType", str),
            path_or_inline_dv=field("pathOrInlineDv", str),
            offset=field("offset", int, required=False),
            size_in_bytes=field("sizeInBytes", int),
            cardinality=field("cardinality", int),
            max_row_index=field("maxRowIndex", int, required=False),
        )

    @classmethod
    def of_action(cls, o: Mapping[str, Any], action: str) -> DeletionVectorDescriptor | None:
        """The ``deletionVector`` of an ``add``/``remove`` JSON object (None when absent).

        Raises:
            CorruptLogError: the field is malformed (naming the action and its path).
        """
        value = o.get("deletionVector")
        if value is None:
            return None
        try:
            return cls.from_json(value)
        except MetadataFormatError as err:
            raise CorruptLogError(f"{action} {o.get('path')!r}: {err.message}") from None

    @staticmethod
    def json_of(vector: DeletionVectorDescriptor | None) -> dict[str, Any] | None:
        """The JSON object of ``vector`` (None for None)."""
        return None if vector is None else vector.to_json()

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this descriptor, as the log writes it (absent fields left out)."""
        out: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        if self.max_row_index is not None:
            out["maxRowIndex"] = self.max_row_index
        return out

    @property
    def unique_id(self) -> str:
        """The DV's identity in log replay: storage type, path or data, and ``@offset``."""
        base = self.storage_type + self.path_or_inline_dv
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def is_inline(self) -> bool:
        """True when the bitmap is in the log itself."""
        return self.storage_type == "i"

    def file_path(self) -> str:
        """The DV file: a path relative to the table root (``'u'``) or absolute (``'p'``).

        Raises:
            MetadataFormatError: The DV is inline, or its UUID does not decode.
        """
        if self.storage_type == "p":
            return self.path_or_inline_dv
        if self.storage_type != "u":
            raise MetadataFormatError("an inline deletion vector has no file")
        prefix, encoded = self.path_or_inline_dv[:-20], self.path_or_inline_dv[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name


def read_deletion_vector(
    storage: Storage, descriptor: DeletionVectorDescriptor
) -> npt.NDArray[np.uint64]:
    """Return the deleted row indexes of a DV, sorted ascending (numpy uint64).

    Args:
        storage: The table's storage (file DVs are read through it).
        descriptor: The ``add``'s deletion vector.

    Raises:
        CorruptLogError: The bytes do not decode: wrong version byte, size, checksum,
            magic number, container layout, or a count other than ``cardinality``.
        MetadataFormatError: The descriptor is malformed, or an absolute path lies
            outside the table root.
        FileNotFoundError: The DV file does not exist.
    """
    if descriptor.is_inline:
        data = z85_decode(descriptor.path_or_inline_dv)
        if len(data) < descriptor.size_in_bytes:
            raise CorruptLogError(
                f"inline deletion vector holds {len(data)} bytes, sizeInBytes says "
                f"{descriptor.size_in_bytes}"
            )
        data = data[: descriptor.size_in_bytes]
        where = "inline deletion vector"
    else:
        data, where = _read_from_file(storage, descriptor)
    rows = decode_bitmap(data, where=where)
    if len(rows) != descriptor.cardinality:
        raise CorruptLogError(
            f"{where}: decodes to {len(rows)} rows, the log says cardinality "
            f"{descriptor.cardinality}"
        )
    return rows


def storage_key(descriptor: DeletionVectorDescriptor, root_uri: str | None) -> str:
    """The DV file's path relative to the table root (the key to give to Storage).

    Raises:
        MetadataFormatError: The DV is inline, or its file lies outside the table root.
    """
    path = descriptor.file_path()
    if not is_relative(path):
        rel = normalize_path(path, root_uri)
        if not is_relative(rel):
            raise MetadataFormatError(
                f"deletion vector file {path} lies outside the table root {root_uri}"
            )
        path = rel
    return path


def _read_from_file(storage: Storage, descriptor: DeletionVectorDescriptor) -> tuple[bytes, str]:
    path = storage_key(descriptor, storage.root_uri)
    offset = descriptor.offset
    assert offset is not None  # checked by the descriptor
    where = f"deletion vector {path}@{offset}"
    size = descriptor.size_in_bytes
    try:
        opened = storage.open_input(path)
    except FileNotFoundError as exc:
        if isinstance(exc, QbeastError):
            raise
        raise DataFileMissingError(
            f"{where}: the deletion vector file is not in storage (deleted or vacuumed "
            "outside Delta, or the table was copied without it); restore it, or time travel "
            "to a version that does not use it"
        ) from None
    with opened as stream:
        version = stream.read(1)
        if version != bytes([DV_FILE_VERSION]):
            raise CorruptLogError(
                f"{where}: the file starts with {version!r}, not version byte {DV_FILE_VERSION}"
            )
        stream.seek(offset)
        chunk = stream.read(size + 8)
    if len(chunk) < size + 8:
        raise CorruptLogError(
            f"{where}: the file ends {len(chunk)} bytes after the offset, {size + 8} needed"
        )
    (stored_size,) = struct.unpack_from(">i", chunk, 0)
    if stored_size != size:
        raise CorruptLogError(f"{where}: the file says {stored_size} bytes, the log {size}")
    data = chunk[4 : 4 + size]
    (stored_crc,) = struct.unpack_from(">I", chunk, 4 + size)
    crc = zlib.crc32(data) & 0xFFFFFFFF
    if crc != stored_crc:
        raise CorruptLogError(
            f"{where}: checksum mismatch (stored {stored_crc:#010x}, computed {crc:#010x})"
        )
    return data, where


class _Reader:
    """Little-endian reads over a buffer; running past its end is a CorruptLogError."""

    __slots__ = ("buf", "pos", "where")

    def __init__(self, buf: bytes, where: str) -> None:
        self.buf = buf
        self.pos = 0
        self.where = where

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise CorruptLogError(
                f"{self.where}: bitmap truncated ({n} bytes needed at {self.pos}, "
                f"{len(self.buf)} in all)"
            )
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def u16s(self, count: int) -> npt.NDArray[np.uint16]:
        return np.frombuffer(self.take(2 * count), dtype="<u2")

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "little")

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")


def decode_bitmap(data: bytes, *, where: str = "deletion vector") -> npt.NDArray[np.uint64]:
    """Decode a serialized bitmap (magic number + portable RoaringBitmapArray).

    Returns:
        The row indexes, strictly ascending, as numpy uint64.

    Raises:
        CorruptLogError: Wrong magic number, unknown cookie, truncated or trailing bytes,
            keys or values out of order, or a container that disagrees with its header.
    """
    reader = _Reader(data, where)
    magic = reader.u32()
    if magic != BITMAP_MAGIC:
        raise CorruptLogError(f"{where}: magic number {magic}, expected {BITMAP_MAGIC}")
    count = reader.u64()
    if count > len(data):  # each bitmap takes at least 8 bytes: a corrupt count
        raise CorruptLogError(f"{where}: {count} bitmaps in {len(data)} bytes")
    parts: list[npt.NDArray[np.uint64]] = []
    last_high = -1
    for _ in range(count):
        high = reader.u32()
        if high <= last_high:
            raise CorruptLogError(f"{where}: bitmap keys out of order ({high} after {last_high})")
        last_high = high
        low = _decode_roaring32(reader)
        if len(low):
            parts.append(low.astype(np.uint64) | np.uint64(high << 32))
    if reader.pos != len(data):
        raise CorruptLogError(f"{where}: {len(data) - reader.pos} bytes after the bitmap")
    rows = np.concatenate(parts) if parts else _EMPTY
    return rows


def _decode_roaring32(reader: _Reader) -> npt.NDArray[np.uint32]:
    """One portable 32-bit RoaringBitmap: its values, strictly ascending."""
    where = reader.where
    cookie = reader.u32()
    if cookie & 0xFFFF == _COOKIE_RUN:
        size = (cookie >> 16) + 1
        run_flags = np.unpackbits(
            np.frombuffer(reader.take((size + 7) // 8), dtype=np.uint8), bitorder="little"
        )[:size].astype(bool)
        has_offsets = size >= _NO_OFFSET_THRESHOLD
    elif cookie == _COOKIE_NO_RUN:
        size = reader.u32()
        if size > 65536:
            raise CorruptLogError(f"{where}: {size} containers in one 32-bit bitmap")
        run_flags = np.zeros(size, dtype=bool)
        has_offsets = True
    else:
        raise CorruptLogError(f"{where}: unknown RoaringBitmap cookie {cookie}")
    header = reader.u16s(2 * size).reshape(size, 2) if size else np.zeros((0, 2), "<u2")
    keys = header[:, 0].astype(np.uint32)
    cards = header[:, 1].astype(np.int64) + 1
    if size > 1 and not bool(np.all(np.diff(keys.astype(np.int64)) > 0)):
        raise CorruptLogError(f"{where}: container keys out of order")
    if has_offsets:
        reader.take(4 * size)  # offsets: the containers follow in order, read sequentially
    out: list[npt.NDArray[np.uint32]] = []
    for i in range(size):
        card = int(cards[i])
        if run_flags[i]:
            n_runs = int(reader.u16s(1)[0])
            runs = reader.u16s(2 * n_runs).reshape(n_runs, 2).astype(np.int64)
            starts, lengths = runs[:, 0], runs[:, 1] + 1
            if n_runs and int((starts + lengths).max()) > 65536:
                raise CorruptLogError(f"{where}: a run container runs past 65535")
            total = int(lengths.sum())
            # value j of run r: starts[r] + j, built without a Python loop over values
            offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            values = (np.repeat(starts, lengths) + offsets).astype(np.uint32)
        elif card <= _ARRAY_MAX:
            values = reader.u16s(card).astype(np.uint32)
        else:
            bits = np.frombuffer(reader.take(_BITMAP_BYTES), dtype=np.uint8)
            values = np.flatnonzero(np.unpackbits(bits, bitorder="little")).astype(np.uint32)
        if len(values) != card:
            raise CorruptLogError(
                f"{where}: container {int(keys[i])} holds {len(values)} values, its header "
                f"says {card}"
            )
        if card > 1 and not bool(np.all(values[1:] > values[:-1])):
            raise CorruptLogError(f"{where}: container {int(keys[i])} values out of order")
        out.append(values | (keys[i] << np.uint32(16)))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint32)


#: Bitmaps past this high key (row indexes of 2**40 and more) are refused: no data file
#: holds that many rows, and the dense key list below would be that long.
_MAX_HIGH_KEY = 255


def row_bitmap(rows: npt.NDArray[np.uint64]) -> tuple[int, int, bytes]:
    """The deleted rows ``rows`` (sorted) as a flat bitmap for a lookup in Spark: the first
    and the last row, and the little-endian 64-bit words between them, bit ``r - first``
    (word ``(r - first) // 64``, bit ``(r - first) % 64``) set for each row ``r``. No
    rows: first 0, last -1, no words."""
    if not len(rows):
        return 0, -1, b""
    first, last = int(rows[0]), int(rows[-1])
    offsets = (rows - np.uint64(first)).astype(np.int64)
    words = np.zeros((last - first) // 64 + 1, dtype="<u8")
    np.bitwise_or.at(
        words, offsets // 64, np.left_shift(np.uint64(1), (offsets % 64).astype(np.uint64))
    )
    return first, last, words.tobytes()


def encode_bitmap(rows: npt.ArrayLike) -> bytes:
    """Serialize row indexes as Delta stores them: the magic number, then a portable
    RoaringBitmapArray with one 32-bit bitmap per high key from 0 up to the largest (as
    Delta writes it), each without run containers (arrays up to 4,096 values, bitmaps
    above). The inverse of :func:`decode_bitmap`; duplicates are dropped.

    Raises:
        ValueError: a row index is negative or at least 2**40.
    """
    values = np.unique(np.asarray(rows, dtype=np.int64))
    if len(values) and (int(values[0]) < 0 or int(values[-1]) >> 32 > _MAX_HIGH_KEY):
        raise ValueError(f"row indexes must lie in [0, 2**40), got {values[0]}..{values[-1]}")
    highs = values >> 32
    count = int(highs[-1]) + 1 if len(values) else 0
    out = [struct.pack("<iq", BITMAP_MAGIC, count)]
    bounds = np.searchsorted(highs, np.arange(count + 1))
    for high in range(count):
        low = (values[bounds[high] : bounds[high + 1]] & 0xFFFFFFFF).astype(np.uint32)
        out.append(struct.pack("<i", high))
        out.append(_encode_roaring32(low))
    return b"".join(out)


def _encode_roaring32(values: npt.NDArray[np.uint32]) -> bytes:
    """One portable 32-bit RoaringBitmap of sorted distinct ``values``, no run containers."""
    keys = values >> np.uint32(16)
    distinct, starts = np.unique(keys, return_index=True)
    ends = [*starts[1:], len(values)] if len(values) else []
    bodies = []
    for start, end in zip(starts, ends, strict=True):
        low = (values[start:end] & np.uint32(0xFFFF)).astype(np.uint16)
        if len(low) <= _ARRAY_MAX:
            bodies.append(low.astype("<u2").tobytes())
        else:
            bits = np.zeros(65536, dtype=bool)
            bits[low] = True
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    size = len(distinct)
    header = np.empty((size, 2), dtype="<u2")
    header[:, 0] = distinct
    header[:, 1] = np.asarray(ends, dtype=np.int64) - starts - 1
    # each container's byte offset from the start of this bitmap (the cookie)
    offsets = 8 + 8 * size + np.concatenate([[0], np.cumsum([len(b) for b in bodies])[:-1]])
    return b"".join(
        [
            struct.pack("<II", _COOKIE_NO_RUN, size),
            header.tobytes(),
            np.asarray(offsets[:size], dtype="<u4").tobytes(),
            *bodies,
        ]
    )


def write_deletion_vectors(
    storage: Storage, bitmaps: list[npt.NDArray[np.int64]]
) -> list[DeletionVectorDescriptor]:
    """Write ``bitmaps`` (row indexes of one data file each) to one new UUID-named DV file
    under the table root, and return their descriptors, in order.

    The file is written whole before anything names it: a commit that fails leaves an
    unreferenced file, which vacuum removes like any other.
    """
    ident = uuid.uuid4()
    chunks = [bytes([DV_FILE_VERSION])]
    position = 1
    descriptors = []
    for rows in bitmaps:
        data = encode_bitmap(rows)
        cardinality = len(np.unique(np.asarray(rows, dtype=np.int64)))
        descriptors.append(
            DeletionVectorDescriptor(
                storage_type="u",
                path_or_inline_dv=z85_encode(ident.bytes),
                offset=position,
                size_in_bytes=len(data),
                cardinality=cardinality,
            )
        )
        crc = zlib.crc32(data) & 0xFFFFFFFF
        chunks += [struct.pack(">i", len(data)), data, struct.pack(">I", crc)]
        position += len(data) + 8
    with storage.open_output(f"deletion_vector_{ident}.bin") as out:
        out.write(b"".join(chunks))
    return descriptors
