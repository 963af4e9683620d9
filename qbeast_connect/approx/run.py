"""The Spark side of :meth:`QbeastTable.approx`: one aggregate query per weight band.

Each step reads the rows of one weight band ``[weight(from), weight(to))`` (the files the
:class:`~qbeast_connect.approx.planner.BandPlanner` selects for that band, filtered to it)
and computes, per group, the sums the estimators need
(:func:`qbeast_connect.approx.estimators.stat_names`): per (group, weight) first, since the
rows of one weight are sampled together, then per group (:func:`_band_query`). The first
band also reads every row whose indexed columns are all NULL, which the later bands leave
out. Bands are disjoint, so a step adds its sums to those of the bands read before and no
row is read twice. The planning comes from the
log alone, so a step costs one Spark query: the one that reads its band.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from qbeast_connect.approx.aggregates import Aggregate, parse_aggregates
from qbeast_connect.approx.bands import all_null_sql
from qbeast_connect.approx.estimators import MIN_RELIABLE, Sums, merge_sums, z_value
from qbeast_connect.approx.planner import Band, BandPlanner
from qbeast_connect.approx.result import ApproxResult, Step, next_fraction, rows_needed
from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.planning.file_planner import validate_fraction
from qbeast_connect.planning.predicate import quote_identifier
from qbeast_connect.spark.adaptive import adaptive_off

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["ReadBand", "run_approx"]

#: ``band -> its rows matching the filter``: the DataFrame over the band's files, filtered
#: to the band's weights and to the filter.
ReadBand = Callable[[Band], "DataFrame"]

#: A band of at most this many bytes is read by one task. Its aggregate then needs no
#: shuffle: Spark runs one stage, and with nothing to re-plan it runs with adaptive
#: execution off (:func:`~qbeast_connect.spark.adaptive.adaptive_off`). Together that
#: saves about 30 ms of the ~140 ms query of the first band at sf 10 on two cores
#: (``bench/approx_floor_bench.py``, BENCHMARKS.md). Above it, the
#: files' row groups are worth reading on every core, and a grouped aggregate is worth
#: AQE's merging of its shuffle partitions.
ONE_TASK_BYTES = 16 * 2**20


def _key_columns(i: int, agg: Aggregate) -> list[Column]:
    """Level 1, per (group, weight): the totals of aggregate ``i`` over one weight's rows."""
    from pyspark.sql import functions as F

    if agg.kind == "count":
        return [] if agg.column is None else [F.count(_col(agg.columns[0])).alias(f"n{i}")]
    if agg.kind in ("min", "max"):
        fn = F.min if agg.kind == "min" else F.max
        return [fn(_col(agg.columns[0])).alias(f"{agg.kind}{i}")]
    if agg.kind == "count_distinct":
        return [F.count_distinct(*[_col(c) for c in agg.columns]).alias(f"d{i}")]
    col = _col(agg.columns[0])
    return [
        F.count(col).alias(f"n{i}"),
        F.try_sum(col).alias(f"s{i}"),
        F.sum(col.cast("double")).alias(f"t{i}"),
        F.max(col.cast("double")).alias(f"maxv{i}"),
        F.min(col.cast("double")).alias(f"minv{i}"),
    ]


