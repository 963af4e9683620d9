"""The one-way layering of the product code (issue #17), checked on the source with ``ast``.

Layers, lowest first: core, Delta log, server plugin, client transport, API, apps. A
module may import only modules of its own layer or of lower ones. Every import counts:
at top level, inside a function, under ``TYPE_CHECKING``. An import names the module it
reads (``from qbeast_connect.model import cube_id`` is an import of
``qbeast_connect.model.cube_id``, ``from qbeast_connect.model import CubeId`` one of the
package ``qbeast_connect.model``); the parent packages Python runs on the way are not
counted as imports of their own.

Every module must match a row of ``LAYER_RULES`` (the most specific row wins): a new
module fails ``test_product_code_keeps_the_rule[every_module_has_a_layer]`` until it
is placed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CORE, DELTA, PLUGIN, TRANSPORT, API, APPS = 1, 2, 3, 4, 5, 6
LAYER_NAMES = {
    CORE: "core",
    DELTA: "Delta log",
    PLUGIN: "server plugin",
    TRANSPORT: "client transport",
    API: "API",
    APPS: "apps",
}

#: Module name -> layer. A row ending in ``.*`` places the module and everything below it;
#: any other row places exactly that module. The longest matching row wins.
LAYER_RULES: dict[str, int] = {
    # 1. core: pure computation, no pyspark, no boto3, no I/O
    "qbeast_connect.exceptions.*": CORE,
    "qbeast_connect.paths.*": CORE,
    "qbeast_connect.options.*": CORE,
    "qbeast_connect.write_plan.*": CORE,
    "qbeast_connect.plan_codec.*": CORE,
    "qbeast_connect.rules.*": CORE,
    "qbeast_connect.model.*": CORE,
    "qbeast_connect.index.*": CORE,
    "qbeast_connect.planning.*": CORE,
    "qbeast_connect.approx.*": CORE,
    "qbeast_connect.timeline.update_period.*": CORE,
    "qbeast_connect.timeline.partition.*": CORE,
    "qbeast_connect.timeline.timeline.*": CORE,
    "qbeast_connect.timeline.cover.*": CORE,
    "qbeast_connect.timeline.plan.*": CORE,
    # 2. Delta log
    "server_plugin.delta.*": DELTA,
    # 3. server plugin
    "server_plugin.*": PLUGIN,
    "pyspark_qbeast.*": PLUGIN,
    # 4. client transport
    "qbeast_connect.spark.*": TRANSPORT,
    "qbeast_connect.progress.*": TRANSPORT,
    # 5. API
    "qbeast_connect": API,
    "qbeast_connect.timeline": API,
    "qbeast_connect.table.*": API,
    "qbeast_connect.optimize.*": API,
    "qbeast_connect.row_changes.*": API,
    "qbeast_connect.merge.*": API,
    "qbeast_connect.metrics.*": API,
    "qbeast_connect.approx.run.*": API,
    "qbeast_connect.viz.*": API,
    "qbeast_connect.writer_api.*": API,
    "qbeast_connect.streaming.*": API,
    "qbeast_connect.timeline.fact.*": API,
    "qbeast_connect.timeline.writer.*": API,
    # 6. apps
    "qbeast_connect.cli.*": APPS,
    "qbeast_connect.demo.*": APPS,
}

PACKAGES = ("qbeast_connect", "server_plugin")
MAX_LINES = 800
#: Third-party packages core may not import (core is pure computation).
CORE_FORBIDDEN = ("pyspark", "boto3", "botocore")


# ---------------------------------------------------------------------------------------------
# the checker
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One module name an import statement reads."""

    source: str  # the importing module
    path: str  # its file, relative to the root
    line: int
    where: str  # "at top level", "in a function", "under TYPE_CHECKING"
    target: str  # the dotted name imported (a module, or the package a name comes from)
    project: str | None  # the project module it resolves to (None: third-party/stdlib)
    names: tuple[str, ...]  # names taken by ``from ... import``; () for ``import x``
    via_package: bool = False  # the ``from`` package of a ``from pkg import submodule``

    def describe(self) -> str:
        what = self.target + (f" ({', '.join(self.names)})" if self.names else "")
        return f"{self.path}:{self.line} {self.source} imports {what} {self.where}"


