"""File planning: which data files a filtered and/or sampled read must open (spec §6).

:func:`plan_files` combines two conservative prunings; neither ever drops a file holding a
row the query keeps:

1. **The qbeast index**, per revision (id > 0, not staging), with the revision's own
   transformations: the cube traversal of spec §6.3 step 5 over the query space
   (:func:`~qbeast_connect.planning.query_space.query_space`) and the sample's weight range,
   then every file with a block of an output cube whose weights overlap the range.
   Staging files and files of unknown revisions are always candidates.
2. **Delta statistics** (``add.stats``) of every candidate file, for any column: min/max
   against comparisons and IN lists, ``nullCount`` against IS [NOT] NULL.

The rows themselves are filtered afterwards by Spark: the caller applies the original
filter and, for samples, :func:`sample_weight_sql`.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.block import IndexFile
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.snapshot import CubeStatus, QbeastSnapshot
from qbeast_connect.model.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast_connect.planning.coercion import (
    bind_for_pruning,
    column_types,
    is_utc,
    nan_excluded_columns,
)
from qbeast_connect.planning.partition_stats import partition_stats
from qbeast_connect.planning.predicate import (
    Comparison,
    FalseLiteral,
    InList,
    IsNotNull,
    IsNull,
    Predicate,
    quote_identifier,
    to_dnf,
)
from qbeast_connect.planning.query_space import QuerySpace, query_space
from qbeast_connect.rules.column_mapping import check_indexed_columns, column_mapping

__all__ = [
    "RevisionScan",
    "ScanPlan",
    "file_may_match",
    "numeric_range",
    "parse_stats",
    "plan_files",
    "rows_inside_band",
    "sample_weight_sql",
    "stats_by_path",
    "stats_value",
    "time_stat_micros",
    "validate_fraction",
    "weight_range_for_fraction",
]

_NO_UPPER = MAX_WEIGHT + 1  # exclusive upper weight that admits every row
_MAX_DNF_TERMS = 64
_RELATIVE_SLACK = 1e-6  # float32 text of a stats bound vs its widened double, and rounding
_ABSOLUTE_SLACK = 1e-43  # float32 subnormals
_STRING_TIE_BREAKERS = frozenset({"\x7f", "\ufffd", "\uffff", "\U0010ffff"})
_UTC = _dt.UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_MICROS_PER_DAY = 86_400_000_000


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------


def validate_fraction(fraction: object) -> float:
    """Check a sample fraction: a real number in (0, 1].

    Raises:
        InvalidOptionError: Not a number, NaN, ≤ 0 or > 1.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, int | float | Decimal):
        raise InvalidOptionError(f"sample fraction must be a number in (0, 1], got {fraction!r}")
    value = float(fraction)
    if math.isnan(value) or not 0.0 < value <= 1.0:
        raise InvalidOptionError(f"sample fraction must be in (0, 1], got {fraction!r}")
    return value


def weight_range_for_fraction(fraction: float) -> tuple[int, int | None]:
    """Return the row weight range ``[from, to)`` of a sample: ``(MIN_WEIGHT, weight(f))``.

    ``sample(1.0)`` gives ``(MIN_WEIGHT, None)``: no weight filter, every row is kept.
    (The reference filters ``hash < 2147483647`` and so drops the rare rows whose hash is
    exactly ``MAX_WEIGHT``; we do not reproduce that quirk.)

    Raises:
        InvalidOptionError: The fraction is not in (0, 1].
    """
    f = validate_fraction(fraction)
    if f >= 1.0:
        return (MIN_WEIGHT, None)
    return (MIN_WEIGHT, weight_from_fraction(f))


