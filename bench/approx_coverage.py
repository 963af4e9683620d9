"""Coverage of ``QbeastTable.approx``'s intervals over random queries on TPC-H lineitem.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-approx python -m bench.approx_coverage --sf 0.1 \
    --queries 200 --out bench/approx_coverage_sf0.1.json

The table is written once (indexed on l_shipdate, l_extendedprice, l_partkey). Its rows are
then read once with their weights (Spark's ``hash`` of the indexed columns, the very value
the sample filters on), so that every query is evaluated locally: the exact answer from all
rows, and the estimate from the rows of the sample (weight below ``weight(fraction)``) with
the estimators ``approx`` uses. A few queries also run through ``approx(fraction=...)`` and
must give the same estimates, which ties the local evaluation to the real read path.

A query is an aggregate (count, sum or avg of a measure), a random filter (a range of ship
dates, of quantities, a discount bound, a return flag, or none), a random grouping and a
random fraction; an interval covers when it holds the exact answer of its group. Only
reliable intervals count (small groups carry none); the figures say how many there were.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.approx_shapes import group_sums
from bench.common import LINEITEM_COLUMNS as COLUMNS
from bench.common import indexed_copy

#: The table's writer, under the name integration/test_approx_coverage.py imports.
write_table = indexed_copy
MEASURES = ("l_extendedprice", "l_quantity", "l_discount")
GROUPINGS: tuple[tuple[str, ...], ...] = (
    (),
    ("l_returnflag",),
    ("l_linestatus",),
    ("l_shipmode",),
    ("l_returnflag", "l_linestatus"),
)
KEEP = (*MEASURES, "l_shipdate", "l_returnflag", "l_linestatus", "l_shipmode")


@dataclass(frozen=True)
class Query:
    aggregate: str  # "count(*) AS a", "sum(x) AS a", "avg(x) AS a"
    where: str | None  # Spark SQL
    local_where: str | None  # the same filter for pandas' DataFrame.query
    group_by: tuple[str, ...]
    fraction: float

    def matching(self, frame: Any) -> Any:
        """The rows of a pandas frame the filter keeps."""
        return frame if self.local_where is None else frame.query(self.local_where)


def _filter(rng: random.Random) -> tuple[str | None, str | None]:
    """A random filter, as Spark SQL and as a pandas query."""
    kind = rng.choice(["none", "dates", "quantity", "discount", "flag"])
    if kind == "dates":
        start = dt.date(1992, 1, 1) + dt.timedelta(days=rng.randrange(0, 2000))
        end = start + dt.timedelta(days=rng.randrange(90, 1500))
        return (
            f"l_shipdate >= DATE'{start}' AND l_shipdate < DATE'{end}'",
            f"l_shipdate >= '{start}' and l_shipdate < '{end}'",
        )
    if kind == "quantity":
        low = rng.randrange(1, 40)
        high = low + rng.randrange(5, 30)
        return (
            f"l_quantity BETWEEN {low} AND {high}",
            f"l_quantity >= {low} and l_quantity <= {high}",
        )
    if kind == "discount":
        bound = rng.choice([0.02, 0.04, 0.05, 0.07, 0.09])
        return f"l_discount <= {bound}", f"l_discount <= {bound}"
    if kind == "flag":
        flag = rng.choice(["A", "N", "R"])
        return f"l_returnflag = '{flag}'", f"l_returnflag == '{flag}'"
    return None, None


def random_queries(n: int, seed: int, fractions: tuple[float, ...]) -> list[Query]:
    """``n`` random queries, the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.choice(["count", "sum", "sum", "avg"])
        text = "count(*) AS a" if kind == "count" else f"{kind}({rng.choice(MEASURES)}) AS a"
        where, local = _filter(rng)
        out.append(Query(text, where, local, rng.choice(GROUPINGS), rng.choice(fractions)))
    return out


def load_rows(table: Any) -> Any:
    """Every row of the table (the columns the queries use) with its weight, as pandas."""
    import pandas as pd

    nulls = " AND ".join(f"{c.strip()} IS NULL" for c in COLUMNS.split(","))
    frame = table.toDF().selectExpr(*KEEP, f"hash({COLUMNS}) AS _w", f"{nulls} AS _null").toPandas()
    for c in MEASURES:
        frame[c] = frame[c].astype(float)
    frame["l_shipdate"] = pd.to_datetime(frame["l_shipdate"])
    return frame