@dataclass(frozen=True, repr=False)
class Tree:
    root: Path
    modules: Mapping[str, Path]  # module name -> file
    imports: tuple[Import, ...]

    def __repr__(self) -> str:  # short: pytest prints it next to every failure
        return f"Tree({self.root}: {len(self.modules)} modules, {len(self.imports)} imports)"

    def project_imports(self, *, with_packages: bool = False) -> Iterator[Import]:
        for imp in self.imports:
            is_project = imp.project is not None and imp.project != imp.source
            if is_project and (with_packages or not imp.via_package):
                yield imp


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file for the product code under ``root``."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    for path in sorted(root.glob("pyspark_*.py")):
        out[path.stem] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _ImportCollector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.context: list[str] = []
        self.found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def _visit_scoped(self, node: ast.AST, where: str) -> None:
        self.context.append(where)
        self.generic_visit(node)
        self.context.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_scoped(node, "in a function")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_scoped(node, "in a function")

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.context.append("under TYPE_CHECKING")
        for child in node.body:
            self.visit(child)
        self.context.pop()
        for child in node.orelse:
            self.visit(child)

    def _record(self, node: ast.Import | ast.ImportFrom) -> None:
        where = "at top level"
        if "under TYPE_CHECKING" in self.context:
            where = "under TYPE_CHECKING"
        elif self.context:
            where = "in a function"
        self.found.append((node, where))

    def visit_Import(self, node: ast.Import) -> None:
        self._record(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._record(node)


def scan(root: Path) -> Tree:
    """Parse every product module under ``root`` and list what each one imports."""
    modules = module_files(root)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    imports: list[Import] = []
    for module, path in modules.items():
        rel = path.relative_to(root).as_posix()
        collector = _ImportCollector()
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), rel))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node, where in collector.found:
            where_from = (module, rel, node.lineno, where)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    imports.append(Import(*where_from, alias.name, resolve(alias.name), ()))
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            plain = tuple(a.name for a in node.names if f"{base}.{a.name}" not in modules)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:  # ``from package import module``
                    imports.append(Import(*where_from, sub, sub, ()))
            # the package: when every name taken is a module, it is only the way to them
            imports.append(Import(*where_from, base, resolve(base), plain, not plain))
    return Tree(root, modules, tuple(imports))


def layer_of(module: str, rules: Mapping[str, int] = LAYER_RULES) -> int | None:
    """The layer of the most specific rule matching ``module`` (None: no rule matches)."""
    best: tuple[int, int] | None = None  # (specificity, layer)
    for pattern, layer in rules.items():
        if pattern.endswith(".*"):
            prefix = pattern[:-2]
            matches = module == prefix or module.startswith(prefix + ".")
            specificity = 2 * len(prefix)
        else:
            matches = module == pattern
            specificity = 2 * len(pattern) + 1  # an exact row beats a wildcard of the same name
        if matches and (best is None or specificity > best[0]):
            best = (specificity, layer)
    return None if best is None else best[1]


def _layer_text(layer: int | None) -> str:
    return "no layer" if layer is None else f"{layer} {LAYER_NAMES[layer]}"


def unplaced_modules(tree: Tree) -> list[str]:
    return [
        f"{tree.modules[m].relative_to(tree.root).as_posix()}: {m}"
        for m in sorted(tree.modules)
        if layer_of(m) is None
    ]


def upward_imports(tree: Tree) -> list[str]:
    """Imports of a module of a higher layer than the importer's."""
    out = []
    for imp in tree.project_imports():
        assert imp.project is not None
        source, target = layer_of(imp.source), layer_of(imp.project)
        if source is None or target is None:
            continue  # reported by unplaced_modules
        if target > source:
            out.append(f"{imp.describe()}: layer {_layer_text(source)} -> {_layer_text(target)}")
    return out


def import_cycles(tree: Tree) -> list[str]:
    """Strongly connected components of the module graph (Tarjan), with their edges.

    The edges are those of ``/work/shared/tools/import_cycles.py``: every import, the
    ``from`` package of ``from package import module`` included, except a package's
    ``__init__`` importing the modules below it.
    """
    graph: dict[str, dict[str, Import]] = {m: {} for m in tree.modules}
    for imp in tree.project_imports(with_packages=True):
        assert imp.project is not None
        is_package = tree.modules[imp.source].name == "__init__.py"
        if is_package and imp.project.startswith(imp.source + "."):
            continue
        graph[imp.source].setdefault(imp.project, imp)

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for component in components:
        members = set(component)
        edges = [
            "    " + graph[a][b].describe()
            for a in component
            for b in sorted(graph[a])
            if b in members
        ]
        out.append("cycle: " + " <-> ".join(component) + "\n" + "\n".join(edges))
    return out


def impure_core_imports(tree: Tree) -> list[str]:
    """Imports of pyspark or boto3 by a core module."""
    return [
        imp.describe()
        for imp in tree.imports
        if imp.project is None
        and layer_of(imp.source) == CORE
        and imp.target.split(".")[0] in CORE_FORBIDDEN
    ]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports_by_plugin(tree: Tree) -> list[str]:
    """Imports by server_plugin (or pyspark_qbeast) of a ``_private`` name of qbeast_connect."""
    out = []
    for imp in tree.imports:
        if layer_of(imp.source) not in (DELTA, PLUGIN):
            continue
        if imp.target.split(".")[0] != "qbeast_connect":
            continue
        private = [p for p in imp.target.split(".") if _private(p)]
        private += [n for n in imp.names if _private(n)]
        if private:
            out.append(f"{imp.describe()}: private {', '.join(private)}")
    return out


