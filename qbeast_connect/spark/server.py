"""A Spark Connect server process started and owned by this Python process.

The server runs as a child process (``spark-submit`` of the Connect server class that
ships inside the pyspark wheel), so the client process itself never hosts a JVM. The
server's Python workers run the same interpreter as the client, which has the
qbeast-connect packages installed, so the server plugin is importable there.

The server never outlives its owner: besides the ``atexit`` stop, a small reaper process
(:func:`watch_owner`) holds the read end of a pipe whose write end only the owner holds.
When the owner dies in any way (SIGKILL, a crash, SIGTERM without clean-up), the kernel
closes that end, the reaper reads end-of-file and stops the server's process group.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from qbeast_connect.exceptions import (
    InvalidOptionError,
    JavaNotFoundError,
    MissingDependencyError,
    QbeastError,
)
from qbeast_connect.spark import class_archive
from qbeast_connect.spark.files import DRIVER_LISTING_PATHS, LISTING_THRESHOLD_CONF

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: Spark Connect's per-session cache of analyzed plans (see DEFAULT_SERVER_CONF).
PLAN_CACHE_CONF = "spark.connect.session.planCache.enabled"

#: How a server we start notices a client that is gone (killed, crashed, cut off) and stops
#: its queries. A server does not see a client die: it streams each query's results for up
#: to ``senderMaxStreamDuration`` (default 2 min), after which a live client reattaches;
#: a query nobody reattached to for ``detachedTimeout`` (default 5 min) is abandoned, that
#: is, its Spark jobs are cancelled and their tasks killed, at the next check of the
#: execution manager (every ``maintenanceInterval``, default 30 s). With the defaults a
#: dead client's query kept the cores busy for over 7 minutes. These values bound it to
#: about 10 + 20 + 5 s; a live client reattaches within milliseconds, and one cut off for
#: longer than 20 s loses its query (it gets an error, never a partial result).
GONE_CLIENT_CONF: Mapping[str, str] = {
    "spark.connect.execute.reattachable.senderMaxStreamDuration": "10s",
    "spark.connect.execute.manager.detachedTimeout": "20s",
    "spark.connect.execute.manager.maintenanceInterval": "5s",
}

#: Server settings every server started by qbeast-connect gets (the caller may override).
DEFAULT_SERVER_CONF: Mapping[str, str] = {
    # Python Data Source readers only receive pushed filters with this flag on.
    "spark.sql.python.filterPushdown.enabled": "true",
    # Spark 4.2 keeps the read plan of the last filter pushdown on the data source object,
    # which the session plan cache shares between queries of one DataFrame: a later query
    # without pushable filters would read only the files pruned for the earlier one.
    PLAN_CACHE_CONF: "false",
    # A qbeast read names its selected files one by one; above 32 paths Spark would check
    # them with a distributed listing job (about 1 s per query on TPC-H sf 1, 376 files).
    # These servers read local files, which the driver checks faster itself.
    LISTING_THRESHOLD_CONF: str(DRIVER_LISTING_PATHS),
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "4g",
    **GONE_CLIENT_CONF,
}


#: Seconds a stopping server that writes the class archive gets before it is killed.
ARCHIVE_WRITE_S = 120.0


def persistent_catalog(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Server settings that keep the catalog's table names in ``directory``.

    The server's catalog becomes Spark's Hive-compatible one, with its metastore in an
    embedded Derby database (``<directory>/metastore_db``) and the data of managed tables
    in ``<directory>/warehouse``. Pyspark's own jars hold all of it, so nothing is fetched.
    A name made with ``CREATE TABLE … USING qbeast`` is then still there after a
    restart of a server started with the same directory. Derby lets one server at a time
    open the directory.

    Raises:
        InvalidOptionError: ``directory`` holds a ``;``, which would end Derby's URL.
    """
    path = Path(directory).expanduser().resolve()
    if ";" in str(path):
        raise InvalidOptionError(
            f"catalog directory {str(path)!r} contains ';', which Derby's URL cannot hold: "
            "choose a directory without it"
        )
    path.mkdir(parents=True, exist_ok=True)
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(path / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={path / 'metastore_db'};create=true"
        ),
        # Derby's own log goes next to its database, not to the server's working directory
        class_archive.JAVA_OPTIONS_CONF: f"-Dderby.system.home={path}",
    }


