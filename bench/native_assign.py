"""Cube assignment as Spark SQL expressions (prototype of the JVM-only write path, issue #18).

Today's writer sends every row to a Python worker, which normalizes the indexed columns,
walks the cube tree and writes parquet with pyarrow. When every transformation of a
revision is linear (or identity/empty), all of that is arithmetic Spark can do itself:

* the coordinate of a linear column is ``(x * factor - offset) * scale + 0.0`` with the
  triple of :func:`qbeast_connect.model.linear_scale.scaled_form`, ``x`` being the value as
  the statistics job sees it (``cast(.. as double)``, epoch milliseconds for dates and
  timestamps); NaN and ±infinity take their fixed coordinates, nulls the transformation's
  null coordinate (a literal);
* the row weight is Spark's ``hash(indexed columns)`` (spec §3.2), as today;
* the cube at depth ``k`` is ``least(floor(coordinate * 2^k), 2^k - 1)`` per column, packed
  into one ``bigint`` key (:func:`cube_key`); the row goes to the first cube of its path
  that is not in the cube-weights map ``W`` or whose max weight is ``>= weight``
  (``index.assignment.CubeAssigner``'s rule, ties included): one ``CASE`` over the levels
  with ``try_element_at`` on a map literal;
* the file group comes from a ``(cube key -> group per weight band)`` map literal built
  from the :class:`~qbeast_connect.index.layout.FileLayout`, and the Z-order key inside a
  block from the same coordinates (``index.block_order.morton_keys``).

Spark then repartitions, sorts and writes the files with its own parquet writer: no
Python worker sees a row. The module only builds expressions and the literal tables; it
does not commit (see ``bench/native_write_bench.py`` for the measured prototype).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from qbeast_connect.exceptions import UnsupportedInputError
from qbeast_connect.index.block_order import MORTON_BITS, MORTON_LEVELS
from qbeast_connect.index.cubes import cube_strings, decode_cube_strings
from qbeast_connect.index.layout import FileLayout
from qbeast_connect.model.cube_id import cube_string_sort_key
from qbeast_connect.model.linear_scale import (
    NAN_COORDINATE,
    NEGATIVE_INFINITY_COORDINATE,
    POSITIVE_INFINITY_COORDINATE,
)
from qbeast_connect.model.revision import Revision
from qbeast_connect.model.weight import MAX_WEIGHT, MIN_WEIGHT
from qbeast_connect.planning.predicate import quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "NativeAssignment",
    "block_stats",
    "cube_key",
    "estimate_index",
    "group_salts",
    "write_native",
]

#: Spark types whose linear coordinate the JVM computes exactly as ``index.normalize``.
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "boolean")


def cube_key(depth: int, coords: Sequence[int], dimensions: int) -> int:
    """The ``bigint`` key of a cube: a leading 1 bit above ``d * depth`` coordinate bits.

    Column ``j``'s coordinate takes bits ``[(d-1-j) * depth, (d-j) * depth)``, so keys of
    different depths never collide. Needs ``d * depth <= 62``.
    """
    key = 1 << (dimensions * depth)
    for j, c in enumerate(coords):
        key |= int(c) << ((dimensions - 1 - j) * depth)
    return key


def group_salts(groups: int) -> list[int]:
    """For every file group ``g`` an int whose Spark hash partition among ``groups`` is ``g``.

    ``repartition(n, col)`` sends a row to ``pmod(hash(col), n)``; repartitioning by the
    salt instead of the group puts every group in its own partition (so one file each).
    """
    import pyarrow as pa

    from qbeast_connect.index.hashing_np import spark_hash_columns

    salts: list[int | None] = [None] * groups
    missing = groups
    start = 0
    while missing:
        candidates = np.arange(start, start + 4096, dtype=np.int32)
        hashes = spark_hash_columns([pa.array(candidates)]).astype(np.int64)
        parts = np.mod(hashes, groups)
        for value, part in zip(candidates.tolist(), parts.tolist(), strict=True):
            if salts[part] is None:
                salts[part] = value
                missing -= 1
        start += 4096
    return [int(s) for s in salts if s is not None]


@dataclass(frozen=True)
class _Cubes:
    """Every cube a row can be assigned to, with its key, CubeId rank and max weight."""

    names: list[str]
    keys: list[int]
    ranks: list[int]
    max_weights: dict[int, int]  # keys of W's cubes only
    max_depth: int


def _candidate_cubes(weights: Mapping[str, int], d: int) -> _Cubes:
    names = list(weights)
    depths, coords = decode_cube_strings(names, d)
    max_depth = int(depths.max()) if depths.size else 0
    if d * (max_depth + 1) > 62:
        raise UnsupportedInputError(
            f"the native assignment packs cubes into 62 bits: depth {max_depth + 1} of a "
            f"{d}-dimensional index does not fit; use the Python writer"
        )
    max_weights = {
        cube_key(int(k), c.tolist(), d): int(weights[n])
        for n, k, c in zip(names, depths.tolist(), coords, strict=True)
    }
    all_names = set(names)
    found: dict[str, int] = {n: key for n, key in zip(names, max_weights, strict=True)}
    # children of map cubes: where a row stops when the child is missing from W
    bits = np.asarray([[(i >> (d - 1 - j)) & 1 for j in range(d)] for i in range(1 << d)])
    for k in np.unique(depths).tolist():
        parents = coords[depths == k]
        kids = (parents[:, None, :] << 1 | bits[None, :, :]).reshape(-1, d)
        for text, c in zip(cube_strings(kids, k + 1, d), kids, strict=True):
            if text not in all_names:
                all_names.add(text)
                found[text] = cube_key(k + 1, c.tolist(), d)
    if not names:
        found[""] = cube_key(0, [0] * d, d)
    ordered = sorted(found, key=cube_string_sort_key)
    return _Cubes(
        names=ordered,
        keys=[found[n] for n in ordered],
        ranks=list(range(len(ordered))),
        max_weights=max_weights,
        max_depth=max_depth,
    )


class NativeAssignment:
    """Spark columns giving each row's weight, cube, file group and Z-order key.

    Args:
        revision: A revision whose transformations are all linear, identity or empty.
        cube_weights: Cube string -> max weight (``W``) of the write.
        layout: The write's file layout.
        spark_types: Spark type name (``DataType.simpleString()``) of each indexed column.

    Raises:
        UnsupportedInputError: a transformation or column type the JVM cannot reproduce
            exactly (hashing and quantile transformations, decimals wider than 15 digits).
    """

    def __init__(
        self,
        revision: Revision,
        cube_weights: Mapping[str, int],
        layout: FileLayout,
        spark_types: Mapping[str, str],
    ) -> None:
        self.revision = revision
        self.d = revision.dimension_count
        self.layout = layout
        for name, t in zip(revision.column_names, revision.transformations, strict=True):
            kind = type(t).__name__
            if kind not in ("LinearTransformation", "IdentityTransformation",
                            "EmptyTransformation"):
                raise UnsupportedInputError(
                    f"column {name!r}: {kind} has no exact Spark SQL form; use the Python writer"
                )
            if kind == "LinearTransformation":
                _check_linear_type(name, spark_types.get(name, ""))
        self.spark_types = dict(spark_types)
        self.cubes = _candidate_cubes(cube_weights, self.d)
        self.levels = min(MORTON_LEVELS, MORTON_BITS // self.d)
        # file group per (cube, band): the band's lowest weight stands for the band
        band_low = [MIN_WEIGHT, *layout.edges]
        table = np.stack(
            [
                layout.groups(
                    np.arange(len(self.cubes.names)),
                    self.cubes.names,
                    np.full(len(self.cubes.names), w, dtype=np.int64),
                )
                for w in band_low
            ],
            axis=1,
        )
        self.group_count = int(table.max()) + 1 if table.size else 1
        self.salts = group_salts(self.group_count)
        self.group_table = table

    # -- columns --------------------------------------------------------------------

    def weight(self) -> Column:
        from pyspark.sql import functions as F

        return F.hash(*[F.col(quote_identifier(n)) for n in self.revision.column_names])

    def coordinates(self) -> list[Column]:
        """The normalized coordinate of every indexed column (double in [0, 1])."""
        from pyspark.sql import functions as F

        out = []
        for name, t in zip(self.revision.column_names, self.revision.transformations,
                           strict=True):
            if type(t).__name__ != "LinearTransformation":
                out.append(F.lit(0.0))
                continue
            x = _domain_value(F.col(quote_identifier(name)), self.spark_types[name])
            factor, offset, scale = t.scaled_form  # type: ignore[attr-defined]
            value = (x * F.lit(factor) - F.lit(offset)) * F.lit(scale) + F.lit(0.0)
            null = float(t.transform(None))
            spark_type = self.spark_types[name]
            if spark_type in ("float", "double"):
                value = (
                    F.when(F.isnan(x), F.lit(NAN_COORDINATE))
                    .when(x == F.lit(float("inf")), F.lit(POSITIVE_INFINITY_COORDINATE))
                    .when(x == F.lit(float("-inf")), F.lit(NEGATIVE_INFINITY_COORDINATE))
                    .otherwise(value)
                )
            out.append(F.when(x.isNull(), F.lit(null)).otherwise(value))
        return out

    def _cell(self, coord: Column, depth: int) -> Column:
        from pyspark.sql import functions as F

        if depth == 0:
            return F.lit(0).cast("bigint")
        return F.least(F.floor(coord * F.lit(float(1 << depth))),
                       F.lit((1 << depth) - 1).cast("bigint"))

    def level_key(self, coords: Sequence[Column], depth: int) -> Column:
        """:func:`cube_key` of the depth-``depth`` cube containing the point."""
        from pyspark.sql import functions as F

        key = F.lit(1 << (self.d * depth)).cast("bigint")
        for j, c in enumerate(coords):
            cell = self._cell(c, depth)
            shift = (self.d - 1 - j) * depth
            key = key + (F.shiftleft(cell, shift) if shift else cell)
        return key

    def cube(self, coords: Sequence[Column], weight: Column) -> Column:
        """Key of the cube the row is assigned to (spec §5.6: the first cube on the path
        missing from ``W`` or with ``weight <= W[cube]``)."""
        from pyspark.sql import functions as F

        items = sorted(self.cubes.max_weights.items())
        if not items:
            return F.lit(cube_key(0, [0] * self.d, self.d)).cast("bigint")
        table = F.create_map(
            *[c for k, v in items for c in (F.lit(k).cast("bigint"), F.lit(v))]
        )
        expr: Any = F
        for depth in range(self.cubes.max_depth + 1):
            key = self.level_key(coords, depth)
            limit = F.try_element_at(table, key)
            stop = limit.isNull() | (weight <= limit)
            expr = expr.when(stop, key)
        column: Column = expr.otherwise(self.level_key(coords, self.cubes.max_depth + 1))
        return column

    def _lookup(self, values: Sequence[int], key: Column, kind: str) -> Column:
        from pyspark.sql import functions as F

        table = F.create_map(*[c for k, v in zip(self.cubes.keys, values, strict=True)
                               for c in (F.lit(k).cast("bigint"), F.lit(v).cast(kind))])
        return F.try_element_at(table, key)

    def rank(self, cube: Column) -> Column:
        """The cube's rank in CubeId order among the cubes a row can reach."""
        return self._lookup(self.cubes.ranks, cube, "int")

    def band(self, weight: Column) -> Column:
        from pyspark.sql import functions as F

        band: Column = F.lit(0)
        for edge in self.layout.edges:
            band = band + F.when(weight >= F.lit(edge), F.lit(1)).otherwise(F.lit(0))
        return band

    def group(self, cube: Column, weight: Column, salted: bool = True) -> Column:
        """File group of the row (or its salt, see :func:`group_salts`)."""
        from pyspark.sql import functions as F

        per_band = [
            F.array(*[F.lit(self.salts[g] if salted else int(g)) for g in row.tolist()])
            for row in self.group_table
        ]
        table = F.create_map(*[c for k, arr in zip(self.cubes.keys, per_band, strict=True)
                               for c in (F.lit(k).cast("bigint"), arr)])
        return F.try_element_at(F.try_element_at(table, cube), self.band(weight) + F.lit(1))

    def morton(self, coords: Sequence[Column]) -> Column:
        """``index.block_order.morton_keys`` of the point, as a non-negative bigint."""
        from pyspark.sql import functions as F

        levels = self.levels
        d = self.d
        cells = [self._cell(c, levels) for c in coords]
        parts: list[Column] = []
        for level in range(levels):
            for j, cell in enumerate(cells):
                bit = F.shiftright(cell, levels - 1 - level).bitwiseAND(F.lit(1))
                parts.append(F.shiftleft(bit, MORTON_BITS - 1 - (level * d + j)))
        # a balanced tree of ORs: a Connect plan limits the nesting depth of expressions
        while len(parts) > 1:
            paired = [a.bitwiseOR(b) for a, b in zip(parts[0::2], parts[1::2], strict=False)]
            parts = paired + (parts[-1:] if len(parts) % 2 else [])
        return parts[0] if parts else F.lit(0).cast("bigint")

    def cube_names(self) -> dict[int, str]:
        return dict(zip(self.cubes.keys, self.cubes.names, strict=True))

    def max_weight(self, key: int) -> int:
        return self.cubes.max_weights.get(key, MAX_WEIGHT)

    def assign(self, df: DataFrame) -> DataFrame:
        """``df`` with ``_qw`` (weight), ``_qcube`` (cube key), ``_qgroup`` (salted file
        group), ``_qrank`` and ``_qz`` (Z-order key) appended."""
        from pyspark.sql import functions as F

        names = [f"_qx{j}" for j in range(self.d)]
        with_points = df.select(
            "*", self.weight().alias("_qw"),
            *[c.alias(n) for c, n in zip(self.coordinates(), names, strict=True)],
        )
        coords = [F.col(n) for n in names]
        with_cube = with_points.withColumn("_qcube", self.cube(coords, F.col("_qw")))
        return with_cube.select(
            *[F.col(quote_identifier(c)) for c in df.columns],
            "_qw", "_qcube",
            self.group(F.col("_qcube"), F.col("_qw")).alias("_qgroup"),
            self.rank(F.col("_qcube")).alias("_qrank"),
            self.morton(coords).alias("_qz"),
        )


