"""The model package imports only the standard library (style guide §4.1); planning never
imports pyspark."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_importing_model_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys\n"
        "import qbeast_connect.model\n"
        "import qbeast_connect.model.estimation_math\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'numpy', 'pyarrow', 'pandas', 'mmh3'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


_PLANNING = ROOT / "qbeast_connect" / "planning"


def test_planning_imports_where_importing_pyspark_raises() -> None:
    # every planning module, imported in a process where any pyspark import fails
    code = (
        "import importlib, pkgutil, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pyspark':\n"
        "            raise ImportError('pyspark is blocked in this test')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Block())\n"
        "import qbeast_connect.planning as planning\n"
        "prefix = planning.__name__ + '.'\n"
        "names = [m.name for m in pkgutil.walk_packages(planning.__path__, prefix)]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(' '.join(sorted(names)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    imported = set(result.stdout.split())
    expected = {"coercion", "file_planner", "query_space", "predicate"} | {
        f"predicate.{m}"
        for m in ("literals", "nodes", "normal_form", "sql_parser", "sql_render", "sql_tokenizer")
    }
    assert {f"qbeast_connect.planning.{m}" for m in expected} <= imported


def test_no_planning_module_names_pyspark_even_for_type_checking() -> None:
    offenders = []
    for path in sorted(_PLANNING.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] == "pyspark"
            ]
    assert offenders == []
