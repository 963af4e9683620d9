"""Coverage of ``QbeastTable.approx``'s 95% intervals on seven adversarial table shapes.

Usage: python -m bench.approx_shapes --queries 200 --tables 5 --out bench/approx_shapes.json

Issue #37: the intervals were right on an index whose keys tell rows apart and silently
wrong elsewhere. Each shape is a table generated with a fixed seed:

(a) an index on unique-ish keys (``id, u``);
(b) an index on one date column only (250 rows per date);
(c) an index on a 5-value category plus a date (50 rows per key);
(d) a heavy-tailed measure (Pareto, alpha = 1.5), index on unique-ish keys;
(e) an indexed column that is NULL in 60% of rows (``dev``: all those rows share weight 42);
(f) a measure that is zero in 99% of rows, index on unique-ish keys;
(g) an index on a 5-value category alone.

Every row's weight is Spark's ``hash`` of the indexed columns, computed here with
:func:`qbeast_connect.index.hashing_np.spark_hash_columns` (the same Murmur3 the writer
uses), so no Spark is needed: every query is run as ``approx(relativeError=...)`` would run
it, locally. The first band is the smallest power-of-two fraction holding
:func:`~qbeast_connect.approx.result.rows_needed` of the table's rows (the planner's choice
without the widening by whole files), and each next one is
:func:`~qbeast_connect.approx.result.next_fraction` of the estimates so far; the per-group
sums are those Spark computes (per weight, then per group), fed to the estimators approx
uses. ``tests/spark/test_approx.py`` checks that ``approx`` itself gives these sums.

A query is an aggregate (``count(*)``, ``sum(x)``, ``avg(x)``), a random filter (a range of
``u``, a range of dates, a category, a flag, or none), a random grouping (none, the flag, the
category), and either a relativeError of 5%, 10% or 20% (online: read bands until the
intervals are narrow enough) or a fixed fraction of 1/16, 1/8 or 1/4 (one sample), half and
half; the figures are given for each kind. An interval of a group covers when it holds the
group's exact answer; a flagged estimate (not reliable) counts as neither, and is counted.
Intervals of groups read in full (fraction 1) are exact and counted apart too, so the
coverage of the estimated ones is reported on its own.

The sample is deterministic: every query on one table reads the same nested samples, so
one unlucky sample (a 2.5-sigma average of the 43 dates below weight(1/16), say) shows in
every query that stops there, and the queries' misses are not independent. ``--tables``
spreads the queries over that many tables of the shape (seeds ``seed``, ``seed + 1``, ...),
each with keys of its own (:func:`key_domain`), so each is its own sample of keys: coverage
over tables as well as over queries, which is what "95%" promises.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: shape -> (what it is, the indexed columns)
SHAPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "a": ("unique-ish keys (id, u)", ("id", "u")),
    "b": ("one date column only", ("d",)),
    "c": ("5-value category + date", ("cat", "d")),
    "d": ("Pareto measure (alpha 1.5)", ("id", "u")),
    "e": ("indexed column NULL in 60% of rows", ("dev",)),
    "f": ("measure zero in 99% of rows", ("id", "u")),
    "g": ("5-value category alone", ("cat",)),
}
ERRORS = (0.05, 0.1, 0.2)
FRACTIONS = (1 / 16, 1 / 8, 1 / 4)
GROUPINGS: tuple[tuple[str, ...], ...] = ((), ("flag",), ("cat",))
START = dt.date(2024, 1, 1)
ROWS_PER_DAY = 250
#: the seed whose table keeps the key domain above (dates from START, devices 0-1999,
#: categories c0-c4); other seeds shift it (:func:`key_domain`)
BASE_SEED = 37


@dataclass(frozen=True)
class KeyDomain:
    """The values the keys of one table take. A weight is the hash of a key, so two tables
    over the same keys sample the same keys: their coverage figures are one realization of
    the hash, not two. Each seed gets its own domain, so the tables of ``--tables`` are
    independent samples as well as independent data."""

    start: dt.date  # the first date
    first_device: int  # device ids are first_device .. first_device + 1999
    categories: tuple[str, ...]


def key_domain(seed: int) -> KeyDomain:
    """The key domain of the table of ``seed`` (``BASE_SEED``: START, 0, c0-c4)."""
    shift = seed - BASE_SEED
    suffix = "" if shift == 0 else f"_{shift}"
    return KeyDomain(
        # 1,000 days apart (a table spans 800), 80 of them: pandas' dates end in 2262
        start=START + dt.timedelta(days=1000 * (shift % 80)),
        first_device=2000 * shift,
        categories=tuple(f"c{i}{suffix}" for i in range(5)),
    )


def make_table(shape: str, rows: int, seed: int) -> Any:
    """The shape's table as pandas, with each row's weight in ``_w`` and whether its indexed
    columns are all NULL in ``_null``."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from qbeast_connect.index.hashing_np import spark_hash_columns

    rng = np.random.default_rng(seed)
    domain = key_domain(seed)
    x = rng.lognormal(3.0, 0.8, rows)
    if shape == "d":
        x = (rng.pareto(1.5, rows) + 1.0) * 10.0
    elif shape == "f":
        x = np.where(rng.random(rows) < 0.01, x, 0.0)
    dev = (rng.integers(0, 2000, rows) + domain.first_device).astype(float)
    dev[rng.random(rows) < 0.6] = np.nan
    days = rng.integers(0, max(rows // ROWS_PER_DAY, 1), rows)
    frame = pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "u": rng.random(rows) * 100.0,
            "d": pd.to_datetime(domain.start) + pd.to_timedelta(days, unit="D"),
            "cat": np.array(domain.categories)[rng.integers(0, 5, rows)],
            "flag": np.where(rng.random(rows) < 0.3, "A", "B"),
            "dev": dev,
            "x": x,
        }
    )
    arrays = {
        "id": pa.array(frame["id"], pa.int64()),
        "u": pa.array(frame["u"], pa.float64()),
        "d": pa.array(
            domain.start.toordinal() - dt.date(1970, 1, 1).toordinal() + days, pa.int32()
        ).cast(pa.date32()),
        "cat": pa.array(frame["cat"], pa.string()),
        "dev": pa.array(frame["dev"], pa.int32(), from_pandas=True),
    }
    frame["_w"] = spark_hash_columns([arrays[c] for c in SHAPES[shape][1]])
    frame["_null"] = np.logical_and.reduce([frame[c].isna() for c in SHAPES[shape][1]])
    frame["_file"] = _files(frame["_w"].to_numpy(), rng)
    return frame


