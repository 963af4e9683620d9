"""A deadline on every gRPC call of the Spark Connect sessions qbeast-connect opens.

PySpark's Connect client gives none of its calls a deadline: a query's result stream,
the reattachment of a stream, the configuration and analysis calls, the error details it
fetches after a failed query, the releases it sends from a thread pool and the one a
checkpointed DataFrame sends when it is garbage collected. A server that accepts a call
and never answers it (a stuck execution, a lost operation) then keeps the client waiting
for ever, with nothing to say why.

:class:`CallDeadlines` is a gRPC client interceptor that gives each call without a
deadline of its own one of :func:`~qbeast_connect.spark.timeouts.call_timeout` seconds. A
server never legitimately stays silent that long: it ends every result stream after
``spark.connect.execute.reattachable.senderMaxStreamDuration`` (2 minutes by default, 10 s
on the servers ``qc.session()`` starts) and the client reattaches to continue the same
execution. A call that runs out of time fails with ``DEADLINE_EXCEEDED``; the session's
:class:`~qbeast_connect.spark.timeouts.BoundedRetryPolicy` tries it again (a stream by
reattaching, so a long query goes on) within its retry budget and then raises
:class:`~qbeast_connect.exceptions.ServerUnavailableError` naming this timeout.

One call is left without a deadline: a query whose client turned reattachment off
(``spark.client.disable_reattachable_execute()``). Its single stream lasts as long as the
query, so a deadline would cut long queries short, and retrying it would run it again.

Setting: ``session(..., call_timeout=)`` or the environment variable
``QBEAST_CONNECT_CALL_TIMEOUT`` (seconds, default 180).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from grpc import StreamStreamClientInterceptor as _StreamStream
from grpc import StreamUnaryClientInterceptor as _StreamUnary
from grpc import UnaryStreamClientInterceptor as _UnaryStream
from grpc import UnaryUnaryClientInterceptor as _UnaryUnary

__all__ = ["CallDeadlines"]


class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    """The details of one call, with a timeout, as gRPC interceptors pass them on."""

    def __init__(self, details: Any, timeout: float) -> None:
        self.method = details.method
        self.timeout = timeout
        self.metadata = details.metadata
        self.credentials = details.credentials
        self.wait_for_ready = getattr(details, "wait_for_ready", None)
        self.compression = getattr(details, "compression", None)


class CallDeadlines(_UnaryUnary, _UnaryStream, _StreamUnary, _StreamStream):  # type: ignore[misc]
    """Give every call that has no deadline one of ``seconds`` (calls that have one keep it).

    Args:
        seconds: the deadline of a call, counted from its start.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def bounded(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        """``details`` with a timeout: its own, else ``seconds``."""
        if getattr(details, "timeout", None) is not None:
            return details
        return _CallDetails(details, self.seconds)

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        return continuation(self.bounded(client_call_details), request)

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        if _unbounded_execution(client_call_details, request):
            return continuation(client_call_details, request)
        return continuation(self.bounded(client_call_details), request)

    def intercept_stream_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request_iterator: Any
    ) -> Any:
        return continuation(self.bounded(client_call_details), request_iterator)

    def intercept_stream_stream(
        self, continuation: Callable[..., Any], client_call_details: Any, request_iterator: Any
    ) -> Any:
        return continuation(self.bounded(client_call_details), request_iterator)


def _unbounded_execution(details: Any, request: Any) -> bool:
    """Whether the call is a query run without reattachment (a client that called
    ``disable_reattachable_execute()``): its one stream lasts as long as the query, so a
    deadline would cut long queries short, and a retry would run the query again."""
    if not str(getattr(details, "method", "")).endswith("/ExecutePlan"):
        return False
    options = getattr(request, "request_options", ())
    return not any(
        o.HasField("reattach_options") and o.reattach_options.reattachable for o in options
    )