def _check_linear_type(name: str, spark_type: str) -> None:
    if spark_type in (*_NUMERIC, "date", "timestamp", "timestamp_ntz"):
        return
    if spark_type.startswith("decimal("):
        precision = int(spark_type[len("decimal("):].split(",")[0])
        # unscaled values then fit 2^53: Spark's double of the decimal is one correctly
        # rounded division, as index.normalize computes it
        if precision <= 15:
            return
    raise UnsupportedInputError(
        f"column {name!r} of type {spark_type}: the native assignment cannot reproduce its "
        "linear coordinate exactly; use the Python writer"
    )


def _domain_value(column: Column, spark_type: str) -> Column:
    """The column's value as a double, as the statistics job and ``index.normalize`` see it."""
    from pyspark.sql import functions as F

    if spark_type == "date":
        return (F.unix_date(column).cast("bigint") * F.lit(86_400_000)).cast("double")
    if spark_type in ("timestamp", "timestamp_ntz"):
        return F.unix_millis(column).cast("double")
    if spark_type == "boolean":
        return column.cast("int").cast("double")
    return column.cast("double")


def estimate_index(
    df: DataFrame, path: str, options: Mapping[str, Any]
) -> tuple[Revision, dict[str, int], FileLayout, dict[str, float]]:
    """Run today's statistics and estimation jobs for a new table at ``path``.

    Returns the revision, the cube max weights, the file layout and the seconds of each job.
    """
    from qbeast_connect.model.revision import plan_revision
    from qbeast_connect.options import parse_write_options
    from qbeast_connect.rules.columns import (
        index_types,
        indexed_specs,
        resolve_specs,
        user_column_stats,
    )
    from qbeast_connect.rules.schema import column_types
    from qbeast_connect.spark.errors import translate_errors
    from qbeast_connect.spark.write import _Writer

    parsed = parse_write_options(options)
    writer = _Writer(df, path, "overwrite", parsed)
    schema = df.schema
    types = column_types(str(schema.json()))
    specs = resolve_specs(indexed_specs(writer.specs, None, "columnsToIndex='x,y'"),
                          schema.names)
    user_stats = user_column_stats(parsed.column_stats, specs, types)
    qtypes = index_types(specs, types)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    stats_df, needs = writer._stats_frame(specs, qtypes, schema, None)
    with translate_errors():
        rows = stats_df.collect()
    total, per_partition, data_stats = writer._read_stats(rows, specs, needs, qtypes)
    timings["statistics"] = time.perf_counter() - start
    plan = plan_revision(None, specs, qtypes, data_stats, user_stats, parsed.cube_size,
                         writer.path, int(time.time() * 1000), random.Random())
    start = time.perf_counter()
    weights, layout = writer._estimate(plan.revision, total, per_partition, {})
    timings["estimation"] = time.perf_counter() - start
    return plan.revision, weights, layout, timings


