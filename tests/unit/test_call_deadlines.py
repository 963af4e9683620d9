"""Every call of our Connect sessions has a deadline: a server that accepts calls and never
answers them makes the client raise ServerUnavailableError, in bounded time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from qbeast_connect.exceptions import ServerUnavailableError
from qbeast_connect.spark.deadlines import CallDeadlines
from qbeast_connect.spark.timeouts import CALL_TIMEOUT_ENV, call_timeout

_SERVICE = "spark.connect.SparkConnectService"


class _SilentServer:
    """A gRPC server that accepts every Spark Connect call and answers none of them until
    it is stopped (as a server whose execution got stuck, or lost, would)."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.calls: list[str] = []
        self._server = grpc.server(ThreadPoolExecutor(max_workers=8))
        self._server.add_generic_rpc_handlers((_Handler(self),))
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    def hold(self, method: str) -> None:
        self.calls.append(method.rsplit("/", 1)[-1])
        self.stopping.wait(30)

    def __enter__(self) -> _SilentServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.stop(0)


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, server: _SilentServer) -> None:
        self.server = server

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = str(details.method)
        if not method.startswith(f"/{_SERVICE}/"):
            return None
        hold = self.server.hold

        if method.endswith(("/ExecutePlan", "/ReattachExecute")):

            def stream(request: bytes, context: Any) -> Iterator[bytes]:
                hold(method)
                yield from ()

            return grpc.unary_stream_rpc_method_handler(stream)

        def unary(request: bytes, context: Any) -> bytes:
            hold(method)
            return b""

        return grpc.unary_unary_rpc_method_handler(unary)


def _in_thread(call: Any, within: float) -> BaseException | None:
    """Run ``call``; fail the test when it has not returned ``within`` seconds."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(within)
    assert outcome, f"the call still waits for the server after {within} s"
    return outcome[0]


def test_a_query_the_server_never_answers_raises_within_the_call_deadline() -> None:
    from qbeast_connect.spark.session import _connect

    with _SilentServer() as server:
        spark, policy = _connect(f"sc://127.0.0.1:{server.port}", 0.3, call_s=0.2)
        try:
            policy.connected(0.3)
            start = time.monotonic()
            error = _in_thread(lambda: spark.range(3).collect(), within=10)
            elapsed = time.monotonic() - start
            # the server is taken for gone: later calls fail at once, without a new deadline
            start = time.monotonic()
            again = _in_thread(lambda: spark.range(1).collect(), within=10)
            again_s = time.monotonic() - start
        finally:
            policy.give_up()  # the session's clean-up calls get one attempt each
            spark.stop()  # and it is no longer the active session of later tests
    assert isinstance(error, ServerUnavailableError), repr(error)
    assert CALL_TIMEOUT_ENV in str(error) and "deadline of 0.2 s" in str(error)
    assert error.code == "QBEAST_SERVER_UNAVAILABLE"
    # the deadline, the retries within the 0.3 s budget, the last deadline: under 1 s
    assert elapsed < 5
    assert server.calls, "the query reached the server"
    assert isinstance(again, ServerUnavailableError) and again_s < 1


class _Details:
    def __init__(self, timeout: float | None) -> None:
        self.method = "/x/Y"
        self.timeout = timeout
        self.metadata = (("k", "v"),)
        self.credentials = None
        self.wait_for_ready = None
        self.compression = None


@pytest.mark.parametrize("kind", ["unary_unary", "unary_stream", "stream_unary", "stream_stream"])
def test_every_kind_of_call_gets_the_deadline_unless_it_has_one(kind: str) -> None:
    interceptor = CallDeadlines(7.5)
    seen: list[Any] = []
    intercept = getattr(interceptor, f"intercept_{kind}")
    intercept(lambda details, request: seen.append(details), _Details(None), "request")
    intercept(lambda details, request: seen.append(details), _Details(2.0), "request")
    assert [d.timeout for d in seen] == [7.5, 2.0]
    assert seen[0].method == "/x/Y" and seen[0].metadata == (("k", "v"),)


def test_call_timeout_comes_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CALL_TIMEOUT_ENV, raising=False)
    assert call_timeout() == 180.0
    monkeypatch.setenv(CALL_TIMEOUT_ENV, "42")
    assert call_timeout() == 42.0
    assert call_timeout(3) == 3.0


def test_a_query_without_reattachment_keeps_no_deadline() -> None:
    """Its one stream lasts as long as the query: a deadline would cut it short."""
    import pyspark.sql.connect.proto as pb2

    interceptor = CallDeadlines(7.5)
    seen: list[Any] = []
    details = _Details(None)
    details.method = "/spark.connect.SparkConnectService/ExecutePlan"
    plain = pb2.ExecutePlanRequest(session_id="s")
    reattachable = pb2.ExecutePlanRequest(session_id="s")
    reattachable.request_options.append(
        pb2.ExecutePlanRequest.RequestOption(
            reattach_options=pb2.ReattachOptions(reattachable=True)
        )
    )
    for request in (plain, reattachable):
        interceptor.intercept_unary_stream(lambda d, r: seen.append(d), details, request)
    assert [d.timeout for d in seen] == [None, 7.5]
