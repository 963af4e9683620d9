"""The intervals of ``QbeastTable.approx`` over 200 random queries on TPC-H lineitem sf 0.01.

The rows are read once with their weights and every query is evaluated locally with the
estimators ``approx`` uses (``bench/approx_coverage.py``); a few queries also run through
``approx`` itself and must agree, so the figure is the one ``approx`` would give. The full
sf 0.1 run is ``python -m bench.approx_coverage --sf 0.1`` (``bench/approx_coverage_sf0.1.json``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import qbeast_connect as qc
from bench.approx_coverage import (
    Query,
    coverage,
    evaluate,
    load_rows,
    random_queries,
    write_table,
)
from bench.common import lineitem
from qbeast_connect.model.weight import weight_from_fraction


def test_approx_intervals_cover_random_tpch_queries(remote_spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "lineitem"
    write_table(remote_spark, lineitem(0.01), path, cube_size=2000)
    table = qc.QbeastTable.forPath(remote_spark, str(path))
    rows = load_rows(table)
    assert len(rows) == remote_spark.read.parquet(lineitem(0.01)).count()
    queries = random_queries(200, seed=21, fractions=(1 / 16, 1 / 8, 1 / 4, 1 / 2))
    figures = coverage(queries, rows)
    assert figures["intervals"] >= 300, figures
    assert figures["coverage"] >= 0.92, figures
    # the local evaluation is what approx() answers, group by group; online aggregation
    # (bands, each reaching as far as its files hold rows) gives the answer of the sample
    # it stopped at
    online = [dataclasses.replace(q, fraction=0.0) for q in queries[6:9]]
    for query in queries[:6] + online:
        result = table.approx(
            query.aggregate,
            where=query.where,
            groupBy=list(query.group_by) or None,
            fraction=query.fraction or None,
            relativeError=None if query.fraction else 0.05,
        )
        if not query.fraction:
            query = dataclasses.replace(query, fraction=result.fraction)
        _agree(query, result, rows)


def _agree(query: Query, result: Any, rows: Any) -> None:
    """approx()'s rows equal the local evaluation of the query, group by group, with the
    inclusion probability approx used (the sample's realized share when the log tells it,
    checked against the rows themselves for a whole-table query)."""
    if query.where is None and result.sampledShare is not None:
        below = rows[(rows["_w"] < weight_from_fraction(query.fraction)) & ~rows["_null"]]
        assert result.sampledShare == pytest.approx(len(below) / len(rows), rel=1e-12)
    local = {g["key"]: g for g in evaluate(query, rows, result.probability, result.unreadExtremes)}
    got = {tuple(r[c] for c in query.group_by): r for r in result.rows()}
    assert got.keys() == local.keys(), query
    for key, row in got.items():
        want = local[key]
        assert row["a_reliable"] == want["reliable"], query
        for mine, theirs in (("a", "value"), ("a_low", "low"), ("a_high", "high")):
            if want[theirs] is None:
                assert row[mine] is None
            else:
                assert float(row[mine]) == pytest.approx(want[theirs], rel=1e-9), query
