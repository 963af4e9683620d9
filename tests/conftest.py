"""Shared test settings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Keep the compiled test modules (rewritten by pytest for its asserts) and product modules
# in __pycache__ even where PYTHONDONTWRITEBYTECODE is set: without it every run compiles
# and rewrites them all again, about 2.5 s of the unit suite's collection. Only this test
# process is affected (git ignores __pycache__).
sys.dont_write_bytecode = False

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_table() -> Path:
    """The transaction log of a real table written by qbeast-spark (no data files)."""
    return FIXTURES / "qbeast_spark_table"