def _groups(frame: Any, keys: tuple[str, ...]) -> dict[tuple[Any, ...], Any]:
    if not keys:
        return {(): frame}
    return {
        (k if isinstance(k, tuple) else (k,)): g for k, g in frame.groupby(list(keys), sort=False)
    }


def evaluate(
    query: Query,
    rows: Any,
    probability: float | None = None,
    unread: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Per group: the exact answer and the estimate from the query's sample, locally.
    ``probability``: the inclusion probability to estimate with (``approx``'s
    ``ApproxResult.probability``, which is the sample's realized share of the candidate
    rows when the log tells it); by default that of the fraction. ``unread``: the
    measures' extremes in the files not read (``ApproxResult.unreadExtremes``); by default
    none (the rows are evaluated without their files)."""
    from qbeast_connect.approx import estimate, inclusion_probability, parse_aggregates, z_value
    from qbeast_connect.model.weight import weight_from_fraction

    (agg,) = parse_aggregates(query.aggregate)
    matched = query.matching(rows)
    p = inclusion_probability(query.fraction) if probability is None else probability
    sampled = (
        matched
        if p >= 1.0
        else matched[(matched["_w"] < weight_from_fraction(query.fraction)) | matched["_null"]]
    )
    whole = _groups(matched, query.group_by)
    seen = _groups(sampled, query.group_by)
    if not query.group_by and len(sampled) == 0:
        seen = {(): sampled}
    z = z_value(0.95)
    out = []
    for key, part in seen.items():
        full = whole[key]
        exact: float | None = float(len(full))
        if agg.column is not None:
            x = full[agg.column]
            exact = float(x.sum()) if agg.kind == "sum" else float(x.mean())
        sums = group_sums(part, (), agg.column or MEASURES[0]).get((), {"rows": 0})
        # no filter nor group: approx knows the rows from the log (ratio estimators)
        known = len(rows) if query.where is None and not query.group_by else None
        extremes = None if unread is None or agg.column is None else unread.get(agg.column)
        e = estimate(agg, 0, sums, p, z, known, extremes)
        out.append(
            {
                "key": key,
                "exact": exact,
                "value": e.value,
                "low": e.low,
                "high": e.high,
                "reliable": e.reliable,
            }
        )
    return out


def coverage(queries: list[Query], rows: Any) -> dict[str, Any]:
    """How many reliable intervals of the queries hold the exact answer."""
    intervals = covered = unreliable = 0
    misses = []
    for q in queries:
        for g in evaluate(q, rows):
            if not g["reliable"]:
                unreliable += 1
                continue
            intervals += 1
            hit = g["low"] <= g["exact"] <= g["high"]
            covered += hit
            if not hit and len(misses) < 10:
                misses.append({"query": str(q), "group": str(g["key"])})
    return {
        "queries": len(queries),
        "intervals": intervals,
        "covered": covered,
        "coverage": round(covered / intervals, 4) if intervals else None,
        "unreliable_groups": unreliable,
        "first_misses": misses,
    }


def main() -> None:
    from bench.common import bench_session, lineitem, machine, out_dir, save_report

    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--cube-size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--fractions", default="0.015625,0.03125,0.0625,0.125,0.25")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import qbeast_connect as qc

    path = out_dir("/tmp/qbeast-bench-approx") / f"approx_cov_sf{args.sf:g}_{args.cube_size}"
    spark = bench_session()
    try:
        indexed_copy(spark, lineitem(args.sf), path, args.cube_size)
        t0 = time.perf_counter()
        table = qc.QbeastTable.forPath(spark, str(path))
        rows = load_rows(table)
        fractions = tuple(float(f) for f in args.fractions.split(","))
        queries = random_queries(args.queries, args.seed, fractions)
        figures = coverage(queries, rows)
        figures["seconds"] = round(time.perf_counter() - t0, 1)
        report = {
            "machine": machine(),
            "command": "python -m bench.approx_coverage " + " ".join(sys.argv[1:]),
            "rows": len(rows),
            "fractions": fractions,
            **figures,
        }
        save_report(report, args.out)
    finally:
        qc.stop()


if __name__ == "__main__":
    main()
