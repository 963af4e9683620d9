"""The plugin bundle a client ships to a stock Connect server, and the version rule.

The zip must hold every module the server side can reach and nothing of the client's
apps; it must import, from the zip alone, in a Python that has no ``mmh3`` and does not see
this checkout; and its hashes must be Murmur3's without ``mmh3``.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import mmh3
import pytest

from qbeast_connect.exceptions import PluginUnavailableError, PluginVersionMismatchError
from qbeast_connect.spark import bundle as bundle_module
from qbeast_connect.spark.bundle import PluginBundle, build_bundle, plugin_modules, source_root
from qbeast_connect.spark.plugin_setup import ProbeAnswer, _probe_function, check_shipped, decide

ROOT = Path(__file__).resolve().parents[2]

#: Imports every module of the zip in a Python that cannot import mmh3 and runs no site
#: (so neither this checkout nor an editable install of it is on the path), then hashes.
_IMPORT_FROM_ZIP = """
import importlib, importlib.abc, json, sys
zip_path, site, modules = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "mmh3":
            raise ImportError("mmh3 is blocked", name=name)
        return None

sys.meta_path.insert(0, Blocker())
sys.path[:] = [zip_path] + [p for p in sys.path if p and "site-packages" not in p] + [site]
outside = []
for name in modules:
    module = importlib.import_module(name)
    if not str(module.__file__).startswith(zip_path):
        outside.append(name)
