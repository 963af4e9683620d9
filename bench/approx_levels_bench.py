"""What the per-weight level of approx's band query costs (issue #37).

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-approx python -m bench.approx_levels_bench --sf 0.1 \
    --cube-size 20000

Reuses the table of ``bench.approx_bench`` with the same options. Captures the first band
of ``approx(fraction=...)`` and times its query (``approx/run._band_query``) with one level
of aggregation (per group: what a band reaching fraction 1 runs, and what every band ran
before issue #37) and with two (per weight, then per group), interleaved, read by one task
with adaptive execution off as approx reads a small band.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

QUERIES: tuple[tuple[list[str], tuple[str, ...]], ...] = (
    (["sum(l_extendedprice) AS revenue"], ()),
    (["sum(l_extendedprice) AS revenue", "count(*) AS n"], ("l_returnflag", "l_linestatus")),
)


def main() -> None:
    import qbeast_connect as qc
    from bench.approx_bench import table_path
    from bench.common import bench_session
    from qbeast_connect.approx import parse_aggregates, run
    from qbeast_connect.spark.adaptive import adaptive_off

    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--cube-size", type=int, default=20_000)
    parser.add_argument("--fraction", type=float, default=0.25)
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()

    spark = bench_session()
    try:
        table = qc.QbeastTable.forPath(
            spark, str(table_path(args.sf, args.cube_size, written=True))
        )
        captured: dict[str, Any] = {}
        real = run._band_sums

        def spy(
            frame: Any, aggs: Any, groups: Any, columns: Any, last: bool, per_row: bool = False
        ) -> Any:
            captured.update(frame=frame, columns=columns)
            return real(frame, aggs, groups, columns, last, per_row)

        run._band_sums = spy  # type: ignore[assignment]
        for texts, group in QUERIES:
            result = table.approx(texts, groupBy=list(group) or None, fraction=args.fraction)
            aggs = parse_aggregates(texts)
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.runs):
                for last in (True, False):
                    t0 = time.perf_counter()
                    with adaptive_off(spark):
                        frame = captured["frame"].coalesce(1)
                        run._band_query(frame, aggs, group, captured["columns"], last)[0].collect()
                    times[last].append(time.perf_counter() - t0)
            one, two = statistics.median(times[True]), statistics.median(times[False])
            print(
                f"{texts} by {group}: rows {result.rowsRead}, one level {one:.3f} s, "
                f"two levels {two:.3f} s ({two / one:.2f}x)"
            )
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
