"""The reference environment's plumbing (``integration/reference``), without building it:
the pom, the cache folder, a failed venv build as a clear error, and the value encoding
between the test process and the reference driver."""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from integration.reference import env
from qbeast_connect.exceptions import MissingDependencyError


def test_the_pom_names_delta_3_1_for_scala_2_12_only() -> None:
    text = env.POM_PATH.read_text()
    assert env.delta_version() == "3.1.0"
    assert "<artifactId>delta-spark_2.12</artifactId>" in text
    assert "<artifactId>delta-storage</artifactId>" in text
    assert text.count("<exclusion><groupId>*</groupId><artifactId>*</artifactId>") == 2
    body = text.split("-->", 1)[1]
    for schema in (
        "http://maven.apache.org/POM",
        "http://www.w3.org/2001/XMLSchema-instance",
        "http://maven.apache.org/xsd",
    ):
        body = body.replace(schema, "")
    assert "://" not in body  # no registry named
    assert env.PYSPARK_VERSION.startswith("3.5.")


def test_a_complete_venv_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.DIR_ENV, str(tmp_path))
    venv = tmp_path / "spark35-venv"
    venv.mkdir()
    (venv / ".complete").write_text("\n".join(env.REQUIREMENTS) + "\n")
    assert env.venv_python() == venv / "bin" / "python"


def test_a_failed_venv_build_is_a_clear_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(env.DIR_ENV, str(tmp_path))
    # an older build for other requirements, and an install that cannot succeed
    (tmp_path / "spark35-venv").mkdir()
    (tmp_path / "spark35-venv" / ".complete").write_text("pyspark==0.0\n")
    monkeypatch.setattr(env, "REQUIREMENTS", ("--no-index", "qbeast-no-such-package==0"))
    monkeypatch.setattr(sys, "_base_executable", sys.executable, raising=False)
    with pytest.raises(MissingDependencyError, match=r"(?s)reference venv failed.*qbeast-no-such"):
        env.venv_python(timeout=120)
    # the old build is untouched, and no half-built venv is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark35-venv"]
    assert (tmp_path / "spark35-venv" / ".complete").read_text() == "pyspark==0.0\n"


def test_values_travel_as_tagged_json() -> None:
    row = [
        1,
        -0.0,
        math.inf,
        "ü€😀",
        None,
        dt.date(1, 1, 1),
        dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=dt.UTC),
        Decimal("-0E-10"),
        Decimal("12.30"),
        b"\x00\xff",
    ]
    back = env.decode(json.loads(json.dumps(env.encode(row))))
    assert back[:5] == row[:5] and math.copysign(1.0, back[1]) == -1.0
    assert back[5] == dt.date(1, 1, 1)
    assert back[6] == dt.datetime(2024, 2, 29, 23, 59, 59, 999999)  # naive UTC
    assert [str(v) for v in back[7:9]] == ["-0E-10", "12.30"]
    assert back[9] == b"\x00\xff"
    nested = {"columns": ["d"], "rows": [[{"$date": "2024-01-01"}]]}
    assert env.decode(nested) == {"columns": ["d"], "rows": [[dt.date(2024, 1, 1)]]}