def _group_columns(i: int, agg: Aggregate, sampled: Column, nulls: Column) -> list[Column]:
    """Level 2, per group: the sums of :func:`stat_names` from the per-weight totals; the
    spread and the weights counted over the ``sampled`` weights only, the totals of the
    all-NULL rows (read in full) also apart (``null_`` names)."""
    from pyspark.sql import functions as F

    def of(column: Column, where: Column) -> Column:
        return F.when(where, column)

    rows = F.col("r")  # the weight's rows read

    if agg.kind == "count":
        if agg.column is None:
            return []
        count = F.col(f"n{i}")
        return [
            F.sum(count).alias(f"n{i}"),
            F.sum(of(count, nulls)).alias(f"null_n{i}"),
            F.count(of(F.lit(1), sampled & (count > 0))).alias(f"k{i}"),
            F.sum(of(count.cast("double") * count, sampled)).alias(f"c2{i}"),
            F.sum(of(count.cast("double") * rows, sampled)).alias(f"nr{i}"),
        ]
    if agg.kind in ("min", "max"):
        name = f"{agg.kind}{i}"
        return [(F.min if agg.kind == "min" else F.max)(name).alias(name)]
    if agg.kind == "count_distinct":
        d = F.col(f"d{i}")
        return [F.sum(d).alias(f"d{i}"), F.sum(of(d, nulls)).alias(f"null_d{i}")]
    n, s, t = F.col(f"n{i}"), F.col(f"s{i}"), F.col(f"t{i}")
    # the column's type overflowed for one weight (try_sum gave None): the group's sum is None
    overflow = F.max(F.when(s.isNull() & (n > 0), F.lit(1)))
    return [
        F.sum(n).alias(f"n{i}"),
        F.sum(of(n, nulls)).alias(f"null_n{i}"),
        F.count(of(F.lit(1), sampled & (t != 0))).alias(f"k{i}"),
        F.when(overflow.isNull(), F.try_sum(s)).alias(f"s{i}"),
        F.sum(t).alias(f"t{i}"),
        F.sum(of(t, nulls)).alias(f"null_t{i}"),
        F.sum(of(t * t, sampled)).alias(f"ss{i}"),
        F.sum(of(t * n, sampled)).alias(f"sn{i}"),
        F.sum(of(n.cast("double") * n, sampled)).alias(f"nn{i}"),
        F.sum(of(t * rows, sampled)).alias(f"sr{i}"),
        F.max(of(t, sampled)).alias(f"maxt{i}"),
        F.min(of(t, sampled)).alias(f"mint{i}"),
        F.max(f"maxv{i}").alias(f"maxv{i}"),
        F.min(f"minv{i}").alias(f"minv{i}"),
    ]


def _row_columns(i: int, agg: Aggregate) -> list[Column]:
    """Level 1 when every weight holds one row (:func:`_one_row_per_weight`): what
    :func:`_key_columns` gives for a weight of one row, computed per row, with no grouping."""
    from pyspark.sql import functions as F

    def present(col: Column) -> Column:  # the row's count of values: 1, or 0 for a NULL
        return F.when(col.isNotNull(), F.lit(1)).otherwise(F.lit(0)).cast("long").alias(f"n{i}")

    if agg.kind == "count":
        return [] if agg.column is None else [present(_col(agg.columns[0]))]
    if agg.kind in ("min", "max"):
        return [_col(agg.columns[0]).alias(f"{agg.kind}{i}")]
    if agg.kind == "count_distinct":  # never per row (_one_row_per_weight)
        raise AssertionError("count(DISTINCT ...) sums keys per weight")
    col = _col(agg.columns[0])
    value = col.cast("double")
    return [
        present(col),
        col.alias(f"s{i}"),
        value.alias(f"t{i}"),
        value.alias(f"maxv{i}"),
        value.alias(f"minv{i}"),
    ]


#: The fewest sampled rows from which :func:`_one_row_per_weight` judges.
_ONE_ROW_EVIDENCE = 1000

#: The largest excess of ``Σ r_k²`` (rows per sampled weight, squared) over the rows that
#: :func:`_one_row_per_weight` allows, as a share of the rows: the variance of a count taken
#: per row is ``Σ 1`` where per weight it is ``Σ r_k²``, so a variance taken per row is short
#: by about this share (an interval's half-width by half of it).
_SHARED_EXCESS = 0.01


