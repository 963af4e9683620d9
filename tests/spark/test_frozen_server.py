"""A server that keeps its connections but answers nothing (frozen with SIGSTOP) no longer
holds a client for ever: the call's deadline ends the wait with ServerUnavailableError."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import qbeast_connect as qc
from qbeast_connect.spark.session import _connect, embedded_server
from qbeast_connect.spark.timeouts import CALL_TIMEOUT_ENV


def test_a_frozen_server_fails_the_query_within_its_call_deadline(spark: Any) -> None:
    server = embedded_server()
    assert server is not None and server.pid is not None, "the tests run an embedded server"
    # a second session to the same server, with short limits (the suite's session keeps its own)
    other, policy = _connect(server.url, 30, call_s=3)
    policy.connected(3)
    outcome: list[BaseException | None] = []
    try:
        assert other.range(5).count() == 5
        os.killpg(server.pid, signal.SIGSTOP)
        try:
            start = time.monotonic()

            def query() -> None:
                try:
                    other.range(5).count()
                    outcome.append(None)
                except BaseException as exc:
                    outcome.append(exc)

            worker = threading.Thread(target=query, daemon=True)
            worker.start()
            worker.join(60)
            took = time.monotonic() - start
        finally:
            os.killpg(server.pid, signal.SIGCONT)
    finally:
        policy.give_up()  # its clean-up calls get one attempt each
        other.stop()
    assert outcome, "the query still waited for the frozen server after 60 s"
    error = outcome[0]
    assert isinstance(error, qc.ServerUnavailableError), repr(error)
    assert CALL_TIMEOUT_ENV in str(error) and "deadline of 3 s" in str(error)
    # the deadline, a retry within the 3 s budget and its deadline: about 6 s
    assert took < 30, f"{took:.0f} s"
    # the suite's own session was not affected: the server answers it again
    assert spark.range(7).count() == 7
