"""The cost of a declined one-job append: the same big append into the two tables that
``bench/append_bench.py`` left, rounds alternating the order of the two paths.

Usage (after append_bench.py, same QBEAST_BENCH_DIR):
    python bench/append_decline_bench.py [--rounds 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BENCH_DIR


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.spark import small_append

    spark = qc.session()
    out = BENCH_DIR / "out"
    big = str(out / "append_big_rows")
    use = small_append.may_use
    rows: list[Any] = []
    for i in range(args.rounds):
        order = ["one_job", "three_jobs"] if i % 2 == 0 else ["three_jobs", "one_job"]
        for name in order:
            small_append.may_use = use if name == "one_job" else (lambda *_: False)  # type: ignore[assignment]
            try:
                start = time.perf_counter()
                result = qc.write(spark.read.parquet(big), str(out / f"append_{name}"),
                                  mode="append")
                seconds = time.perf_counter() - start
            finally:
                small_append.may_use = use  # type: ignore[assignment]
            rows.append((i, name, round(seconds, 2),
                         {k: round(v, 2) for k, v in result.timings.items()}))
            print(rows[-1], flush=True)
    qc.stop()


if __name__ == "__main__":
    main()
