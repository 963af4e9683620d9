"""The model package imports only the standard library (style guide §4.1)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_model_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys\n"
        "import qbeast_connect.model\n"
        "import qbeast_connect.model.estimation_math\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'numpy', 'pyarrow', 'pandas', 'mmh3'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
