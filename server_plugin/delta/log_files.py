"""The files of ``_delta_log`` by name, and the ``_last_checkpoint`` pointer.

Shared by the log reader (which lists and replays the log) and the checkpoint writer:
both need the file names of commits and checkpoints and the pointer to the newest
checkpoint, and neither needs the other for them.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.paths import DELTA_LOG

from .storage import Storage

__all__ = [
    "LAST_CHECKPOINT_PATH",
    "LOG_DIR",
    "SIDECAR_DIR",
    "LastCheckpoint",
    "check_version",
    "checkpoint_path",
    "commit_path",
    "multipart_checkpoint_path",
    "parse_log_file_name",
    "read_last_checkpoint",
    "write_last_checkpoint",
]

logger = logging.getLogger(__name__)

LOG_DIR = DELTA_LOG
LAST_CHECKPOINT_PATH = f"{LOG_DIR}/_last_checkpoint"
SIDECAR_DIR = "_sidecars"
"""The directory of V2 checkpoint sidecar files, inside ``_delta_log``."""

_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART_RE = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_UUID_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")


def commit_path(version: int) -> str:
    """Return ``_delta_log/<version:020d>.json``."""
    check_version(version)
    return f"{LOG_DIR}/{version:020d}.json"


def checkpoint_path(version: int) -> str:
    """Return ``_delta_log/<version:020d>.checkpoint.parquet`` (classic single file)."""
    check_version(version)
    return f"{LOG_DIR}/{version:020d}.checkpoint.parquet"


def multipart_checkpoint_path(version: int, part: int, parts: int) -> str:
    """Return the path of part ``part`` (1-based) of a ``parts``-part checkpoint."""
    check_version(version)
    return f"{LOG_DIR}/{version:020d}.checkpoint.{part:010d}.{parts:010d}.parquet"


def check_version(version: int) -> None:
    """Refuse anything that is not a valid table version (an int in ``[0, 10**20)``).

    Raises:
        InvalidOptionError: ``version`` is not an int, is negative or has over 20 digits.
    """
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version < 10**20:
        raise InvalidOptionError(f"invalid table version {version!r}; versions are ints >= 0")


def parse_log_file_name(name: str) -> tuple[str, int, int | None, int | None] | None:
    """Classify a file name found in ``_delta_log``.

    Args:
        name: A bare file name (no directory).

    Returns:
        ``(kind, version, part, parts)`` with kind ``"commit"``, ``"checkpoint"``,
        ``"multipart"`` or ``"uuid"`` (part/parts only for multipart), or None for any
        other file (``.crc``, compacted logs, temp files, ``_last_checkpoint``, ...).
    """
    m = _COMMIT_RE.match(name)
    if m:
        return ("commit", int(m.group(1)), None, None)
    m = _CHECKPOINT_RE.match(name)
    if m:
        return ("checkpoint", int(m.group(1)), None, None)
    m = _MULTIPART_RE.match(name)
    if m:
        part, parts = int(m.group(2)), int(m.group(3))
        if 1 <= part <= parts:
            return ("multipart", int(m.group(1)), part, parts)
        return None
    m = _UUID_CHECKPOINT_RE.match(name)
    if m:
        return ("uuid", int(m.group(1)), None, None)
    return None


@dataclass(frozen=True, slots=True)
class LastCheckpoint:
    """The ``_last_checkpoint`` hint.

    Attributes:
        version: Version of the hinted checkpoint.
        size: Number of action rows in it, if given.
        parts: Number of parts for a multi-part checkpoint, else None.
        size_in_bytes: Total file size, if given.
        num_of_add_files: Number of ``add`` rows, if given.
    """

    version: int
    size: int | None = None
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None


def read_last_checkpoint(storage: Storage) -> LastCheckpoint | None:
    """Read the ``_last_checkpoint`` hint; None when missing or unparsable."""
    try:
        data = storage.read_bytes(LAST_CHECKPOINT_PATH)
    except FileNotFoundError:
        return None
    try:
        obj = json.loads(data)
        version = obj["version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(f"bad version {version!r}")

        def opt(key: str) -> int | None:
            value = obj.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return LastCheckpoint(
            version, opt("size"), opt("parts"), opt("sizeInBytes"), opt("numOfAddFiles")
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        logger.warning("ignoring unparsable %s in %s: %s", LAST_CHECKPOINT_PATH, storage, exc)
        return None


def write_last_checkpoint(storage: Storage, hint: LastCheckpoint) -> None:
    """Replace ``_last_checkpoint`` with ``hint`` (one atomic write)."""
    payload = {
        "version": hint.version,
        "size": hint.size,
        "sizeInBytes": hint.size_in_bytes,
        "numOfAddFiles": hint.num_of_add_files,
    }
    storage.put_atomic(
        LAST_CHECKPOINT_PATH, json.dumps(payload, separators=(",", ":")).encode("utf-8")
    )
