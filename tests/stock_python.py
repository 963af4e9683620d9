"""A "stock" Python for a Spark Connect server: only ``pyspark[connect]`` and its dependencies.

Shared by the zero-install suite (``integration/test_zero_install.py``, local master) and the
cluster suite (``integration/test_cluster.py``, standalone master and workers). The Python is
a fresh ``venv`` whose site-packages holds one ``.pth`` line: a directory of symlinks to
exactly the distributions ``pyspark[connect]`` requires (read from their
``importlib.metadata`` requirements, transitively), plus the distributions named in
``also`` (the cluster suite adds ``boto3``, the storage client the plugin needs for
``s3://`` tables). It sees neither qbeast-connect, its ``pyspark_qbeast`` shim nor ``mmh3``.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from qbeast_connect.spark.server import LocalConnectServer

#: What the stock server's Python must not import, and what it must.
FORBIDDEN = ("server_plugin", "qbeast_connect", "pyspark_qbeast", "mmh3")
REQUIRED = ("pyspark", "pyarrow", "pandas", "numpy", "grpc")

#: A probe compiled outside any importable module, so it is pickled by value.
_IMPORTS_SOURCE = """
def qbeast_test_imports(_):
    import importlib, json, os, sys
    found = {}
    for name in %r:
        try:
            module = importlib.import_module(name)
            found[name] = str(getattr(module, "__file__", ""))
        except ImportError as exc:
            found[name] = None
    return json.dumps({"executable": sys.executable, "pid": os.getpid(), "found": found})
"""


def allowed_distributions(
    root: str = "pyspark", extras: tuple[str, ...] = ("connect",)
) -> set[str]:
    """The distributions ``root[extras]`` needs, transitively (environment markers applied)."""
    wanted: list[tuple[str, tuple[str, ...]]] = [(root, extras)]
    seen: set[str] = set()
    while wanted:
        name, with_extras = wanted.pop()
        key = canonicalize_name(name)
        if key in seen:
            continue
        seen.add(key)
        for line in md.distribution(name).requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in with_extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                wanted.append((req.name, tuple(req.extras)))
    return seen


def build_stock_python(base: Path, also: tuple[str, ...] = ()) -> str:
    """A venv whose Python sees only ``pyspark[connect]`` (and ``also``, with their needs)."""
    venv = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    exposed = base / "site"
    exposed.mkdir()
    allowed = allowed_distributions()
    for extra in also:
        allowed |= allowed_distributions(extra, ())
    for dist in md.distributions():
        if canonicalize_name(dist.metadata["Name"]) not in allowed:
            continue
        site = Path(str(dist.locate_file(""))).resolve()
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in sorted(tops):
            if top.endswith(".pth") or top == "__pycache__":
                continue
            link = exposed / top
            if not link.exists():
                link.symlink_to(site / top)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "stock.pth").write_text(f"{exposed}\n")
    return str(python)


def imports_udf(names: tuple[str, ...] = (*FORBIDDEN, *REQUIRED)) -> Any:
    """A UDF answering, as JSON, its Python's executable, pid and where ``names`` import from."""
    from pyspark.sql.functions import udf

    namespace: dict[str, Any] = {"__name__": "qbeast_test_stock_probe"}
    exec(_IMPORTS_SOURCE % (names,), namespace)
    return udf(namespace["qbeast_test_imports"], "string")


def start_stock_server(
    stock_python: str,
    workdir: Path,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    log_path: str | None = None,
) -> LocalConnectServer:
    """A Connect server whose driver and workers run ``stock_python``, with Spark's defaults.

    The server's working directory is on its workers' ``sys.path`` (``python -m``): it is
    ``workdir``, never this checkout, whose packages would be importable from there.
    """
    here = os.getcwd()
    os.chdir(workdir)
    try:
        return LocalConnectServer(
            master=master,
            conf={
                "spark.pyspark.python": stock_python,
                "spark.pyspark.driver.python": stock_python,
                # Spark's own defaults: the client must set what it needs per session
                "spark.sql.python.filterPushdown.enabled": "false",
                "spark.connect.session.planCache.enabled": "true",
                "spark.sql.sources.parallelPartitionDiscovery.threshold": "32",
                **(conf or {}),
            },
            env={
                "PYSPARK_PYTHON": stock_python,
                "PYSPARK_DRIVER_PYTHON": stock_python,
                # no discovery path to this checkout, nothing inherited
                "PYTHONPATH": "",
                "PWD": str(workdir),
            },
            sql_extension=False,  # nothing of ours on a stock server's JVM either
            log_path=log_path,
        ).start()
    finally:
        os.chdir(here)