def rows_inside_band(files: Iterable[IndexFile], from_fraction: float, to_fraction: float) -> bool:
    """Whether every row of ``files`` has its weight in the band
    ``[weight(from_fraction), weight(to_fraction))``, so the band's weight filter would
    keep them all and a read may leave it out.

    Known only from the writer's :attr:`IndexFile.max_row_weight` (blocks record a lower
    bound of the weights, never the upper one); a file without it, or of a staging
    revision, fails the test. The caller makes sure the files' weights hash the columns
    its filter hashes.
    """
    _, upper = weight_range_for_fraction(to_fraction)
    lower = weight_from_fraction(validate_fraction(from_fraction)) if from_fraction > 0 else None
    if upper is None and lower is None:
        return True
    for f in files:
        if f.is_staging:
            return False
        if upper is not None and (f.max_row_weight is None or f.max_row_weight >= upper):
            return False
        if lower is not None and f.min_row_weight < lower:
            return False
    return True


def sample_weight_sql(columns: Sequence[str], fraction: float) -> str:
    """Return the SQL row filter of a sample: ``hash(`c1`, …) < W`` (``TRUE`` for 1.0).

    Spark's ``hash`` (Murmur3, seed 42, nulls skipped) over the indexed columns in revision
    order is exactly the qbeast row weight (spec §3.2), so this keeps the same rows a
    qbeast-spark sample keeps.

    Args:
        columns: The latest revision's indexed column names, in index order.
        fraction: The sample fraction in (0, 1].

    Raises:
        InvalidOptionError: No columns, or an invalid fraction.
    """
    if isinstance(columns, str) or not columns:
        raise InvalidOptionError(
            f"sampling needs the indexed column names as a sequence, got {columns!r}"
        )
    _, upper = weight_range_for_fraction(fraction)
    if upper is None:
        return "TRUE"
    args = ", ".join(quote_identifier(c) for c in columns)
    return f"hash({args}) < {upper}"


# ---------------------------------------------------------------------------------------------
# plan objects
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RevisionScan:
    """How the files of one revision (or the staging area) were planned.

    Attributes:
        revision_id: The revision (0 = staging / unindexed files).
        indexed: Whether the qbeast index was used (False for staging files, unknown
            revisions, and reads with neither filter nor sample).
        space: The revision's query space (None when the index was not used).
        total_files: Files of the revision.
        selected_files: Files kept after both prunings.
        selected_cubes: Cubes output by the traversal (None when not traversed).
        skipped_by_index: Files dropped by the index.
        skipped_by_stats: Files dropped by Delta statistics.
    """

    revision_id: int
    indexed: bool
    space: QuerySpace | None
    total_files: int
    selected_files: int
    selected_cubes: int | None
    skipped_by_index: int
    skipped_by_stats: int


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """The files to read and how they were chosen.

    Attributes:
        files: Selected files, in snapshot order.
        total_files: Files in the snapshot.
        total_bytes: Their total size (bytes).
        selected_bytes: Size of the selected files (bytes).
        weight_range: ``(from, to)`` of the sample (``to`` exclusive, None = no weight
            filter), or None without a sample.
        per_revision: One entry per revision holding files, staging (0) first.
        skipped_by_index: Files dropped by the qbeast index.
        skipped_by_stats: Files dropped by Delta statistics.
    """

    files: tuple[IndexFile, ...]
    total_files: int
    total_bytes: int
    selected_bytes: int
    weight_range: tuple[int, int | None] | None
    per_revision: tuple[RevisionScan, ...]
    skipped_by_index: int
    skipped_by_stats: int

    @property
    def paths(self) -> tuple[str, ...]:
        """Paths (relative to the table root) of the selected files."""
        return tuple(f.path for f in self.files)


# ---------------------------------------------------------------------------------------------
# index traversal (spec §6.3 steps 5 and 6)
# ---------------------------------------------------------------------------------------------


