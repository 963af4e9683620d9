"""S3 settings from the client: the scope of one plugin call, and the per-session store."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.spark.storage_options import (
    set_storage_options,
    storage_options,
    with_storage_options,
)
from server_plugin.delta.storage import S3Storage, storage_for
from server_plugin.delta.storage.scope import scoped_settings, storage_scope, storage_settings

SETTINGS = {
    "fs.s3a.endpoint": "http://127.0.0.1:9",
    "fs.s3a.endpoint.region": "eu-west-3",
    "fs.s3a.access.key": "scope-key",
    "fs.s3a.secret.key": "scope-secret",
}


@pytest.fixture(autouse=True)
def _no_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)


def _config(storage: Any) -> Any:
    assert isinstance(storage, S3Storage)
    return storage.config


def test_storage_for_uses_the_settings_of_the_call_in_progress() -> None:
    options = {**SETTINGS, "path": "s3://b/t", "plan": "{}"}  # other options are ignored
    with storage_scope(options):
        config = _config(storage_for("s3://bucket/table"))
    assert config.endpoint_url == "http://127.0.0.1:9"
    assert config.region == "eu-west-3"
    assert (config.access_key, config.secret_key) == ("scope-key", "scope-secret")
    assert "scope-secret" not in repr(config)
    outside = _config(storage_for("s3://bucket/table"))
    assert outside.endpoint_url is None and outside.access_key is None


def test_explicit_options_win_over_the_scope() -> None:
    with storage_scope(SETTINGS):
        config = _config(storage_for("s3://bucket/t", {"fs.s3a.endpoint": "http://other:1"}))
    assert config.endpoint_url == "http://other:1" and config.access_key is None


def test_scope_is_restored_after_a_failing_call_and_seen_by_its_threads() -> None:
    seen: list[dict[str, str] | None] = []
    with pytest.raises(RuntimeError), storage_scope({"spark.hadoop.FS.S3A.ENDPOINT": "http://h:1"}):
        thread = threading.Thread(target=lambda: seen.append(scoped_settings()))
        thread.start()
        thread.join()
        raise RuntimeError("task failed")
    assert seen == [{"fs.s3a.endpoint": "http://h:1"}]
    assert scoped_settings() is None  # a reused worker keeps nothing of the call


def test_storage_settings_keep_only_fs_s3a_keys() -> None:
    got = storage_settings({"columnsToIndex": "x", "spark.hadoop.fs.s3a.access.key": "k"})
    assert got == {"fs.s3a.access.key": "k"}


class _Builder:
    def __init__(self) -> None:
        self.options_given: dict[str, str] = {}

    def options(self, **options: str) -> _Builder:
        self.options_given.update(options)
        return self


def test_storage_options_are_kept_per_session_and_sent_with_each_call() -> None:
    one, two = SimpleNamespace(session_id="s-1"), SimpleNamespace(session_id="s-2")
    set_storage_options(one, SETTINGS)  # type: ignore[arg-type]
    try:
        assert storage_options(one) == SETTINGS  # type: ignore[arg-type]
        assert storage_options(two) == {}  # type: ignore[arg-type]
        builder = with_storage_options(_Builder(), one)  # type: ignore[arg-type]
        assert builder.options_given == SETTINGS
        assert with_storage_options(_Builder(), two).options_given == {}  # type: ignore[arg-type]
    finally:
        set_storage_options(one, None)  # type: ignore[arg-type]
    assert storage_options(one) == {}  # type: ignore[arg-type]


def test_unknown_storage_setting_is_refused() -> None:
    session = SimpleNamespace(session_id="s-3")
    with pytest.raises(InvalidOptionError, match=r"fs\.s3a\.secret\.kye"):
        set_storage_options(session, {"fs.s3a.secret.kye": "x"})  # type: ignore[arg-type]
    assert storage_options(session) == {}  # type: ignore[arg-type]
