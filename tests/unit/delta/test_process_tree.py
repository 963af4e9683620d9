"""The plugin finds the server's JVM among its process's ancestors (``/proc``)."""

from __future__ import annotations

import os
import subprocess
import sys

from server_plugin.delta.process_tree import ancestors, jvm_ancestor


def test_ancestors_start_at_the_parent() -> None:
    chain = list(ancestors())
    assert chain[0] == os.getppid()
    assert len(set(chain)) == len(chain)


def test_no_jvm_ancestor_outside_a_spark_server() -> None:
    assert jvm_ancestor() is None
    # a child process sees this process among its ancestors, and still no java
    code = (
        "import os, sys; from server_plugin.delta.process_tree import ancestors, jvm_ancestor;"
        "print(int(sys.argv[1]) in list(ancestors()), jvm_ancestor())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(os.getpid())],
        capture_output=True, text=True, check=True, cwd=os.getcwd(),
    ).stdout.split()
    assert out == ["True", "None"]