def _traverse(
    statuses: Mapping[CubeId, CubeStatus], root: CubeId, space: QuerySpace, to_weight: int
) -> set[CubeId]:
    """``executeRevision``: cubes of the status that intersect the space and hold rows < to."""
    cubes = list(statuses)  # already in cube order
    keys = [c.sort_key() for c in cubes]
    out: set[CubeId] = set()
    stack = [root]
    while stack:
        cur = stack.pop()
        i = bisect.bisect_left(keys, cur.sort_key())
        if i == len(keys):
            continue
        found = cubes[i]
        if found == cur:
            out.add(cur)
            if to_weight > statuses[cur].max_weight:
                stack.extend(c for c in cur.children() if space.intersects_cube(c))
        elif cur.is_ancestor_of(found):
            stack.extend(c for c in cur.children() if space.intersects_cube(c))
    return out


def _index_select(
    snapshot: QbeastSnapshot,
    revision_id: int,
    files: Sequence[IndexFile],
    space: QuerySpace,
    weight_range: tuple[int, int | None] | None,
) -> tuple[list[IndexFile], int]:
    revision = snapshot.revision(revision_id)
    d = revision.dimension_count
    from_weight = MIN_WEIGHT if weight_range is None else weight_range[0]
    to_weight = _NO_UPPER
    if weight_range is not None and weight_range[1] is not None:
        to_weight = weight_range[1]
    statuses = snapshot.cube_statuses(revision_id)
    selected_cubes = _traverse(statuses, CubeId.root(d), space, to_weight)
    chosen: list[IndexFile] = []
    cache: dict[str, CubeId] = {}
    for f in files:
        for b in f.blocks:
            cube = cache.get(b.cube_id)
            if cube is None:
                cube = CubeId.from_string(b.cube_id, d)
                cache[b.cube_id] = cube
            if cube in selected_cubes and from_weight <= b.max_weight and to_weight > b.min_weight:
                chosen.append(f)
                break
    return chosen, len(selected_cubes)


# ---------------------------------------------------------------------------------------------
# Delta statistics
# ---------------------------------------------------------------------------------------------


def stats_by_path(
    add_actions: Iterable[Mapping[str, Any]],
    configuration: Mapping[str, str] | None = None,
    schema: object = None,
) -> dict[str, Any]:
    """Map each add action's ``path`` to its ``stats`` (for ``plan_files(file_stats=…)``).

    Accepts the add dicts themselves or ``{"add": {...}}`` wrappers. With the table's
    ``configuration`` and ``schema``, the files of a time-partitioned table also get the
    bounds their partition proves (:mod:`~qbeast_connect.planning.partition_stats`), and
    the statistics of a column-mapped table are keyed by logical names
    (:mod:`~qbeast_connect.rules.column_mapping`).
    """
    out: dict[str, Any] = {}
    adds: list[Mapping[str, Any]] = []
    # a column-mapped table's stats and partition values name physical columns: the
    # planner reads logical names (entries without a certain translation are left out)
    mapping = None if configuration is None else column_mapping(configuration, schema or {})
    for a in add_actions:
        if "add" in a and isinstance(a["add"], Mapping) and "path" not in a:
            a = a["add"]
        path = a.get("path")
        if isinstance(path, str):
            if mapping is None:
                out[path] = a.get("stats")
            else:
                out[path] = mapping.logical_stats(a.get("stats"))
                values = a.get("partitionValues")
                if isinstance(values, Mapping):
                    a = {**a, "partitionValues": mapping.logical_partition_values(values)}
            adds.append(a)
    if configuration is None:
        return out
    return partition_stats(out, adds, configuration, schema)


def numeric_range(raw: object, column: str) -> tuple[float, float] | None:
    """The smallest and largest value of the numeric top-level ``column`` in one file's
    Delta statistics: ``(inf, -inf)`` (an empty range) when every value is NULL; None when
    the statistics do not tell (none, not numbers, or not finite: NaN has no place in an
    order)."""
    stats = parse_stats(raw)
    if stats is None:
        return None
    low = stats_value(stats.get("minValues"), column)
    high = stats_value(stats.get("maxValues"), column)
    if low is None and high is None:
        nulls, rows = stats_value(stats.get("nullCount"), column), stats.get("numRecords")
        if isinstance(nulls, int) and not isinstance(nulls, bool) and nulls == rows:
            return (math.inf, -math.inf)
        return None
    ends = []
    for value in (low, high):
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            return None
        ends.append(float(value))
    if not all(math.isfinite(v) for v in ends) or ends[0] > ends[1]:
        return None
    return (ends[0], ends[1])


