"""Test helpers: a SQL three-valued evaluator and an in-memory synthetic qbeast table."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qbeast_connect.model import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    Block,
    CubeId,
    EmptyTransformation,
    EmptyTransformer,
    HashTransformation,
    HashTransformer,
    IndexFile,
    LinearTransformation,
    LinearTransformer,
    QbeastSnapshot,
    QDataType,
    Revision,
    weight_from_fraction,
)
from qbeast_connect.planning.predicate import (
    And,
    Comparison,
    FalseLiteral,
    InList,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    TrueLiteral,
)

LOG_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "qbeast_spark_table" / "_delta_log"

# ---------------------------------------------------------------------------------------------
# SQL three-valued logic
# ---------------------------------------------------------------------------------------------


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "=":
        return bool(left == right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def eval3(p: Predicate, row: Mapping[str, Any]) -> bool | None:
    """Evaluate a predicate on a row with SQL NULL semantics (None = unknown)."""
    if isinstance(p, TrueLiteral):
        return True
    if isinstance(p, FalseLiteral):
        return False
    if isinstance(p, Comparison):
        v = row.get(p.column)
        if v is None or p.value is None:
            return None
        return _compare(v, p.op, p.value)
    if isinstance(p, InList):
        v = row.get(p.column)
        if v is None:
            return None
        if any(x is not None and v == x for x in p.values):
            return True
        return None if any(x is None for x in p.values) else False
    if isinstance(p, IsNull):
        return row.get(p.column) is None
    if isinstance(p, IsNotNull):
        return row.get(p.column) is not None
    if isinstance(p, Not):
        inner = eval3(p.child, row)
        return None if inner is None else not inner
    if isinstance(p, And):
        values = [eval3(c, row) for c in p.children]
        if any(v is False for v in values):
            return False
        return None if any(v is None for v in values) else True
    if isinstance(p, Or):
        values = [eval3(c, row) for c in p.children]
        if any(v is True for v in values):
            return True
        return None if any(v is None for v in values) else False
    raise AssertionError(f"cannot evaluate {p!r}")


# ---------------------------------------------------------------------------------------------
# the reference qbeast-spark log
# ---------------------------------------------------------------------------------------------


def fixture_log() -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Replay the reference log: the last configuration and the live add actions."""
    configuration: dict[str, str] = {}
    adds: dict[str, dict[str, Any]] = {}
    for path in sorted(LOG_DIR.glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "metaData" in action:
                configuration = action["metaData"]["configuration"]
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            if "remove" in action:
                adds.pop(action["remove"]["path"], None)
    return configuration, list(adds.values())


# ---------------------------------------------------------------------------------------------
# synthetic table
# ---------------------------------------------------------------------------------------------

STRINGS = (
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "ñandú", "Zoe",
)  # fmt: skip
STRING_PREFIX = 3
TIE_BREAKER = "\U0010ffff"


@dataclass(frozen=True)
class Row:
    """One synthetic row: values, weight and where it was written."""

    values: dict[str, Any]
    weight: int
    path: str


@dataclass(frozen=True)
class SyntheticTable:
    """A snapshot plus the ground truth of which row lives in which file."""

    snapshot: QbeastSnapshot
    rows: tuple[Row, ...]
    stats: dict[str, str]


def make_revision(
    revision_id: int,
    x_range: tuple[int, int],
    y_range: tuple[float, float],
    rng: random.Random,
) -> Revision:
    """A revision indexing x (linear int), y (linear double) and s (hashing string)."""
    return Revision(
        revision_id=revision_id,
        timestamp=1_700_000_000_000 + revision_id,
        table_id="mem://synthetic",
        desired_cube_size=10,
        column_transformers=(
            LinearTransformer("x", QDataType.INTEGER),
            LinearTransformer("y", QDataType.DOUBLE),
            HashTransformer("s", QDataType.STRING),
        ),
        transformations=(
            LinearTransformation.with_random_null(*x_range, QDataType.INTEGER, rng),
            LinearTransformation.with_random_null(*y_range, QDataType.DOUBLE, rng),
            HashTransformation(rng.randint(-(2**31), 2**31 - 1)),
        ),
    )


def staging_revision() -> Revision:
    """The staging revision 0 for columns x, y, s."""
    return Revision(
        revision_id=0,
        timestamp=1_700_000_000_000,
        table_id="mem://synthetic",
        desired_cube_size=10,
        column_transformers=(EmptyTransformer("x"), EmptyTransformer("y"), EmptyTransformer("s")),
        transformations=(EmptyTransformation(),) * 3,
    )


def random_weights(rng: random.Random, d: int, max_depth: int, p_child: float) -> dict[CubeId, int]:
    """A random cube → max weight map (the ``W`` of spec §5.6)."""
    weights: dict[CubeId, int] = {}
    frontier = [CubeId.root(d)]
    while frontier:
        cube = frontier.pop()
        weights[cube] = weight_from_fraction(rng.uniform(0.02, 0.9))
        if cube.depth < max_depth:
            frontier.extend(c for c in cube.children() if rng.random() < p_child)
    return weights


def assign_cube(point: Sequence[float], weight: int, weights: Mapping[CubeId, int]) -> CubeId:
    """Spec §5.6: the first container that is not in ``weights`` or accepts the weight."""
    for cube in CubeId.containers(point):
        w = weights.get(cube)
        if w is None or weight <= w:
            return cube
    raise AssertionError("unreachable")  # pragma: no cover


def _stats_json(rows: Sequence[dict[str, Any]]) -> str:
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for col in ("x", "y", "s", "z"):
        values = [r[col] for r in rows if r[col] is not None]
        nulls[col] = len(rows) - len(values)
        if not values:
            continue
        lo, hi = min(values), max(values)
        if isinstance(lo, str):
            lo = lo[:STRING_PREFIX]
            if len(hi) > STRING_PREFIX:
                hi = hi[:STRING_PREFIX] + TIE_BREAKER
        mins[col], maxs[col] = lo, hi
    return json.dumps(
        {"numRecords": len(rows), "minValues": mins, "maxValues": maxs, "nullCount": nulls},
        ensure_ascii=False,
    )


def random_row(
    rng: random.Random, x_range: tuple[int, int], y_range: tuple[float, float]
) -> dict[str, Any]:
    """A row with values inside the given ranges (each column null with probability 0.1)."""

    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value

    # Values on a grid aligned with cube edges (x step 25, y step 0.25) hit the box/cube
    # boundary cases; the others are arbitrary.
    if rng.random() < 0.7:
        x = rng.randrange(x_range[0], x_range[1] + 1, 25)
    else:
        x = rng.randint(*x_range)
    if rng.random() < 0.6:
        y = y_range[0] + 0.25 * rng.randint(0, int((y_range[1] - y_range[0]) / 0.25))
    else:
        y = round(rng.uniform(*y_range), 2)
    return {
        "x": maybe(x),
        "y": maybe(y),
        "s": maybe(rng.choice(STRINGS)),
        "z": maybe(rng.randint(0, 100)),
    }


def build_table(
    seed: int,
    *,
    rows_per_revision: int = 120,
    staging_rows: int = 15,
    one_file_per_cube: bool = False,
    max_depth: int = 3,
) -> SyntheticTable:
    """Build a two-revision synthetic table (plus staging files) with known row placement."""
    rng = random.Random(seed)
    ranges = {1: ((0, 1000), (-1.0, 1.0)), 2: ((-500, 2000), (-2.0, 3.0))}
    revisions = {0: staging_revision()}
    files: list[IndexFile] = []
    all_rows: list[Row] = []
    stats: dict[str, str] = {}
    counter = 0
    for rid, (x_range, y_range) in ranges.items():
        revision = make_revision(rid, x_range, y_range, rng)
        revisions[rid] = revision
        weights = random_weights(rng, 3, max_depth, 0.5)
        by_cube: dict[CubeId, list[tuple[dict[str, Any], int]]] = {}
        for _ in range(rows_per_revision):
            values = random_row(rng, x_range, y_range)
            weight = rng.randint(MIN_WEIGHT, MAX_WEIGHT)
            point = revision.transform_point([values["x"], values["y"], values["s"]])
            cube = assign_cube(point, weight, weights)
            by_cube.setdefault(cube, []).append((values, weight))
        # split cubes into chunks and pack chunks into files
        chunks: list[tuple[CubeId, list[tuple[dict[str, Any], int]]]] = []
        for cube, members in by_cube.items():
            if not one_file_per_cube and len(members) > 3 and rng.random() < 0.4:
                cut = rng.randint(1, len(members) - 1)
                chunks += [(cube, members[:cut]), (cube, members[cut:])]
            else:
                chunks.append((cube, members))
        if one_file_per_cube:
            groups = [[c] for c in chunks]
        else:
            n_files = max(1, min(len(chunks), rng.randint(4, 9)))
            groups = [[] for _ in range(n_files)]
            for chunk in chunks:
                groups[rng.randrange(n_files)].append(chunk)
        for group in groups:
            if not group:
                continue
            counter += 1
            path = f"r{rid}-{counter:04d}.parquet"
            merged: dict[CubeId, list[tuple[dict[str, Any], int]]] = {}
            for cube, members in group:
                merged.setdefault(cube, []).extend(members)
            blocks = tuple(
                Block(
                    cube.to_string(),
                    min(w for _, w in members),
                    weights.get(cube, MAX_WEIGHT),
                    len(members),
                )
                for cube, members in merged.items()
            )
            file_rows = [v for members in merged.values() for v, _ in members]
            files.append(IndexFile(path, 1000 * len(file_rows), 0, rid, blocks, len(file_rows)))
            stats[path] = _stats_json(file_rows)
            all_rows += [Row(v, w, path) for members in merged.values() for v, w in members]
    # staging files: any values (wider than every revision), no tags
    for k in range(2):
        if staging_rows == 0:
            break
        path = f"staging-{k}.parquet"
        rows = [random_row(rng, (-800, 2500), (-3.0, 4.0)) for _ in range(staging_rows)]
        files.append(
            IndexFile(
                path, 1000 * len(rows), 0, 0, (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),), len(rows)
            )
        )
        stats[path] = _stats_json(rows)
        all_rows += [Row(v, rng.randint(MIN_WEIGHT, MAX_WEIGHT), path) for v in rows]
    configuration = {"qbeast.lastRevisionID": str(max(revisions))}
    configuration.update({f"qbeast.revision.{rid}": r.to_json() for rid, r in revisions.items()})
    snapshot = QbeastSnapshot(configuration, tuple(files), 0)
    return SyntheticTable(snapshot, tuple(all_rows), stats)
