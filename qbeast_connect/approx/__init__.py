"""Approximate answers with confidence intervals from the weight bands of a qbeast table.

Pure computation (no pyspark): parsing the aggregates, the estimators and intervals, the
result and the online-aggregation schedule. :mod:`qbeast_connect.approx.run` runs the Spark
queries for :meth:`qbeast_connect.QbeastTable.approx`. See docs/approx.md.
"""

from __future__ import annotations

from qbeast_connect.approx.aggregates import Aggregate, parse_aggregates
from qbeast_connect.approx.estimators import (
    MIN_RELIABLE,
    Estimate,
    estimate,
    inclusion_probability,
    merge_sums,
    z_value,
)
from qbeast_connect.approx.result import ApproxResult, Step, first_fraction, next_fraction

__all__ = [
    "MIN_RELIABLE",
    "Aggregate",
    "ApproxResult",
    "Estimate",
    "Step",
    "estimate",
    "first_fraction",
    "inclusion_probability",
    "merge_sums",
    "next_fraction",
    "parse_aggregates",
    "z_value",
]