def parse_stats(raw: object) -> Mapping[str, Any] | None:
    """A file's Delta statistics parsed (JSON text, bytes or a mapping already); None when
    there are none or they are not a JSON object."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, str | bytes):
        try:
            parsed = json.loads(raw, parse_float=Decimal)
        except ValueError:
            return None
        return parsed if isinstance(parsed, Mapping) else None
    return None


def stats_value(section: object, column: str) -> Any:
    """Top-level stats entry of a column: exact name, else a unique case-insensitive match."""
    if not isinstance(section, Mapping):
        return None
    if column in section:
        return section[column]
    lowered = column.lower()
    matches = [k for k in section if isinstance(k, str) and k.lower() == lowered]
    return section[matches[0]] if len(matches) == 1 else None


class _Bound:
    """A comparable stats bound or literal: a kind and a key (with float slack when inexact)."""

    __slots__ = ("exact", "key", "kind")

    def __init__(self, kind: str, key: Any, exact: bool) -> None:
        self.kind = kind
        self.key = key
        self.exact = exact


def _micros(value: _dt.datetime) -> int:
    return (value.astimezone(_UTC) - _EPOCH) // _dt.timedelta(microseconds=1)


def _literal_key(value: object) -> _Bound | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return _Bound("bool", int(value), True)
    if isinstance(value, int):
        return _Bound("number", value, True)
    if isinstance(value, float | Decimal):
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, Decimal) and value.is_nan():
            return None
        return _Bound("number", float(value), False)
    if isinstance(value, str):
        return _Bound("string", value, True)
    if isinstance(value, _dt.datetime):
        return _Bound("time", _micros(value), True)
    if isinstance(value, _dt.date):
        return _Bound("time", (value - _EPOCH_DATE).days * _MICROS_PER_DAY, True)
    return None


def _stat_key(stat: object, literal: _Bound, upper: bool) -> Any:
    """The stats bound in the literal's domain (widened outward); None when incomparable."""
    if stat is None:
        return None
    if literal.kind == "bool":
        return int(stat) if isinstance(stat, bool) else None
    if literal.kind == "number":
        if isinstance(stat, bool) or not isinstance(stat, int | Decimal | float):
            return None
        if isinstance(stat, int) and literal.exact:
            return stat
        x = float(stat)
        if math.isnan(x):
            return None
        slack = abs(x) * _RELATIVE_SLACK + _ABSOLUTE_SLACK
        return x + slack if upper else x - slack
    if literal.kind == "string":
        if not isinstance(stat, str):
            return None
        if upper and stat and stat[-1] in _STRING_TIE_BREAKERS:
            return None  # possibly truncated: no usable upper bound
        return stat
    if literal.kind == "time":
        found = time_stat_micros(stat)
        if found is None:
            return None
        micros, is_date = found
        # bounds of instants are floored to milliseconds; a date is compared at midnight
        return micros + 999 if upper and not is_date else micros
    return None


def time_stat_micros(stat: object) -> tuple[int, bool] | None:
    """A date or timestamp statistics value (``yyyy-MM-dd``, or an ISO instant, UTC when it
    names no zone) as epoch microseconds, and whether it is a date (its midnight); None when
    it is not such text."""
    if not isinstance(stat, str):
        return None
    text = stat.strip()
    if len(text) == 10:  # a DATE column
        try:
            day = _dt.date.fromisoformat(text)
        except ValueError:
            return None
        return (day - _EPOCH_DATE).days * _MICROS_PER_DAY, True
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_UTC)
    return _micros(moment), False


