"""Every module whose data source classes the client registers imports first in a fresh
interpreter, as in a server's Python worker.

The client registers a data source by pickling its class, which names its module; a worker
then imports that module before anything else of ours. Importing it must not come back to
the same module half-initialized through ``qbeast_connect`` (whose package imports the API,
which imports the client transport, which names the plugin's sources).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

REGISTERED_MODULES = [
    "server_plugin.datasource",
    "server_plugin.files_source",
    "server_plugin.qbeast_format",
    "server_plugin.timeline_writer",
    "pyspark_qbeast",
]


@pytest.mark.parametrize("module", REGISTERED_MODULES)
def test_plugin_source_module_imports_first_in_a_fresh_worker(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