def write_native(
    df: DataFrame, assignment: NativeAssignment, staging: str, shuffle: bool = True
) -> None:
    """Write ``df``'s rows with Spark's own parquet writer into ``staging``, rows by file
    group, cube (CubeId order), then Z-order inside the cube.

    ``shuffle``: one shuffle brings every file group to one task (one file per group, as
    the Python writer does for inputs of many partitions). Without it every task writes one
    file per group it holds rows of, under ``staging/_qgroup=<g>/`` (the Python writer's
    choice for inputs of a few partitions); a Delta table ignores such directory names, the
    AddFile path just includes them.
    """
    from pyspark.sql import functions as F

    assigned = assignment.assign(df)
    data = [F.col(quote_identifier(c)) for c in df.columns]
    if shuffle:
        ordered = assigned.repartition(assignment.group_count, F.col("_qgroup"))
        ordered = ordered.sortWithinPartitions("_qgroup", "_qrank", "_qz")
        ordered.select(*data).write.mode("overwrite").parquet(staging)
        return
    group = assignment.group(F.col("_qcube"), F.col("_qw"), salted=False).alias("_qgroup")
    ordered = assigned.select(*data, "_qw", "_qcube", "_qrank", "_qz", group)
    ordered = ordered.sortWithinPartitions("_qgroup", "_qrank", "_qz")
    ordered.select(*data, "_qgroup").write.mode("overwrite").partitionBy("_qgroup").parquet(
        staging
    )


