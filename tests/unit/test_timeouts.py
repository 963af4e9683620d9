"""The bounded retry policy of our Connect sessions, and the translation of a lost server."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from qbeast_connect.exceptions import InvalidOptionError, ServerUnavailableError
from qbeast_connect.spark.errors import translate_errors
from qbeast_connect.spark.timeouts import (
    CONNECT_TIMEOUT_ENV,
    RETRY_TIMEOUT_ENV,
    BoundedRetryPolicy,
    connect_timeout,
    retry_timeout,
)


class _RpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str = "Connection refused") -> None:
        super().__init__(details)
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return None


class _Clock:
    """A fake clock: ``sleep`` advances ``time.monotonic`` as seen by the policy."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        self.slept = 0.0
        monkeypatch.setattr("qbeast_connect.spark.timeouts.time.monotonic", lambda: self.now)

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def _run(policy: BoundedRetryPolicy, clock: _Clock, error: BaseException) -> int:
    from pyspark.sql.connect.client.retries import Retrying

    attempts = 0
    for attempt in Retrying([policy], sleep=clock.sleep):
        with attempt:
            attempts += 1
            raise error
    return attempts


def test_unavailable_server_is_retried_within_the_budget_then_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock(monkeypatch)
    policy = BoundedRetryPolicy("sc://h:1", budget=20.0)
    with pytest.raises(ServerUnavailableError, match="sc://h:1") as info:
        _run(policy, clock, _RpcError(grpc.StatusCode.UNAVAILABLE))
    assert 15.0 <= clock.slept <= 20.0
    assert "Connection refused" in str(info.value) and CONNECT_TIMEOUT_ENV in str(info.value)
    assert policy.gave_up
    # the server is now taken for gone: the next call fails at its first failure
    clock.slept = 0.0
    policy.connected(60.0)
    with pytest.raises(ServerUnavailableError, match="stopped answering") as again:
        _run(policy, clock, _RpcError(grpc.StatusCode.UNAVAILABLE))
    assert clock.slept == 0.0
    assert RETRY_TIMEOUT_ENV in str(again.value)


def test_errors_pyspark_does_not_retry_pass_through(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock(monkeypatch)
    policy = BoundedRetryPolicy("sc://h:1", budget=20.0)
    with pytest.raises(_RpcError):
        _run(policy, clock, _RpcError(grpc.StatusCode.INVALID_ARGUMENT, "bad plan"))
    with pytest.raises(ValueError):
        _run(policy, clock, ValueError("not a gRPC error"))
    assert clock.slept == 0.0 and not policy.gave_up


def test_a_call_that_recovers_does_not_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql.connect.client.retries import Retrying

    clock = _Clock(monkeypatch)
    policy = BoundedRetryPolicy("sc://h:1", budget=20.0)
    failures = iter(range(5))
    for attempt in Retrying([policy], sleep=clock.sleep):
        with attempt:
            if next(failures, None) is not None:
                raise _RpcError(grpc.StatusCode.UNAVAILABLE)
    assert not policy.gave_up and 0 < clock.slept < 20.0


def test_timeouts_come_from_arguments_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONNECT_TIMEOUT_ENV, raising=False)
    monkeypatch.delenv(RETRY_TIMEOUT_ENV, raising=False)
    assert connect_timeout() == 30.0 and retry_timeout() == 60.0
    monkeypatch.setenv(CONNECT_TIMEOUT_ENV, "7.5")
    monkeypatch.setenv(RETRY_TIMEOUT_ENV, "12")
    assert connect_timeout() == 7.5 and retry_timeout() == 12.0
    assert connect_timeout(3) == 3.0 and retry_timeout("4") == 4.0
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv(RETRY_TIMEOUT_ENV, bad)
        with pytest.raises(InvalidOptionError, match=RETRY_TIMEOUT_ENV):
            retry_timeout()
    with pytest.raises(InvalidOptionError, match="timeout argument"):
        connect_timeout(0)


def test_a_lost_server_that_escaped_the_retries_is_translated() -> None:
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    with pytest.raises(ServerUnavailableError, match="could not be reached"), translate_errors():
        raise _RpcError(grpc.StatusCode.UNAVAILABLE, "Socket closed")
    with pytest.raises(ServerUnavailableError), translate_errors():
        raise SparkConnectGrpcException(
            "<_MultiThreadedRendezvous: status = StatusCode.UNAVAILABLE, details = x>"
        )
    # other Spark errors are left alone
    with pytest.raises(SparkConnectGrpcException), translate_errors():
        raise SparkConnectGrpcException("[TABLE_OR_VIEW_NOT_FOUND] nope")
