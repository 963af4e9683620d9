"""docs/quickstart.md runs as written: its python blocks in order, checked against its outputs.

Each ```python block runs in one shared namespace; a ```text block right after it is the exact
output (stripped) the block must print. ``/tmp/qbeast/`` is the documented placeholder for
table locations and becomes a temporary directory here.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
PLACEHOLDER = "/tmp/qbeast/"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def doc_blocks(text: str) -> list[tuple[str, str | None]]:
    """``(python code, expected output or None)`` for every python block, in order."""
    fences = [(m.group(1), m.group(2), m.start(), m.end()) for m in _FENCE.finditer(text)]
    out: list[tuple[str, str | None]] = []
    for i, (lang, body, _, end) in enumerate(fences):
        if lang != "python":
            continue
        expected = None
        if i + 1 < len(fences):
            next_lang, next_body, next_start, _ = fences[i + 1]
            if next_lang == "text" and text[end:next_start].strip() == "":
                expected = next_body.strip()
        out.append((body, expected))
    return out


def test_the_doc_has_checked_blocks() -> None:
    blocks = doc_blocks(DOC.read_text())
    assert len(blocks) >= 8
    assert sum(1 for _, expected in blocks if expected is not None) >= 8
    assert PLACEHOLDER in DOC.read_text()


def test_quickstart_runs_as_documented(spark: Any, tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "quickstart"}
    root = str(tmp_path) + "/"
    for number, (code, expected) in enumerate(doc_blocks(DOC.read_text()), start=1):
        source = code.replace(PLACEHOLDER, root)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source, f"quickstart block {number}", "exec"), namespace)
        if expected is not None:
            printed = out.getvalue().strip()
            assert printed == expected, f"block {number}:\n{code}"
    assert namespace["spark"] is spark  # the doc's qc.session() is the test session


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\nx = 1\n```\n\n```text\n1\n```\n", [("x = 1\n", "1")]),
        ("```python\nx = 1\n```\nprose\n```text\n1\n```\n", [("x = 1\n", None)]),
        ("```bash\nls\n```\n", []),
    ],
)
def test_doc_block_extraction(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert doc_blocks(text) == expected
