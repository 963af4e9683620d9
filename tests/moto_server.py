"""A standalone moto S3 server on a free loopback port, for the S3 tests."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

#: The environment variables through which boto3 (and Hadoop's S3 connector) find S3
#: endpoints, credentials and regions: tests remove them to prove settings come from elsewhere.
AWS_ENV_VARS = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: moto's server (as ``python -m moto.server`` runs it) with its conditional writes made
#: atomic. moto checks ``If-None-Match: *`` and then stores the object without a lock, so
#: under load two racing conditional PUTs of one key could both succeed, which S3 never
#: allows (seen here: two winners in ``test_put_if_absent_race_threads``). Requests that
#: carry the header are served one at a time; every other request stays concurrent.
_SERVER = """
import os, sys, threading
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication, MotoRequestHandler, create_backend_app,
)
host, port = sys.argv[1], int(sys.argv[2])
os.environ.setdefault("MOTO_PORT", str(port))
app = DomainDispatcherApplication(create_backend_app)
conditional = threading.Lock()

def serve(environ, start_response):
    if "HTTP_IF_NONE_MATCH" not in environ:
        return app(environ, start_response)
    with conditional:
        return list(app(environ, start_response))

run_simple(host, port, serve, threaded=True, request_handler=MotoRequestHandler)
"""


@contextlib.contextmanager
def moto_s3_server() -> Iterator[str]:
    """Run moto's S3 server (:data:`_SERVER`) until the block ends; yields its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto S3 server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()


def s3_client(url: str, access_key: str, secret_key: str) -> Any:
    """A boto3 S3 client of the test process for the loopback server at ``url``."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name="us-east-1",
    )
