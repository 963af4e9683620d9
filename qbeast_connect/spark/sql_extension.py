"""qbeast-connect's Spark SQL extension: samples from SQL and DataFrames pushed to the index.

Spark 4.2 gives a Python data source no hook for a sample: ``SELECT ... TABLESAMPLE (1
PERCENT)`` and ``df.sample(0.01)`` over ``format("qbeast")`` read every file the filters
select and sample the rows afterwards. The one hook that reaches the plan from any Connect
client is a JVM extension on the server (``spark.sql.extensions``), whose sources are beside
this file (``jvm/io/qbeast/connect``). Its rules: ``QbeastSampleRule`` removes such a sample and
hands its fraction to the plugin as a read option, which returns the rows of
``QbeastTable.sample(fraction)`` from the files the index selects; ``QbeastCatalogRule`` gives
reads and writes of catalog tables the catalog's location and OPTIONS (which Spark shows a
Python data source only at ``CREATE``), so column lists, CTAS and managed tables work;
``QbeastTimeTravelRule`` turns ``VERSION AS OF n`` on such a table into a read option.

The extension is optional: the plugin works on a stock server without it, and then samples
are Spark's. Servers qbeast-connect starts (``qc.session()``'s embedded server and
``qbeast-connect server start``) run it when this machine has a Java compiler (``javac``, part
of any JDK): the sources are compiled once per Spark version against pyspark's own jars into
the jar cache (``$QBEAST_CONNECT_JARS`` or ``~/.cache/qbeast-connect/jars``), nothing is
downloaded. Another server gets it with ``--jars <the path python -m
qbeast_connect.spark.sql_extension prints>`` and ``--conf spark.sql.extensions=`` this
module's :data:`EXTENSION_CLASS`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from qbeast_connect.exceptions import MissingDependencyError

#: The class ``spark.sql.extensions`` names.
EXTENSION_CLASS = "io.qbeast.connect.QbeastConnectExtensions"

#: The Java sources of the extension (package data of ``qbeast_connect.spark``).
SOURCES_DIR = Path(__file__).with_name("jvm")

#: The read options the rule adds for the plugin (``QbeastSampleRule.FRACTION`` / ``SEED``).
FRACTION_OPTION = "tableSampleFraction"
SEED_OPTION = "tableSampleSeed"


def find_javac() -> str | None:
    """The Java compiler beside the ``java`` a server would use, else the one on ``PATH``."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("javac")


def _sources() -> list[Path]:
    return sorted(SOURCES_DIR.rglob("*.java"))


def _spark_jars() -> Path:
    """pyspark's jars, the Spark the servers qbeast-connect starts run."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise MissingDependencyError(
            "this pyspark installation has no server jars (is it 'pyspark-client'?): the SQL "
            "extension is built against the full 'pyspark[connect]' package's Spark"
        )
    return jars


def jar_path(cache: str | os.PathLike[str] | None = None) -> Path:
    """Where the jar of these sources, for this pyspark's Spark, is (or will be) kept."""
    import pyspark

    from qbeast_connect.spark.delta_jvm import cache_root

    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in _sources():
        digest.update(source.relative_to(SOURCES_DIR).as_posix().encode())
        digest.update(source.read_bytes())
    name = f"qbeast-connect-extension-{pyspark.__version__}-{digest.hexdigest()[:12]}.jar"
    return cache_root(cache) / name


def extension_jar(cache: str | os.PathLike[str] | None = None, *, timeout: float = 300.0) -> Path:
    """The extension's jar, compiled with ``javac`` on first use.

    Raises:
        MissingDependencyError: no Java compiler, or the compilation failed (its output is
            in the message).
    """
    from qbeast_connect.spark.delta_jvm import output_tail, run_tool

    target = jar_path(cache)
    if target.is_file():
        return target
    javac = find_javac()
    if javac is None:
        raise MissingDependencyError(
            "qbeast-connect's SQL extension is compiled on first use and no Java compiler "
            "('javac') is on JAVA_HOME or PATH: install a JDK (Debian/Ubuntu: 'apt-get install "
            "openjdk-17-jdk-headless'), or start the server without the extension "
            "(sql_extension=False); samples are then Spark's own"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # built in a fresh folder and renamed into place: a build cut short, or two processes
    # building at once, never leave a jar that looks complete and is not
    staging = Path(tempfile.mkdtemp(prefix=".extension-", dir=target.parent))
    try:
        classes = staging / "classes"
        classes.mkdir()
        command = [
            javac,
            "-nowarn",
            "-Xlint:-path",
            "--release",
            "17",
            "-cp",
            str(_spark_jars() / "*"),
            "-d",
            str(classes),
            *map(str, _sources()),
        ]
        done = run_tool(
            command,
            timeout,
            f"javac did not compile qbeast-connect's SQL extension within {timeout:.0f} s",
        )
        if done.returncode != 0:
            raise MissingDependencyError(
                f"javac could not compile qbeast-connect's SQL extension against the Spark "
                f"jars in {_spark_jars()} (exit code {done.returncode}):\n{output_tail(done)}"
            )
        built = staging / target.name
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for item in sorted(classes.rglob("*.class")):
                jar.write(item, item.relative_to(classes).as_posix())
        os.replace(built, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def with_sql_extension(
    conf: Mapping[str, str], cache: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """``conf`` plus the extension's jar and class, after any the user set.

    Raises:
        MissingDependencyError: the jar cannot be built (see :func:`extension_jar`).
    """
    from qbeast_connect.spark.delta_jvm import with_server_conf

    extra = {"spark.jars": str(extension_jar(cache)), "spark.sql.extensions": EXTENSION_CLASS}
    return with_server_conf(conf, extra)


def server_conf(conf: Mapping[str, str], wanted: bool | None) -> dict[str, str]:
    """The settings of a server qbeast-connect starts, with the extension as asked.

    Args:
        conf: the server's other settings.
        wanted: True: the extension is required; False: left out; None: included when
            this machine has a Java compiler.

    Raises:
        MissingDependencyError: ``wanted`` is True and the jar cannot be built.
    """
    if wanted is False or (wanted is None and find_javac() is None):
        return dict(conf)
    return with_sql_extension(conf)


if __name__ == "__main__":  # pragma: no cover - a command for server administrators
    print(extension_jar())
