"""Delta tables on S3: storage, commits, checkpoints and replay against a real S3 server.

A moto standalone server (``tests.moto_server``) runs on a free 127.0.0.1 port for the
whole module and is stopped at the end; every test uses its own bucket. The server
enforces ``If-None-Match: *`` on PutObject (checked first, below), so the races here are
decided by the store exactly as on AWS S3.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_testlib import append, create_table, write_data_file

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

from botocore.awsrequest import AWSResponse  # noqa: E402
from botocore.exceptions import ClientError, ReadTimeoutError  # noqa: E402

import server_plugin.delta.storage.s3 as s3mod  # noqa: E402
from qbeast_connect.exceptions import (  # noqa: E402
    CommitConflictError,
    InvalidOptionError,
    StorageError,
    UnsafePathError,
)
from server_plugin.delta.actions import AddFile, RemoveFile  # noqa: E402
from server_plugin.delta.checkpoint import read_checkpoint  # noqa: E402
from server_plugin.delta.committer import commit  # noqa: E402
from server_plugin.delta.conflicts import TransactionReadSet  # noqa: E402
from server_plugin.delta.log_files import (  # noqa: E402
    LAST_CHECKPOINT_PATH,
    read_last_checkpoint,
)
from server_plugin.delta.log_reader import latest_version, read_snapshot  # noqa: E402
from server_plugin.delta.storage import storage_for  # noqa: E402
from server_plugin.delta.storage.s3 import S3Config, S3Storage, parse_s3_uri  # noqa: E402
from tests.moto_server import free_port as _free_port  # noqa: E402
from tests.moto_server import moto_s3_server  # noqa: E402

ACCESS_KEY = "qbeast-test-key"
SECRET_KEY = "qbeast-test-secret"  # moto accepts any credentials


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on loopback for this module; its URL."""
    with moto_s3_server() as url:
        yield url


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment variables a server would have; set in this process too."""
    env = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    return env


@pytest.fixture
def bucket(s3_env: dict[str, str]) -> str:
    """A new empty bucket."""
    name = f"qb-{uuid.uuid4().hex[:16]}"
    _raw_client(s3_env["AWS_ENDPOINT_URL"]).create_bucket(Bucket=name)
    return name


def _raw_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
    )


def _keys(endpoint: str, bucket: str) -> list[str]:
    page = _raw_client(endpoint).list_objects_v2(Bucket=bucket)
    return sorted(o["Key"] for o in page.get("Contents") or ())


# ------------------------------------------------------------------------ the store itself


def test_moto_enforces_if_none_match(s3_endpoint: str, bucket: str) -> None:
    """The premise of every race below: a second conditional PUT of a key gets 412."""
    client = _raw_client(s3_endpoint)
    client.put_object(Bucket=bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as info:
        client.put_object(Bucket=bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert info.value.response["Error"]["Code"] == "PreconditionFailed"
    assert client.get_object(Bucket=bucket, Key="k")["Body"].read() == b"first"


# ----------------------------------------------------------------------------- storage API


def test_storage_operations(s3_endpoint: str, bucket: str) -> None:
    storage = storage_for(f"s3://{bucket}/tables/t")
    assert isinstance(storage, S3Storage)
    assert storage.root_uri == f"s3://{bucket}/tables/t"
    assert storage.config.endpoint_url == s3_endpoint
    assert storage.config.path_style is True

    assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"v0")
    assert not storage.put_if_absent("_delta_log/00000000000000000000.json", b"other")
    assert storage.read_bytes("_delta_log/00000000000000000000.json") == b"v0"
    assert storage.put_if_absent("_delta_log/00000000000000000001.json", b"v1")
    storage.put_atomic("_delta_log/_last_checkpoint", b"{}")
    storage.put_atomic("_delta_log/_last_checkpoint", b'{"version":1}')  # overwrite allowed
    assert storage.read_bytes("_delta_log/_last_checkpoint") == b'{"version":1}'

    names = [f.name for f in storage.list_prefix("_delta_log")]
    assert names == [
        "00000000000000000000.json",
        "00000000000000000001.json",
        "_last_checkpoint",
    ]
    after = storage.list_prefix("_delta_log", start_after="00000000000000000000.json")
    assert [f.name for f in after] == ["00000000000000000001.json", "_last_checkpoint"]
    assert storage.list_prefix("missing") == []

    with storage.open_output("part-1.parquet") as out:
        out.write(b"abc")
        out.write(b"def")
    info = storage.file_info("part-1.parquet")
    assert info.size == 6 and abs(info.mtime_ms - time.time() * 1000) < 120_000
    assert storage.exists("part-1.parquet") and not storage.exists("part-2.parquet")
    with pytest.raises(FileExistsError), storage.open_output("part-1.parquet") as out:
        out.write(b"x")
    assert storage.read_bytes("part-1.parquet") == b"abcdef"
    with pytest.raises(RuntimeError), storage.open_output("sub/part-3.parquet") as out:
        out.write(b"partial")
        raise RuntimeError("task failed mid-file")
    assert not storage.exists("sub/part-3.parquet")  # nothing half-written is uploaded
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("nope")
    with pytest.raises(FileNotFoundError):
        storage.file_info("nope")
    with pytest.raises(FileNotFoundError):
        storage.open_input("nope")

    recursive = [f.name for f in storage.list_files_recursive("")]
    assert recursive == [
        "_delta_log/00000000000000000000.json",
        "_delta_log/00000000000000000001.json",
        "_delta_log/_last_checkpoint",
        "part-1.parquet",
    ]
    storage.delete("part-1.parquet")
    storage.delete("part-1.parquet")  # missing: not an error
    assert not storage.exists("part-1.parquet")
    # the conditional-put probe cleaned up after itself
    assert all(".qbeast-conditional-put" not in k for k in _keys(s3_endpoint, bucket))


def test_large_objects_multipart_and_ranged_reads(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3mod, "MULTIPART_THRESHOLD", 6 * 1024 * 1024)
    monkeypatch.setattr(s3mod, "PART_BYTES", 5 * 1024 * 1024)
    monkeypatch.setattr(s3mod, "SPOOL_BYTES", 1024 * 1024)
    monkeypatch.setattr(s3mod, "WHOLE_READ_BYTES", 64 * 1024)
    storage = storage_for(f"s3a://{bucket}/big")
    n = 1_500_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.float64())})
    with storage.open_output("data.parquet") as out:
        pq.write_table(table, out, compression=None)
    size = storage.file_info("data.parquet").size
    assert size > s3mod.MULTIPART_THRESHOLD  # took the multipart path
    with storage.open_input("data.parquet") as source:  # ranged reads, footer first
        parquet = pq.ParquetFile(source)
        assert parquet.metadata.num_rows == n
        assert parquet.read(columns=["id"]).column(0).to_pylist()[-3:] == [n - 3, n - 2, n - 1]
    with pytest.raises(FileExistsError), storage.open_output("data.parquet") as out:
        pq.write_table(table, out, compression=None)
    assert storage.file_info("data.parquet").size == size


def test_paths_stay_inside_the_table(bucket: str) -> None:
    storage = storage_for(f"s3://{bucket}/tables/t")
    assert isinstance(storage, S3Storage)
    assert storage.resolve("") == f"s3://{bucket}/tables/t"
    assert storage.resolve("a/./b.parquet") == f"s3://{bucket}/tables/t/a/b.parquet"
    assert storage.key("_delta_log/0.json") == "tables/t/_delta_log/0.json"
    for bad in ["../t2/x.parquet", "a/../../x", "/etc/passwd", "s3://other/x", "a\\b", "x\x00"]:
        with pytest.raises(UnsafePathError):
            storage.read_bytes(bad)
        with pytest.raises(UnsafePathError):
            storage.put_if_absent(bad, b"x")
        with pytest.raises(UnsafePathError):
            storage.open_output(bad)
    # a sibling table whose name extends this one is not listed as ours
    sibling = storage_for(f"s3://{bucket}/tables/t2")
    sibling.put_atomic("x.parquet", b"1")
    storage.put_atomic("y.parquet", b"2")
    assert [f.name for f in storage.list_files_recursive()] == ["y.parquet"]
    assert [f.name for f in storage.list_prefix("")] == ["y.parquet"]
    root_table = storage_for(f"s3://{bucket}")
    assert root_table.resolve("a") == f"s3://{bucket}/a"


@pytest.mark.parametrize(
    ("uri", "error"),
    [
        ("s3://b/t", InvalidOptionError),  # bucket names have 3+ characters
        ("s3://Bad_Bucket!/t", InvalidOptionError),
        ("s3://key:secret@bucket/t", InvalidOptionError),
        ("s3://bucket/t?versionId=1", InvalidOptionError),
        ("s3://bucket/a/../b", UnsafePathError),
        ("s3://bucket/a//b", UnsafePathError),
        ("s3://bucket/a/%2e%2e/b", UnsafePathError),
    ],
)
def test_bad_s3_locations_are_refused(uri: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        storage_for(uri)


def test_parse_s3_uri() -> None:
    assert parse_s3_uri("s3://bucket/a/b/") == ("s3", "bucket", "a/b")
    assert parse_s3_uri("S3A://bucket/a%20b") == ("s3a", "bucket", "a b")
    assert parse_s3_uri("s3://bucket") == ("s3", "bucket", "")


def test_config_from_options_then_environment() -> None:
    env = {
        "AWS_ENDPOINT_URL": "http://env-host:9000",
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "from-env",
    }
    from_env = S3Config.from_options(None, env)
    assert from_env.endpoint_url == "http://env-host:9000"
    assert from_env.region == "eu-west-1"
    assert from_env.path_style is True
    assert from_env.access_key is None  # boto3's chain reads the environment itself
    given = S3Config.from_options(
        {
            "spark.hadoop.fs.s3a.endpoint": "minio:9000",
            "fs.s3a.connection.ssl.enabled": "false",
            "FS.S3A.ACCESS.KEY": "k",
            "fs.s3a.secret.key": "very-secret",
            "fs.s3a.path.style.access": "false",
            "aws_region": "us-west-2",
        },
        env,
    )
    assert given.endpoint_url == "http://minio:9000"
    assert (given.access_key, given.secret_key, given.region) == ("k", "very-secret", "us-west-2")
    assert given.path_style is False
    assert "very-secret" not in repr(given)
    aws = S3Config.from_options({}, {})
    assert (aws.endpoint_url, aws.region, aws.path_style) == (None, "us-east-1", None)
    assert S3Config.from_options({}, {"AWS_ENDPOINT_URL_S3": "https://s3.example"}).endpoint_url
    with pytest.raises(InvalidOptionError, match="both"):
        S3Config.from_options({"fs.s3a.access.key": "k"}, {})
    with pytest.raises(InvalidOptionError, match="true or false"):
        S3Config.from_options({"fs.s3a.path.style.access": "maybe"}, {})
    with pytest.raises(InvalidOptionError, match="http"):
        S3Config.from_options({"fs.s3a.endpoint": "ftp://x"}, {})


def test_bad_credentials_and_missing_bucket_raise_storage_errors(
    s3_endpoint: str, bucket: str
) -> None:
    missing = storage_for(f"s3://qb-no-such-bucket-{uuid.uuid4().hex[:8]}/t")
    with pytest.raises(StorageError, match="does not exist"):
        missing.list_prefix("_delta_log")
    unreachable = storage_for(
        f"s3://{bucket}/t", {"fs.s3a.endpoint": f"http://127.0.0.1:{_free_port()}"}
    )
    with pytest.raises(StorageError, match="endpoint"):
        unreachable.read_bytes("x")


# ------------------------------------------------------------ conditional writes, edge cases


def test_store_ignoring_if_none_match_is_refused(s3_endpoint: str, bucket: str) -> None:
    """A store that drops the condition would let two writers both win: refuse to commit."""
    port = s3_endpoint.rsplit(":", 1)[1]
    # a distinct endpoint spelling: its own client and its own once-per-store check
    storage = storage_for(f"s3://{bucket}/t", {"fs.s3a.endpoint": f"http://localhost:{port}"})
    assert isinstance(storage, S3Storage)

    def drop_condition(request: Any, **_: Any) -> None:
        if "If-None-Match" in request.headers:
            del request.headers["If-None-Match"]

    storage.client.meta.events.register("before-sign.s3.PutObject", drop_condition)
    try:
        with pytest.raises(StorageError, match="ignores If-None-Match"):
            storage.put_if_absent("_delta_log/00000000000000000000.json", b"x")
        assert not storage.exists("_delta_log/00000000000000000000.json")
        assert not s3mod.conditional_put_checked(storage.config, bucket)
    finally:
        storage.client.meta.events.unregister("before-sign.s3.PutObject", drop_condition)
    assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"x")
    assert s3mod.conditional_put_checked(storage.config, bucket)


def test_409_conditional_request_conflict_is_retried(bucket: str) -> None:
    """S3 answers 409 while another conditional write to the key is in flight: send it again."""
    storage = storage_for(f"s3://{bucket}/t")
    assert isinstance(storage, S3Storage)
    storage.check_conditional_put()
    calls = {"n": 0}
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict'
        b"</Code><Message>A conflicting conditional operation is in progress</Message></Error>"
    )

    def conflict_twice(request: Any, **_: Any) -> AWSResponse | None:
        if request.method != "PUT":
            return None
        calls["n"] += 1
        if calls["n"] <= 2:
            return AWSResponse(request.url, 409, {}, _Raw(body))
        return None

    storage.client.meta.events.register("before-send.s3.PutObject", conflict_twice)
    try:
        assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"x")
        assert calls["n"] == 3
        assert not storage.put_if_absent("_delta_log/00000000000000000000.json", b"y")
    finally:
        storage.client.meta.events.unregister("before-send.s3.PutObject", conflict_twice)
    assert storage.read_bytes("_delta_log/00000000000000000000.json") == b"x"


class _Raw:
    """The minimal raw body botocore reads from a stubbed response."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def test_lost_response_after_the_put_landed_is_not_a_double_commit(bucket: str) -> None:
    """The PUT created N.json but the answer was lost: the committer reads N back, finds its
    own txnId, and reports N (no second commit, no failure)."""
    storage = storage_for(f"s3://{bucket}/t")
    assert isinstance(storage, S3Storage)
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    create_table(storage, data)
    storage.check_conditional_put()
    add = write_data_file(storage, pa.table({"id": pa.array([3], pa.int64())}))
    lost = {"n": 0}

    def lose_answer(http_response: Any, parsed: Any, model: Any, **_: Any) -> None:
        if lost["n"] == 0:
            lost["n"] += 1
            raise ReadTimeoutError(endpoint_url="stub")

    storage.client.meta.events.register("after-call.s3.PutObject", lose_answer)
    try:
        version = commit(
            storage,
            [add],
            TransactionReadSet.blind_append(0),
            operation="WRITE",
            operation_parameters={"mode": "Append"},
        )
    finally:
        storage.client.meta.events.unregister("after-call.s3.PutObject", lose_answer)
    assert lost["n"] == 1 and version == 1
    assert latest_version(storage) == 1
    assert len(read_snapshot(storage).files) == 2


