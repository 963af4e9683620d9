"""What opening a session costs in plugin checks: the UDF probe against the old probe.

``qc.session`` used to check the plugin with one read of the ``qbeast_snapshot`` source
(``option("probe", "true")``); it now runs one Python UDF over one row (see
``qbeast_connect/spark/plugin_setup.py``), and on a stock server a second one after
shipping the bundle. Both checks run alternately on one embedded server, so the ratio is
measured side by side in one run. Also timed: building the bundle (once per process).

Run: ``python -m bench.session_probe_bench [rounds]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _old_probe(spark: Any) -> None:
    rows = spark.read.format("qbeast_snapshot").option("probe", "true").load().collect()
    assert rows[0]["kind"] == "plugin"


def main(rounds: int = 7) -> dict[str, Any]:
    import qbeast_connect as qc
    from qbeast_connect.spark.bundle import build_bundle
    from qbeast_connect.spark.plugin_setup import probe_server

    started = time.perf_counter()
    bundle = build_bundle(out_dir=Path("/tmp"))
    build_s = time.perf_counter() - started
    size = bundle.path.stat().st_size
    bundle.path.unlink()

    spark = qc.session()
    _old_probe(spark)  # warm both paths' Python workers
    probe_server(spark)
    old: list[float] = []
    new: list[float] = []
    for _ in range(rounds):
        t = time.perf_counter()
        _old_probe(spark)
        old.append(time.perf_counter() - t)
        t = time.perf_counter()
        probe_server(spark)
        new.append(time.perf_counter() - t)
    qc.stop()
    result = {
        "rounds": rounds,
        "old_probe_median_s": round(statistics.median(old), 3),
        "udf_probe_median_s": round(statistics.median(new), 3),
        "ratio_udf_to_old": round(statistics.median(new) / statistics.median(old), 2),
        "bundle_build_s": round(build_s, 3),
        "bundle_bytes": size,
        "bundle_modules": len(bundle.modules),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