def _one_row_per_weight(held: dict[tuple[Any, ...], Sums], aggregates: Sequence[Aggregate]) -> bool:
    """Whether the bands read so far show (nearly) one row per (group, weight): at least
    :data:`_ONE_ROW_EVIDENCE` sampled rows, and ``Σ r_k²`` within :data:`_SHARED_EXCESS` of
    their number. The later bands then skip the per-weight level of their query
    (:func:`_band_query` with ``per_row``): the estimates are the same sums of rows, and
    only the spread of the few rows that share a weight is taken per row. The bands are a
    Poisson sample of weights, each with all its rows, so the bands read show the table's
    repeats as they are. On TPC-H sf 10 (index on ship date, price and part) 314 of the
    first band's 117,102 rows share a weight with another (``Σ r_k²`` 0.5% over the rows),
    and the per-weight level was a group-by over every row read: a grouped approx at 1%
    read 15,000,230 rows in 21.6 s against 8.9 s for the exact query on parquet. An index
    with hundreds of rows per key is far over (shape (b): 250 times the rows)."""
    if any(a.kind == "count_distinct" for a in aggregates):
        return False
    rows = sum(int(s.get("rows") or 0) - int(s.get("null_rows") or 0) for s in held.values())
    squares = sum(float(s.get("r2") or 0.0) for s in held.values())
    return rows >= _ONE_ROW_EVIDENCE and squares - rows <= _SHARED_EXCESS * rows


def _col(name: str) -> Column:
    """The column called ``name``, whatever its characters (no struct-field parsing)."""
    from pyspark.sql import functions as F

    return F.col(quote_identifier(name))


def _band_query(
    frame: DataFrame,
    aggregates: Sequence[Aggregate],
    group_by: Sequence[str],
    weight_columns: Sequence[str],
    last: bool = False,
    per_row: bool = False,
) -> tuple[DataFrame, list[str]]:
    """The query of one band's sums, with two levels of aggregation: per (group, weight)
    the totals of the weight's rows, then per group the sums of their powers the estimators
    need (:func:`~qbeast_connect.approx.estimators.stat_names`); and its group columns.

    With ``last`` (the band reaches fraction 1, so every row has been read and every answer
    is exact) only the totals are needed: one level, per group, without the weights (a
    grouped full read was 4 times slower with them at sf 0.1).

    With ``per_row`` (every weight holds one row, :func:`_one_row_per_weight`) the first
    level is the rows themselves (:func:`_row_columns`): the same sums without a group-by
    over every row read.

    The result's columns have internal names (``_g0``, ``_g1``, ... for the group columns),
    so no user column name can collide with a statistic's."""
    from pyspark.sql import functions as F

    keys = [f"_g{j}" for j in range(len(group_by))]
    weight = F.hash(*[_col(c) for c in weight_columns]).alias("_w")
    # the rows whose indexed columns are all NULL (one weight, read in full: approx_band_sql)
    all_null = F.expr(all_null_sql(weight_columns)).alias("_null")
    per_weight = [F.count(F.lit(1)).alias("r")]
    rows = F.col("r")
    nulls = F.col("_null")
    sampled = ~nulls
    per_group = [
        F.sum(rows).alias("rows"),
        F.sum(F.when(nulls, rows)).alias("null_rows"),
        F.count(F.when(sampled, F.lit(1))).alias("keys"),
        F.sum(F.when(sampled, rows.cast("double") * rows)).alias("r2"),
    ]
    per_row_columns = [F.lit(1).alias("r")]
    for i, agg in enumerate(aggregates):
        per_weight.extend(_key_columns(i, agg))
        per_group.extend(_group_columns(i, agg, sampled, nulls))
        if per_row and not last:
            per_row_columns.extend(_row_columns(i, agg))
    grouping = [_col(c).alias(k) for c, k in zip(group_by, keys, strict=True)]
    if last:
        totals = [F.count(F.lit(1)).alias("rows"), *per_weight[1:]]
        return frame.groupBy(*grouping).agg(*totals), keys
    if per_row:
        weights = frame.select(*grouping, all_null, *per_row_columns)
    else:
        weights = frame.groupBy(*grouping, weight, all_null).agg(*per_weight)
    grouped = weights.groupBy(*keys).agg(*per_group) if keys else weights.agg(*per_group)
    return grouped, keys