def with_persistent_catalog(
    conf: Mapping[str, str], directory: str | os.PathLike[str]
) -> dict[str, str]:
    """``conf`` with the settings of :func:`persistent_catalog` in ``directory``: the
    caller's own settings win, and its own driver JVM options are kept, the catalog's
    added after them."""
    extra = persistent_catalog(directory)
    java = extra.pop(class_archive.JAVA_OPTIONS_CONF)
    merged = {**extra, **conf}
    own = conf.get(class_archive.JAVA_OPTIONS_CONF, "")
    merged[class_archive.JAVA_OPTIONS_CONF] = " ".join(x for x in (own, java) if x)
    return merged


def find_java() -> str:
    """Return the path of the ``java`` executable a server would use.

    Raises:
        JavaNotFoundError: no Java runtime is on ``JAVA_HOME`` or ``PATH``.
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found:
        return found
    raise JavaNotFoundError(
        "no Java runtime found: an embedded Spark Connect server needs Java 17. Install it "
        "(Debian/Ubuntu: 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME; or pass "
        "remote='sc://host:port' (or set SPARK_REMOTE) to use an existing Connect server"
    )


def _spark_home() -> str:
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - pyspark is a hard dependency
        raise MissingDependencyError(
            "pyspark is not installed: install 'qbeast-connect' (it depends on pyspark[connect])"
        ) from exc
    home = Path(pyspark.__file__).parent
    if not (home / "jars").is_dir():
        raise MissingDependencyError(
            "this pyspark installation has no server jars (is it 'pyspark-client'?): an embedded "
            "server needs the full 'pyspark[connect]' package; or connect to a remote server"
        )
    return str(home)


def discovery_pythonpath() -> str | None:
    """A directory to add to the server's ``PYTHONPATH`` so Spark finds ``pyspark_qbeast``.

    Spark's static lookup of Python data sources lists the modules on ``sys.path``
    (``pkgutil.iter_modules``), which does not see modules mapped by the import hook of an
    editable install (``pip install -e``). Then the directory holding ``pyspark_qbeast.py``
    is returned; with a regular install the module is in site-packages and None is returned.
    """
    import importlib.util
    import site

    spec = importlib.util.find_spec("pyspark_qbeast")
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    directory = os.path.realpath(os.path.dirname(spec.origin))
    # what a fresh interpreter has on sys.path (not this process's own additions)
    searched = [*site.getsitepackages(), site.getusersitepackages()]
    searched += os.environ.get("PYTHONPATH", "").split(os.pathsep)
    known = {os.path.realpath(p) for p in searched if p}
    return None if directory in known else directory


def spark_process_env(extra_env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a Spark JVM this package starts (a Connect server, a standalone
    master or worker): this process's environment with ``SPARK_HOME`` and ``JAVA_HOME`` set,
    this Python for Spark's Python workers, no Connect-client variables, and the directory
    Spark discovers ``pyspark_qbeast`` in on ``PYTHONPATH``; ``extra_env`` goes last.

    Raises:
        JavaNotFoundError: Java is missing.
    """
    java = find_java()
    env = dict(os.environ)
    env["SPARK_HOME"] = _spark_home()
    env.setdefault("JAVA_HOME", str(Path(os.path.realpath(java)).parent.parent))
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    extra_path = discovery_pythonpath()
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH", "")) if p)
    env.update(extra_env)
    return env


