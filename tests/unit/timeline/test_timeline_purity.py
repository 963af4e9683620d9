"""The pure timeline modules import only the standard library; plans round-trip."""

from __future__ import annotations

import subprocess
import sys

import pytest

from qbeast_connect.exceptions import InvalidOptionError, UncoverableRangeError, error_from_text
from qbeast_connect.timeline.plan import TimelineWritePlan


def test_importing_the_timeline_package_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys\n"
        "import qbeast_connect.timeline\n"
        "from qbeast_connect.timeline import Fact, cover, write_partitioned\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'numpy', 'pyarrow', 'pandas', 'mmh3'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_plan_json_round_trip() -> None:
    plan = TimelineWritePlan(
        table_path="/t",
        operation="drop",
        column="dt",
        read_version=3,
        drop_partitions=("2015-02-10",),
        impls={"daily": "Ranges"},
        txn_id="x",
    )
    assert TimelineWritePlan.from_json(plan.to_json()) == plan
    with pytest.raises(InvalidOptionError, match="malformed timeline write plan"):
        TimelineWritePlan.from_json("{}")
    with pytest.raises(InvalidOptionError, match="update period"):
        TimelineWritePlan(table_path="/t", operation="write", column="dt", read_version=-1)


def test_uncoverable_error_is_rebuilt_from_its_text() -> None:
    error = UncoverableRangeError("fact 'f' cannot cover [a, b)", uncovered=("x",))
    rebuilt = error_from_text(f"Traceback...\n{error}\nmore")
    assert type(rebuilt) is UncoverableRangeError
    assert rebuilt.message == "fact 'f' cannot cover [a, b)"
