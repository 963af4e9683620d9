"""The server plugin as one zip file, for a Connect server that does not have it installed.

A stock Spark Connect server has only ``pyspark[connect]`` and its dependencies in its
Python environment. The client then ships the plugin itself as a session artifact
(``spark.addArtifacts(zip, pyfile=True)``), which Spark puts on the ``sys.path`` of that
session's Python workers, on the driver and on the executors.

The zip holds the modules the server side can reach: every module of ``server_plugin``,
and every ``qbeast_connect`` module that an import in one of them reaches, transitively
(imports at top level, inside functions and under ``TYPE_CHECKING`` all count, as do the
packages Python runs on the way). Functions the client sends to the workers are pickled by
reference to their module, so the modules that define them are roots as well. Only
``.py`` sources go in: zipimport loads them, and nothing needs a compiler or a wheel. The
plugin needs nothing beyond ``pyspark[connect]``'s own dependencies (pyarrow, pandas,
numpy); in particular it never imports ``mmh3`` (its hashes are computed in
``model/hashing`` and ``index/hashing_np``).

The file name carries the version and a digest of the contents, so the probe can tell the
shipped bundle apart from an installed plugin of the same version.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import io
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: The packages the bundle is made of.
PACKAGES = ("server_plugin", "qbeast_connect")
#: Client modules whose functions run in the server's Python workers (pickled by reference).
WORKER_ROOTS = ("qbeast_connect.spark.tasks", "qbeast_connect.spark.write")
#: Every bundle file name starts with this.
BUNDLE_PREFIX = "qbeast_plugin_"

_lock = threading.Lock()
_built: dict[Path, PluginBundle] = {}


@dataclass(frozen=True)
class PluginBundle:
    """A built bundle: the zip on local disk and what it holds."""

    path: Path
    version: str
    digest: str
    modules: tuple[str, ...]

    @property
    def name(self) -> str:
        """The zip's file name, which is also its artifact name on the server."""
        return self.path.name


def source_root() -> Path:
    """The directory holding the ``qbeast_connect`` and ``server_plugin`` packages."""
    # this file is <root>/qbeast_connect/spark/bundle.py
    return Path(__file__).resolve().parents[2]


def module_file(root: Path, module: str) -> Path | None:
    """The source file of ``module`` under ``root``, or None when there is none."""
    base = root.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


#: The fields of a statement that hold nested statements. Imports are statements, and an
#: expression never holds a statement, so the walk skips every expression.
_STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement of ``tree``, at any depth (in functions, branches, ``try``...)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for field in _STATEMENT_FIELDS:
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo.extend(c for c in children if isinstance(c, ast.AST))


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterable[str]:
    """Every module name an ``import`` statement of ``tree`` may load."""
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            for alias in node.names:
                yield f"{base}.{alias.name}"


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def plugin_modules(root: Path | None = None) -> list[str]:
    """The modules the bundle holds: the import closure of the plugin and the worker roots."""
    root = root or source_root()
    plugin_dir = root / "server_plugin"
    todo = [
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted(plugin_dir.rglob("*.py"))
    ]
    todo += WORKER_ROOTS
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        for module in _with_parents(name):
            if module in seen or module.split(".")[0] not in PACKAGES:
                continue
            path = module_file(root, module)
            if path is None:
                continue  # a name imported from a module, not a module of its own
            seen.add(module)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            todo.extend(_imported_names(tree, module, path.name == "__init__.py"))
    return sorted(seen)


def _zip_bytes(root: Path, modules: list[str]) -> bytes:
    """The zip of ``modules``' sources, the same bytes for the same sources."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for module in modules:
            path = module_file(root, module)
            assert path is not None
            info = zipfile.ZipInfo(path.relative_to(root).as_posix(), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def build_bundle(root: Path | None = None, out_dir: Path | None = None) -> PluginBundle:
    """Build (once per process and source tree) the plugin's zip and return it.

    Args:
        root: the directory holding the packages; the one this client runs from by default.
        out_dir: where the zip is written; a private temporary directory by default.
    """
    from server_plugin.datasource import PLUGIN_VERSION

    root = (root or source_root()).resolve()
    with _lock:
        cached = _built.get(root)
        if cached is not None and out_dir is None and cached.path.is_file():
            return cached
        modules = plugin_modules(root)
        data = _zip_bytes(root, modules)
        digest = hashlib.sha256(data).hexdigest()[:16]
        directory = out_dir
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="qbeast-plugin-"))
            atexit.register(shutil.rmtree, directory, True)
        path = directory / f"{BUNDLE_PREFIX}{PLUGIN_VERSION.replace('.', '_')}_{digest}.zip"
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(data)
        partial.replace(path)
        bundle = PluginBundle(path, PLUGIN_VERSION, digest, tuple(modules))
        if out_dir is None:
            _built[root] = bundle
        return bundle
