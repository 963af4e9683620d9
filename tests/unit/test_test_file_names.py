"""No two test modules of the suite share a file name.

Test directories without ``__init__.py`` are imported by pytest under their bare file name,
so two ``test_x.py`` in different directories make the whole run stop at collection
("import file mismatch"). The check runs over every directory pytest collects
(``testpaths`` in pyproject.toml), packaged or not, so a clash is caught before it bites.
"""

from __future__ import annotations

import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _test_modules(roots: list[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        found += root.rglob("test_*.py")
        found += root.rglob("*_test.py")
    return [p for p in found if "__pycache__" not in p.parts]


def shared_basenames(roots: list[Path]) -> dict[str, list[str]]:
    """File names used by more than one test module under ``roots``, with their paths."""
    seen: dict[str, list[str]] = defaultdict(list)
    for path in _test_modules(roots):
        seen[path.name].append(str(path))
    return {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}


def test_no_two_test_files_share_a_basename() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    roots = [ROOT / p for p in config["tool"]["pytest"]["ini_options"]["testpaths"]]
    assert {p.name for p in roots} == {"tests", "integration"}
    modules = _test_modules(roots)
    assert len(modules) > 50  # the walk really saw the suite
    assert shared_basenames(roots) == {}, "rename one of each pair: pytest refuses both"


def test_the_name_check_sees_a_clash_across_directories(tmp_path: Path) -> None:
    for folder in ("tests/unit", "tests/spark/deep", "integration"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "tests/unit/test_same.py").write_text("")
    (tmp_path / "tests/spark/deep/test_same.py").write_text("")
    (tmp_path / "integration/test_other.py").write_text("")
    (tmp_path / "integration/helpers.py").write_text("")
    clash = shared_basenames([tmp_path / "tests", tmp_path / "integration"])
    assert clash == {
        "test_same.py": sorted(
            [str(tmp_path / "tests/spark/deep/test_same.py"), str(tmp_path / "tests/unit/test_same.py")]
        )
    }