# ------------------------------------------------------------------ the Delta log on S3


def test_commits_checkpoints_and_replay_on_s3(s3_env: dict[str, str], bucket: str) -> None:
    storage = storage_for(f"s3://{bucket}/tables/events")
    create_table(
        storage,
        pa.table({"id": pa.array([0], pa.int64())}),
        configuration={"delta.checkpointInterval": "5"},
    )
    for i in range(1, 12):
        append(storage, pa.table({"id": pa.array([i], pa.int64())}))
    hint = read_last_checkpoint(storage)
    assert hint is not None and hint.version == 10
    assert storage.exists("_delta_log/00000000000000000005.checkpoint.parquet")
    assert storage.exists("_delta_log/00000000000000000010.checkpoint.parquet")
    actions = read_checkpoint(storage, 10)
    assert sum(1 for a in actions if isinstance(a, AddFile)) == 11

    snapshot = read_snapshot(storage)
    assert snapshot.version == 11 and len(snapshot.files) == 12
    ids = []
    for key in sorted(snapshot.files):
        with storage.open_input(key) as source:
            ids += pq.read_table(source).column("id").to_pylist()
    assert sorted(ids) == list(range(12))
    assert read_snapshot(storage, 3).version == 3 and len(read_snapshot(storage, 3).files) == 4

    # a stale hint (an older writer's) never regresses the replay
    storage.put_atomic(LAST_CHECKPOINT_PATH, json.dumps({"version": 5}).encode())
    assert read_snapshot(storage).version == 11

    # another Delta implementation (delta-rs) reads the table we wrote on S3
    deltalake = pytest.importorskip("deltalake")
    table = deltalake.DeltaTable(
        f"s3://{bucket}/tables/events",
        storage_options={
            "AWS_ENDPOINT_URL": s3_env["AWS_ENDPOINT_URL"],
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        },
    )
    assert table.version() == 11
    assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == list(range(12))