#: The cube size of the files :func:`_files` lays out, and the children of a cube.
CUBE_SIZE = 5_000
FANOUT = 4


def _files(weights: Any, rng: Any) -> Any:
    """Each row's data file, as a qbeast write of the table would lay them out: an OTree of
    :data:`CUBE_SIZE` rows per cube, each cube one file; the root holds the rows of the
    smallest weights, each level below :data:`FANOUT` times as many cubes with the next
    smallest, each row in the cube of its place in the space (here a random one: the
    measures are independent of where a row lies). What matters to ``approx`` is which
    files hold rows above a band's end, and the extremes of each file's measure (their
    Delta statistics, ``BandPlanner.unread_extremes``)."""
    import numpy as np

    rank = np.empty(len(weights), dtype=np.int64)
    rank[np.argsort(weights, kind="stable")] = np.arange(len(weights))
    files = np.zeros(len(weights), dtype=np.int64)
    first, cubes, level_start = 0, 1, 0
    while first < len(weights):
        last = first + cubes * CUBE_SIZE
        here = (rank >= first) & (rank < last)
        files[here] = level_start + rng.integers(0, cubes, int(here.sum()))
        first, level_start, cubes = last, level_start + cubes, cubes * FANOUT
    return files


def _no_extremes(rows: Any, fraction: float) -> dict[str, Any]:
    """Nothing known of the values not read (``--without-unread-extremes``)."""
    return {}


def _unread_extremes(rows: Any, fraction: float) -> dict[str, Any]:
    """``{"x": UnreadExtremes}`` over the files of :func:`_files` holding a row of weight at
    or above ``weight(fraction)``, as ``approx`` takes it from the log; nothing for a full
    read."""
    from qbeast_connect.approx.estimators import UnreadExtremes
    from qbeast_connect.model.weight import weight_from_fraction

    if fraction >= 1.0:
        return {}
    files = rows.groupby("_file").agg(w=("_w", "max"), lo=("x", "min"), hi=("x", "max"))
    unread = files[files["w"] >= weight_from_fraction(fraction)]
    return {"x": UnreadExtremes.of(zip(unread["lo"], unread["hi"], strict=True))}