def _band_sums(
    frame: DataFrame,
    aggregates: Sequence[Aggregate],
    group_by: Sequence[str],
    weight_columns: Sequence[str],
    last: bool = False,
    per_row: bool = False,
) -> list[tuple[tuple[Any, ...], Sums]]:
    """The per-group sums of one band (:func:`_band_query`), read in one Spark query."""
    grouped, keys = _band_query(frame, aggregates, group_by, weight_columns, last, per_row)
    out = []
    for row in grouped.collect():
        values = row.asDict()
        key = tuple(values.pop(k) for k in keys)
        out.append((key, values))
    return out


def _rows_per_weight(frame: DataFrame, weight_columns: Sequence[str]) -> float | None:
    """``Σ r_k² / Σ r_k`` over the weights of ``frame``'s rows (the all-NULL ones left out),
    or None with fewer than :data:`MIN_RELIABLE` weights: one Spark query."""
    from pyspark.sql import functions as F

    weight = F.hash(*[_col(c) for c in weight_columns]).alias("_w")
    rows = frame.where(~F.expr(all_null_sql(weight_columns))).groupBy(weight).count()
    r = F.col("count")
    total = rows.agg(
        F.count(F.lit(1)).alias("k"), F.sum(r).alias("r"), F.sum(r.cast("double") * r).alias("r2")
    ).first()
    if total is None or int(total["k"] or 0) < MIN_RELIABLE:
        return None
    return max(1.0, float(total["r2"]) / float(total["r"]))


def _matched_nothing(held: dict[tuple[Any, ...], Sums]) -> bool:
    """Whether no sampled weight matched the filter in any group."""
    return all(not (s.get("keys") or 0) for s in held.values())


def _check_distinct(aggregates: Sequence[Aggregate], indexed: Sequence[str]) -> None:
    for agg in aggregates:
        if agg.kind == "count_distinct" and set(agg.columns) != set(indexed):
            raise InvalidOptionError(
                f"cannot estimate {agg.alias!r} from a sample: a sample keeps rows, not "
                "values, so the distinct values it shows say little about those it missed. "
                f"Only count(DISTINCT {', '.join(indexed)}) (the indexed columns, whose rows "
                "of one key share a weight and are kept or dropped together) is estimated; "
                "for other columns read the whole table (fraction=1.0) or use Spark's "
                "approx_count_distinct on table.read()"
            )


def _check_error(relative_error: object, fraction: object) -> tuple[float | None, float | None]:
    if (relative_error is None) == (fraction is None):
        raise InvalidOptionError(
            "give approx() exactly one of relativeError (read until the intervals are that "
            "narrow) and fraction (read that sample)"
        )
    if fraction is not None:
        return None, validate_fraction(fraction)
    if (
        isinstance(relative_error, bool)
        or not isinstance(relative_error, int | float | Decimal)
        or not float(relative_error) > 0.0
    ):
        raise InvalidOptionError(
            f"relativeError must be a positive number such as 0.01, got {relative_error!r}"
        )
    return float(relative_error), None


def _group_names(group_by: str | Sequence[str] | None) -> tuple[str, ...]:
    if group_by is None:
        return ()
    names = (group_by,) if isinstance(group_by, str) else tuple(group_by)
    for name in names:
        if not isinstance(name, str) or not name:
            raise InvalidOptionError(f"groupBy takes column names, got {group_by!r}")
    return names


