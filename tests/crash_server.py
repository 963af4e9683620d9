"""Run a client against a server that kills itself at a crash point (``QBEAST_CRASH_AT``).

Shared by the crash suites (``integration/test_crash.py``, ``integration/test_stream.py``):
a server of its own is started with the crash point in its environment, a client script
runs against it in a subprocess, and the helper returns once the server has died at that
point; the client (left without a server) is killed and everything is cleaned up.
"""

from __future__ import annotations

import subprocess
import sys

from qbeast_connect.spark.server import LocalConnectServer

#: How long the server may take to reach its crash point (start, client, the job itself).
CRASH_WAIT_S = 300


#: Run before the client's own code: its imports (pyspark, pandas, pyarrow, the project)
#: take seconds, so they happen while the server starts; the client then waits for the
#: line on stdin that says the server is up.
_PRELUDE = "import sys, qbeast_connect, pyspark.sql.connect.session\nsys.stdin.readline()\n"


def run_until_crash(point: str, client_code: str, *args: str) -> None:
    """Run ``client_code`` (``python -c``, given the server's URL, then ``args``) until the
    server started with ``QBEAST_CRASH_AT=point`` kills itself; fail if it never does."""
    server = LocalConnectServer(master="local[2]", env={"QBEAST_CRASH_AT": point})
    client = subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + client_code, server.url, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        server.start()
        assert client.stdin is not None
        client.stdin.write(b"go\n")
        client.stdin.close()
        assert server.wait(CRASH_WAIT_S) is not None, f"the server did not crash at {point}"
    finally:
        client.kill()
        client.wait()
        server.stop()
