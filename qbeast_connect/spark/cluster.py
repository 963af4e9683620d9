"""A small Spark standalone cluster on this machine, started from the pyspark wheel.

The master and each worker are separate JVMs (``bin/spark-class
org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), each in a process group of
its own and watched by the same reaper as the Connect server (:func:`watch_owner`), so
none outlives the process that started it. A Connect server started with
``LocalConnectServer(master=cluster.master_url)`` then runs its executors in the workers.

It exists to test the project on more than one JVM (``integration/test_cluster.py``); a
production cluster is started with Spark's own ``sbin`` scripts or a resource manager (see
``docs/remote.md``).

Example:
    ```python
    with StandaloneCluster(workers=2) as cluster:
        server = LocalConnectServer(master=cluster.master_url, conf=cluster.app_conf()).start()
    ```
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from qbeast_connect.exceptions import QbeastError
from qbeast_connect.spark.server import (
    OwnerWatch,
    _spark_home,
    free_port,
    spark_process_env,
    watch_owner,
)

#: The line Spark logs once a service listens; the port it names is the one bound, which
#: is the one asked for unless another process took it first (Spark then tries the next).
_BOUND = re.compile(r"Successfully started service '(\w+)' on port (\d+)")

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def bound_ports(log_path: str, offset: int = 0) -> dict[str, int]:
    """The ports a Spark daemon's log says its services listen on, by service name (the
    last line of each name wins), reading from byte ``offset`` (where this launch's lines
    start); empty while the log has none."""
    try:
        with open(log_path, "rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
    except OSError:
        return {}
    return {name: int(port) for name, port in _BOUND.findall(text)}


class _Daemon:
    """One JVM of the cluster, in a process group of its own."""

    def __init__(
        self, name: str, process: subprocess.Popen[bytes], log_path: str, log_offset: int = 0
    ) -> None:
        self.name = name
        self.process = process
        self.log_path = log_path
        self.log_offset = log_offset
        self.reaper: OwnerWatch | None = watch_owner(process.pid)

    def stop(self, timeout: float) -> None:
        if self.reaper is not None:
            self.reaper.release()
            self.reaper = None
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers on ``127.0.0.1``.

    Args:
        workers: Number of worker JVMs.
        cores: Cores each worker offers.
        memory: Memory each worker offers to executors (``1g``).
        daemon_memory: Heap of the master and worker JVMs themselves.
        env: Extra environment of the workers, which their executors inherit.
        work_dir: Where the workers keep executor directories and logs; a temporary
            directory when None.
    """

    def __init__(
        self,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        daemon_memory: str = "256m",
        env: Mapping[str, str] | None = None,
        work_dir: str | None = None,
    ) -> None:
        if workers < 1 or cores < 1:
            raise QbeastError("a standalone cluster needs at least one worker with one core")
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.daemon_memory = daemon_memory
        self.extra_env = dict(env or {})
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="qbeast-cluster-")
        self.port = free_port()
        self.ui_port = free_port()
        self._master: _Daemon | None = None
        self._workers: list[_Daemon] = []

    @property
    def master_url(self) -> str:
        """The ``spark://`` URL a driver passes as ``--master``."""
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        """The master's web UI (``/json/`` is its state as JSON)."""
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the worker JVMs (executors are their children)."""
        return [w.process.pid for w in self._workers]

    @property
    def pids(self) -> list[int]:
        """Process ids of every JVM of the cluster (master first)."""
        master = [self._master.process.pid] if self._master is not None else []
        return master + self.worker_pids

    def process_tree(self) -> set[int]:
        """The cluster's JVMs and every process below them (executors, their Python
        workers), read from ``/proc`` (Linux); empty where there is no ``/proc``."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
        found: set[int] = set()
        todo = list(self.pids)
        while todo:
            pid = todo.pop()
            if pid not in found:
                found.add(pid)
                todo.extend(children.get(pid, ()))
        return found

    def app_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """Settings a driver needs to use every core of this cluster, one per executor."""
        return {
            "spark.executor.cores": "1",
            "spark.executor.memory": executor_memory,
            "spark.cores.max": str(self.workers * self.cores),
        }

    def _env(self) -> dict[str, str]:
        # executors inherit the worker's environment: they import the plugin from where
        # the Connect server does
        return spark_process_env({"SPARK_DAEMON_MEMORY": self.daemon_memory, **self.extra_env})

    def _spawn(self, name: str, args: list[str], env: Mapping[str, str]) -> _Daemon:
        log_path = os.path.join(self.work_dir, f"{name}.log")
        command = [os.path.join(_spark_home(), "bin", "spark-class"), *args]
        with open(log_path, "ab") as log:
            offset = log.tell()
            process = subprocess.Popen(
                command,
                env=dict(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.work_dir,
            )
        return _Daemon(name, process, log_path, offset)

    def start(self, timeout: float = 120.0) -> StandaloneCluster:
        """Start the master and the workers; return once every worker is registered.

        Raises:
            JavaNotFoundError: Java is missing.
            QbeastError: a JVM exited, or the workers did not register in time (the
                message names the logs).
        """
        env = self._env()
        os.makedirs(self.work_dir, exist_ok=True)
        try:
            self._master = self._spawn(
                "master",
                [
                    MASTER_CLASS,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--webui-port",
                    str(self.ui_port),
                ],
                env,
            )
            master = self._master
            self._wait(lambda: self._take_bound_ports(master), timeout, "the master to listen")
            self._wait(lambda: self.state() is not None, timeout, "the master to answer")
            for index in range(self.workers):
                worker_dir = os.path.join(self.work_dir, f"worker-{index}")
                os.makedirs(worker_dir, exist_ok=True)
                self._workers.append(
                    self._spawn(
                        f"worker-{index}",
                        [
                            WORKER_CLASS,
                            "--host",
                            "127.0.0.1",
                            "--cores",
                            str(self.cores),
                            "--memory",
                            self.memory,
                            "--webui-port",
                            str(free_port()),
                            "--work-dir",
                            worker_dir,
                            self.master_url,
                        ],
                        env,
                    )
                )
            self._wait(
                lambda: len(self.alive_workers()) == self.workers,
                timeout,
                f"{self.workers} workers to register",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _take_bound_ports(self, master: _Daemon) -> bool:
        """Once the master's log names the ports it listens on, use those: a port chosen
        free may be taken by another process before the JVM binds it, and Spark then
        binds the next one instead of failing. True when both ports are known."""
        bound = bound_ports(master.log_path, master.log_offset)
        if "sparkMaster" not in bound or "MasterUI" not in bound:
            return False
        self.port, self.ui_port = bound["sparkMaster"], bound["MasterUI"]
        return True

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for daemon in [self._master, *self._workers]:
                if daemon is not None and daemon.process.poll() is not None:
                    raise QbeastError(
                        f"the standalone {daemon.name} exited with code "
                        f"{daemon.process.returncode}; its log is {daemon.log_path}"
                    )
            if ready():
                return
            time.sleep(0.3)
        raise QbeastError(
            f"timed out after {timeout:.0f} s waiting for {what}; logs are in {self.work_dir}"
        )

    def state(self) -> dict[str, Any] | None:
        """The master's state (its ``/json/`` page), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=2) as answer:
                state: dict[str, Any] = json.loads(answer.read())
                return state
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the master counts as alive."""
        state = self.state() or {}
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the workers, then the master (SIGTERM, then SIGKILL after ``timeout``)."""
        for daemon in reversed(self._workers):
            daemon.stop(timeout)
        self._workers = []
        if self._master is not None:
            self._master.stop(timeout)
            self._master = None

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