def _atom_may_match(atom: Predicate, stats: Mapping[str, Any], nan_rows: bool = True) -> bool:
    """False only when the file provably holds no row for which ``atom`` is TRUE.

    ``nan_rows``: whether NaN rows of the atom's column may still match (False when the
    rest of the conjunction already rules them out).
    """
    if isinstance(atom, FalseLiteral):
        return False
    if not isinstance(atom, Comparison | InList | IsNull | IsNotNull):
        return True
    column = atom.column
    num_records = stats.get("numRecords")
    null_count = stats_value(stats.get("nullCount"), column)
    if isinstance(num_records, bool) or not isinstance(num_records, int):
        num_records = None
    if isinstance(null_count, bool) or not isinstance(null_count, int):
        null_count = None
    all_null = num_records is not None and null_count is not None and null_count >= num_records
    if isinstance(atom, IsNull):
        return null_count is None or null_count > 0
    if all_null:
        return False  # no non-null value: comparisons, IN and IS NOT NULL are never TRUE
    if isinstance(atom, IsNotNull):
        return True
    low_stat = stats_value(stats.get("minValues"), column)
    high_stat = stats_value(stats.get("maxValues"), column)
    if isinstance(atom, Comparison):
        return _value_may_match(atom.op, atom.value, low_stat, high_stat, nan_rows)
    values = [v for v in atom.values if v is not None]
    return any(_value_may_match("=", v, low_stat, high_stat) for v in values)


def _value_may_match(
    op: str, value: object, low_stat: object, high_stat: object, nan_rows: bool = True
) -> bool:
    lit = _literal_key(value)
    if lit is None:
        return value is not None  # NaN or unknown: keep; NULL literal: never TRUE
    if isinstance(value, float) and op in (">", ">=") and nan_rows:
        # A float literal means a FLOAT/DOUBLE column (predicates are bound to the schema).
        # NaN is above every value in Spark, and no writer's min/max proves a file has none.
        return True
    low = _stat_key(low_stat, lit, upper=False)
    high = _stat_key(high_stat, lit, upper=True)
    v = lit.key
    try:
        if op in ("<", "<="):
            return low is None or (low < v if op == "<" else low <= v)
        if op in (">", ">="):
            return high is None or (high > v if op == ">" else high >= v)
        # equality
        return (low is None or low <= v) and (high is None or high >= v)
    except TypeError:
        return True


def file_may_match(dnf: Sequence[Sequence[Predicate]], stats: object) -> bool:
    """Whether a file may hold a row matching the predicate, judging by its Delta stats.

    Args:
        dnf: The predicate's DNF (:func:`~qbeast_connect.planning.predicate.to_dnf`).
        stats: The file's ``add.stats`` (JSON text or parsed), or None.

    Returns:
        False only when no conjunction can be TRUE for any row of the file.
    """
    if not dnf:
        return False
    parsed = parse_stats(stats)
    if parsed is None:
        return True
    for term in dnf:
        no_nan = nan_excluded_columns(term)
        if all(
            _atom_may_match(a, parsed, getattr(a, "column", "").lower() not in no_nan) for a in term
        ):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# plan_files
# ---------------------------------------------------------------------------------------------


