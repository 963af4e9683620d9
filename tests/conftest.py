"""Shared test settings."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixture_table() -> Path:
    """The transaction log of a real table written by qbeast-spark (no data files)."""
    return FIXTURES / "qbeast_spark_table"