@dataclass(frozen=True)
class Query:
    aggregate: str  # "count(*) AS a", "sum(x) AS a", "avg(x) AS a"
    where: str | None  # Spark SQL
    local_where: str | None  # the same filter for pandas' DataFrame.query
    group_by: tuple[str, ...]
    relative_error: float | None  # online aggregation to this precision, or
    fraction: float | None  # one sample of this fraction

    @property
    def online(self) -> bool:
        return self.relative_error is not None

    def matching(self, frame: Any) -> Any:
        """The rows of a pandas frame the filter keeps."""
        return frame if self.local_where is None else frame.query(self.local_where)


def _filter(rng: random.Random, days: int, domain: KeyDomain) -> tuple[str | None, str | None]:
    kind = rng.choice(["none", "u", "dates", "cat", "flag"])
    if kind == "u":
        low = rng.uniform(0, 70)
        high = low + rng.uniform(10, 30)
        return f"u >= {low:.3f} AND u < {high:.3f}", f"u >= {low:.3f} and u < {high:.3f}"
    if kind == "dates":
        length = rng.randrange(days // 5, days * 3 // 5)
        first = domain.start + dt.timedelta(days=rng.randrange(0, days - length))
        last = first + dt.timedelta(days=length)
        return (
            f"d >= DATE'{first}' AND d < DATE'{last}'",
            f"d >= '{first}' and d < '{last}'",
        )
    if kind == "cat":
        c = domain.categories[rng.randrange(5)]
        return f"cat = '{c}'", f"cat == '{c}'"
    if kind == "flag":
        return "flag = 'B'", "flag == 'B'"
    return None, None


def random_queries(n: int, seed: int, rows: int) -> list[Query]:
    """``n`` random queries over a table of ``rows`` rows, the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.choice(["count", "sum", "avg"])
        text = "count(*) AS a" if kind == "count" else f"{kind}(x) AS a"
        where, local = _filter(rng, max(rows // ROWS_PER_DAY, 5), key_domain(seed))
        grouping = rng.choice(GROUPINGS)
        if rng.random() < 0.5:
            out.append(Query(text, where, local, grouping, rng.choice(ERRORS), None))
        else:
            out.append(Query(text, where, local, grouping, None, rng.choice(FRACTIONS)))
    return out


def group_sums(
    sampled: Any, group_by: tuple[str, ...], measure: str = "x"
) -> dict[tuple[Any, ...], Any]:
    """The sums Spark computes over the sampled rows, per group: per (group, weight) the
    totals, then per group the sums of their powers (``approx/run._band_query``); the
    all-NULL rows' totals apart, and the spread over the other weights only.

    ``q0`` (the per-row sum of squares) and ``nz0`` (non-zero rows) are not used by the
    estimators any more; they are kept so that this harness also runs against the per-row
    estimators of before issue #37 (shape (b) must then fail)."""
    x = sampled[measure]
    frame = sampled.assign(_x=x, _x2=x**2, _nz=(x != 0).astype(int))
    keys = [*group_by, "_w", "_null"]
    w = frame.groupby(keys, sort=False).agg(
        r=("_x", "size"), n=("_x", "count"), t=("_x", "sum"), q=("_x2", "sum"), nz=("_nz", "sum")
    )
    w = w.reset_index()
    nulls = w["_null"].to_numpy()
    sampled_weights = ~nulls
    w = w.assign(
        null_r=w["r"].where(nulls, 0),
        null_n=w["n"].where(nulls, 0),
        null_t=w["t"].where(nulls, 0.0),
        key=sampled_weights.astype(int),
        r2=(w["r"] ** 2.0).where(sampled_weights, 0.0),
        t2=(w["t"] ** 2).where(sampled_weights, 0.0),
        tn=(w["t"] * w["n"]).where(sampled_weights, 0.0),
        n2=(w["n"] ** 2.0).where(sampled_weights, 0.0),
        tr=(w["t"] * w["r"]).where(sampled_weights, 0.0),
        t_sampled=w["t"].where(sampled_weights),
        k=((w["t"] != 0) & sampled_weights).astype(int),
    ).drop(columns=["_w", "_null"])
    if group_by:
        by = w.groupby(list(group_by), sort=False)
        totals = by.sum()
        totals["maxt"] = by["t_sampled"].max()
        totals["mint"] = by["t_sampled"].min()
        values = sampled.groupby(list(group_by), sort=False)[measure]
        totals["maxv"] = values.max()
        totals["minv"] = values.min()
    else:
        totals = w.sum().to_frame().T
        totals["maxt"] = w["t_sampled"].max()
        totals["mint"] = w["t_sampled"].min()
        totals["maxv"] = x.max()
        totals["minv"] = x.min()
        totals.index = [()]
    out: dict[tuple[Any, ...], Any] = {}
    for key, row in totals.iterrows():
        k = key if isinstance(key, tuple) else (key,)
        out[k] = {
            "rows": int(row["r"]),
            "null_rows": int(row["null_r"]),
            "keys": int(row["key"]),
            "r2": float(row["r2"]),
            "n0": int(row["n"]),
            "null_n0": int(row["null_n"]),
            "k0": int(row["k"]),
            "s0": float(row["t"]),
            "t0": float(row["t"]),
            "null_t0": float(row["null_t"]),
            "ss0": float(row["t2"]),
            "sn0": float(row["tn"]),
            "nn0": float(row["n2"]),
            "sr0": float(row["tr"]),
            "maxt0": None if row["maxt"] != row["maxt"] else float(row["maxt"]),
            "mint0": None if row["mint"] != row["mint"] else float(row["mint"]),
            "maxv0": float(row["maxv"]),
            "minv0": float(row["minv"]),
            "q0": float(row["q"]),
            "nz0": int(row["nz"]),
        }
    return out


def answer(query: Query, rows: Any, unread: Any = None) -> tuple[float, dict[tuple[Any, ...], Any]]:
    """Run the query as ``approx`` does (online, or one sample): the fraction it stops at
    and, per group seen, the estimate. ``unread``: ``fraction -> the measure's extremes in
    the files not read`` (``ApproxResult.unreadExtremes``), by default those of the files
    :func:`_files` lays out."""
    from qbeast_connect.approx import ApproxResult, next_fraction, parse_aggregates, z_value
    from qbeast_connect.approx.result import first_fraction, rows_needed
    from qbeast_connect.model.weight import weight_from_fraction

    aggregates = parse_aggregates(query.aggregate)
    z = z_value(0.95)
    matched = query.matching(rows)
    # no filter nor group: the log tells the rows (ratio estimators, as approx)
    known = len(rows) if query.where is None and not query.group_by else None
    if query.fraction is not None:
        fraction = query.fraction
    else:
        wanted = rows_needed(
            aggregates, query.relative_error or 1.0, z, known_rows=known is not None
        )
        # as BandPlanner.first_band: at least first_fraction's ~4,096 rows, and a pilot band
        # when the prior asks for more than 1/16 of the rows
        least = first_fraction(len(rows))
        fraction = max(_first(wanted, len(rows)), least)
        if fraction > 1 / 16:
            fraction = min(fraction, max(_first(max(4096, wanted // 16), len(rows)), least))
    while True:
        # the rows of the sample, and those whose indexed columns are all NULL (read in full)
        sampled = (
            matched
            if fraction >= 1.0
            else matched[(matched["_w"] < weight_from_fraction(fraction)) | matched["_null"]]
        )
        result = ApproxResult(
            aggregates=aggregates,
            group_by=query.group_by,
            groups=group_sums(sampled, query.group_by) if len(sampled) else {},
            sampledShare=_sampled_share(rows, fraction),
            unreadExtremes=(unread or _unread_extremes)(rows, fraction),
            fraction=fraction,
            bytesRead=0,
            confidence=0.95,
            z=z,
            relativeError=query.relative_error,
            knownRows=known,
            coveredRows=len(rows),
        )
        following = next_fraction(result) if query.online else None
        if following is None:
            return fraction, {k: v[0] for k, v in result.estimates().items()}
        fraction = following


def _sampled_share(rows: Any, fraction: float) -> float | None:
    """The share of the table's rows below ``weight(fraction)``, as ``approx`` takes it from
    the log (``BandPlanner.sampled_share``) when each file lies wholly on one side of the
    band's end (here: as if every row of the table were a candidate); None, as there, when
    rows whose indexed columns are all NULL exist, or for a full read."""
    from qbeast_connect.model.weight import weight_from_fraction

    if fraction >= 1.0 or bool(rows["_null"].any()):
        return None
    below = int((rows["_w"] < weight_from_fraction(fraction)).sum())
    return below / len(rows) if below else None


def _first(wanted: int, rows: int) -> float:
    """The smallest power-of-two fraction holding ``wanted`` of ``rows`` (1.0 from 1/2 on)."""
    fraction = 2.0**-20
    while fraction * rows < wanted and fraction < 0.5:
        fraction *= 2.0
    return 1.0 if fraction >= 0.5 else fraction


def _exact(query: Query, part: Any) -> float:
    if query.aggregate.startswith("count"):
        return float(len(part))
    return float(part["x"].sum() if query.aggregate.startswith("sum") else part["x"].mean())


def coverage(queries: list[Query], rows: Any) -> dict[str, Any]:
    """Per kind of query (online, one sample): :func:`coverage_of` its queries."""
    return {
        "online": coverage_of([q for q in queries if q.online], rows),
        "fraction": coverage_of([q for q in queries if not q.online], rows),
    }


def coverage_of(queries: list[Query], rows: Any) -> dict[str, Any]:
    """How many reliable intervals hold the exact answer, how many estimates were flagged."""
    estimated = covered = flagged = exact_groups = unseen = 0
    fractions = []
    misses: list[dict[str, Any]] = []
    for q in queries:
        fraction, estimates = answer(q, rows)
        fractions.append(fraction)
        matched = q.matching(rows)
        truth = (
            {(): matched}
            if not q.group_by
            else {
                (k if isinstance(k, tuple) else (k,)): g
                for k, g in matched.groupby(list(q.group_by))
            }
        )
        unseen += len(set(truth) - set(estimates))
        for key, e in estimates.items():
            if key not in truth:  # an empty filter read in part: no group, no answer
                continue
            exact = _exact(q, truth[key])
            if not e.reliable:
                flagged += 1
            elif fraction >= 1.0:
                exact_groups += 1
            else:
                estimated += 1
                hit = float(e.low) <= exact <= float(e.high)
                covered += hit
                if not hit and len(misses) < 5:
                    misses.append(
                        {
                            "query": str(q),
                            "group": str(key),
                            "exact": exact,
                            "interval": [float(e.low), float(e.high)],
                        }
                    )
    answered = estimated + exact_groups + flagged
    return {
        "queries": len(queries),
        "estimated_intervals": estimated,
        "covered": covered,
        "coverage": round(covered / estimated, 4) if estimated else None,
        "exact_groups": exact_groups,
        "flagged": flagged,
        "flagged_share": round(flagged / answered, 4) if answered else None,
        "groups_not_seen": unseen,
        "median_fraction": sorted(fractions)[len(fractions) // 2],
        "fractions": fractions,
        "first_misses": misses,
    }


def _combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of several tables' queries as one."""
    out: dict[str, Any] = {}
    for key in ("queries", "estimated_intervals", "covered", "exact_groups", "flagged"):
        out[key] = sum(p[key] for p in parts)
    out["coverage"] = (
        round(out["covered"] / out["estimated_intervals"], 4)
        if out["estimated_intervals"]
        else None
    )
    answered = out["estimated_intervals"] + out["exact_groups"] + out["flagged"]
    out["flagged_share"] = round(out["flagged"] / answered, 4) if answered else None
    out["groups_not_seen"] = sum(p["groups_not_seen"] for p in parts)
    out["median_fraction_per_table"] = [p["median_fraction"] for p in parts]
    fractions = [f for p in parts for f in p.pop("fractions")]
    out["mean_fraction"] = round(sum(fractions) / len(fractions), 4) if fractions else None
    out["first_misses"] = [m for p in parts for m in p["first_misses"]][:10]
    return out


def main() -> None:
    from bench.common import machine, save_report

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--tables", type=int, default=1)
    parser.add_argument("--shapes", default="abcdefg")
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--without-unread-extremes",
        action="store_true",
        help="leave out what the files' statistics tell of the values not read (as before)",
    )
    args = parser.parse_args()
    if args.without_unread_extremes:
        global _unread_extremes
        _unread_extremes = _no_extremes
    report: dict[str, Any] = {
        "machine": machine(),
        "command": "python -m bench.approx_shapes " + " ".join(sys.argv[1:]),
        "rows": args.rows,
        "tables": args.tables,
        "unread_extremes": not args.without_unread_extremes,
        "shapes": {},
    }
    per_table = -(-args.queries // args.tables)
    for shape in args.shapes:
        t0 = time.perf_counter()
        parts = []
        for j in range(args.tables):
            rows = make_table(shape, args.rows, args.seed + j)
            queries = random_queries(per_table, args.seed + j, args.rows)
            parts.append(coverage(queries, rows))
        figures: dict[str, Any] = {mode: _combine([p[mode] for p in parts]) for mode in parts[0]}
        figures["seconds"] = round(time.perf_counter() - t0, 1)
        report["shapes"][f"({shape}) {SHAPES[shape][0]}"] = figures
        for mode in ("online", "fraction"):
            brief = {k: v for k, v in figures[mode].items() if k != "first_misses"}
            print(shape, mode, brief, flush=True)
    save_report(report, args.out)


if __name__ == "__main__":
    main()
