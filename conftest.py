"""How the suite's test files are shared out between the pytest-xdist workers.

``--dist loadfile`` hands whole files to the workers (three, pyproject.toml), a file at a
time as each runs out of work. pytest-xdist's default order is "most tests first": the unit
files (hundreds of parametrized cases of milliseconds) went first and the integration
files of one or two tests of a minute or more went last, so the run could end with one
worker finishing a long file while the others had nothing left. With ``--no-loadscope-reorder``
(pyproject.toml) the files go in the order of :func:`pytest_collection_modifyitems`:
the files measured slowest first, longest first (``SLOWEST``), then the other
integration files, then ``tests/spark``, then ``tests/unit``, so the last files of a run are
short ones.

The files that run Delta's engine on the shared ``delta_spark`` server
(integration/conftest.py) are one unit of work (``DELTA_JVM_FILES``): one worker runs them
all and starts that server (a JVM with Delta's jars, about 16 s to start on two busy
cores, 4 GB of heap) once, where each worker used to start its own.

Refresh ``SLOWEST`` from a run with ``--durations=0`` when the slowest files change; a file
missing from it only runs later than it could.

The JVMs the run starts get the options of :mod:`tests.jvm_options` (set here, before any
starts).

Tried and not kept: one Connect server for every worker (started by the xdist controller,
each worker with its own session), in place of each worker's own embedded server and
integration server. Ten ``tests/spark`` files alone ran in 250 s against 363 s, but the
whole suite, run back to back from the same checkout on a quiet machine, took 1,791 s
against 1,840 s: the integration files saved 132 s of test time (2,695 s against 2,827 s)
and the ``tests/spark`` files lost 36 s (2,413 s against 2,377 s) waiting for the one
server's two task slots. The run is bound by the CPU its tests use, not by the JVMs it
starts.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import jvm_options

jvm_options.apply()

#: The files that run on the one server with Delta's engine: one unit of work.
DELTA_JVM_FILES = (
    "integration/test_delta_jvm.py",
    "integration/test_column_mapping_jvm.py",
    "integration/test_deletion_vectors_qbeast.py",
    "integration/test_deletion_vectors_jvm.py",
    "integration/test_row_changes_jvm.py",
    "integration/test_modern_delta_jvm.py",
)
DELTA_JVM_GROUP = "delta-jvm"

#: Files (or the Delta JVM group) of over a minute, longest first: seconds of their tests
#: in a run of ``tests/spark`` and ``integration`` on two cores (a loaded machine).
SLOWEST = (
    DELTA_JVM_GROUP,  # 583 s together
    "integration/test_cluster.py",  # 452
    "integration/test_reference_engine.py",  # 378
    "integration/test_concurrency.py",  # 186
    "tests/spark/test_differential_fuzz.py",  # 154 (111 before round 11)
    "integration/test_crash.py",  # 150
    "tests/spark/test_write_input.py",  # 126
    "integration/test_zero_install.py",  # 124
    "tests/spark/test_write.py",  # 121
    "integration/test_hangs.py",  # 121
    "integration/test_stream.py",  # 80
    "integration/test_thin_client.py",  # 77
    "integration/test_sql_tables.py",  # 76
    "integration/test_catalog_restart.py",  # 74 (round 11)
    "integration/test_s3.py",  # 68
)


def unit_of_work(path: str) -> str:
    """The unit of work (file or group) of a test file, by its path from the repo root."""
    return DELTA_JVM_GROUP if path in DELTA_JVM_FILES else path


def _rank(path: str) -> tuple[int, int]:
    unit = unit_of_work(path)
    if unit in SLOWEST:
        return 0, SLOWEST.index(unit)
    if path.startswith("integration/"):
        return 1, 0
    if path.startswith("tests/spark/"):
        return 2, 0
    return 3, 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # a stable sort: each file's tests stay together and in their order
    root = config.rootpath
    items.sort(key=lambda item: _rank(item.path.relative_to(root).as_posix()))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the Delta JVM files as one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of_work(nodeid.split("::", 1)[0])

    return Scheduling(config, log)