import pyarrow as pa
from qbeast_connect.index.hashing_np import spark_hash_columns
words = ["", "abcd", "qbeast-c", "0123456789ab"]
hashes = spark_hash_columns([pa.array(words)]).tolist()
print(json.dumps({"outside": outside, "mmh3": "mmh3" in sys.modules, "hashes": hashes}))
"""


def _zip_names(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        return set(archive.namelist())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> PluginBundle:
    """The bundle of this checkout, built once for the tests that only read it."""
    return build_bundle(out_dir=tmp_path_factory.mktemp("bundle"))


def test_bundle_holds_the_plugin_and_the_modules_it_reaches(built: PluginBundle) -> None:
    names = _zip_names(built.path)
    plugin_files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "server_plugin").rglob("*.py")}
    assert plugin_files <= names
    for needed in (
        "qbeast_connect/__init__.py",
        "qbeast_connect/exceptions.py",
        "qbeast_connect/model/hashing.py",
        "qbeast_connect/index/hashing_np.py",
        "qbeast_connect/spark/tasks.py",
        "qbeast_connect/timeline/fact.py",
    ):
        assert needed in names
    # the apps never run on the server, and Spark's lookup of pyspark_* modules happens
    # at server start, before any artifact
    assert not names & {"qbeast_connect/cli.py", "qbeast_connect/demo.py", "pyspark_qbeast.py"}
    assert all(n.endswith(".py") and "__pycache__" not in n for n in names)
    assert len(names) == len(built.modules)
    assert built.name == f"qbeast_plugin_{built.version.replace('.', '_')}_{built.digest}.zip"


def test_bundle_is_the_same_zip_for_the_same_sources(built: PluginBundle, tmp_path: Path) -> None:
    again = build_bundle(out_dir=tmp_path)
    assert again.path != built.path
    assert again.digest == built.digest
    assert again.path.read_bytes() == built.path.read_bytes()


def test_bundle_closure_follows_imports_of_a_module_tree(tmp_path: Path) -> None:
    (tmp_path / "server_plugin").mkdir()
    (tmp_path / "server_plugin" / "__init__.py").write_text("")
    (tmp_path / "server_plugin" / "a.py").write_text(
        "def f():\n    from qbeast_connect.model import x\n"
    )
    (tmp_path / "qbeast_connect" / "model").mkdir(parents=True)
    (tmp_path / "qbeast_connect" / "__init__.py").write_text("from . import tools\n")
    (tmp_path / "qbeast_connect" / "tools.py").write_text("import json\n")
    (tmp_path / "qbeast_connect" / "unused.py").write_text("")
    (tmp_path / "qbeast_connect" / "model" / "__init__.py").write_text("")
    (tmp_path / "qbeast_connect" / "model" / "x.py").write_text("")
    assert plugin_modules(tmp_path) == [
        "qbeast_connect",
        "qbeast_connect.model",
        "qbeast_connect.model.x",
        "qbeast_connect.tools",
        "server_plugin",
        "server_plugin.a",
    ]


def test_bundle_closure_finds_imports_in_every_kind_of_block(tmp_path: Path) -> None:
    (tmp_path / "server_plugin").mkdir()
    (tmp_path / "server_plugin" / "__init__.py").write_text(
        "import qbeast_connect.m0\n"
        "if x:\n    import qbeast_connect.m1\nelse:\n    import qbeast_connect.m2\n"
        "try:\n    import qbeast_connect.m3\nexcept ImportError:\n    import qbeast_connect.m4\n"
        "else:\n    import qbeast_connect.m5\nfinally:\n    import qbeast_connect.m6\n"
        "with x:\n    import qbeast_connect.m7\n"
        "class C:\n    import qbeast_connect.m8\n"
        "    async def f(self):\n        async with y:\n            import qbeast_connect.m9\n"
        "for i in x:\n    import qbeast_connect.m10\n"
        "while x:\n    from qbeast_connect import m11\n"
        "match x:\n    case 1:\n        import qbeast_connect.m12\n"
        "f = lambda: 1\n"
    )
    (tmp_path / "qbeast_connect").mkdir()
    (tmp_path / "qbeast_connect" / "__init__.py").write_text("")
    names = [f"m{i}" for i in range(14)]
    for name in names:
        (tmp_path / "qbeast_connect" / f"{name}.py").write_text("")
    found = plugin_modules(tmp_path)
    assert found == sorted(
        ["qbeast_connect", "server_plugin", *[f"qbeast_connect.{n}" for n in names[:13]]]
    )


def test_bundle_imports_from_the_zip_alone_without_mmh3(
    built: PluginBundle, tmp_path: Path
) -> None:
    modules = list(built.modules)
    site = sysconfig.get_paths()["purelib"]
    result = subprocess.run(
        [sys.executable, "-S", "-c", _IMPORT_FROM_ZIP, str(built.path), site, json.dumps(modules)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["outside"] == [] and answer["mmh3"] is False
    # Spark's hash of whole 4-byte words is standard Murmur3 (seed 42): same numbers as mmh3
    words = ["", "abcd", "qbeast-c", "0123456789ab"]
    assert answer["hashes"] == [mmh3.hash(w.encode(), 42, signed=True) for w in words]


def test_bundle_source_root_is_this_checkout() -> None:
    assert source_root() == ROOT
    assert bundle_module.WORKER_ROOTS  # client modules whose functions run in workers


def test_probe_is_sent_by_value_and_reports_the_plugin() -> None:
    from pyspark import cloudpickle

    from server_plugin.datasource import PLUGIN_VERSION

    data = cloudpickle.dumps(_probe_function())
    assert b"plugin_setup" not in data  # not a reference to a module the server lacks
    answer = ProbeAnswer.from_json(pickle.loads(data)(0))
    assert answer.version == PLUGIN_VERSION
    assert answer.origin == str(ROOT / "server_plugin" / "__init__.py")
    assert answer.python == "{}.{}.{}".format(*sys.version_info[:3])


def test_installed_plugin_of_the_client_version_is_used_as_is() -> None:
    assert decide(ProbeAnswer("3.11.7", "0.1.0", "/site/server_plugin/__init__.py"), "0.1.0") == (
        "ready"
    )


@pytest.mark.parametrize("missing", ["server_plugin", "qbeast_connect"])
def test_missing_plugin_is_shipped(missing: str) -> None:
    answer = ProbeAnswer("3.11.7", missing=missing, error=f"No module named '{missing}'")
    assert decide(answer, "0.1.0") == "ship"


def test_installed_plugin_of_another_version_is_refused_naming_both() -> None:
    answer = ProbeAnswer("3.11.7", "0.0.9", "/srv/site-packages/server_plugin/__init__.py")
    with pytest.raises(PluginVersionMismatchError) as raised:
        decide(answer, "0.1.0")
    text = str(raised.value)
    assert "0.0.9" in text and "0.1.0" in text
    assert "qbeast-connect==0.1.0" in text and "/srv/site-packages" in text
    assert raised.value.code == "QBEAST_PLUGIN_VERSION_MISMATCH"


def test_a_plugin_another_client_shipped_to_the_session_is_not_called_installed() -> None:
    """Issue 36: a client joining a session (;session_id=) on a stock server was told the
    other client's version was "installed" on the server and to reinstall there."""
    origin = "/tmp/spark/artifacts/s1/qbeast_plugin_0_0_9_ab12.zip/server_plugin/__init__.py"
    with pytest.raises(PluginVersionMismatchError) as raised:
        decide(ProbeAnswer("3.11.7", "0.0.9", origin), "0.1.0")
    text = str(raised.value)
    assert "qbeast-connect 0.0.9, shipped to it by another client of the session" in text
    assert "has qbeast-connect 0.0.9 installed" not in text and origin in text
    assert "without ;session_id=" in text and "qbeast-connect==0.0.9" in text


