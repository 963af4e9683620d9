"""The reference engine's harness (``integration/reference/env.py``), against a small
script that speaks the driver's protocol: one JSON command per line in, one answer out."""

from __future__ import annotations

import sys

import pytest

from integration.reference.env import ReferenceEngine, ReferenceError

# answers each command with its "n" (ping has none); the one with "slow" after 3 s
_FAKE_DRIVER = """
import json, sys, time
for line in sys.stdin:
    command = json.loads(line)
    if command.get("slow"):
        time.sleep(3)
    print(json.dumps({"result": command.get("n")}), flush=True)
"""


def test_an_answer_after_its_deadline_is_never_taken_for_the_next_one() -> None:
    # CI of stop 46: Delta 3.1's VACUUM outlived its deadline, and its late answer (no
    # rows) was read as the answer of the next test's SELECT, which failed on it
    engine = ReferenceEngine(argv=[sys.executable, "-c", _FAKE_DRIVER])
    try:
        assert engine.call({"op": "sql", "n": 1}) == 1
        with pytest.raises(ReferenceError, match="gave no answer to sql within 1 s"):
            engine.call({"op": "sql", "n": 2, "slow": True}, timeout=1.0)
        with pytest.raises(ReferenceError, match="stopped after no answer to sql within 1 s"):
            engine.call({"op": "sql", "n": 3})
        assert engine.proc.poll() is not None  # the driver itself is gone
    finally:
        engine.stop()
