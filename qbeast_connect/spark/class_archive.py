"""A class-data-sharing archive of the embedded server's JVM, made once per installation.

A Spark Connect server spends most of its start, and much of its first query, loading,
parsing and verifying some twenty thousand classes of Spark's jars. Java (13 and later)
can write the classes a run loaded to an archive when the JVM exits
(``-XX:ArchiveClassesAtExit``); a later JVM maps that archive (``-XX:SharedArchiveFile``)
instead of loading them again. On the shared 2-core machine that halved both the time
until the server opens its port and its first query (see BENCHMARKS.md, "First cell").

The archive belongs to one Java runtime and one set of Spark jars: its file name is a
digest of both (:func:`archive_key`), under ``$XDG_CACHE_HOME/qbeast-connect/jvm`` (else
``~/.cache/...``). A server started while no archive exists writes one to a file of its
own when it stops (:class:`ArchivePlan`); that file is published under the shared name by
an atomic rename, only after the JVM exited of its own accord and the file passed a trial
``java -version`` (a truncated archive makes the JVM abort, so nothing half written is ever
published). A JVM given an archive it cannot use (other jars, other JVM settings) warns
and starts without it; a server that fails to start with one is started again without it
and the archive is deleted (:meth:`ArchivePlan.drop`).

``QBEAST_CONNECT_CLASS_ARCHIVE=0`` (or ``off``/``false``/``no``) turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Environment variable turning the archive off (``0``/``off``/``false``/``no``).
ENV_VAR = "QBEAST_CONNECT_CLASS_ARCHIVE"
#: The Spark setting the archive's JVM options are added to.
JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"
#: Settings that change the server JVM's class path, so an archive made without them.
CLASS_PATH_CONFS = ("spark.driver.extraClassPath",)
#: Left-over files of archives being written (their JVM was killed) older than this go.
STALE_TMP_S = 3600.0


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether servers use (and make) the archive: not when ``ENV_VAR`` says off."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR, "")
    return value.strip().lower() not in ("0", "off", "false", "no")


def archive_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where archives are kept: ``$XDG_CACHE_HOME/qbeast-connect/jvm`` (else ``~/.cache``)."""
    env = environ if environ is not None else os.environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "qbeast-connect" / "jvm"


def _fingerprint(path: Path) -> str:
    try:
        stat = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def archive_key(java: str, spark_home: str, conf: Mapping[str, str]) -> str:
    """A digest of what an archive is valid for: the Java runtime (its binary and its
    module image), every jar of Spark's class path, and the class-path settings."""
    java_path = Path(os.path.realpath(java))
    parts = [_fingerprint(java_path), _fingerprint(java_path.parent.parent / "lib" / "modules")]
    jars = Path(spark_home) / "jars"
    with contextlib.suppress(OSError):
        parts += [_fingerprint(jar) for jar in sorted(jars.iterdir())]
    parts += [f"{key}={conf.get(key, '')}" for key in CLASS_PATH_CONFS]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class ArchivePlan:
    """What one server does about the archive: use ``path`` when it exists, else write to
    ``pending`` at exit for :meth:`publish` to move to ``path``."""

    java: str
    path: Path
    pending: Path | None

    @property
    def java_options(self) -> list[str]:
        """The JVM options that use or write the archive."""
        if self.pending is None:
            return [f"-XX:SharedArchiveFile={self.path}"]
        return [f"-XX:ArchiveClassesAtExit={self.pending}"]

    def publish(self, exited_cleanly: bool) -> bool:
        """After the server exited: publish the archive it wrote, if it wrote a whole one.

        Returns whether an archive was published.
        """
        pending = self.pending
        if pending is None or not pending.exists():
            return False
        if exited_cleanly and _loads(self.java, pending):
            with contextlib.suppress(OSError):
                os.replace(pending, self.path)
                return True
        with contextlib.suppress(OSError):
            pending.unlink()
        return False

    def drop(self) -> None:
        """Delete the archive this plan used (a server failed to start with it)."""
        with contextlib.suppress(OSError):
            self.path.unlink()


def _loads(java: str, archive: Path) -> bool:
    """Whether a JVM starts with ``archive`` (a truncated one makes it abort)."""
    try:
        done = subprocess.run(
            [java, f"-XX:SharedArchiveFile={archive}", "-version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def plan(
    java: str, spark_home: str, conf: Mapping[str, str], tag: str, directory: Path | None = None
) -> ArchivePlan | None:
    """The archive plan of a server about to start (None when the archive is off or its
    directory cannot be written). ``tag`` names this server's pending file."""
    if not enabled():
        return None
    folder = directory if directory is not None else archive_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    key = archive_key(java, spark_home, conf)
    path = folder / f"spark-{key}.jsa"
    if path.exists():
        return ArchivePlan(java, path, None)
    if not os.access(folder, os.W_OK):
        return None
    _remove_stale(folder)
    return ArchivePlan(java, path, folder / f"spark-{key}.jsa.{tag}.tmp")


def _remove_stale(folder: Path) -> None:
    now = time.time()
    for leftover in folder.glob("*.tmp"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_TMP_S:
                leftover.unlink()


def with_java_options(conf: Mapping[str, str], options: list[str]) -> dict[str, str]:
    """``conf`` with ``options`` added after the caller's own driver JVM options."""
    merged = dict(conf)
    own = merged.get(JAVA_OPTIONS_CONF, "").strip()
    merged[JAVA_OPTIONS_CONF] = " ".join([*([own] if own else []), *options])
    return merged