def plan_files(
    snapshot: QbeastSnapshot,
    predicate: Predicate | None,
    fraction: float | None,
    *,
    stats_pruning: bool = True,
    file_stats: Mapping[str, Any] | None = None,
    schema: object = None,
    time_zone: str | None = "UTC",
    from_fraction: float | None = None,
) -> ScanPlan:
    """Choose the files a read with this filter and sample fraction must open.

    Per revision (id > 0, not staging) the index is traversed with the revision's own
    transformations and the weight range ``[MIN_WEIGHT, weight(fraction))``; staging files
    and files of revisions the snapshot does not describe are always candidates. Then, when
    ``stats_pruning`` and ``file_stats`` are given, Delta statistics drop the files that
    provably hold no matching row. No file holding a row that satisfies the predicate and has
    a weight in range is ever dropped.

    Args:
        snapshot: The table snapshot.
        predicate: The filter (None for none).
        fraction: Sample fraction in (0, 1], or None for no sample. ``1.0`` applies no
            weight filter (see :func:`weight_range_for_fraction`).
        stats_pruning: Whether to use Delta statistics.
        file_stats: ``path → add.stats`` (JSON text or parsed dict), e.g. from
            :func:`stats_by_path`. Files without an entry are never pruned by statistics.
        schema: The table schema (Delta ``schemaString``, its dict, or a ``StructType``).
            When given, the predicate is first bound to the column types the way Spark
            coerces its literals (:mod:`~qbeast_connect.planning.coercion`); leaves it
            cannot interpret exactly prune nothing. Without it the literals are taken to be
            of their columns' types already (the caller bound them).
        time_zone: The session time zone of the Spark that filters the rows; timestamps
            are only compared with strings, dates or zone-less literals when it is UTC.
        from_fraction: With ``fraction``, read only the weight band above this fraction:
            rows of weight in ``[weight(from_fraction), weight(fraction))`` (the caller
            filters the rows to that band too). Used by online aggregation.

    Returns:
        The plan.

    Raises:
        InvalidOptionError: An invalid fraction.
        MetadataFormatError: A block has an invalid cube id.
    """
    weight_range = None if fraction is None else weight_range_for_fraction(fraction)
    if weight_range is not None and from_fraction is not None:
        weight_range = (weight_from_fraction(validate_fraction(from_fraction)), weight_range[1])
    if predicate is not None and schema is not None:
        predicate = bind_for_pruning(predicate, column_types(schema), utc=is_utc(time_zone))
    dnf = None if predicate is None else to_dnf(predicate, max_terms=_MAX_DNF_TERMS)
    by_revision: dict[int, list[IndexFile]] = {}
    for f in snapshot.files:
        by_revision.setdefault(f.revision_id, []).append(f)

    selected: set[str] = set()
    scans: list[RevisionScan] = []
    skipped_index = skipped_stats = 0
    for revision_id in sorted(by_revision):
        files = by_revision[revision_id]
        revision = snapshot.revisions.get(revision_id)
        use_index = (
            revision_id > 0
            and revision is not None
            and not revision.is_staging
            and bool(revision.transformations)
            and (predicate is not None or weight_range is not None)
        )
        space: QuerySpace | None = None
        cubes: int | None = None
        if use_index:
            assert revision is not None
            if schema is not None:
                check_indexed_columns(revision_id, revision.column_names, schema)
            space = query_space(revision, predicate, max_boxes=_MAX_DNF_TERMS)
            if space.is_empty:
                candidates: list[IndexFile] = []
                cubes = 0
            elif space.is_all and weight_range is None:
                candidates = list(files)
            else:
                candidates, cubes = _index_select(snapshot, revision_id, files, space, weight_range)
        else:
            candidates = list(files)
        by_index = len(files) - len(candidates)
        kept = candidates
        if stats_pruning and dnf is not None and file_stats is not None:
            kept = [f for f in candidates if file_may_match(dnf, file_stats.get(f.path))]
        by_stats = len(candidates) - len(kept)
        skipped_index += by_index
        skipped_stats += by_stats
        selected.update(f.path for f in kept)
        scans.append(
            RevisionScan(
                revision_id=revision_id,
                indexed=use_index,
                space=space,
                total_files=len(files),
                selected_files=len(kept),
                selected_cubes=cubes,
                skipped_by_index=by_index,
                skipped_by_stats=by_stats,
            )
        )
    chosen = tuple(f for f in snapshot.files if f.path in selected)
    return ScanPlan(
        files=chosen,
        total_files=len(snapshot.files),
        total_bytes=sum(f.size for f in snapshot.files),
        selected_bytes=sum(f.size for f in chosen),
        weight_range=weight_range,
        per_revision=tuple(scans),
        skipped_by_index=skipped_index,
        skipped_by_stats=skipped_stats,
    )
