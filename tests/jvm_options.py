"""The JVM options of the test run (the root ``conftest.py`` applies them).

Every JVM the suite starts (Connect servers, the reference engine, the standalone cluster,
the servers the crash and hang tests kill) runs with :data:`JVM_TEST_OPTIONS`, through
``JDK_JAVA_OPTIONS``, which the ``java`` launcher reads: the client compiler only and the
serial collector. Most of these JVMs live for seconds to a few minutes and run small
queries; on two cores the optimizing compiler's threads and the parallel collector's took a
quarter of the CPU the tests need (five ``tests/spark`` files on two workers: 225 s and
5m43s of user CPU as Java ships, 160 s and 3m40s with these options; the whole suite from a
fresh clone: 2121 s as Java ships, 1871 s with these options). Options change how fast a JVM
runs, never what it computes. Benchmarks (``bench/``) do not use them.

The one exception is the server with Delta's engine (``integration/conftest.py``): its
tests run Delta's own DML, log replay and checkpoints, long JVM work that the optimizing
compiler pays for. With these options its six files took 882 s against 687 s without, so
it starts with Java's defaults (:func:`java_defaults`).

A ``JDK_JAVA_OPTIONS`` set before the run is kept as it is, for every JVM.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: JVM options of the JVMs the test run starts.
JVM_TEST_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The variable the ``java`` launcher (JDK 9 and later) reads its extra options from.
ENV_VAR = "JDK_JAVA_OPTIONS"


def apply() -> None:
    """Give the run's JVMs :data:`JVM_TEST_OPTIONS`, unless the variable is set already."""
    os.environ.setdefault(ENV_VAR, JVM_TEST_OPTIONS)


@contextlib.contextmanager
def java_defaults() -> Iterator[None]:
    """JVMs started inside run with Java's defaults (when the options are ours)."""
    if os.environ.get(ENV_VAR) != JVM_TEST_OPTIONS:
        yield
        return
    del os.environ[ENV_VAR]
    try:
        yield
    finally:
        os.environ[ENV_VAR] = JVM_TEST_OPTIONS