def server_plugin_importers(tree: Tree) -> list[str]:
    """Imports of server_plugin by qbeast_connect modules other than qbeast_connect.spark.*."""
    return [
        imp.describe()
        for imp in tree.imports
        if imp.target.split(".")[0] == "server_plugin"
        and not imp.via_package
        and imp.source.split(".")[0] == "qbeast_connect"
        and not imp.source.startswith("qbeast_connect.spark.")
    ]


def oversized_files(tree: Tree, limit: int = MAX_LINES) -> list[str]:
    out = []
    for path in sorted(set(tree.modules.values())):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            out.append(f"{path.relative_to(tree.root).as_posix()}: {lines} lines")
    return out


# ---------------------------------------------------------------------------------------------
# the product code
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree() -> Tree:
    return scan(ROOT)


def test_the_scan_sees_the_product_code(tree: Tree) -> None:
    # a checker that reads nothing passes everything: make sure it read the real tree
    assert {"qbeast_connect", "qbeast_connect.table", "server_plugin.delta.committer"} <= set(
        tree.modules
    )
    assert "pyspark_qbeast" in tree.modules
    assert len(tree.modules) > 50 and len(tree.imports) > 300


#: (test id, check, what its findings are, how to fix them): one rule of issue #17 each.
RULES: list[tuple[str, Callable[[Tree], list[str]], str, str]] = [
    (
        "every_module_has_a_layer",
        unplaced_modules,
        "module(s) match no layer rule",
        "add a row to LAYER_RULES in tests/unit/test_layers.py",
    ),
    (
        "no_import_goes_to_a_higher_layer",
        upward_imports,
        "import(s) of a higher layer",
        "move the shared code down, or go through the layer that may import it",
    ),
    (
        "no_import_cycles",
        import_cycles,
        "import cycle(s)",
        "cut one edge of each cycle; lazy imports count too",
    ),
    (
        "core_never_imports_pyspark_or_boto3",
        impure_core_imports,
        "pyspark/boto3 import(s) in core",
        "move the Spark or S3 side to transport or the plugin",
    ),
    (
        "server_plugin_imports_no_private_name_of_qbeast_connect",
        private_imports_by_plugin,
        "private import(s) of qbeast_connect by the plugin",
        "make the name public in a lower layer, or keep the plugin's own copy",
    ),
    (
        "only_transport_imports_server_plugin",
        server_plugin_importers,
        "server_plugin import(s) outside qbeast_connect.spark",
        "reach the plugin through a qbeast_connect.spark module",
    ),
    (
        "no_product_file_over_800_lines",
        oversized_files,
        f"file(s) over {MAX_LINES} lines",
        "split them into focused modules",
    ),
]


