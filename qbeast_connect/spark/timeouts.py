"""Bounded waits for Spark Connect sessions created by qbeast-connect.

PySpark's Connect client retries an unreachable server (gRPC ``UNAVAILABLE``) with a
policy whose waits add up to about ten minutes, and does so for every call: opening a
session, each query, the reattachment of a query whose stream broke, and the clean-up
calls it makes when the process exits. Against a dead server a program then hangs for
tens of minutes before failing with a gRPC error, and does not exit.

:class:`BoundedRetryPolicy` replaces that policy on our sessions. It retries the same
errors, with short backoffs, but only for a time budget counted from the first failure of
a call: :func:`connect_timeout` while :func:`~qbeast_connect.spark.session.session` opens
the session, :func:`retry_timeout` afterwards (an operation whose server went away).
When the budget is spent it raises :class:`~qbeast_connect.exceptions.ServerUnavailableError`
from inside the retry loop, so the error reaches the caller of any Spark call, ours or
the user's. From then on the session's server counts as gone: later failures are not
retried at all, so clean-up calls (releasing executions, the exit hook) fail at once and
the process exits; ``qc.session()`` opens a new session for the next call.

A server that accepts a call and never answers it is bounded too: every call of our
sessions has a deadline of :func:`call_timeout` seconds (``spark/deadlines.py``). A call
past its deadline fails with ``DEADLINE_EXCEEDED``, which this policy retries like a lost
connection (a result stream by reattaching to its execution), within the same budget, and
then raises :class:`~qbeast_connect.exceptions.ServerUnavailableError` naming the call
timeout.

Settings: ``session(..., connect_timeout=, retry_timeout=, call_timeout=)`` or the
environment variables ``QBEAST_CONNECT_TIMEOUT``, ``QBEAST_CONNECT_RETRY_TIMEOUT`` and
``QBEAST_CONNECT_CALL_TIMEOUT`` (seconds).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicy, RetryPolicyState

from qbeast_connect.exceptions import InvalidOptionError, ServerUnavailableError

__all__ = [
    "CALL_TIMEOUT_ENV",
    "CONNECT_TIMEOUT_ENV",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_RETRY_TIMEOUT",
    "RETRY_TIMEOUT_ENV",
    "BoundedRetryPolicy",
    "call_timeout",
    "connect_timeout",
    "retry_policy_of",
    "retry_timeout",
]

#: Seconds ``session()`` keeps trying to reach a server before giving up.
CONNECT_TIMEOUT_ENV = "QBEAST_CONNECT_TIMEOUT"
#: Seconds a call keeps retrying (reconnecting, reattaching) after losing its server.
RETRY_TIMEOUT_ENV = "QBEAST_CONNECT_RETRY_TIMEOUT"
#: Seconds one call to the server (one result stream) may last before it fails.
CALL_TIMEOUT_ENV = "QBEAST_CONNECT_CALL_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_RETRY_TIMEOUT = 60.0
#: Longer than the 2 minutes a Connect server streams a query's results before it ends
#: the stream for the client to reattach (senderMaxStreamDuration).
DEFAULT_CALL_TIMEOUT = 180.0

#: gRPC channel settings of our sessions: reconnect attempts at least every 5 s, so that a
#: server that comes back within the budget is found again (gRPC's default backoff grows
#: to 2 minutes, longer than any budget).
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.min_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 5000),
)


def _seconds(value: float | str | None, env: str, default: float) -> float:
    source = f"the {env} environment variable"
    if value is None:
        text = os.environ.get(env, "").strip()
        if not text:
            return default
        value, source = text, source
    else:
        source = "the timeout argument"
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise InvalidOptionError(f"{source} must be a number of seconds, got {value!r}") from None
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise InvalidOptionError(f"{source} must be a positive number of seconds, got {value!r}")
    return seconds


def connect_timeout(value: float | str | None = None) -> float:
    """Seconds to keep trying to reach a server when opening a session.

    ``value`` wins; otherwise ``QBEAST_CONNECT_TIMEOUT``; otherwise 30.

    Raises:
        InvalidOptionError: the value is not a positive number.
    """
    return _seconds(value, CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)


def retry_timeout(value: float | str | None = None) -> float:
    """Seconds a call keeps retrying after its server stopped answering.

    ``value`` wins; otherwise ``QBEAST_CONNECT_RETRY_TIMEOUT``; otherwise 60.

    Raises:
        InvalidOptionError: the value is not a positive number.
    """
    return _seconds(value, RETRY_TIMEOUT_ENV, DEFAULT_RETRY_TIMEOUT)


def call_timeout(value: float | str | None = None) -> float:
    """Seconds one call to the server may take before it fails with ``DEADLINE_EXCEEDED``.

    ``value`` wins; otherwise ``QBEAST_CONNECT_CALL_TIMEOUT``; otherwise 180.

    Raises:
        InvalidOptionError: the value is not a positive number.
    """
    return _seconds(value, CALL_TIMEOUT_ENV, DEFAULT_CALL_TIMEOUT)


def _deadline_exceeded(exception: BaseException) -> bool:
    """Whether ``exception`` is a gRPC call that ran out of its deadline."""
    code = getattr(exception, "code", None)
    if not callable(code):
        return False
    try:
        return getattr(code(), "name", None) == "DEADLINE_EXCEEDED"
    except Exception:  # a ``code`` of some other meaning
        return False


class BoundedRetryPolicy(RetryPolicy):
    """Retry what PySpark's default policy retries, for at most ``budget`` seconds per call.

    Calls past their deadline (``DEADLINE_EXCEEDED``, see ``spark/deadlines.py``) are
    retried too.

    Args:
        url: the server, named in the error.
        budget: seconds from a call's first failure to giving up.
        call_timeout: the deadline of each call, named in the error of a call that ran
            out of it (None: the calls have no deadline).
    """

    def __init__(self, url: str, budget: float, call_timeout: float | None = None) -> None:
        super().__init__(
            max_retries=None,
            initial_backoff=100,
            max_backoff=2000,
            backoff_multiplier=2.0,
            jitter=100,
            min_jitter_threshold=500,
            recognize_server_retry_delay=True,
            max_server_retry_delay=2000,
        )
        self._default = DefaultPolicy()
        self._lock = threading.Lock()
        self.url = url
        self.budget = budget
        self.call_timeout = call_timeout
        #: the environment variable that sets the budget in use, named in the error
        self.setting = CONNECT_TIMEOUT_ENV
        #: set once a call ran out of budget: the server is taken for gone
        self.gave_up = False
        #: why a call gave up first (what a later call's error repeats), and its setting
        self.gone_reason: tuple[str, str] | None = None

    def connected(self, budget: float) -> None:
        """The session is open: give later calls the operation budget."""
        self.budget = budget
        self.setting = RETRY_TIMEOUT_ENV

    def can_retry(self, exception: BaseException) -> bool:
        return bool(self._default.can_retry(exception)) or _deadline_exceeded(exception)

    def give_up(self) -> None:
        """Take the server for gone: later failures are not retried."""
        with self._lock:
            self.gave_up = True

    def to_state(self) -> RetryPolicyState:
        return _BoundedState(self)


def retry_policy_of(spark: Any) -> BoundedRetryPolicy | None:
    """The bounded policy of a session made by ``qc.session()`` (None for other sessions)."""
    client = getattr(spark, "client", None)
    policies: list[object] = list(getattr(client, "get_retry_policies", list)())
    return next((p for p in policies if isinstance(p, BoundedRetryPolicy)), None)


class _BoundedState(RetryPolicyState):
    """The retries of one call: started at its first failure, ended by the budget."""

    def __init__(self, policy: BoundedRetryPolicy) -> None:
        super().__init__(policy)
        self._bounded = policy
        self._started: float | None = None

    def next_attempt(self, exception: BaseException | None = None) -> int | None:
        policy = self._bounded
        now = time.monotonic()
        if self._started is None:
            self._started = now
        elapsed = now - self._started
        already_gone = policy.gave_up
        wait_ms = None if already_gone else super().next_attempt(exception)
        if wait_ms is None or elapsed + wait_ms / 1000 > policy.budget:
            policy.give_up()
            raise _unavailable(policy, exception, already_gone)
        return wait_ms


def _unavailable(
    policy: BoundedRetryPolicy,
    exception: BaseException | None,
    already_gone: bool,
) -> ServerUnavailableError:
    setting = policy.setting
    if exception is not None and _deadline_exceeded(exception) and policy.call_timeout:
        what = (
            f"did not answer a call within its deadline of {policy.call_timeout:g} s, "
            "nor when it was tried again"
        )
        setting = CALL_TIMEOUT_ENV
    else:
        what = f"did not answer within {policy.budget:g} s"
    with policy._lock:
        if policy.gone_reason is None:
            policy.gone_reason = (what, setting)
        first, first_setting = policy.gone_reason
    if already_gone:
        what = f"stopped answering earlier in this session: it {first}"
        # a call deadline names its own setting; a lost server, the budget now in force
        setting = first_setting if first_setting == CALL_TIMEOUT_ENV else policy.setting
    detail = ""
    if exception is not None:
        text = str(getattr(exception, "details", lambda: "")() or "") or str(exception)
        detail = f" (last error: {text.strip().splitlines()[0][:200]})" if text.strip() else ""
    error = ServerUnavailableError(
        f"the Spark Connect server at {policy.url} {what}{detail}. Check that it is running "
        "and reachable, "
        f"then call qc.session() again; if it is only slow, raise the limit with "
        f"{setting} (seconds)"
    )
    if exception is not None:
        error.__cause__ = exception
    return error