def test_installed_plugin_missing_a_dependency_is_not_shipped_over() -> None:
    answer = ProbeAnswer("3.11.7", missing="numpy", error="No module named 'numpy'")
    with pytest.raises(PluginUnavailableError, match="numpy"):
        decide(answer, "0.1.0")


def test_shipped_plugin_must_be_the_one_the_workers_import() -> None:
    name = "qbeast_plugin_0_1_0_abc.zip"
    check_shipped(
        ProbeAnswer("3.11.7", "0.1.0", f"/tmp/x/{name}/server_plugin/__init__.py"), name, "0.1.0"
    )
    with pytest.raises(PluginUnavailableError, match="do not import it"):
        check_shipped(
            ProbeAnswer("3.11.7", "0.1.0", "/site/server_plugin/__init__.py"), name, "0.1.0"
        )
    with pytest.raises(PluginUnavailableError, match="do not import it"):
        check_shipped(ProbeAnswer("3.11.7", missing="server_plugin"), name, "0.1.0")


class _FailingQuery:
    """Stands in for ``spark.range(1).select(...)`` whose ``collect`` fails with ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def select(self, *_: object) -> _FailingQuery:
        return self

    def collect(self) -> list[object]:
        raise RuntimeError(self.text)


class _FakeSpark:
    def __init__(self, failure: str = "", refused: str = "") -> None:
        self.failure = failure
        self.refused = refused
        self.conf = self
        self.set_keys: list[str] = []
        self.ranges: list[tuple[int, ...]] = []

    def range(self, *args: int) -> _FailingQuery:
        self.ranges.append(args)
        return _FailingQuery(self.failure)

    def set(self, key: str, value: str) -> None:
        if key == self.refused:
            raise RuntimeError(f"[CANNOT_MODIFY_CONFIG] Cannot modify the value of {key}")
        self.set_keys.append(key)


def test_probe_names_a_python_version_mismatch_as_a_server_restart() -> None:
    from qbeast_connect.spark.plugin_setup import probe_server

    spark = _FakeSpark(failure="[PYTHON_VERSION_MISMATCH] Python in worker has version 3.12")
    with pytest.raises(PluginUnavailableError) as raised:
        probe_server(spark)  # type: ignore[arg-type]
    text = str(raised.value)
    assert "Restart the server with spark.pyspark.python" in text
    assert "Python {}.{}".format(*sys.version_info[:2]) in text


def test_probe_runs_one_task_so_one_python_worker_starts() -> None:
    """Issue 34: the probe's ``range(1)`` had one partition per core, and each partition's
    task started a Python worker of its own on the session's first query."""
    from qbeast_connect.spark.plugin_setup import probe_server

    spark = _FakeSpark(failure="stop after the plan is built")
    with pytest.raises(PluginUnavailableError):
        probe_server(spark)  # type: ignore[arg-type]
    ((start, end, step, partitions),) = spark.ranges
    assert (end - start, step, partitions) == (1, 1, 1)


def test_refused_session_setting_names_the_server_conf() -> None:
    from qbeast_connect.spark.plugin_setup import SESSION_CONF, set_session_conf

    key = "spark.sql.python.filterPushdown.enabled"
    with pytest.raises(PluginUnavailableError, match=f"restart the server with --conf {key}=true"):
        set_session_conf(_FakeSpark(refused=key))  # type: ignore[arg-type]
    # a server without Spark 4.2's plan cache setting is fine
    spark = _FakeSpark(refused="spark.connect.session.planCache.enabled")
    set_session_conf(spark)  # type: ignore[arg-type]
    assert spark.set_keys == [k for k in SESSION_CONF if k != spark.refused]


def test_plugin_version_is_the_package_version() -> None:
    import tomllib

    import qbeast_connect
    from server_plugin.datasource import PLUGIN_VERSION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert PLUGIN_VERSION == qbeast_connect.__version__ == project["version"]
