"""The code base passes ruff and mypy with the project's configuration (pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_check_passes() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _mypy_cache_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where mypy keeps its incremental cache between runs.

    The user's cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``), shared by every
    checkout of the project, so a fresh clone does not check the whole code base and the
    typed libraries cold (about 20 s of the unit suite). The cache cannot change a verdict:
    mypy stores paths relative to the checkout and re-checks every module whose content
    (hash) differs from the entry, with whatever depends on it; entries of another mypy or
    Python version are kept apart. Where that directory is not writable it falls back to
    pytest's cache, and without pytest's cache plugin to a cold run in a temporary directory.
    """
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    version = f"py{sys.version_info.major}{sys.version_info.minor}"
    shared = base / "qbeast-connect" / f"mypy-{version}"
    try:
        shared.mkdir(parents=True, exist_ok=True)
        probe = shared / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return shared
    except OSError:
        pass
    cache = getattr(request.config, "cache", None)
    return cache.mkdir("mypy") if cache is not None else tmp_path / "mypy_cache"


def test_mypy_passes(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(_mypy_cache_dir(request, tmp_path))],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
