"""The code base passes ruff and mypy with the project's configuration (pyproject.toml)."""

from __future__ import annotations

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


def test_mypy_passes(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # mypy's incremental cache lives in pytest's cache directory (git-ignored), so a run
    # after a small edit re-checks only what changed: well under a second instead of several.
    # mypy itself invalidates entries whose source or mypy version changed. Without pytest's
    # cache plugin (`-p no:cacheprovider`) the check runs cold in a temporary directory.
    cache = getattr(request.config, "cache", None)
    cache_dir = cache.mkdir("mypy") if cache is not None else tmp_path / "mypy_cache"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