@pytest.mark.parametrize(
    ("check", "what", "fix"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_product_code_keeps_the_rule(
    tree: Tree, check: Callable[[Tree], list[str]], what: str, fix: str
) -> None:
    problems = check(tree)
    assert not problems, f"{len(problems)} {what} ({fix}):\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# the checker itself, on small synthetic trees
# ---------------------------------------------------------------------------------------------


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


_CLEAN = {
    "qbeast_connect/__init__.py": "from qbeast_connect.table import Table\n",
    "qbeast_connect/exceptions.py": "import re\n",
    "qbeast_connect/model/__init__.py": "from qbeast_connect.model.cube import Cube\n",
    "qbeast_connect/model/cube.py": "from qbeast_connect.exceptions import QbeastError\n",
    "qbeast_connect/timeline/__init__.py": "from .update_period import UpdatePeriod\n",
    "qbeast_connect/timeline/update_period.py": "from ..model import Cube\n",
    "qbeast_connect/spark/session.py": (
        "import pyspark\nfrom server_plugin.writer import write\n"
        "from qbeast_connect.model import cube\n"
    ),
    "qbeast_connect/table.py": "from qbeast_connect.spark import session\n",
    "qbeast_connect/cli.py": "def main():\n    import qbeast_connect\n",
    "server_plugin/__init__.py": "",
    "server_plugin/delta/__init__.py": "",
    "server_plugin/delta/log.py": "import boto3\nfrom qbeast_connect.exceptions import __all__\n",
    "server_plugin/writer.py": (
        "from server_plugin.delta import log\nfrom qbeast_connect.model.cube import Cube\n"
    ),
    "pyspark_qbeast.py": "from server_plugin.writer import *\n",
}


def test_checker_passes_a_clean_tree(tmp_path: Path) -> None:
    _write(tmp_path, _CLEAN)
    tree = scan(tmp_path)
    assert set(tree.modules) == {
        "qbeast_connect",
        "qbeast_connect.exceptions",
        "qbeast_connect.model",
        "qbeast_connect.model.cube",
        "qbeast_connect.timeline",
        "qbeast_connect.timeline.update_period",
        "qbeast_connect.spark.session",
        "qbeast_connect.table",
        "qbeast_connect.cli",
        "server_plugin",
        "server_plugin.delta",
        "server_plugin.delta.log",
        "server_plugin.writer",
        "pyspark_qbeast",
    }
    # the relative import resolves: timeline.update_period reads the package model
    assert any(
        i.source == "qbeast_connect.timeline.update_period" and i.project == "qbeast_connect.model"
        for i in tree.imports
    )
    assert unplaced_modules(tree) == []
    assert upward_imports(tree) == []
    assert import_cycles(tree) == []
    assert impure_core_imports(tree) == []
    assert private_imports_by_plugin(tree) == []
    assert server_plugin_importers(tree) == []
    assert oversized_files(tree) == []


def test_checker_finds_each_planted_violation(tmp_path: Path) -> None:
    files = dict(_CLEAN)
    files.update(
        {
            # core -> API in a function, core -> transport under TYPE_CHECKING, core -> pyspark
            "qbeast_connect/exceptions.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from qbeast_connect.spark.session import S\n"
                "def f():\n"
                "    from qbeast_connect import table\n"
                "    import pyspark.sql\n"
            ),
            # a cycle through a lazy import: model.a <-> model.b
            "qbeast_connect/model/a.py": "from qbeast_connect.model.b import B\n",
            "qbeast_connect/model/b.py": "def g():\n    from qbeast_connect.model import a\n",
            # the plugin takes private names; the Delta layer reads the plugin
            "server_plugin/writer.py": (
                "from qbeast_connect.model.cube import _helper\n"
                "import qbeast_connect.model._frozen\n"
            ),
            "server_plugin/delta/log.py": "from server_plugin import writer\n",
            # the API reaches the plugin directly; a module with no layer; a long file
            "qbeast_connect/table.py": "from server_plugin.writer import write\n",
            "qbeast_connect/model/cube.py": "x = 1\n",  # keeps the planted cycle the only one
            "qbeast_connect/newthing.py": "x = 1\n" * (MAX_LINES + 1),
        }
    )
    _write(tmp_path, files)
    tree = scan(tmp_path)

    assert unplaced_modules(tree) == ["qbeast_connect/newthing.py: qbeast_connect.newthing"]
    upward = upward_imports(tree)
    assert len(upward) == 3, upward
    assert any(
        "qbeast_connect/exceptions.py:3" in p and "under TYPE_CHECKING" in p and "-> 4" in p
        for p in upward
    )
    assert any(
        "qbeast_connect/exceptions.py:5" in p and "in a function" in p and "-> 5 API" in p
        for p in upward
    )
    assert any("server_plugin/delta/log.py:1" in p and "-> 3 server plugin" in p for p in upward)
    cycles = import_cycles(tree)
    assert len(cycles) == 1
    assert cycles[0].startswith("cycle: qbeast_connect.model.a <-> qbeast_connect.model.b")
    assert "qbeast_connect/model/b.py:2" in cycles[0]
    impure = impure_core_imports(tree)
    assert len(impure) == 1 and "qbeast_connect/exceptions.py:6" in impure[0]
    private = private_imports_by_plugin(tree)
    assert len(private) == 2
    assert "private _helper" in private[0] and "private _frozen" in private[1]
    importers = server_plugin_importers(tree)
    assert importers == [
        "qbeast_connect/table.py:1 qbeast_connect.table imports server_plugin.writer (write) "
        "at top level"
    ]
    assert oversized_files(tree) == [f"qbeast_connect/newthing.py: {MAX_LINES + 1} lines"]


def test_most_specific_layer_rule_wins() -> None:
    assert layer_of("qbeast_connect") == API
    assert layer_of("qbeast_connect.timeline") == API  # the user namespace; loads fact lazily
    assert layer_of("qbeast_connect.timeline.fact") == API
    assert layer_of("qbeast_connect.timeline.cover") == CORE
    assert layer_of("qbeast_connect.timeline.brand_new") is None
    assert layer_of("server_plugin.delta.storage") == DELTA
    assert layer_of("server_plugin.writer") == PLUGIN
    assert layer_of("qbeast_connect.spark.write") == TRANSPORT
    assert layer_of("qbeast_connect.model.cube_id") == CORE
    assert layer_of("qbeast_connect.modelling") is None  # a prefix row matches whole names
    assert layer_of("pyspark_qbeast") == PLUGIN
    assert layer_of("x", {"x.*": CORE, "x": APPS}) == APPS
