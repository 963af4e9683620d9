"""Delta Lake's own JVM engine for servers that qbeast-connect starts.

qbeast tables need nothing but the project's Python on a server: the plugin's Delta log
is what lets a stock server serve them. A user who also wants Delta's engine on the same
server (``format("delta")``, ``DESCRIBE HISTORY``, SQL ``DELETE``/``MERGE``/``OPTIMIZE``,
time travel) asks for it with ``qc.session(delta=True)`` or ``qbeast-connect server
--delta``. The jars are fetched with Maven from ``delta-jvm.pom.xml`` (beside this file)
into a cache folder, once per machine; nothing else downloads them.

What is not here: Delta Connect's server plugin (``delta-connect-server``), which backs
``DeltaTable.forPath`` on a Connect client, is not published for Delta 4.x in the
registries this project reaches. Its SQL equivalents work over any Connect session once
the server runs Delta's extension (see ``docs/compatibility.md``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from qbeast_connect.exceptions import MissingDependencyError, QbeastError

#: The pom that names the jars (package data of ``qbeast_connect.spark``).
POM_PATH = Path(__file__).with_name("delta-jvm.pom.xml")

#: Where fetched jars are kept: ``$QBEAST_CONNECT_JARS`` or the user's cache folder.
JARS_ENV = "QBEAST_CONNECT_JARS"

#: Settings that turn Delta's engine on in a Spark session: its SQL extension (DELETE,
#: MERGE, OPTIMIZE, DESCRIBE HISTORY, ``delta.`path```) and its catalog for the default
#: catalog (``CREATE TABLE ... USING delta``).
DELTA_SESSION_CONF: Mapping[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

#: A completed fetch leaves this file in its folder, so a fetch cut short is redone.
_DONE = ".complete"


def delta_version() -> str:
    """The Delta Lake version the pom names."""
    match = re.search(r"<delta\.version>([^<]+)</delta\.version>", POM_PATH.read_text())
    if match is None:  # pragma: no cover - the pom is ours
        raise QbeastError(f"{POM_PATH} names no delta.version")
    return match.group(1).strip()


def cache_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """The folder jars are kept in: ``cache``, ``$QBEAST_CONNECT_JARS`` or the user's cache."""
    root = cache or os.environ.get(JARS_ENV)
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        root = os.path.join(base, "qbeast-connect", "jars")
    return Path(root)


def jars_dir(cache: str | os.PathLike[str] | None = None) -> Path:
    """The folder the jars of this Delta version are (or will be) kept in."""
    return cache_root(cache) / f"delta-{delta_version()}"


def delta_jars(cache: str | os.PathLike[str] | None = None, *, timeout: float = 900.0) -> list[str]:
    """The jars of Delta's engine, fetched with Maven on first use.

    Args:
        cache: the folder to keep jars in (default ``$QBEAST_CONNECT_JARS`` or
            ``~/.cache/qbeast-connect/jars``).
        timeout: seconds the Maven run may take.

    Returns:
        The absolute paths of the jars, sorted.

    Raises:
        MissingDependencyError: Maven (``mvn``) is not installed, or it could not fetch
            the jars (its output is in the message).
    """
    return maven_jars(POM_PATH, jars_dir(cache), "Delta's jars", timeout=timeout)


def maven_jars(pom: Path, target: Path, what: str, *, timeout: float = 900.0) -> list[str]:
    """The jars ``pom`` names, copied by Maven into ``target`` on first use.

    Args:
        pom: a pom whose dependencies are the jars (``dependency:copy-dependencies``).
        target: the folder to keep them in; a complete folder holds the file ``.complete``.
        what: the jars' name in error messages.
        timeout: seconds the Maven run may take.

    Returns:
        The absolute paths of the jars, sorted.

    Raises:
        MissingDependencyError: Maven (``mvn``) is not installed, or it could not fetch
            the jars (its output is in the message).
    """
    if (target / _DONE).is_file():
        return _listed(target)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingDependencyError(
            f"{what} are fetched with Maven and 'mvn' is not on PATH: install it "
            "(Debian/Ubuntu: 'apt-get install maven'), or put the jars named in "
            f"{pom} into {target} and create the file {target / _DONE}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # fetched into a fresh folder and renamed into place: a fetch cut short, or two
    # processes fetching at once, never leave a half-filled folder that looks complete
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        command = [
            mvn,
            "--batch-mode",
            "--quiet",
            "--file",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
        ]
        done = run_tool(
            command,
            timeout,
            f"Maven did not fetch {what} within {timeout:.0f} s; run '{' '.join(command)}' to "
            "see why",
        )
        if done.returncode != 0 or not list(staging.glob("*.jar")):
            raise MissingDependencyError(
                f"Maven could not fetch {what} (exit code {done.returncode}); check that "
                f"this machine reaches a Maven repository. Maven said:\n{output_tail(done)}"
            )
        (staging / _DONE).write_text(f"{pom.name}\n")
        try:
            staging.rename(target)
        except OSError:
            # another process finished first: its folder is complete, keep it
            if not (target / _DONE).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _listed(target)


def run_tool(command: list[str], timeout: float, too_slow: str) -> subprocess.CompletedProcess[str]:
    """Run a build tool (Maven, javac) with its output captured.

    Raises:
        MissingDependencyError: ``too_slow``, when it runs past ``timeout`` seconds.
    """
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise MissingDependencyError(too_slow) from exc


def output_tail(done: subprocess.CompletedProcess[str], lines: int = 15) -> str:
    """The last ``lines`` lines a tool printed, for an error message."""
    return "\n".join((done.stdout + done.stderr).splitlines()[-lines:])


def _listed(folder: Path) -> list[str]:
    return sorted(str(p.resolve()) for p in folder.glob("*.jar"))


def delta_server_conf(cache: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Settings for a server started with Delta's engine: its jars and its extension.

    A server must get these at start-up (the extension and the default catalog are
    static settings).
    """
    return {"spark.jars": ",".join(delta_jars(cache)), **DELTA_SESSION_CONF}


def with_delta(
    conf: Mapping[str, str], cache: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """``conf`` plus Delta's server settings; an extension the user set is kept, Delta's
    is added after it, and user jars stay on the class path."""
    return with_server_conf(conf, delta_server_conf(cache))


def with_server_conf(conf: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``conf`` plus ``extra``: jars and SQL extensions are listed after the ones ``conf``
    names (once each); any other setting ``conf`` has wins (a user's own default catalog
    may itself be Delta's or wrap it)."""
    merged = dict(conf)
    for key, value in extra.items():
        current = merged.get(key)
        if not current:
            merged[key] = value
        elif key in ("spark.jars", "spark.sql.extensions"):
            listed = current.split(",")
            merged[key] = ",".join([*listed, *(v for v in value.split(",") if v not in listed)])
    return merged