def block_stats(
    spark: Any, staging: str, assignment: NativeAssignment
) -> list[tuple[str, str, int, int, int]]:
    """``(file, cube, minWeight, maxWeight, elementCount)`` of every block of the files in
    ``staging``, from a job reading only the indexed columns back."""
    from pyspark.sql import functions as F

    names = assignment.revision.column_names
    files = spark.read.parquet(staging).select(
        *[F.col(quote_identifier(n)) for n in names],
        F.input_file_name().alias("_qfile"),
    )
    points = [f"_qx{j}" for j in range(assignment.d)]
    with_points = files.select(
        "_qfile",
        assignment.weight().alias("_qw"),
        *[c.alias(n) for c, n in zip(assignment.coordinates(), points, strict=True)],
    )
    cube = assignment.cube([F.col(n) for n in points], F.col("_qw"))
    rows = (
        with_points.withColumn("_qcube", cube)
        .groupBy("_qfile", "_qcube")
        .agg(F.min("_qw").alias("low"), F.count(F.lit(1)).alias("n"))
        .collect()
    )
    cube_names = assignment.cube_names()
    return sorted(
        (
            str(r["_qfile"]),
            cube_names[int(r["_qcube"])],
            int(r["low"]),
            assignment.max_weight(int(r["_qcube"])),
            int(r["n"]),
        )
        for r in rows
    )
