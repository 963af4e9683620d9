"""``bench/run_all.py`` writes its own report, never the hand-kept BENCHMARKS.md."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bench import run_all


def test_run_all_writes_its_own_report_not_benchmarks_md(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = tmp_path / "bench" / "out" / "run_all.md"
    report.parent.mkdir(parents=True)
    monkeypatch.setattr(run_all, "ROOT", tmp_path)
    monkeypatch.setattr(run_all, "REPORT", report, raising=False)
    monkeypatch.setattr(sys, "argv", ["run_all.py", "--reuse"])
    ran: list[str] = []

    def fake_run(name: str, **_: Any) -> dict[str, Any]:
        ran.append(name)
        return {}

    monkeypatch.setattr(run_all, "run", fake_run)
    monkeypatch.setattr(run_all, "plots", lambda *a, **k: [])
    monkeypatch.setattr(run_all, "synthetic_plot", lambda *a, **k: None)
    monkeypatch.setattr(run_all, "render", lambda *a, **k: "# the run's report\n")
    run_all.main()
    assert "write_big" in ran and "query" in ran
    assert not (tmp_path / "BENCHMARKS.md").exists()
    assert report.read_text() == "# the run's report\n"
