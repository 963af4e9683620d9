"""Every wait is bounded: dead servers give ServerUnavailableError, dead clients free the server.

Each test runs its clients as subprocesses with small timeouts (``QBEAST_CONNECT_TIMEOUT``,
``QBEAST_CONNECT_RETRY_TIMEOUT``) and checks they end, with the project's error, well within
the bound; the tests that kill a server start a server of their own, the one that kills
a client uses the suite's server (which outlives the client).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from qbeast_connect.spark.server import LocalConnectServer, free_port

pytestmark = pytest.mark.slow

REPO = str(Path(__file__).resolve().parent.parent)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SPARK_REMOTE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH", "")) if p)
    env["QBEAST_CONNECT_PROGRESS"] = "0"
    env.update(extra)
    return env


def _python(code: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=_env(**env),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str], within: float) -> tuple[str, str]:
    try:
        return process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the process did not exit within {within:.0f} s:\n{out}\n{err[-3000:]}")


def _wait_for_running_tasks(markers: Path, tasks: int, client: subprocess.Popen[str]) -> None:
    """Wait until ``tasks`` tasks of the client's slow UDF have started (each leaves a marker)."""
    deadline = time.monotonic() + 120
    while len(list(markers.iterdir())) < tasks:
        assert client.poll() is None, client.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"only {sorted(markers.iterdir())} tasks started"
        time.sleep(0.2)


def test_session_to_a_dead_port_raises_server_unavailable_and_the_process_exits() -> None:
    code = """
        import time
        import qbeast_connect as qc
        from qbeast_connect.exceptions import ServerUnavailableError
        start = time.monotonic()
        try:
            qc.session("sc://localhost:1")
        except ServerUnavailableError as exc:
            print("raised", type(exc).__name__, round(time.monotonic() - start, 1))
            print("message", exc)
        # the process must then exit by itself: no client thread may keep it alive
    """
    started = time.monotonic()
    process = _python(code, QBEAST_CONNECT_TIMEOUT="5")
    out, err = _finish(process, within=60)
    took = time.monotonic() - started
    assert process.returncode == 0, err[-3000:]
    assert "raised ServerUnavailableError" in out, err[-3000:]
    assert "[QBEAST_SERVER_UNAVAILABLE]" in out and "sc://localhost:1" in out
    seconds = float(out.split("raised ServerUnavailableError", 1)[1].split()[0])
    assert seconds <= 10, f"session() gave up after {seconds} s with a 5 s limit"
    assert took < 60


