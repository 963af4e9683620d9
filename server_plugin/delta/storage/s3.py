"""Table storage on S3 and S3-compatible object stores, with atomic conditional commits.

A commit file is created with one ``PutObject`` carrying ``If-None-Match: *``: the store
creates the object only when no object has that key, atomically, so two writers racing
for ``_delta_log/N.json`` cannot both win (spec §12). ``412 PreconditionFailed`` means
another writer owns the version; ``409 ConditionalRequestConflict`` (another conditional
write to the key is in flight) is retried with the same request. Before the first commit
to a bucket, each process checks once that the store really enforces the condition (a
store that silently ignores it would let two writers overwrite each other's commits) and
refuses to commit otherwise.

Checkpoints and ``_last_checkpoint`` are single ``PutObject`` calls, which S3 publishes
atomically (readers see the old or the new object, never a part). Data files are buffered
(in memory, spilling to a temporary file) and uploaded when the stream is closed, with
one conditional ``PutObject`` or a multipart upload completed with ``If-None-Match: *``;
a stream left by an exception uploads nothing.

Locations are ``s3://bucket/prefix`` or ``s3a://bucket/prefix``. Settings come from the
``options`` mapping given to :func:`~server_plugin.delta.storage.storage_for` (keys are
case-insensitive; a ``spark.hadoop.`` prefix is ignored), then from the environment of the
process running the plugin (the Spark server and its Python workers):

=============================  ================================  =========================
setting                        option keys                       environment
=============================  ================================  =========================
endpoint (S3-compatible)       ``fs.s3a.endpoint``,              ``AWS_ENDPOINT_URL_S3``,
                               ``aws_endpoint_url``              ``AWS_ENDPOINT_URL``
access key id                  ``fs.s3a.access.key``,            ``AWS_ACCESS_KEY_ID``
                               ``aws_access_key_id``
secret access key              ``fs.s3a.secret.key``,            ``AWS_SECRET_ACCESS_KEY``
                               ``aws_secret_access_key``
session token                  ``fs.s3a.session.token``,         ``AWS_SESSION_TOKEN``
                               ``aws_session_token``
region                         ``fs.s3a.endpoint.region``,       ``AWS_REGION``,
                               ``aws_region``                    ``AWS_DEFAULT_REGION``
path-style addressing          ``fs.s3a.path.style.access``      (default: on with a custom
                                                                 endpoint, else auto)
=============================  ================================  =========================

Without credentials in the options, boto3's usual chain applies (environment, shared
config files, instance or container roles). An endpoint without a scheme gets
``https://`` (``http://`` when ``fs.s3a.connection.ssl.enabled`` is ``false``).

Example:
    ```python
    storage = storage_for("s3://my-bucket/tables/events",
                          {"fs.s3a.endpoint": "http://127.0.0.1:9000"})
    storage.put_if_absent("_delta_log/00000000000000000000.json", payload)
    ```
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote, urlsplit

from qbeast_connect.exceptions import (
    InvalidOptionError,
    MissingDependencyError,
    StorageError,
    UnsafePathError,
)

from ..uris import check_relative_path
from .base import FileInfo, Storage

__all__ = ["S3Config", "S3Storage", "conditional_put_checked"]

_T = TypeVar("_T")

_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-_]{1,61}[a-z0-9]$")
#: Objects up to this size are uploaded with one PutObject; larger ones in parts.
MULTIPART_THRESHOLD = 64 * 1024 * 1024
#: Part size of multipart uploads (S3 needs at least 5 MiB for every part but the last).
PART_BYTES = 16 * 1024 * 1024
#: Buffered output stays in memory up to this size, then spills to a temporary file.
SPOOL_BYTES = 16 * 1024 * 1024
#: Files up to this size are read with one GET by ``open_input``; larger ones by ranges.
WHOLE_READ_BYTES = 8 * 1024 * 1024
#: Read-ahead of ranged reads of large files.
READ_BUFFER_BYTES = 4 * 1024 * 1024
#: Times a conditional PUT answered ``409 ConditionalRequestConflict`` is sent again.
CONFLICT_RETRIES = 20

_OPTION_KEYS: dict[str, tuple[str, ...]] = {
    "endpoint": ("fs.s3a.endpoint", "aws_endpoint_url", "endpoint_url"),
    "access_key": ("fs.s3a.access.key", "aws_access_key_id"),
    "secret_key": ("fs.s3a.secret.key", "aws_secret_access_key"),
    "session_token": ("fs.s3a.session.token", "aws_session_token"),
    "region": ("fs.s3a.endpoint.region", "aws_region", "region"),
    "path_style": ("fs.s3a.path.style.access", "aws_s3_path_style"),
    "ssl": ("fs.s3a.connection.ssl.enabled",),
}
_ENV_KEYS: dict[str, tuple[str, ...]] = {
    "endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}

_clients: dict[tuple[int, S3Config], Any] = {}
_clients_lock = threading.Lock()
_checked_stores: set[tuple[str | None, str]] = set()


@dataclass(frozen=True, slots=True)
class S3Config:
    """How to reach the store (credentials are None to use boto3's default chain).

    Attributes:
        endpoint_url: ``http(s)://host:port`` of an S3-compatible store; None for AWS.
        region: Signing region.
        path_style: Address buckets in the path (``host/bucket/key``) instead of the host.
        access_key: Access key id, or None.
        secret_key: Secret access key, or None (never shown by ``repr``).
        session_token: Session token, or None (never shown by ``repr``).
    """

    endpoint_url: str | None
    region: str
    path_style: bool | None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_options(
        cls, options: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
    ) -> S3Config:
        """Resolve the settings from ``options``, then ``environ`` (default ``os.environ``).

        Raises:
            InvalidOptionError: A setting is malformed (a flag that is not true/false, an
                access key without its secret).
        """
        env = os.environ if environ is None else environ
        given: dict[str, str] = {}
        for key, value in (options or {}).items():
            name = str(key).strip().lower()
            name = name.removeprefix("spark.hadoop.")
            if value is not None and str(value).strip() != "":
                given[name] = str(value).strip()

        def option(setting: str) -> str | None:
            for key in _OPTION_KEYS[setting]:
                if key in given:
                    return given[key]
            return None

        def from_env(setting: str) -> str | None:
            for key in _ENV_KEYS.get(setting, ()):
                value = env.get(key)
                if value:
                    return value.strip()
            return None

        ssl = _flag(option("ssl"), "fs.s3a.connection.ssl.enabled", True)
        endpoint = option("endpoint") or from_env("endpoint")
        if endpoint is not None:
            if "://" not in endpoint:
                endpoint = ("https://" if ssl else "http://") + endpoint
            scheme = urlsplit(endpoint).scheme.lower()
            if scheme not in ("http", "https"):
                raise InvalidOptionError(
                    f"S3 endpoint {endpoint!r} must be an http:// or https:// URL"
                )
            endpoint = endpoint.rstrip("/")
        path_style_text = option("path_style")
        path_style = (
            _flag(path_style_text, "fs.s3a.path.style.access", False)
            if path_style_text is not None
            else (True if endpoint is not None else None)
        )
        access_key = option("access_key")
        secret_key = option("secret_key")
        if (access_key is None) != (secret_key is None):
            raise InvalidOptionError(
                "give both fs.s3a.access.key and fs.s3a.secret.key (or neither, to use the "
                "server's AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or its role)"
            )
        return cls(
            endpoint_url=endpoint,
            region=option("region") or from_env("region") or "us-east-1",
            path_style=path_style,
            access_key=access_key,
            secret_key=secret_key,
            session_token=option("session_token"),
        )


def _flag(value: str | None, key: str, default: bool) -> bool:
    if value is None:
        return default
    text = value.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {key} must be true or false, got {value!r}")


def _boto() -> tuple[Any, Any, Any, Any]:
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "tables on s3:// need boto3 in the server's Python environment, on the driver "
            "and every executor: pip install boto3 (a stock server with a shipped plugin) "
            "or pip install 'qbeast-connect[s3]'"
        ) from exc
    return boto3, Config, BotoCoreError, ClientError


def _client_for(config: S3Config) -> Any:
    """A boto3 S3 client for ``config``, shared by the threads of one process."""
    key = (os.getpid(), config)  # never reuse a client (and its sockets) across a fork
    client = _clients.get(key)
    if client is not None:
        return client
    boto3, config_class, _, _ = _boto()
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            session = boto3.session.Session(
                aws_access_key_id=config.access_key,
                aws_secret_access_key=config.secret_key,
                aws_session_token=config.session_token,
                region_name=config.region,
            )
            style = (
                "auto"
                if config.path_style is None
                else ("path" if config.path_style else "virtual")
            )
            settings: dict[str, Any] = {
                "s3": {"addressing_style": style},
                "retries": {"max_attempts": 5, "mode": "standard"},
                "connect_timeout": 10,
                "read_timeout": 120,
                "max_pool_connections": 32,
                # S3-compatible stores do not all accept the newer default checksums
                "request_checksum_calculation": "when_required",
                "response_checksum_validation": "when_required",
            }
            client = session.client(
                "s3", endpoint_url=config.endpoint_url, config=config_class(**settings)
            )
            _clients[key] = client
    return client


def _mtime_ms(value: Any) -> int:
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return 0


def _error_code(exc: Any) -> tuple[str, int]:
    response = getattr(exc, "response", None) or {}
    code = str((response.get("Error") or {}).get("Code", ""))
    status = int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    return code, status


def _is_missing(exc: Any) -> bool:
    code, status = _error_code(exc)
    return status == 404 or code in ("NoSuchKey", "404", "NotFound")


def _is_taken(exc: Any) -> bool:
    code, status = _error_code(exc)
    return status == 412 or code == "PreconditionFailed"


def _is_in_flight(exc: Any) -> bool:
    code, status = _error_code(exc)
    return status == 409 or code == "ConditionalRequestConflict"


def _not_supported(exc: Any) -> bool:
    code, status = _error_code(exc)
    return status == 501 or code == "NotImplemented"


def parse_s3_uri(uri: str) -> tuple[str, str, str]:
    """Split ``s3://bucket/prefix`` into ``(scheme, bucket, prefix)``.

    The prefix is percent-decoded and has no leading or trailing ``/``.

    Raises:
        InvalidOptionError: Not an ``s3``/``s3a`` URI, a bad bucket name, credentials,
            a query or a fragment in the URI.
        UnsafePathError: The prefix has ``..``, ``.`` or empty segments, a backslash or NUL.
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("s3", "s3a"):
        raise InvalidOptionError(f"{uri!r} is not an s3:// or s3a:// URI")
    if "@" in parts.netloc:
        raise InvalidOptionError(
            f"{uri.split('@')[-1]!r}: do not put credentials in a table location; set them "
            "in the server's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
        )
    if parts.query or parts.fragment:
        raise InvalidOptionError(f"S3 location {uri!r} must not have a query or a fragment")
    bucket = parts.netloc
    if not _BUCKET_RE.match(bucket) or ".." in bucket:
        raise InvalidOptionError(
            f"S3 location {uri!r} names bucket {bucket!r}, which is not a valid bucket name "
            "(3-63 lowercase letters, digits, '.', '-'); write s3://bucket/path/to/table"
        )
    raw = unquote(parts.path)
    if "\x00" in raw or "\\" in raw:
        raise UnsafePathError(f"S3 location {uri!r} contains a NUL or a backslash")
    prefix = raw.strip("/")
    if prefix:
        segments = prefix.split("/")
        if any(seg in ("", ".", "..") for seg in segments):
            raise UnsafePathError(
                f"S3 location {uri!r} has an empty, '.' or '..' segment; write the plain key "
                "prefix of the table, e.g. s3://bucket/tables/events"
            )
    return scheme, bucket, prefix


def conditional_put_checked(config: S3Config, bucket: str) -> bool:
    """Whether this process already verified that the store enforces ``If-None-Match``."""
    return (config.endpoint_url, bucket) in _checked_stores


class S3Storage(Storage):
    """Storage under one key prefix of an S3 (or S3-compatible) bucket.

    Every key this storage touches is ``<prefix>/<path relative to the table root>``, with
    the relative path checked by the same rules as local storage (no ``..``, no absolute
    paths, no schemes), so no operation can reach outside the table.

    Args:
        bucket: Bucket name.
        prefix: Key prefix of the table root (no leading or trailing ``/``; ``""`` for
            the bucket root).
        config: Endpoint, region and credentials.
        scheme: ``s3`` or ``s3a``, kept in :attr:`root_uri`.
    """

    def __init__(self, bucket: str, prefix: str, config: S3Config, *, scheme: str = "s3") -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.config = config
        self.scheme = scheme
        self.root = f"{scheme}://{bucket}" + (f"/{self.prefix}" if self.prefix else "")

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, str] | None = None) -> S3Storage:
        """The storage of ``s3://bucket/prefix``, configured by ``options`` and the env."""
        scheme, bucket, prefix = parse_s3_uri(uri)
        return cls(bucket, prefix, S3Config.from_options(options), scheme=scheme)

    def __repr__(self) -> str:
        endpoint = f", endpoint={self.config.endpoint_url!r}" if self.config.endpoint_url else ""
        return f"S3Storage({self.root!r}{endpoint})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, S3Storage)
            and other.bucket == self.bucket
            and other.prefix == self.prefix
            and other.config.endpoint_url == self.config.endpoint_url
        )

    def __hash__(self) -> int:
        return hash(("S3Storage", self.bucket, self.prefix, self.config.endpoint_url))

    # -- helpers ---------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The boto3 client (created once per process and configuration)."""
        return _client_for(self.config)

    @property
    def root_uri(self) -> str:
        """The table root as a URI (``s3://bucket/prefix``)."""
        return self.root

    def resolve(self, rel_path: str) -> str:
        """Return the URI of ``rel_path`` (``""`` = the root).

        Raises:
            UnsafePathError: ``rel_path`` escapes the root.
        """
        clean = check_relative_path(rel_path, allow_empty=True)
        return f"{self.root}/{clean}" if clean else self.root

    def key(self, rel_path: str) -> str:
        """The object key of a file (``rel_path`` non-empty and inside the root)."""
        clean = check_relative_path(rel_path)
        return f"{self.prefix}/{clean}" if self.prefix else clean

    def _dir_key(self, rel_dir: str) -> str:
        clean = check_relative_path(rel_dir, allow_empty=True)
        parts = [p for p in (self.prefix, clean) if p]
        return "/".join(parts) + "/" if parts else ""

    def _fail(self, action: str, rel_path: str, exc: BaseException) -> StorageError:
        hint = ""
        text = str(exc)
        if "credentials" in text.lower():
            hint = (
                "; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the Spark server's "
                "environment, or pass fs.s3a.access.key / fs.s3a.secret.key"
            )
        elif "Could not connect" in text:
            hint = "; check AWS_ENDPOINT_URL (fs.s3a.endpoint) in the Spark server's environment"
        return StorageError(f"cannot {action} {self.resolve(rel_path)}: {text}{hint}")

    def _reading(self, action: str, rel_path: str, call: Callable[[], _T]) -> _T:
        """Run one read request; a missing object is FileNotFoundError, else StorageError."""
        _, _, boto_error, client_error = _boto()
        try:
            return call()
        except client_error as exc:
            if _is_missing(exc):
                raise FileNotFoundError(f"{self.resolve(rel_path)} does not exist") from exc
            raise self._fail(action, rel_path, exc) from exc
        except boto_error as exc:
            raise self._fail(action, rel_path, exc) from exc

    def _head(self, rel_path: str) -> dict[str, Any]:
        def head() -> dict[str, Any]:
            return dict(self.client.head_object(Bucket=self.bucket, Key=self.key(rel_path)))

        return self._reading("read the size of", rel_path, head)

    def _get(self, rel_path: str, **kwargs: Any) -> bytes:
        def get() -> bytes:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key(rel_path), **kwargs)
            return bytes(response["Body"].read())

        return self._reading("read", rel_path, get)

    def _list(self, rel_dir: str, *, delimiter: bool, start_after: str | None) -> list[FileInfo]:
        _, _, boto_error, client_error = _boto()
        base = self._dir_key(rel_dir)
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": base}
        if delimiter:
            kwargs["Delimiter"] = "/"
        if start_after:
            kwargs["StartAfter"] = base + start_after
        out: list[FileInfo] = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(**kwargs):
                for obj in page.get("Contents") or ():
                    name = str(obj["Key"])[len(base) :]
                    if not name or name.endswith("/"):
                        continue  # the prefix itself, or a "directory" marker
                    if start_after is not None and delimiter and name <= start_after:
                        continue
                    out.append(
                        FileInfo(name, int(obj.get("Size", 0)), _mtime_ms(obj.get("LastModified")))
                    )
        except client_error as exc:
            if _error_code(exc)[0] == "NoSuchBucket":
                raise StorageError(
                    f"bucket {self.bucket!r} of {self.root} does not exist; create it first"
                ) from exc
            raise self._fail("list", rel_dir, exc) from exc
        except boto_error as exc:
            raise self._fail("list", rel_dir, exc) from exc
        out.sort(key=lambda f: f.name)
        return out

    # -- reading ---------------------------------------------------------------------

    def read_bytes(self, rel_path: str) -> bytes:
        """Return the content of an object."""
        return self._get(rel_path)

    def exists(self, rel_path: str) -> bool:
        """Return True if the object exists."""
        try:
            self._head(rel_path)
        except FileNotFoundError:
            return False
        return True

    def file_info(self, rel_path: str) -> FileInfo:
        """Return size and last-modified time (S3 keeps whole seconds) of an object."""
        head = self._head(rel_path)
        return FileInfo(rel_path, int(head["ContentLength"]), _mtime_ms(head.get("LastModified")))

    def list_prefix(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """List the objects directly under ``rel_dir/`` (``StartAfter`` for the hint)."""
        return self._list(rel_dir, delimiter=True, start_after=start_after)

    def list_files_recursive(self, rel_dir: str = "") -> list[FileInfo]:
        """List every object below ``rel_dir/``, with names relative to it."""
        return self._list(rel_dir, delimiter=False, start_after=None)

    def open_input(self, rel_path: str) -> BinaryIO:
        """Open an object for seekable binary reading (ranged GETs for large objects)."""
        size = int(self._head(rel_path)["ContentLength"])
        if size <= WHOLE_READ_BYTES:
            return io.BytesIO(self._get(rel_path))
        raw = _RangeReader(self, rel_path, size)
        return io.BufferedReader(raw, buffer_size=READ_BUFFER_BYTES)

    # -- writing ---------------------------------------------------------------------

    def _conditional_put(self, rel_path: str, data: bytes) -> bool:
        """One ``PutObject`` with ``If-None-Match: *``; True if created, False if taken."""
        _, _, boto_error, client_error = _boto()
        key = self.key(rel_path)
        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                self.client.put_object(Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*")
                return True
            except client_error as exc:
                if _is_taken(exc):
                    return False
                if _is_in_flight(exc) and attempt < CONFLICT_RETRIES:
                    time.sleep(random.uniform(0.005, 0.02 * (attempt + 1)))
                    continue
                if _not_supported(exc):
                    raise StorageError(
                        f"the store of {self.root} does not support conditional writes "
                        "(PutObject with If-None-Match: *), which atomic Delta commits need; "
                        "use AWS S3 or a compatible store that supports them"
                    ) from exc
                raise self._fail("create", rel_path, exc) from exc
            except boto_error as exc:
                raise self._fail("create", rel_path, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def check_conditional_put(self) -> None:
        """Verify once per process and store that ``If-None-Match: *`` is enforced.

        Writes a probe object twice under ``_delta_log/`` (the second write must be
        refused) and deletes it.

        Raises:
            StorageError: The store accepted the second write (it ignores the condition,
                so commits would not be atomic) or refused conditional writes.
        """
        marker = (self.config.endpoint_url, self.bucket)
        if marker in _checked_stores:
            return
        probe = f"_delta_log/.qbeast-conditional-put-{uuid.uuid4()}"
        try:
            if not self._conditional_put(probe, b"1"):  # pragma: no cover - a fresh uuid
                raise StorageError(f"probe object {self.resolve(probe)} existed already")
            if self._conditional_put(probe, b"2"):
                raise StorageError(
                    f"the store of {self.root} ignores If-None-Match on PutObject (a second "
                    "conditional write of one key succeeded), so two writers could both "
                    "commit the same version; refusing to commit. Use a store with "
                    "conditional writes"
                )
        finally:
            self.delete(probe)
        _checked_stores.add(marker)

    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        """Create an object only if absent: ``PutObject`` with ``If-None-Match: *``.

        ``412`` means the key exists (False); ``409 ConditionalRequestConflict`` is
        retried. A failure whose outcome is unknown raises ``StorageError`` (callers
        read the object back).
        """
        self.check_conditional_put()
        return self._conditional_put(rel_path, bytes(data))

    def put_atomic(self, rel_path: str, data: bytes) -> None:
        """Write an object, replacing any existing one, with one ``PutObject``."""
        _, _, boto_error, client_error = _boto()
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.key(rel_path), Body=bytes(data))
        except (client_error, boto_error) as exc:
            raise self._fail("write", rel_path, exc) from exc

    def delete(self, rel_path: str) -> None:
        """Delete an object; a missing object is not an error."""
        _, _, boto_error, client_error = _boto()
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key(rel_path))
        except client_error as exc:
            if _is_missing(exc):
                return
            raise self._fail("delete", rel_path, exc) from exc
        except boto_error as exc:
            raise self._fail("delete", rel_path, exc) from exc

    def open_output(self, rel_path: str) -> BinaryIO:
        """Open a new object for writing; it is uploaded when the stream is closed.

        The upload is conditional (``If-None-Match: *``): ``FileExistsError`` when the
        object exists. Leaving a ``with`` block by an exception uploads nothing.
        """
        self.key(rel_path)  # validate now, not at close
        return _Upload(self, rel_path)  # type: ignore[return-value]

    def _upload(self, rel_path: str, spool: Any, size: int) -> None:
        _, _, boto_error, client_error = _boto()
        key = self.key(rel_path)
        spool.seek(0)
        try:
            if size <= MULTIPART_THRESHOLD:
                created = self._conditional_put(rel_path, spool.read())
            else:
                created = self._multipart(key, spool)
        except (client_error, boto_error) as exc:
            raise self._fail("upload", rel_path, exc) from exc
        if not created:
            raise FileExistsError(f"{self.resolve(rel_path)} exists already")

    def _multipart(self, key: str, spool: Any) -> bool:
        _, _, _, client_error = _boto()
        client = self.client
        upload_id = client.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        try:
            parts = []
            number = 1
            while True:
                chunk = spool.read(PART_BYTES)
                if not chunk:
                    break
                etag = client.upload_part(
                    Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=chunk
                )["ETag"]
                parts.append({"ETag": etag, "PartNumber": number})
                number += 1
            try:
                client.complete_multipart_upload(
                    Bucket=self.bucket,
                    Key=key,
                    UploadId=upload_id,
                    MultipartUpload={"Parts": parts},
                    IfNoneMatch="*",
                )
            except client_error as exc:
                if _is_taken(exc):
                    client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
                    return False
                raise
            return True
        except BaseException:
            with contextlib.suppress(Exception):  # the original error matters more
                client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            raise


class _Upload(io.RawIOBase):
    """A write-only stream buffered in a spooled temporary file, uploaded at ``close``."""

    def __init__(self, storage: S3Storage, rel_path: str) -> None:
        super().__init__()
        self._storage = storage
        self._rel_path = rel_path
        self._spool: Any = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
        self._size = 0
        self._finished = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.closed or self._finished:
            raise ValueError("write to a closed upload stream")
        written = self._spool.write(data)
        self._size += written
        return int(written)

    def tell(self) -> int:
        return self._size

    def abort(self) -> None:
        """Discard everything written; nothing is uploaded."""
        if not self._finished:
            self._finished = True
            self._spool.close()
        super().close()

    def close(self) -> None:
        """Upload what was written (once), then close."""
        if self._finished:
            super().close()
            return
        self._finished = True
        try:
            self._storage._upload(self._rel_path, self._spool, self._size)
        finally:
            self._spool.close()
            super().close()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        # a stream dropped without close() (an error path) must not upload a partial file
        with contextlib.suppress(Exception):
            self.abort()


class _RangeReader(io.RawIOBase):
    """Seekable reads of one object by HTTP ranges."""

    def __init__(self, storage: S3Storage, rel_path: str, size: int) -> None:
        super().__init__()
        self._storage = storage
        self._rel_path = rel_path
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"bad whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._size - self._pos)
        if want <= 0:
            return 0
        end = self._pos + want - 1
        data = self._storage._get(self._rel_path, Range=f"bytes={self._pos}-{end}")
        n = len(data)
        view[:n] = data
        self._pos += n
        return n