#: Launches of a server whose chosen port another process took before the JVM bound it.
_PORT_ATTEMPTS = 3


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalConnectServer:
    """A Spark Connect server running as a child process on ``127.0.0.1:<port>``.

    Args:
        master: Spark master of the server, ``local[N]`` by default with N = CPU count.
        port: TCP port; a free one is chosen when None.
        conf: extra Spark settings for the server (static or runtime).
        log_path: where the server's output goes; a temporary file when None.
        env: extra environment variables for the server process.
        host: address the server listens on (``0.0.0.0`` for every interface).
        sql_extension: run qbeast-connect's SQL extension, which pushes ``TABLESAMPLE`` and
            ``DataFrame.sample`` of qbeast tables to the index (``spark/sql_extension.py``):
            None (the default) when this machine has a Java compiler to build it, True
            always (an error without one), False never.
    """

    def __init__(
        self,
        *,
        master: str | None = None,
        port: int | None = None,
        conf: Mapping[str, str] | None = None,
        log_path: str | None = None,
        env: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        sql_extension: bool | None = None,
    ) -> None:
        self.sql_extension = sql_extension
        self.extra_env = dict(env or {})
        self.host = host
        self.master = master or f"local[{os.cpu_count() or 2}]"
        self.port = port or free_port()
        #: whether the port was chosen here (another one may be chosen if it is taken)
        self._chosen_port = not port
        self.conf = {**DEFAULT_SERVER_CONF, **(conf or {})}
        if log_path is None:
            fd, log_path = tempfile.mkstemp(prefix="qbeast-connect-server-", suffix=".log")
            os.close(fd)
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._reaper: OwnerWatch | None = None
        #: The class archive this server uses or writes (see ``spark/class_archive.py``).
        self.archive: class_archive.ArchivePlan | None = None

    @property
    def url(self) -> str:
        """The ``sc://`` URL clients use to reach this server."""
        return f"sc://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server process id while it runs."""
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        """The command line that starts the server."""
        home = _spark_home()
        conf = dict(self.conf)
        if self.archive is not None:
            conf = class_archive.with_java_options(conf, self.archive.java_options)
        conf.setdefault("spark.pyspark.python", sys.executable)
        conf.setdefault("spark.pyspark.driver.python", sys.executable)
        conf["spark.connect.grpc.binding.port"] = str(self.port)
        conf["spark.connect.grpc.binding.address"] = self.host
        args = [
            os.path.join(home, "bin", "spark-submit"),
            "--class",
            SERVER_CLASS,
            "--master",
            self.master,
            "--name",
            "qbeast-connect",
        ]
        for key, value in conf.items():
            if key == "spark.driver.memory":
                args += ["--driver-memory", value]
            else:
                args += ["--conf", f"{key}={value}"]
        return [*args, "spark-internal"]

    def start(self, timeout: float = 120.0) -> LocalConnectServer:
        """Start the server and wait until it accepts connections.

        The JVM maps the class archive of earlier servers, or writes one when it stops
        (``spark/class_archive.py``); a server that exits while starting with an archive
        is started once more without it, and the archive is deleted.

        Raises:
            JavaNotFoundError: Java is missing.
            MissingDependencyError: ``sql_extension=True`` and the extension cannot be built.
            QbeastError: the server exited or did not open its port in time.
        """
        from qbeast_connect.spark.sql_extension import server_conf

        self.conf = server_conf(self.conf, self.sql_extension)
        env = spark_process_env(self.extra_env)
        self.archive = class_archive.plan(
            find_java(), env["SPARK_HOME"], self.conf, tag=f"{os.getpid()}-{self.port}"
        )
        deadline = time.monotonic() + timeout
        ports_left = _PORT_ATTEMPTS - 1
        while True:
            log_start = self._log_size()
            if self._launch(env, deadline):
                return self
            assert self._process is not None
            if self._process.poll() is None:
                break  # it runs without its port open: out of time
            if self._chosen_port and ports_left > 0 and self._port_taken(log_start):
                # another process bound the free port chosen before the JVM could: seen
                # when several servers and a standalone cluster start at once
                ports_left -= 1
                self.port = free_port()
                continue
            archive = self.archive
            if archive is not None and archive.pending is None:
                archive.drop()
                self.archive = None
                continue
            break
        if self._process.poll() is not None:
            self.stop()  # drops the archive it may have begun to write
            raise QbeastError(
                f"the Spark Connect server exited with code {self._process.returncode} "
                f"while starting; its log is {self.log_path}:\n{self._log_tail()}"
            )
        self.stop()
        raise QbeastError(
            f"the Spark Connect server did not open port {self.port} within {timeout:.0f} s; "
            f"its log is {self.log_path}"
        )

    def _launch(self, env: Mapping[str, str], deadline: float) -> bool:
        """Start the process; whether it opened its port before ``deadline`` (False: it
        exited, or it still runs without the port open)."""
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                self.command(),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        if self._reaper is not None:
            self._reaper.release()
        self._reaper = watch_owner(self._process.pid)
        atexit.register(self.stop)
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def _log_size(self) -> int:
        try:
            return Path(self.log_path).stat().st_size
        except OSError:
            return 0

    def _port_taken(self, since: int) -> bool:
        """Whether the server's output after byte ``since`` says its port was in use."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(since)
                text = log.read().decode(errors="replace")
        except OSError:
            return False
        return "Failed to bind to address" in text and f":{self.port}" in text

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the server process to exit; return its exit code (None if still running)."""
        if self._process is None:
            return None
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def is_running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout`` seconds). A server
        writing the class archive gets at least ``ARCHIVE_WRITE_S`` to write it."""
        process = self._process
        if self._reaper is not None:
            self._reaper.release()
            self._reaper = None
        if process is None or process.poll() is not None:
            self._publish_archive(cleanly=process is not None)
            return
        archive = self.archive
        if archive is not None and archive.pending is not None:
            timeout = max(timeout, ARCHIVE_WRITE_S)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
            cleanly = True
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            cleanly = False
        self._publish_archive(cleanly)

    def _publish_archive(self, cleanly: bool) -> None:
        archive, self.archive = self.archive, None
        if archive is not None:
            archive.publish(cleanly)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self._reaper is not None:
            self._reaper.release()
            self._reaper = None
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self._publish_archive(cleanly=False)


#: The reaper: waits for end-of-file on stdin (its owner is gone), then stops the process
#: group named by its argument, SIGTERM first and SIGKILL after a grace period.
_REAPER = """
import os, signal, sys, time
group = int(sys.argv[1])
sys.stdin.buffer.read()
try:
    os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline:
        time.sleep(0.2)
        os.killpg(group, 0)
    os.killpg(group, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


class OwnerWatch:
    """A reaper process watching this process on behalf of one process group."""

    def __init__(self, reaper: subprocess.Popen[bytes], write_end: int) -> None:
        self._reaper = reaper
        self._write_end: int | None = write_end

    @property
    def pid(self) -> int:
        """The reaper's process id."""
        return self._reaper.pid

    def release(self) -> None:
        """Stop watching: the owner stops the group itself. The reaper is killed before the
        pipe closes, so it never signals a group id the system may have reused."""
        with contextlib.suppress(ProcessLookupError):
            self._reaper.kill()
        self._reaper.wait()
        if self._write_end is not None:
            with contextlib.suppress(OSError):
                os.close(self._write_end)
            self._write_end = None


def watch_owner(group: int, grace_s: float = 10.0) -> OwnerWatch:
    """Start a reaper that stops process group ``group`` when this process dies.

    The pipe's write end stays only in this process (it is not inheritable, so no other
    child keeps it open), and the reaper runs in a session of its own, so signals aimed at
    this process's group do not reach it.
    """
    read_end, write_end = os.pipe()
    try:
        reaper = subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(group), str(grace_s)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return OwnerWatch(reaper, write_end)