def test_cli_describe_on_a_dead_server_exits_non_zero_with_a_clear_message(
    tmp_path: Path,
) -> None:
    port = free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "qbeast_connect.cli",
            "describe",
            str(tmp_path),
            "--remote",
            f"sc://127.0.0.1:{port}",
        ],
        env=_env(QBEAST_CONNECT_TIMEOUT="5"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = _finish(process, within=60)
    assert time.monotonic() - started < 60
    assert process.returncode not in (0, None)
    first = err.strip().splitlines()[0]
    assert first.startswith("error: "), err
    assert f"127.0.0.1:{port}" in first and "did not answer" in first, first
    assert "Traceback" not in err


SLOW_WRITE = """
    import sys, time
    import qbeast_connect as qc
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType
    from qbeast_connect.exceptions import ServerUnavailableError

    spark = qc.session(sys.argv[1])  # before the UDF: pyspark picks Connect UDFs then
    MARKERS = sys.argv[3]

    @F.udf(DoubleType())
    def slow(x):
        import os, time
        # a marker per running task: the test waits for them instead of sleeping blindly
        open(os.path.join(MARKERS, f"{x}-{os.getpid()}"), "w").close()
        time.sleep(300)
        return float(x)

    df = spark.range(0, 4, numPartitions=2).withColumn("x", slow("id"))
    print("writing", flush=True)
    try:
        qc.write(df, sys.argv[2], columnsToIndex="x")
    except ServerUnavailableError as exc:
        print("raised", type(exc).__name__, flush=True)
        print("message", exc, flush=True)
"""


IDLE = """
    import sys
    import qbeast_connect as qc
    qc.session(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()  # the script ends when told to, after its server died
"""


def test_server_killed_mid_write_raises_server_unavailable_within_the_bound(
    tmp_path: Path,
) -> None:
    """Also: a process whose session is idle when its server dies still exits at once
    (the client's exit hook talks to the server; it must not retry for minutes)."""
    server = LocalConnectServer(master="local[2]").start()
    markers = tmp_path / "running"
    markers.mkdir()
    client = idle = None
    try:
        idle = _python(IDLE, server.url)
        client = _python(
            SLOW_WRITE,
            server.url,
            str(tmp_path / "t"),
            str(markers),
            QBEAST_CONNECT_RETRY_TIMEOUT="10",
        )
        assert client.stdout is not None and idle.stdout is not None
        line = client.stdout.readline()
        assert line.strip() == "writing", client.communicate()[1][-3000:]
        assert idle.stdout.readline().strip() == "ready", idle.communicate()[1][-3000:]
        # the statistics job of the write is running its slow tasks now
        _wait_for_running_tasks(markers, 2, client)
        assert client.poll() is None
        server.kill()
        killed = time.monotonic()
        out, err = _finish(client, within=60)
        took = time.monotonic() - killed
        ended = time.monotonic()
        _, idle_err = _finish(idle, within=30)  # closes its stdin: the script ends
        idle_took = time.monotonic() - ended
    finally:
        for process in (client, idle):
            if process is not None and process.poll() is None:
                process.kill()
        server.stop()
    print(f"the idle client exited {idle_took:.1f} s after its script ended")
    assert idle.returncode == 0, idle_err[-3000:]
    assert idle_took < 15
    print(f"the client gave up {took:.1f} s after the server was killed")
    assert "raised ServerUnavailableError" in out, err[-3000:]
    assert server.url in out
    # 10 s of retries, plus the slack of a loaded machine
    assert took < 40, f"the client needed {took:.0f} s to give up"
    assert client.returncode == 0


SLOW_WRITE_IN_ONE_JOB = """
    import sys
    import qbeast_connect as qc
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType

    spark = qc.session(sys.argv[1])  # before the UDF: pyspark picks Connect UDFs then
    MARKERS = sys.argv[3]

    @F.udf(DoubleType())
    def slow(x):
        import os, time
        # a marker per running task: the test waits for them instead of sleeping blindly
        open(os.path.join(MARKERS, f"{x}-{os.getpid()}"), "w").close()
        time.sleep(600)
        return float(x)

    df = spark.range(0, 2, numPartitions=2).withColumn("x", slow("id"))
    print("writing", flush=True)
    (df.write.format("qbeast").option("columnsToIndex", "x")
       .option("columnStats", '{"x_min": 0, "x_max": 10}').mode("append").save(sys.argv[2]))
"""

SMALL_JOB = """
    import sys, time
    import qbeast_connect as qc
    spark = qc.session(sys.argv[1])
    start = time.monotonic()
    rows = spark.range(0, 10, numPartitions=2).selectExpr("sum(id)").collect()
    print("sum", rows[0][0], "after", round(time.monotonic() - start, 1), flush=True)
"""


@pytest.fixture
def two_core_server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A ``local[2]`` server with the default settings, for a test that kills a client (the
    server survives it): the suite's own server when it started one, else a new one."""
    if not os.environ.get("SPARK_REMOTE"):
        yield str(request.getfixturevalue("remote_url"))
        return
    server = LocalConnectServer(master="local[2]").start()
    try:
        yield server.url
    finally:
        server.stop()


def test_a_killed_clients_write_is_cancelled_and_its_cores_freed_within_a_minute(
    tmp_path: Path, two_core_server_url: str
) -> None:
    # two cores: the killed client's two slow write tasks hold all of them until cancelled
    url = two_core_server_url
    table = tmp_path / "t"
    markers = tmp_path / "running"
    markers.mkdir()
    client = other = None
    try:
        client = _python(SLOW_WRITE_IN_ONE_JOB, url, str(table), str(markers))
        assert client.stdout is not None
        line = client.stdout.readline()
        assert line.strip() == "writing", client.communicate()[1][-3000:]
        _wait_for_running_tasks(markers, 2, client)  # both slow tasks of the write job run
        assert client.poll() is None
        os.kill(client.pid, signal.SIGKILL)
        client.wait()
        killed = time.monotonic()
        # a second client's job needs both cores: it can only finish once they are freed
        other = _python(SMALL_JOB, url)
        out, err = _finish(other, within=75)
        took = time.monotonic() - killed
    finally:
        for process in (client, other):
            if process is not None and process.poll() is None:
                process.kill()
    print(f"cores freed {took:.1f} s after the client was killed")
    assert "sum 45 after" in out, err[-3000:]
    assert took < 60, f"the cores of the killed client were freed after {took:.0f} s"
    # the write was cancelled, not finished: the Python workers of its two slow tasks are
    # gone (killed with their tasks), so nothing of it is left to commit; and no version
    # of the table exists
    workers = [int(m.name.split("-")[1]) for m in markers.iterdir()]
    assert len(workers) == 2
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers), "a task of the cancelled write still runs"
    assert not list(table.glob("_delta_log/*.json"))


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its new parent to reap it counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_embedded_server_stops_when_its_client_is_killed() -> None:
    """A client killed with SIGKILL runs no atexit hook; its embedded server (a 4 GB JVM)
    used to keep running, orphaned. The reaper stops it within the grace period."""
    client = _python(
        """
        import time
        from qbeast_connect.spark.server import LocalConnectServer
        server = LocalConnectServer(master="local[1]").start()
        print(server.pid, flush=True)
        time.sleep(600)
        """
    )
    assert client.stdout is not None
    line = client.stdout.readline().strip()
    assert line.isdigit(), client.communicate(timeout=30)
    server_pid = int(line)
    assert _alive(server_pid)
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        assert not _alive(server_pid), "the server outlived its killed client"
    finally:
        if _alive(server_pid):
            os.killpg(server_pid, signal.SIGKILL)
