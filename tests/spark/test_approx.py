"""``QbeastTable.approx``: estimates from weight bands, checked against exact Spark answers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import qbeast_connect as qc
from qbeast_connect.approx import ApproxResult
from qbeast_connect.exceptions import InvalidOptionError

N = 40_000
AGGS = [
    "count(*) AS n",
    "sum(price) AS revenue",
    "avg(x) AS mean_x",
    "min(a) AS lo",
    "max(a) AS hi",
    "count(DISTINCT x, a) AS keys",
]


@pytest.fixture(scope="module")
def table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    path = str(tmp_path_factory.mktemp("approx") / "t")
    df = spark.range(0, N, numPartitions=2).selectExpr(
        "id",
        "cast(rand(5) * 1000 as double) as x",
        "cast(id % 7000 as int) as a",
        "concat('g', cast(id % 3 as string)) as g",
        "cast(100 + rand(6) * 900 as decimal(15, 2)) as price",
    )
    qc.write(df, path, columnsToIndex="x,a", cubeSize=1000)
    return qc.QbeastTable.forPath(spark, path), spark.read.format("parquet").load(path)


def _exact(frame: Any, where: str | None) -> dict[str, dict[str, Any]]:
    from pyspark.sql import functions as F

    if where is not None:
        frame = frame.filter(where)
    rows = (
        frame.groupBy("g")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum("price").alias("revenue"),
            F.avg("x").alias("mean_x"),
            F.min("a").alias("lo"),
            F.max("a").alias("hi"),
            F.count_distinct("x", "a").alias("keys"),
        )
        .collect()
    )
    return {r["g"]: r.asDict() for r in rows}


def test_approx_of_the_whole_sample_is_the_exact_answer(table: tuple[Any, Any]) -> None:
    t, plain = table
    result = t.approx(AGGS, where="a < 5000", groupBy="g", fraction=1.0)
    exact = _exact(plain, "a < 5000")
    assert result.exact and result.fraction == 1.0
    assert {r["g"] for r in result.rows()} == set(exact) == {"g0", "g1", "g2"}
    for row in result.rows():
        want = exact[row["g"]]
        for alias in ("n", "revenue", "lo", "hi", "keys"):
            assert row[alias] == want[alias], alias
            assert row[alias + "_low"] == row[alias + "_high"] == want[alias]
            assert row[alias + "_reliable"] is True
        assert isinstance(row["revenue"], Decimal)
        assert row["mean_x"] == pytest.approx(want["mean_x"], rel=1e-12)
    assert sum(r["n"] for r in result.rows()) == plain.filter("a < 5000").count()


def test_approx_bands_add_up_to_the_sample_they_cover(table: tuple[Any, Any]) -> None:
    t, plain = table
    seen: list[ApproxResult] = []
    online = t.approx(
        ["sum(price) AS revenue", "count(*) AS n"],
        groupBy=["g"],
        relativeError=0.05,
        progress=seen.append,
    )
    # several bands were read, each starting where the previous ended, and reported
    assert len(online.steps) >= 2 and online.done and online.converged()
    assert online.fraction < 1.0, online.steps
    assert [s.from_fraction for s in online.steps[1:]] == [s.to_fraction for s in online.steps[:-1]]
    assert [r.fraction for r in seen] == [s.to_fraction for s in online.steps]
    assert seen[-1] is not None and seen[-1].done and not any(r.done for r in seen[:-1])
    # the sums over the bands equal one read of the sample they add up to
    once = t.approx(
        ["sum(price) AS revenue", "count(*) AS n"], groupBy="g", fraction=online.fraction
    )
    assert len(once.steps) == 1
    assert once.groups.keys() == online.groups.keys()
    for key, sums in once.groups.items():  # counts and decimal sums exact, squares in floats
        assert online.groups[key]["rows"] == sums["rows"] and online.groups[key]["s0"] == sums["s0"]
    for mine, theirs in zip(online.rows(), once.rows(), strict=True):
        assert mine.keys() == theirs.keys()
        for name, value in theirs.items():
            if isinstance(value, float):
                assert mine[name] == pytest.approx(value, rel=1e-12), name
            else:
                assert mine[name] == value, name
    assert online.rowsRead == t.sample(online.fraction).count()
    # every group's interval is narrow enough and holds the exact answer
    exact = _exact(plain, None)
    for row in online.rows():
        assert row["revenue_reliable"]
        half = (row["revenue_high"] - row["revenue_low"]) / 2
        assert half <= 0.05 * abs(row["revenue"])
        assert row["n_low"] <= exact[row["g"]]["n"] <= row["n_high"]
    assert online.bytesRead == sum(s.bytes_read for s in online.steps)
    assert online.bytesRead < online.totalBytes


def test_approx_relative_error_reads_a_small_share_of_the_bytes(table: tuple[Any, Any]) -> None:
    t, plain = table
    result = t.approx("sum(price) AS revenue", relativeError=0.05)
    exact = float(plain.selectExpr("sum(price)").first()[0])
    (row,) = result.rows()
    assert row["revenue_low"] <= exact <= row["revenue_high"]
    assert abs(row["revenue"] - exact) <= 0.05 * exact
    # about 2,000 rows of 40,000 suffice; the first band is sized, from the log, for the
    # 3,073 rows a measure spread as widely as an exponential one would need: the eighth of
    # the table its files hold, read in one query
    assert len(result.steps) == 1
    assert result.fraction <= 1 / 8 + 1e-3
    assert result.bytesRead <= 0.25 * result.totalBytes


def test_the_sample_share_from_the_log_is_the_rows_below_the_bands_end(
    table: tuple[Any, Any],
) -> None:
    """Issue #37: an estimate divides by the share of rows its sample holds. The hash puts
    more or fewer rows below ``weight(f)`` than ``p`` says (TPC-H sf 1: 2.2 standard
    deviations fewer below 1/64), so where the files tell the exact share (each wholly on
    one side of the band's end), approx uses it. Checked against the rows themselves, and
    a filtered count of every row is then exact."""
    from qbeast_connect.model.weight import weight_from_fraction

    t, plain = table
    result = t.approx("count(*) AS n", where="a >= 0", relativeError=0.05)
    assert result.sampledShare is not None, result.steps  # the first band's files are aligned
    below = plain.where(f"hash(x, a) < {weight_from_fraction(result.fraction)}").count()
    assert result.sampledShare == pytest.approx(below / N, rel=1e-12)
    (row,) = result.rows()
    # every row matches: the count is the sampled rows over their share, N exactly
    assert row["n"] == pytest.approx(N, rel=1e-9)
    assert row["n_low"] <= N <= row["n_high"]


def test_a_low_spread_sum_reads_the_rows_its_spread_needs(table: tuple[Any, Any]) -> None:
    """Issue #37, bytes that follow the precision asked: the first band was sized from a
    prior (an exponential spread: 19,208 rows for a sum at 2%), so this query read the whole
    table (40,000 rows). The log tells the rows (no filter, no group), so the sum is their
    number times the sampled mean, and ``price`` (uniform, cv² 0.22) needs about 2,100 rows:
    the first band's 5,000 suffice."""
    t, plain = table
    result = t.approx(["sum(price) AS revenue", "count(*) AS n"], relativeError=0.02)
    exact = float(plain.selectExpr("sum(price)").first()[0])
    (row,) = result.rows()
    assert result.rowsRead <= 10_000 and result.fraction <= 0.25, result.steps
    assert result.bytesRead <= 0.3 * result.totalBytes
    assert row["revenue_reliable"] and row["revenue_low"] <= exact <= row["revenue_high"]
    assert (row["revenue_high"] - row["revenue_low"]) / 2 <= 0.02 * row["revenue"]
    # count(*) of the whole table is the log's row count: exact, whatever was read
    assert row["n"] == row["n_low"] == row["n_high"] == N and row["n_reliable"]


def test_a_group_of_a_few_rows_does_not_read_the_whole_table(table: tuple[Any, Any]) -> None:
    """Issue #37, counts near zero: the filter leaves the group g0 about 6 rows. Its
    estimates rest on too few weights, and asked 5% of themselves they read the whole
    table. A count is held to ``relativeError * max(|estimate|, relativeError * N)`` (N the
    rows the query covers, 40,000: 100 rows here), and a group whose rows are bounded within
    that holds nothing back."""
    t, plain = table
    where = "g != 'g0' OR a < 3"
    result = t.approx(
        ["count(*) AS n", "sum(price) AS revenue"], where=where, groupBy="g", relativeError=0.05
    )
    assert result.fraction < 1.0 and result.rowsRead < N / 2, result.steps
    exact = _exact(plain, where)
    assert exact["g0"]["n"] < 10
    rows = {r["g"]: r for r in result.rows()}
    assert {"g1", "g2"} <= set(rows) <= {"g0", "g1", "g2"}
    if "g0" in rows:  # seen: flagged, no interval
        assert not rows["g0"]["n_reliable"] and rows["g0"]["n_low"] is None
    for g in ("g1", "g2"):
        assert rows[g]["n_low"] <= exact[g]["n"] <= rows[g]["n_high"]
        assert rows[g]["revenue_low"] <= exact[g]["revenue"] <= rows[g]["revenue_high"]


def test_a_filter_matching_no_row_does_not_read_the_whole_table(table: tuple[Any, Any]) -> None:
    """Issue #37, counts near zero: ``g = 'g1x'`` matches no row, and the files' statistics
    (g0 to g2) cannot tell. Its count had no interval and read the whole table. With the rows per weight measured over the first band's rows
    (one per weight here), no row matching in 1/8 of them bounds the count by about 31 rows,
    within 0.05² · 40,000 = 100: reading stops."""
    t, plain = table
    assert plain.filter("g = 'g1x'").count() == 0
    result = t.approx(["count(*) AS n", "sum(price) AS s"], where="g = 'g1x'", relativeError=0.05)
    assert result.fraction < 0.5 and result.rowsRead == 0, result.steps
    assert result.rowsPerWeight == 1.0 and result.done
    (row,) = result.rows()
    assert row["n"] == 0 and not row["n_reliable"] and row["s"] is None
    # one step, whose files were read twice (the filter's rows, then the rows per weight)
    assert len(result.steps) == 1 and result.bytesRead < result.totalBytes


def test_approx_refuses_what_it_cannot_estimate(table: tuple[Any, Any]) -> None:
    t, _ = table
    with pytest.raises(InvalidOptionError, match="count\\(DISTINCT x, a\\)"):
        t.approx("count(DISTINCT g)", fraction=0.5)
    with pytest.raises(InvalidOptionError, match="exactly one of relativeError"):
        t.approx("count(*)")
    with pytest.raises(InvalidOptionError, match="supports count, sum, avg"):
        t.approx("median(x)", fraction=0.5)


def test_a_small_band_is_one_stage_without_shuffle(
    table: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A band read by one task is aggregated without an exchange (one Spark stage), and the
    answer is unchanged; a band above ONE_TASK_BYTES keeps Spark's parallel plan."""
    from qbeast_connect.approx import run
    from qbeast_connect.spark.adaptive import ADAPTIVE_KEY

    t, plain = table
    plans: list[str] = []
    real = run._band_sums

    adaptive: list[str | None] = []

    def spy(
        frame: Any,
        aggregates: Any,
        group_by: Any,
        weight_columns: Any,
        last: bool,
        per_row: bool = False,
    ) -> Any:
        query = run._band_query(frame, aggregates, group_by, weight_columns, last, per_row)[0]
        plans.append(query._explain_string(extended=False))
        adaptive.append(frame.sparkSession.conf.get(ADAPTIVE_KEY))
        return real(frame, aggregates, group_by, weight_columns, last, per_row)

    monkeypatch.setattr(run, "_band_sums", spy)
    spark = plain.sparkSession
    spark.conf.set(ADAPTIVE_KEY, "true")
    small = t.approx(["sum(price) AS revenue"], groupBy="g", fraction=1.0)
    assert len(plans) == 1 and "Exchange" not in plans[0]
    # AQE was off for the one-stage query, and is back on after it
    assert adaptive == ["false"] and spark.conf.get(ADAPTIVE_KEY) == "true"
    spark.conf.unset(ADAPTIVE_KEY)
    exact = _exact(plain, None)
    assert {r["g"]: r["revenue"] for r in small.rows()} == {
        g: v["revenue"] for g, v in exact.items()
    }
    monkeypatch.setattr(run, "ONE_TASK_BYTES", 0)
    t.approx(["sum(price) AS revenue"], groupBy="g", fraction=1.0)
    assert "Exchange" in plans[1] and adaptive[1] != "false"


def test_any_column_name_works_as_a_group_or_measure(spark: Any, table_path: str) -> None:
    """Issue #37: group columns named like internal result columns (``n0``, ``s0``,
    ``rows``) got overwritten by them, or raised a KeyError; every name is the user's."""
    from pyspark.sql import functions as F

    df = spark.range(0, 600, numPartitions=1).selectExpr(
        "id",
        "cast(id % 3 as int) as n0",
        "concat('s', cast(id % 2 as string)) as s0",
        "cast(id % 2 as int) as `rows`",
        "id * 1.5 as t0",
        "id * 2.0 as `a.b`",
    )
    qc.write(df, table_path, columnsToIndex="id", cubeSize=200)
    t = qc.QbeastTable.forPath(spark, table_path)
    result = t.approx(
        ["sum(t0) AS total", "count(*) AS n", "avg(`a.b`) AS m"],
        groupBy=["n0", "s0", "rows"],
        fraction=1.0,
    )
    exact = {
        (r["n0"], r["s0"], r["rows"]): r
        for r in df.groupBy("n0", "s0", "rows")
        .agg(F.sum("t0").alias("total"), F.count(F.lit(1)).alias("n"), F.avg("`a.b`").alias("m"))
        .collect()
    }
    got = {(r["n0"], r["s0"], r["rows"]): r for r in result.rows()}
    assert got.keys() == exact.keys() and len(got) == 6
    for key, row in got.items():
        assert (row["total"], row["n"], row["m"]) == pytest.approx(
            (exact[key]["total"], exact[key]["n"], exact[key]["m"])
        ), key
        assert row["total_reliable"] and row["n_reliable"]
    sampled = t.approx(["count(*) AS n"], groupBy="rows", fraction=0.5)
    assert {r["rows"] for r in sampled.rows()} == {0, 1}


def test_avg_of_decimals_near_the_type_limit(spark: Any, table_path: str) -> None:
    """Issue #37: avg of decimal(38,18) values near 1e20 failed with
    NUMERIC_VALUE_OUT_OF_RANGE from an internal sum; now it is computed in doubles, and an
    exact sum that overflows the type is answered in doubles but not called reliable."""
    df = spark.range(0, 400, numPartitions=1).selectExpr(
        "id", "cast(90000000000000000000 + id as decimal(38, 18)) as v"
    )
    qc.write(df, table_path, columnsToIndex="id", cubeSize=100)
    t = qc.QbeastTable.forPath(spark, table_path)
    full = t.approx(["avg(v) AS m", "sum(v) AS s", "count(*) AS n"], fraction=1.0)
    (row,) = full.rows()
    assert row["m"] == pytest.approx(9e19, rel=1e-12) and row["m_reliable"]
    assert row["s"] == pytest.approx(400 * 9e19, rel=1e-12) and not row["s_reliable"]
    assert row["n"] == 400 and row["n_reliable"]
    (half,) = t.approx(["avg(v) AS m", "sum(v) AS s"], fraction=0.5).rows()
    assert half["m"] == pytest.approx(9e19, rel=1e-9)
    # the doubles cannot tell the values' spread (ids) from rounding at 9e19: no interval
    assert not half["m_reliable"] and half["m_low"] is None


def test_rows_with_all_indexed_columns_null_are_read_in_full(spark: Any, table_path: str) -> None:
    """Issue #37: rows whose indexed columns are all NULL share one weight (hash of NULLs is
    42), so a sample kept or dropped 60% of the table at once and the intervals covered
    below 30%. The first band reads them in full (a stratum of probability 1); approx's sums
    are those of the local evaluation of bench/approx_shapes.py, interval for interval."""
    from bench.approx_shapes import Query, answer, make_table

    local = make_table("e", 4000, 37)
    frame = spark.createDataFrame(local[["id", "u", "flag", "dev", "x"]]).selectExpr(
        "id", "u", "flag", "CASE WHEN isnan(dev) THEN NULL ELSE cast(dev AS int) END AS dev", "x"
    )
    qc.write(frame, table_path, columnsToIndex="dev", cubeSize=500)
    t = qc.QbeastTable.forPath(spark, table_path)
    weights = sorted(r[0] for r in t.toDF().selectExpr("hash(dev)").collect())
    assert weights == sorted(int(w) for w in local["_w"])
    for aggregate, where in (
        ("count(*) AS a", None),
        ("sum(x) AS a", "u < 50"),
        ("avg(x) AS a", None),
    ):
        query = Query(aggregate, where, where, ("flag",), None, 1 / 4)
        result = t.approx(aggregate, where=where, groupBy="flag", fraction=1 / 4)
        # the files' extremes are those of the table written, not of the harness's layout
        _, want = answer(query, local, lambda _rows, _f: result.unreadExtremes)
        got = {(r["flag"],): r for r in result.rows()}
        assert got.keys() == want.keys() == {("A",), ("B",)}, aggregate
        matched = query.matching(local)
        for key, e in want.items():
            row = got[key]
            assert row["a_reliable"] == e.reliable is True, (aggregate, key)
            for mine, theirs in (
                (row["a"], e.value),
                (row["a_low"], e.low),
                (row["a_high"], e.high),
            ):
                assert mine == pytest.approx(theirs, rel=1e-9), (aggregate, key)
            part = matched[matched["flag"] == key[0]]
            exact = {"c": len(part), "s": part["x"].sum(), "a": part["x"].mean()}[aggregate[0]]
            assert row["a_low"] <= exact <= row["a_high"], (aggregate, key)
    # a NULL-free table opens no file for them: see the bytes of the relativeError test above


def test_a_value_the_sample_missed_widens_the_interval_it_would_fall_outside(
    spark: Any, table_path: str
) -> None:
    """Issue #37, shape (d): a sample that misses a measure's largest values looks
    light-tailed and narrow, and its interval misses low (Pareto sums covered 66% of the
    time online). The Delta statistics tell each unread file's largest value: here one row
    of 1e9, the row of the table's largest weight, which no sample below 1 reads. Its file's
    maximum exceeds every value read, so the upper end grows by it, and the interval holds
    the exact sum (before: about 10,000 ± 300 for 1,000,010,000)."""
    from pyspark.sql import functions as F

    ids = spark.range(0, 10_000, numPartitions=1).select("id", F.hash("id").alias("w"))
    top = ids.orderBy(F.desc("w")).first()["id"]
    df = ids.selectExpr("id", f"CASE WHEN id = {top} THEN 1e9 ELSE 1.0 + (id % 3) END AS v")
    qc.write(df, table_path, columnsToIndex="id", cubeSize=500)
    t = qc.QbeastTable.forPath(spark, table_path)
    exact = float(t.toDF().selectExpr("sum(v)").first()[0])
    result = t.approx(["sum(v) AS s", "avg(v) AS m"], fraction=1 / 8)
    assert result.unreadExtremes["v"].maxima[-1] == 1e9
    (row,) = result.rows()
    assert row["s_reliable"] and row["s"] < 1e8  # the sample holds no 1e9
    assert row["s_low"] <= exact <= row["s_high"] and row["s_high"] >= 1e9
    assert row["m_low"] <= exact / 10_000 <= row["m_high"]


def test_a_band_of_one_row_per_weight_sums_the_same_without_the_weight_level(
    table: tuple[Any, Any],
) -> None:
    """The per-weight level of a band's query was a group-by over every row read where the
    indexed columns tell rows apart (TPC-H: a grouped approx at sf 10 took 21.6 s for 8.9 s
    exact on parquet). Once the bands read show one row per weight, the later ones sum the
    rows themselves; the sums are the same, to the last bit for counts and decimals."""
    from qbeast_connect.approx import run
    from qbeast_connect.approx.aggregates import parse_aggregates

    t, _ = table
    aggregates = parse_aggregates(
        [
            "count(*) AS n",
            "sum(price) AS revenue",
            "avg(x) AS m",
            "count(a) AS c",
            "min(a) AS lo",
            "max(a) AS hi",
        ],
        ["g"],
    )
    frame = t.sample(0.25).where("a >= 100")
    two = dict(run._band_sums(frame, aggregates, ["g"], ["x", "a"]))
    one = dict(run._band_sums(frame, aggregates, ["g"], ["x", "a"], per_row=True))
    assert one.keys() == two.keys() and len(two) == 3
    for key, sums in two.items():
        assert sums["rows"] == sums["keys"] > 1000  # one row per weight
        assert one[key].keys() == sums.keys()
        for name, value in sums.items():
            if isinstance(value, float):
                assert one[key][name] == pytest.approx(value, rel=1e-12), name
            else:
                assert one[key][name] == value, name


def test_the_files_statistics_are_parsed_once_per_table_object(
    table: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An approx call plans with two planners (the filter, the rows whose indexed columns
    are all NULL) and the unread files' extremes: each parsed every file's Delta statistics
    of its own (3 passes over the log's adds per call, before). The table object never
    changes, so it parses them once, for every later read too."""
    import qbeast_connect.table as table_module

    calls: list[int] = []
    parse = table_module.stats_by_path

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return parse(*args, **kwargs)

    monkeypatch.setattr(table_module, "stats_by_path", counted)
    t = qc.QbeastTable.forPath(table[0]._spark, table[0].path)
    first = t.approx("sum(price) AS revenue", where="x < 500", relativeError=0.05)
    second = t.approx("sum(price) AS revenue", where="x < 500", relativeError=0.05)
    t.explainScan(where="x < 100")
    assert len(calls) == 1
    assert first.rows() == second.rows()
