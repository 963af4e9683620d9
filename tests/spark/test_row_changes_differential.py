"""Random sequences of delete, update, merge, append and optimize against a reference.

The reference is the table's rows kept in Python and changed by the same operations with
SQL's rules (a condition that is NULL does not hold). After every step the qbeast table
must hold exactly the reference's rows, ``sample(f)`` must be exactly the rows whose weight
(``hash(x, d)``) is below f's, a filter must answer as the reference, and every file must
still carry its qbeast tags. Fixed seeds, small tables (issue #33).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, DoubleType, LongType, StringType, StructField, StructType

import qbeast_connect as qc
from qbeast_connect.model.weight import weight_from_fraction
from tests.spark.helpers import live_adds

SCHEMA = StructType(
    [
        StructField("id", LongType()),
        StructField("x", DoubleType()),
        StructField("d", DateType()),
        StructField("s", StringType()),
    ]
)
Row = tuple[int, float | None, dt.date, str | None]
Cond = tuple[str, Callable[[Row], bool | None]]


def _row(rng: random.Random, i: int) -> Row:
    x = None if rng.random() < 0.1 else round(rng.uniform(0, 1000), 1)
    s = None if rng.random() < 0.1 else f"k{rng.randrange(8)}"
    return (i, x, dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(200)), s)


def _condition(rng: random.Random) -> Cond:
    """SQL text and its value on a row (None: NULL)."""
    kind = rng.randrange(4)
    if kind == 0:
        a = round(rng.uniform(0, 400), 1)
        return f"x < {a}", lambda r: None if r[1] is None else r[1] < a
    if kind == 1:
        k = f"k{rng.randrange(8)}"
        return f"s = '{k}'", lambda r: None if r[3] is None else r[3] == k
    if kind == 2:
        m, rest = rng.randrange(3, 9), rng.randrange(3)
        return f"id % {m} = {rest}", lambda r: r[0] % m == rest
    day = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(200))
    a = round(rng.uniform(300, 900), 1)

    def both(r: Row) -> bool | None:
        left = r[2] < day
        right = None if r[1] is None else r[1] > a
        if left is False or right is False:
            return False
        return None if right is None else True

    return f"d < date'{day.isoformat()}' AND x > {a}", both


def _frame(spark: Any, rows: list[Row]) -> Any:
    return spark.createDataFrame(rows, SCHEMA)


def _check(spark: Any, path: str, reference: dict[int, Row], step: str) -> None:
    table = qc.QbeastTable.forPath(spark, path)
    got = sorted(tuple(r) for r in table.toDF().collect())
    assert got == sorted(reference.values()), step
    threshold = weight_from_fraction(0.35)
    sampled = sorted(r["id"] for r in table.sample(0.35).select("id").collect())
    weighed = table.toDF().where(F.expr(f"hash(x, d) < {threshold}")).select("id").collect()
    assert sampled == sorted(r["id"] for r in weighed), step
    filtered = sorted(r["id"] for r in table.filter("x BETWEEN 200 AND 500").collect())
    want = sorted(i for i, r in reference.items() if r[1] is not None and 200 <= r[1] <= 500)
    assert filtered == want, step
    for add in live_adds(path).values():
        tags = add.get("tags") or {}
        assert tags.get("revision") not in (None, "0"), step
        assert sum(int(b["elementCount"]) for b in json.loads(tags["blocks"])) > 0, step


@pytest.mark.parametrize(("seed", "vectors"), [(3, False), (11, False), (5, True)])
def test_random_row_changes_match_the_reference(
    spark: Any, tmp_path: Any, seed: int, vectors: bool
) -> None:
    """``vectors``: the table has deletion vectors on, so deletes and updates mark rows in
    vectors (``test_row_changes_vectors``) between merges, appends and optimizes."""
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    rows = [_row(rng, i) for i in range(400)]
    properties = {"delta.enableDeletionVectors": "true"} if vectors else {}
    qc.write(_frame(spark, rows), path, columnsToIndex="x,d", cubeSize=60, **properties)
    reference = {r[0]: r for r in rows}
    next_id = 400
    marked = 0  # files given a deletion vector by deletes and updates
    for step in range(10):
        op = rng.choice(["delete", "update", "merge", "append", "delete", "merge", "optimize"])
        table = qc.QbeastTable.forPath(spark, path)
        if op == "delete":
            text, holds = _condition(rng)
            result = table.delete(text)
            marked += result.num_deletion_vectors
            gone = [i for i, r in reference.items() if holds(r) is True]
            assert result.num_deleted_rows == len(gone), (step, text)
            for i in gone:
                del reference[i]
        elif op == "update":
            text, holds = _condition(rng)
            shift = round(rng.uniform(-50, 50), 1)
            marked += table.update(
                text, {"x": f"x + {shift}", "s": f"'u{step}'"}
            ).num_deletion_vectors
            for i, r in list(reference.items()):
                if holds(r) is True:
                    x = None if r[1] is None else r[1] + shift
                    reference[i] = (i, x, r[2], f"u{step}")
        elif op == "merge":
            existing = rng.sample(sorted(reference), min(25, len(reference)))
            fresh = list(range(next_id, next_id + 20))
            next_id += 20
            source = [_row(rng, i) for i in existing + fresh]
            drop_key = f"k{rng.randrange(8)}"
            builder = (
                table.alias("t")
                .merge(_frame(spark, source).alias("src"), "t.id = src.id")
                .whenMatchedDelete(f"src.s = '{drop_key}'")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
            )
            builder.execute()
            for r in source:
                if r[0] in reference:
                    if r[3] == drop_key:
                        del reference[r[0]]
                    else:
                        reference[r[0]] = r
                else:
                    reference[r[0]] = r
        elif op == "append":
            new = [_row(rng, i) for i in range(next_id, next_id + 50)]
            next_id += 50
            qc.write(_frame(spark, new), path, mode="append")
            reference.update({r[0]: r for r in new})
        else:
            table.optimize()
        _check(spark, path, reference, f"seed {seed} step {step} {op}")
    assert (marked > 0) == vectors
