"""qbeast-spark 0.7's engine, built by the repo: Spark 3.5 (classic, its own JVM) with
Delta Lake 3.1.0, driven from a separate venv.

qbeast-spark 0.7.x runs on Spark 3.5.0 (Scala 2.12) and ``delta-spark`` 3.1.0. Its own jars
are not obtainable here, but that engine is: ``pyspark`` 3.5 from the Python registry (in a
venv of its own, since the project pins pyspark 4.2) and Delta's jars from
``reference.pom.xml`` through Maven. Both are cached under ``$QBEAST_REFERENCE_DIR`` (default
``~/.cache/qbeast-connect/reference``):

* ``spark35-venv``: the venv, built once in a temporary folder and renamed into place with
  its marker file written last, so an interrupted build is redone, never half used. (It
  is only ever run as ``spark35-venv/bin/python``: a moved venv works that way.)
* ``jars-delta-<version>``: the jars, fetched with ``mvn dependency:copy-dependencies``.

:class:`ReferenceEngine` runs ``driver.py`` in that venv: one JVM for a batch of commands,
one JSON command per line on its stdin, one JSON answer per line on its stdout.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from qbeast_connect.exceptions import MissingDependencyError
from qbeast_connect.spark.delta_jvm import maven_jars

HERE = Path(__file__).resolve().parent
POM_PATH = HERE / "reference.pom.xml"
DRIVER_PATH = HERE / "driver.py"

#: Spark version qbeast-spark 0.7 is built against (its ``Dependencies.sparkVersion``).
PYSPARK_VERSION = "3.5.0"
#: The venv's packages: the driver needs pyspark (and its py4j) only.
REQUIREMENTS = (f"pyspark=={PYSPARK_VERSION}",)

DIR_ENV = "QBEAST_REFERENCE_DIR"
_DONE = ".complete"


def reference_dir() -> Path:
    root = os.environ.get(DIR_ENV)
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "qbeast-connect" / "reference"


def delta_version() -> str:
    match = re.search(r"<delta\.version>([^<]+)</delta\.version>", POM_PATH.read_text())
    assert match is not None, f"{POM_PATH} names no delta.version"
    return match.group(1).strip()


def venv_python(*, timeout: float = 1800.0) -> Path:
    """The reference venv's python, building the venv on first use.

    Raises:
        MissingDependencyError: pip could not install the reference's packages (its output
            is in the message).
    """
    target = reference_dir() / "spark35-venv"
    wanted = "\n".join(REQUIREMENTS) + "\n"
    marker = target / _DONE
    if marker.is_file() and marker.read_text() == wanted:
        return target / "bin" / "python"
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".spark35-venv-", dir=target.parent))
    try:
        base = getattr(sys, "_base_executable", None) or sys.executable
        steps = [
            [base, "-m", "venv", str(staging)],
            [
                str(staging / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *REQUIREMENTS,
            ],
        ]
        for step in steps:
            try:
                done = subprocess.run(
                    step, capture_output=True, text=True, timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired as exc:
                raise MissingDependencyError(
                    f"building the reference venv did not finish within {timeout:.0f} s: "
                    f"{' '.join(step)}"
                ) from exc
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
                raise MissingDependencyError(
                    f"building the reference venv failed (exit code {done.returncode}) in "
                    f"'{' '.join(step)}'; check that this machine reaches the Python package "
                    f"registry. It said:\n{tail}"
                )
        (staging / _DONE).write_text(wanted)
        if target.exists():  # an older build (other requirements): replaced
            shutil.rmtree(target)
        try:
            staging.rename(target)
        except OSError:
            # another process finished first: its venv is complete, keep it
            if not (marker.is_file() and marker.read_text() == wanted):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target / "bin" / "python"


def reference_jars() -> list[str]:
    """Delta 3.1.0's jars (Scala 2.12), fetched with Maven on first use."""
    target = reference_dir() / f"jars-delta-{delta_version()}"
    return maven_jars(POM_PATH, target, f"Delta {delta_version()}'s jars")


# ------------------------------------------------------------------------------------------
# values between the two processes: JSON with tags for what JSON has no type for
# ------------------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """A JSON-safe form of a row value (datetimes are naive UTC)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return {"$ts": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"$bin": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(value, dict):
        if "$ts" in value:
            return dt.datetime.fromisoformat(value["$ts"])
        if "$date" in value:
            return dt.date.fromisoformat(value["$date"])
        if "$dec" in value:
            return Decimal(value["$dec"])
        if "$bin" in value:
            return base64.b64decode(value["$bin"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


class ReferenceError(RuntimeError):
    """The reference engine failed a command (its Python/JVM error is in the message)."""


class ReferenceEngine:
    """A long-lived ``driver.py`` on Spark 3.5 + Delta 3.1: one JVM for many commands."""

    def __init__(self, *, start_timeout: float = 240.0, argv: list[str] | None = None) -> None:
        """Start the driver; its JVM boots while the caller goes on (the first command,
        or :attr:`info`, waits for it). ``argv`` replaces the driver's command line (tests
        of this class run a small script that speaks the same protocol)."""
        if argv is None:
            argv = [str(venv_python()), str(DRIVER_PATH), ",".join(reference_jars())]
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in stop()
            prefix="qbeast-reference-", suffix=".log", delete=False
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))},
            "TZ": "UTC",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": "",
        }
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            cwd=reference_dir(),  # whatever Spark leaves in its working folder stays there
        )
        self._buffer = b""
        self._start_timeout = start_timeout
        self._info: dict[str, Any] | None = None
        self._lost: str | None = None  # why the driver was stopped, once it was

    @property
    def info(self) -> dict[str, Any]:
        """Versions of the running engine: Spark, Delta, Java, Scala, and its time zone."""
        if self._info is None:
            self._info = self.call({"op": "ping"}, timeout=self._start_timeout)
        return self._info

    def _log_tail(self) -> str:
        self.log.flush()
        text = Path(self.log.name).read_text(errors="replace")
        return "\n".join(text.splitlines()[-30:])

    def call(self, command: dict[str, Any], *, timeout: float = 180.0) -> Any:
        """Send one command; return its ``result`` (raises :class:`ReferenceError`)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if self._lost is not None:
            raise ReferenceError(f"the reference driver was stopped after {self._lost}")
        if self._info is None and command["op"] != "ping":
            self.info  # noqa: B018 - the JVM's start has a deadline of its own
        try:
            self.proc.stdin.write(json.dumps(encode_command(command)).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError as exc:
            raise ReferenceError(f"the reference driver died:\n{self._log_tail()}") from exc
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                # the answer may still come, and would be taken for the next command's:
                # the driver is stopped, and every later command fails with this reason
                self._lost = f"no answer to {command['op']} within {timeout:.0f} s"
                self.proc.kill()
                self.proc.wait()
                raise ReferenceError(f"the reference driver gave {self._lost}:\n{self._log_tail()}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise ReferenceError(
                        f"the reference driver exited ({self.proc.wait()}):\n{self._log_tail()}"
                    )
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        answer = json.loads(line)
        if "error" in answer:
            raise ReferenceError(f"{command['op']}: {answer['error']}")
        return decode(answer["result"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()  # the driver stops its session at end of input
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)


def encode_command(command: dict[str, Any]) -> dict[str, Any]:
    return {k: encode(v) for k, v in command.items()}