def run_approx(
    planner: BandPlanner,
    read_band: ReadBand,
    aggregates: str | Sequence[str],
    *,
    group_by: str | Sequence[str] | None,
    relative_error: float | None,
    confidence: float,
    fraction: float | None,
    progress: Callable[[ApproxResult], object] | None,
    indexed_columns: Sequence[str],
    total_bytes: int,
    filtered: bool = True,
    read_all: ReadBand | None = None,
) -> ApproxResult:
    """Read weight bands until the estimates are precise enough, or the one sample asked.

    Args:
        planner: plans each band's files from the log.
        read_band: reads one band (see :data:`ReadBand`): one Spark query per step.
        aggregates: the aggregate texts (see :mod:`qbeast_connect.approx.aggregates`).
        group_by: grouping column names.
        relative_error: stop when every interval's half-width is at most this share of its
            estimate (online aggregation). The first band holds the rows
            :func:`~qbeast_connect.approx.result.rows_needed` asks for.
        confidence: the intervals' confidence level.
        fraction: read this sample in one step instead.
        progress: called with the partial result after every step.
        indexed_columns: the columns whose hash is the row weight.
        total_bytes: bytes of the table (for the share shown).
        filtered: whether the call has a filter. Without one and without groups, the rows
            the answer covers are those of the log (:meth:`BandPlanner.known_rows`), so
            ``count(*)`` is exact and ``count(x)``, ``sum(x)`` are ratio estimators.
        read_all: reads one band's rows without the filter. When an online step matched no
            row, one more query over its files measures the rows a weight holds
            (``ApproxResult.rowsPerWeight``), so that a filter matching nothing can stop
            (:func:`~qbeast_connect.approx.result.next_fraction`); its bytes count in the
            step's. None: such a query reads on.
    """
    groups = _group_names(group_by)
    parsed = parse_aggregates(aggregates, groups)
    measures = {a.columns[0] for a in parsed if a.kind in ("sum", "avg")}
    _check_distinct(parsed, indexed_columns)
    z = z_value(confidence)
    relative_error, fraction = _check_error(relative_error, fraction)
    known = None if filtered or groups else planner.known_rows()
    if relative_error is not None:
        band = planner.first_band(
            rows_needed(parsed, relative_error, z, known_rows=known is not None)
        )
    else:  # _check_error gave exactly one of the two
        band = planner.band(0.0, fraction or 1.0, widen=False)
    held: dict[tuple[Any, ...], Sums] = {}
    steps: list[Step] = []
    per_weight: float | None = None
    while True:
        frame = read_band(band)
        last = band.to_fraction >= 1.0
        per_row = bool(steps) and _one_row_per_weight(held, parsed)
        if band.bytes <= ONE_TASK_BYTES:
            with adaptive_off(frame.sparkSession):
                sums = _band_sums(frame.coalesce(1), parsed, groups, indexed_columns, last, per_row)
        else:
            sums = _band_sums(frame, parsed, groups, indexed_columns, last, per_row)
        merge_sums(held, sums)
        rows = sum(int(s["rows"] or 0) for _, s in sums)
        read = band.bytes
        if (
            relative_error is not None
            and read_all is not None
            and per_weight is None
            and not last
            and _matched_nothing(held)
        ):
            per_weight = _rows_per_weight(read_all(band), indexed_columns)
            read += band.bytes
        steps.append(Step(band.from_fraction, band.to_fraction, read, band.files, rows))
        result = ApproxResult(
            aggregates=parsed,
            group_by=groups,
            groups={k: dict(v) for k, v in held.items()},
            fraction=band.to_fraction,
            bytesRead=sum(s.bytes_read for s in steps),
            confidence=float(confidence),
            z=z,
            steps=tuple(steps),
            totalBytes=total_bytes,
            done=False,
            relativeError=relative_error,
            knownRows=known,
            coveredRows=planner.candidate_rows(),
            rowsPerWeight=per_weight,
            sampledShare=planner.sampled_share(band.to_fraction),
            unreadExtremes=planner.unread_extremes(measures, band.to_fraction),
        )
        following = None if fraction is not None else next_fraction(result)
        if following is None:
            final = dataclasses.replace(result, done=True)
            if progress is not None:
                progress(final)
            return final
        if progress is not None:
            progress(result)
        band = planner.band(band.to_fraction, following)