def test_double_commit_race_exactly_one_writer_wins(bucket: str) -> None:
    """Two transactions that conflict (each removes the same file) are held at a barrier
    and then send their conditional PUT for the same version together: the store lets one
    in, the other re-checks against the winner and fails; the log has one commit."""
    storage = storage_for(f"s3://{bucket}/t")
    assert isinstance(storage, S3Storage)
    create_table(storage, pa.table({"id": pa.array([1], pa.int64())}))
    storage.check_conditional_put()
    snapshot = read_snapshot(storage)
    (old_key,) = snapshot.files
    old = snapshot.files[old_key]

    for round_ in range(3):
        barrier = threading.Barrier(2, timeout=30)
        target = f"_delta_log/{snapshot.version + 1:020d}.json"

        class Held(S3Storage):
            def put_if_absent(self, rel_path: str, data: bytes) -> bool:
                if rel_path == target:
                    barrier.wait()
                return super().put_if_absent(rel_path, data)

        results: dict[int, Any] = {}

        def rewrite(writer: int) -> None:
            held = Held(storage.bucket, storage.prefix, storage.config)
            add = write_data_file(held, pa.table({"id": pa.array([1], pa.int64())}))
            remove = RemoveFile(old.path, int(time.time() * 1000), data_change=False, size=old.size)
            try:
                results[writer] = commit(
                    held,
                    [remove, add],
                    TransactionReadSet(
                        read_version=snapshot.version, read_files=frozenset({old_key})
                    ),
                    operation="OPTIMIZE",
                    operation_parameters={"writer": writer, "round": round_},
                    txn_id=f"writer-{writer}-{round_}",
                )
            except CommitConflictError as exc:
                results[writer] = exc

        threads = [threading.Thread(target=rewrite, args=(w,)) for w in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        wins = [w for w, r in results.items() if isinstance(r, int)]
        losses = [w for w, r in results.items() if isinstance(r, CommitConflictError)]
        assert len(wins) == 1 and len(losses) == 1, results
        assert results[wins[0]] == snapshot.version + 1
        assert latest_version(storage) == snapshot.version + 1  # the loser left no version
        landed = json.loads(storage.read_bytes(target).split(b"\n")[0])["commitInfo"]
        assert landed["txnId"] == f"writer-{wins[0]}-{round_}"
        snapshot = read_snapshot(storage)
        (old_key,) = snapshot.files
        old = snapshot.files[old_key]


def test_put_if_absent_race_threads(bucket: str) -> None:
    """8 writers released together on one key, 10 times: always exactly one creator, and
    the object holds that creator's bytes."""
    storage = storage_for(f"s3://{bucket}/t")
    assert isinstance(storage, S3Storage)
    storage.check_conditional_put()
    for round_ in range(10):
        barrier = threading.Barrier(8, timeout=30)
        won: list[int] = []
        key = f"_delta_log/{round_:020d}.json"

        def race(writer: int, key: str = key, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            if storage.put_if_absent(key, f"writer {writer}".encode() * 1000):
                won.append(writer)

        threads = [threading.Thread(target=race, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(won) == 1, won
        assert storage.read_bytes(key) == f"writer {won[0]}".encode() * 1000


# ----------------------------------------------------------- server plugin pieces, no Spark


def test_plugin_write_convert_and_vacuum_on_s3(bucket: str) -> None:
    """The plugin's write task and commit, convert and vacuum, all on an s3:// table."""
    from qbeast_connect.write_plan import WritePlan
    from server_plugin.commands import run_command
    from server_plugin.delta.schema import arrow_schema_to_delta
    from server_plugin.writer import commit_write, write_task

    uri = f"s3://{bucket}/plain"
    data = pa.table({"x": pa.array(range(100), pa.int64()), "y": pa.array([1.5] * 100)})
    plan = WritePlan(
        table_path=uri,
        mode="append",
        read_version=-1,
        revision_json=None,
        schema_string=arrow_schema_to_delta(data.schema),
        configuration={},
        txn_id=str(uuid.uuid4()),
    )
    message = write_task(plan, iter(data.to_batches(max_chunksize=40)))
    assert commit_write(plan, [message]) == 0
    storage = storage_for(uri)
    snapshot = read_snapshot(storage)
    assert sum(json.loads(a.stats)["numRecords"] for a in snapshot.files.values()) == 100

    # convert a parquet directory on S3 into a qbeast table (files read from S3)
    source = storage_for(f"s3://{bucket}/parquet-dir")
    for part in range(2):
        with source.open_output(f"part-{part}.parquet") as out:
            pq.write_table(data.slice(part * 50, 50), out)
    rows = list(
        run_command(
            {
                "command": "convert",
                "path": f"s3://{bucket}/parquet-dir",
                "columnsToIndex": "x",
                "cubeSize": 1000,
            }
        )
    )
    assert json.loads(rows[0][1]) == {"version": 0, "converted": True, "files": 2}
    converted = read_snapshot(source)
    assert converted.metadata.configuration["qbeast.lastRevisionID"] == "0"
    assert len(converted.files) == 2

    # vacuum deletes an orphan, keeps live files and the log
    source.put_atomic("orphan.parquet", b"junk")
    rows = list(
        run_command(
            {
                "command": "vacuum",
                "path": f"s3://{bucket}/parquet-dir",
                "retentionHours": 0,
                "enforceRetentionDuration": False,
            }
        )
    )
    assert json.loads(rows[0][1])["files"] == ["orphan.parquet"]
    assert not source.exists("orphan.parquet")
    assert all(source.exists(key) for key in converted.files)
    assert read_snapshot(source).version == 0


def test_local_storage_open_input(tmp_path: Path) -> None:
    """``open_input`` is part of every storage: convert and the plugin reader use it."""
    storage = storage_for(str(tmp_path / "t"))
    with storage.open_output("a.parquet") as out:
        pq.write_table(pa.table({"id": [1, 2]}), out)
    with storage.open_input("a.parquet") as source:
        assert pq.read_table(source).column("id").to_pylist() == [1, 2]
    with pytest.raises(FileNotFoundError):
        storage.open_input("missing.parquet")
    with pytest.raises(UnsafePathError):
        storage.open_input("../outside.parquet")
