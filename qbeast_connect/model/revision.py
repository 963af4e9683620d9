"""Revisions: the indexing parameters of a qbeast table over time (spec §1.2, §1.3, §4.7).

A :class:`Revision` is stored as JSON under the Delta configuration key
``qbeast.revision.<id>``. :func:`plan_revision` decides, for a write, whether the latest
revision can be reused or a new one is needed; :func:`parse_column_stats` reads the
``columnStats`` write option.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from qbeast_connect.exceptions import (
    InvalidOptionError,
    MetadataFormatError,
    RevisionConflictError,
)
from qbeast_connect.model import _json
from qbeast_connect.model.column_spec import (
    ColumnSpec,
    qdatatype_for_spark_type,
    transformer_for,
)
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.hashing import to_float32
from qbeast_connect.model.headroom import with_headroom
from qbeast_connect.model.transformation import (
    ColumnStats,
    EmptyTransformation,
    EmptyTransformer,
    QDataType,
    Transformation,
    Transformer,
    transformation_from_json,
    transformation_to_json,
    transformer_from_json,
    transformer_to_json,
)

__all__ = [
    "DEFAULT_CUBE_SIZE",
    "Revision",
    "RevisionPlan",
    "empty_table_revision",
    "parse_column_stats",
    "plan_revision",
    "restart_revisions",
    "staging_revision",
]

DEFAULT_CUBE_SIZE = 5_000_000
"""Desired cube size of a new table when ``cubeSize`` is not given (rows per cube)."""

_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Revision:
    """One revision of a qbeast table.

    Attributes:
        revision_id: Id (0 = staging or empty-table revision, then 1, 2, …).
        timestamp: Creation time, epoch milliseconds.
        table_id: Table path as the writer received it (informational).
        desired_cube_size: Target rows per cube (stored as ``desiredCubeSize``, int32).
        column_transformers: One transformer per indexed column, in index order.
        transformations: One transformation per column, or empty (revision of an empty table).
    """

    revision_id: int
    timestamp: int
    table_id: str
    desired_cube_size: int
    column_transformers: tuple[Transformer, ...]
    transformations: tuple[Transformation, ...]

    def __post_init__(self) -> None:
        """Check the invariants."""
        object.__setattr__(self, "column_transformers", tuple(self.column_transformers))
        object.__setattr__(self, "transformations", tuple(self.transformations))
        if not _is_int(self.revision_id) or not 0 <= self.revision_id <= _INT64_MAX:
            raise InvalidOptionError(f"revision id must be an int ≥ 0, got {self.revision_id!r}")
        if not _is_int(self.timestamp) or not _INT64_MIN <= self.timestamp <= _INT64_MAX:
            raise InvalidOptionError(f"revision timestamp must be an int64, got {self.timestamp!r}")
        if not isinstance(self.table_id, str):
            raise InvalidOptionError(f"revision tableID must be a string, got {self.table_id!r}")
        if not _is_int(self.desired_cube_size) or not 1 <= self.desired_cube_size <= _INT32_MAX:
            raise InvalidOptionError(
                f"desired cube size must be an int in [1, {_INT32_MAX}], got "
                f"{self.desired_cube_size!r}"
            )
        if not self.column_transformers:
            raise InvalidOptionError("a revision needs at least one indexed column")
        for transformer in self.column_transformers:
            if not isinstance(transformer, Transformer):
                raise InvalidOptionError(f"not a column transformer: {transformer!r}")
        for transformation in self.transformations:
            if not isinstance(transformation, Transformation):
                raise InvalidOptionError(f"not a transformation: {transformation!r}")
        if self.transformations and len(self.transformations) != len(self.column_transformers):
            raise InvalidOptionError(
                f"revision {self.revision_id} has {len(self.column_transformers)} column "
                f"transformers but {len(self.transformations)} transformations"
            )
        names = [t.column_name.lower() for t in self.column_transformers]
        if len(set(names)) != len(names):
            raise InvalidOptionError(
                f"revision {self.revision_id} indexes a column twice: {self.column_names}"
            )

    # ---- properties ---------------------------------------------------------------------------

    @property
    def is_staging(self) -> bool:
        """Whether this is the staging revision: id 0 and only ``EmptyTransformer``s."""
        return self.revision_id == 0 and all(
            isinstance(t, EmptyTransformer) for t in self.column_transformers
        )

    @property
    def column_names(self) -> tuple[str, ...]:
        """Indexed column names, in index order."""
        return tuple(t.column_name for t in self.column_transformers)

    @property
    def dimension_count(self) -> int:
        """Number of indexed columns ``d``."""
        return len(self.column_transformers)

    @property
    def columns_to_index(self) -> str:
        """Transformer specs joined by commas, e.g. ``"id:linear,name:hashing"``."""
        return ",".join(t.spec for t in self.column_transformers)

    def root_cube(self) -> CubeId:
        """Return the root cube of this revision's tree."""
        return CubeId.root(self.dimension_count)

    def cube(self, cube_id: str) -> CubeId:
        """Decode a cube id string with this revision's dimension count."""
        return CubeId.from_string(cube_id, self.dimension_count)

    def transform_point(self, values: Sequence[object]) -> tuple[float, ...]:
        """Map one row's indexed values (in index order) to normalized coordinates.

        Raises:
            InvalidOptionError: Wrong number of values, or the revision has no
                transformations (the revision of an empty table).
        """
        if len(values) != self.dimension_count:
            raise InvalidOptionError(
                f"revision {self.revision_id} indexes {self.dimension_count} columns "
                f"{self.column_names}, got {len(values)} values"
            )
        if not self.transformations:
            raise InvalidOptionError(
                f"revision {self.revision_id} has no transformations yet (it describes an "
                "empty table); points cannot be mapped with it"
            )
        return tuple(t.transform(v) for t, v in zip(self.transformations, values, strict=True))

    # ---- JSON -----------------------------------------------------------------------------------

    def to_json_object(self) -> dict[str, Any]:
        """Return the revision as a JSON-ready dict in the reference's field order."""
        return {
            "revisionID": self.revision_id,
            "timestamp": self.timestamp,
            "tableID": self.table_id,
            "desiredCubeSize": self.desired_cube_size,
            "columnTransformers": [transformer_to_json(t) for t in self.column_transformers],
            "transformations": [transformation_to_json(t) for t in self.transformations],
        }

    def to_json(self) -> str:
        """Return the compact JSON text, byte-identical to the reference's Jackson output.

        Raises:
            InvalidOptionError: A number cannot be written (NaN or infinite).
        """
        return _json.dumps(self.to_json_object())

    @classmethod
    def from_json(cls, text: str) -> Revision:
        """Parse a revision JSON text (unknown fields are ignored).

        Raises:
            MetadataFormatError: The text is not a valid revision.
        """
        obj = _json.loads(text, what="revision JSON")
        return cls.from_json_object(obj)

    @classmethod
    def from_json_object(cls, obj: Mapping[str, Any]) -> Revision:
        """Build a revision from parsed JSON (see :meth:`from_json`).

        Raises:
            MetadataFormatError: A field is missing or invalid.
        """
        if not isinstance(obj, Mapping):
            raise MetadataFormatError(f"revision JSON must be an object, got {obj!r}")
        for key in ("revisionID", "timestamp", "desiredCubeSize"):
            if not _is_int(obj.get(key)):
                raise MetadataFormatError(
                    f"revision JSON field {key!r} must be an integer, got {obj.get(key)!r}"
                )
        table_id = obj.get("tableID")
        if not isinstance(table_id, str):
            raise MetadataFormatError(
                f"revision JSON field 'tableID' must be a string: {table_id!r}"
            )
        raw_transformers = obj.get("columnTransformers")
        if not isinstance(raw_transformers, list):
            raise MetadataFormatError(
                f"revision JSON field 'columnTransformers' must be an array: {raw_transformers!r}"
            )
        raw_transformations = obj.get("transformations", [])
        if raw_transformations is None:
            raw_transformations = []
        if not isinstance(raw_transformations, list):
            raise MetadataFormatError(
                f"revision JSON field 'transformations' must be an array: {raw_transformations!r}"
            )
        transformers = tuple(transformer_from_json(t) for t in raw_transformers)
        transformations = []
        for i, raw in enumerate(raw_transformations):
            hint = getattr(transformers[i], "data_type", None) if i < len(transformers) else None
            transformations.append(transformation_from_json(raw, data_type=hint))
        try:
            return cls(
                obj["revisionID"],
                obj["timestamp"],
                table_id,
                obj["desiredCubeSize"],
                transformers,
                tuple(transformations),
            )
        except InvalidOptionError as err:
            raise MetadataFormatError(f"invalid revision JSON: {err.message}") from None

    @classmethod
    def staging_revision(
        cls, table_id: str, desired_cube_size: int, column_names: Sequence[str], timestamp: int
    ) -> Revision:
        """Same as the module function :func:`staging_revision`."""
        return staging_revision(table_id, desired_cube_size, column_names, timestamp)


def staging_revision(
    table_id: str, desired_cube_size: int, column_names: Sequence[str], timestamp: int
) -> Revision:
    """Build the staging revision 0: one ``EmptyTransformer``/``EmptyTransformation`` per column.

    Args:
        table_id: Table path.
        desired_cube_size: Desired cube size (rows).
        column_names: Indexed columns.
        timestamp: Epoch ms; the reference uses ``revision 1 timestamp - 1`` on a first write
            and the current time on ConvertToQbeast.
    """
    return Revision(
        0,
        timestamp,
        table_id,
        desired_cube_size,
        tuple(EmptyTransformer(name) for name in column_names),
        tuple(EmptyTransformation() for _ in column_names),
    )


# ---------------------------------------------------------------------------------------------
# planning
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RevisionPlan:
    """The revision a write must use.

    Attributes:
        revision: The revision to index the data with.
        is_new: Whether ``revision`` must be added to the table metadata by this write.
        staging: A staging revision 0 to add as well (first write only), else None.
    """

    revision: Revision
    is_new: bool
    staging: Revision | None = None


def _lookup(mapping: Mapping[str, Any], name: str) -> Any:
    if name in mapping:
        return mapping[name]
    lower = name.lower()
    for key, value in mapping.items():
        if key.lower() == lower:
            return value
    return None


def _as_qdatatype(name: str, type_name: object, column_types: Mapping[str, Any]) -> QDataType:
    """A Qbeast data type name, or else a Spark simple type name (``"integer"``, …)."""
    if isinstance(type_name, QDataType):
        return type_name
    if isinstance(type_name, str) and type_name.strip():
        try:
            return QDataType(type_name)
        except ValueError:
            return qdatatype_for_spark_type(type_name, column=name)
    raise InvalidOptionError(
        f"column {name!r} to index is not in the data; columns: {', '.join(column_types)}"
    )


def _column_type(column_types: Mapping[str, Any], name: str) -> QDataType:
    return _as_qdatatype(name, _lookup(column_types, name), column_types)


def _check_cube_size(cube_size: int | None) -> None:
    if cube_size is not None and (not _is_int(cube_size) or not 1 <= cube_size <= _INT32_MAX):
        raise InvalidOptionError(
            f"cubeSize must be an integer in [1, {_INT32_MAX}] (rows per cube), got {cube_size!r}"
        )


def _make_transformation(
    transformer: Transformer,
    data_stats: Mapping[str, ColumnStats],
    user_stats: Mapping[str, ColumnStats],
    rng: random.Random,
) -> Transformation:
    """``tdf.merge(tcs)`` when user stats exist for the column, else ``tdf`` (spec §4.7)."""
    name = transformer.column_name
    tdf = transformer.make_transformation(_lookup(data_stats, name), rng)
    us = _lookup(user_stats, name)
    if us is None or us.is_empty:
        return tdf
    tcs = transformer.make_transformation(us, rng)
    return tdf.merge(tcs, rng)


def _empty_error(transformer: Transformer) -> InvalidOptionError:
    name = transformer.column_name
    return InvalidOptionError(
        f"Empty transformation for column {name!r}: the {transformer.type_name!r} transformer "
        f"needs statistics the data cannot provide; pass them in the columnStats option, e.g. "
        f'{{"{name}_quantiles": [...]}} with at least 2 sorted values including both extremes'
    )


def _new_table_transformers(
    column_specs: Sequence[ColumnSpec], column_types: Mapping[str, Any]
) -> tuple[Transformer, ...]:
    if not column_specs:
        raise InvalidOptionError(
            "columnsToIndex is required to create a qbeast table, e.g. columnsToIndex='a,b'"
        )
    return tuple(
        transformer_for(spec, _column_type(column_types, spec.name)) for spec in column_specs
    )


def restart_revisions(revision: Revision, table_id: str, timestamp_ms: int) -> RevisionPlan:
    """The plan of an overwrite that keeps ``revision``'s space (spec §1.3).

    An overwrite starts the table's revisions over: whatever space it indexes with, it is
    committed as revision 1, timestamped ``timestamp_ms``, next to a fresh staging revision
    0, and the older revisions leave the metadata (as :func:`plan_revision` plans an
    overwrite that builds its space from the data). Transformers, transformations and cube
    size are kept.
    """
    first = Revision(
        1,
        timestamp_ms,
        table_id,
        revision.desired_cube_size,
        revision.column_transformers,
        revision.transformations,
    )
    staging = staging_revision(
        table_id, revision.desired_cube_size, revision.column_names, timestamp_ms - 1
    )
    return RevisionPlan(first, True, staging)


def empty_table_revision(
    column_specs: Sequence[ColumnSpec],
    column_types: Mapping[str, str],
    cube_size: int | None,
    table_id: str,
    timestamp_ms: int,
) -> Revision:
    """Revision 0 of a table created without data (spec §1.3): real transformers, no
    transformations. The next non-empty write then creates revision 1 (and no staging one).

    Raises:
        InvalidOptionError: No columns, an unknown column, or a transformer misfit.
    """
    _check_cube_size(cube_size)
    transformers = _new_table_transformers(column_specs, column_types)
    return Revision(
        0,
        timestamp_ms,
        table_id,
        cube_size if cube_size is not None else DEFAULT_CUBE_SIZE,
        transformers,
        (),
    )


def plan_revision(
    latest: Revision | None,
    column_specs: Sequence[ColumnSpec],
    column_types: Mapping[str, str],
    data_stats: Mapping[str, ColumnStats],
    user_stats: Mapping[str, ColumnStats],
    cube_size: int | None,
    table_id: str,
    timestamp_ms: int,
    rng: random.Random,
) -> RevisionPlan:
    """Decide the revision of a write (spec §1.3, §4.7).

    First write (``latest`` is None): revision 1 built from the stats, plus a staging
    revision 0 timestamped ``timestamp_ms - 1``. Append: the latest revision is reused unless
    the cube size differs, a transformer changes (the latest is an ``EmptyTransformer``, or
    the spec names another type) or a transformation is superseded by the new stats; then the
    new revision gets id ``latest + 1``. A linear column the data grew beyond gets headroom
    on the side it grew (:mod:`qbeast_connect.model.headroom`), unless ``columnStats`` gave
    its bounds in this write.

    Differences from the reference (deliberate): transformer types are compared after
    canonicalization (``a:LINEAR`` on a linear column is no change), and column names are
    matched case-insensitively.

    Args:
        latest: The table's latest revision, or None for a new table / overwrite.
        column_specs: Parsed ``columnsToIndex``; may be empty on append (then the latest
            revision's columns are used).
        column_types: Data type per column name: Qbeast names (``"IntegerDataType"``) or
            Spark simple type names (mapped with ``qdatatype_for_spark_type``).
        data_stats: Stats computed from the data (min/max for linear columns).
        user_stats: Stats from the ``columnStats`` option (see :func:`parse_column_stats`).
        cube_size: The ``cubeSize`` option, or None (default / keep the latest).
        table_id: Table path written into a new revision.
        timestamp_ms: Creation time of a new revision.
        rng: Source of random null values.

    Raises:
        RevisionConflictError: The indexed columns differ from the latest revision's.
        InvalidOptionError: Bad cube size, missing column, transformer misfit, or a needed
            transformation that cannot be built (``quantiles`` without ``<col>_quantiles``).
    """
    _check_cube_size(cube_size)
    specs = tuple(column_specs)
    if latest is None:
        first_transformers = _new_table_transformers(specs, column_types)
        first_transformations: list[Transformation] = []
        for t in first_transformers:
            made = _make_transformation(t, data_stats, user_stats, rng)
            if made.is_empty:
                raise _empty_error(t)
            first_transformations.append(made)
        dcs = cube_size if cube_size is not None else DEFAULT_CUBE_SIZE
        revision = Revision(
            1, timestamp_ms, table_id, dcs, first_transformers, tuple(first_transformations)
        )
        staging = staging_revision(table_id, dcs, revision.column_names, timestamp_ms - 1)
        return RevisionPlan(revision, True, staging)

    names = latest.column_names
    if specs:
        requested = tuple(s.name for s in specs)
        if tuple(n.lower() for n in requested) != tuple(n.lower() for n in names):
            raise RevisionConflictError(
                f"the table is indexed on ({', '.join(names)}); this write asked for "
                f"({', '.join(requested)}). Use the same columns in the same order, omit "
                "columnsToIndex on append, or overwrite the table to change them"
            )
    else:
        specs = tuple(ColumnSpec(n) for n in names)

    transformers: list[Transformer] = []
    transformer_changed: list[bool] = []
    for old_t, spec in zip(latest.column_transformers, specs, strict=True):
        explicit = spec.transformer_type
        if isinstance(old_t, EmptyTransformer) or (
            explicit is not None and explicit != old_t.type_name
        ):
            new_t = transformer_for(
                ColumnSpec(old_t.column_name, explicit),
                _column_type(column_types, old_t.column_name),
            )
            transformers.append(new_t)
            transformer_changed.append(True)
        else:
            transformers.append(old_t)
            transformer_changed.append(False)

    changed = any(transformer_changed)
    final: list[Transformation] = []
    for i, t in enumerate(transformers):
        new = _make_transformation(t, data_stats, user_stats, rng)
        if not latest.transformations:
            if new.is_empty:
                raise _empty_error(t)
            final.append(new)
            changed = True
            continue
        old = latest.transformations[i]
        if transformer_changed[i] and new.is_empty:
            raise _empty_error(t)
        if old.is_superseded_by(new):
            merged = old.merge(new, rng)
            given = _lookup(user_stats, t.column_name)
            if given is None or given.is_empty:  # the user's bounds are taken as stated
                merged = with_headroom(old, merged, rng, new)
            final.append(merged)
            changed = True
        else:
            final.append(old)

    if cube_size is not None and cube_size != latest.desired_cube_size:
        changed = True
    if not changed:
        return RevisionPlan(latest, False, None)
    dcs = cube_size if cube_size is not None else latest.desired_cube_size
    revision = Revision(
        latest.revision_id + 1, timestamp_ms, table_id, dcs, tuple(transformers), tuple(final)
    )
    return RevisionPlan(revision, True, None)


# ---------------------------------------------------------------------------------------------
# columnStats option
# ---------------------------------------------------------------------------------------------

_STAT_SUFFIXES = ("_quantiles", "_histogram", "_min", "_max")
_TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|\+00:?00)?"
)
_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _parse_timestamp_ms(value: object, key: str) -> int:
    match = _TIMESTAMP_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidOptionError(
            f"columnStats {key}: {value!r} is not a timestamp; write it as "
            "'yyyy-MM-dd HH:mm:ss.SSSSSSZ', e.g. '2024-01-15 10:30:00.000000Z' (UTC)"
        )
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction = (match.group(7) or "").ljust(9, "0")
    try:
        moment = _dt.datetime(year, month, day, hour, minute, second, tzinfo=_dt.UTC)
    except ValueError as err:
        raise InvalidOptionError(f"columnStats {key}: invalid timestamp {value!r}: {err}") from None
    micros = (moment - _EPOCH) // _dt.timedelta(microseconds=1) + int(fraction[:6])
    return micros // 1000


def _parse_date_ms(value: object, key: str) -> int:
    match = _DATE_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidOptionError(
            f"columnStats {key}: {value!r} is not a date; write it as 'yyyy-MM-dd'"
        )
    try:
        day = _dt.date(*(int(g) for g in match.groups()))
    except ValueError as err:
        raise InvalidOptionError(f"columnStats {key}: invalid date {value!r}: {err}") from None
    return (day - _dt.date(1970, 1, 1)).days * 86_400_000


def _stat_value(value: object, dt: QDataType, key: str) -> int | float | str:
    if dt is QDataType.TIMESTAMP:
        return _parse_timestamp_ms(value, key)
    if dt is QDataType.DATE:
        return _parse_date_ms(value, key)
    if dt is QDataType.STRING:
        if not isinstance(value, str):
            raise InvalidOptionError(f"columnStats {key}: expected a string, got {value!r}")
        return value
    if dt in (QDataType.INTEGER, QDataType.LONG):
        if not _is_int(value):
            raise InvalidOptionError(
                f"columnStats {key}: expected an integer for a {dt.value} column, got {value!r}"
            )
        assert isinstance(value, int)
        low, high = (-(2**31), _INT32_MAX) if dt is QDataType.INTEGER else (_INT64_MIN, _INT64_MAX)
        if not low <= value <= high:
            raise InvalidOptionError(
                f"columnStats {key}: {value} is outside the range of a {dt.value} column"
            )
        return value
    # Double, Float, Decimal
    if dt is QDataType.DECIMAL and isinstance(value, str):
        try:
            value = Decimal(value)
        except InvalidOperation:
            raise InvalidOptionError(f"columnStats {key}: {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InvalidOptionError(f"columnStats {key}: expected a number, got {value!r}")
    result = float(value)
    if dt is QDataType.FLOAT:
        return to_float32(result)
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def parse_column_stats(text: str | None, columns: Mapping[str, str]) -> dict[str, ColumnStats]:
    """Parse the ``columnStats`` option (spec §4.8).

    Keys are ``<col>_min``, ``<col>_max``, ``<col>_quantiles`` and ``<col>_histogram`` for
    indexed columns. Timestamps are strings ``'yyyy-MM-dd HH:mm:ss.SSSSSSZ'`` read as UTC
    (the reference uses the session time zone) and become epoch ms; dates ``'yyyy-MM-dd'``
    become epoch ms of UTC midnight. Null values count as missing.

    Args:
        text: The option value (None or blank means no stats).
        columns: Data type per indexed column name: a Qbeast name (``"IntegerDataType"``)
            or a Spark simple type name (``"integer"``, ``"decimal(10,2)"``).

    Returns:
        Stats per column name (as spelled in ``columns``), only for columns with stats.

    Raises:
        InvalidOptionError: Malformed JSON, an unknown key, a value of the wrong type, only
            one of min/max, min ≥ max, fewer than 2 or unsorted quantiles, or only nulls.
    """
    if text is None or not text.strip():
        return {}
    example = '{"a_min": 0, "a_max": 10, "b_quantiles": [0.0, 2.5, 10.0]}'
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except ValueError as err:
        raise InvalidOptionError(
            f"columnStats is not valid JSON ({err}); expected an object like {example}"
        ) from None
    if not isinstance(obj, dict):
        raise InvalidOptionError(f"columnStats must be a JSON object like {example}, got {text!r}")
    by_lower = {name.lower(): name for name in columns}
    types = {name: _as_qdatatype(name, t, columns) for name, t in columns.items()}
    expected = ", ".join(f"{c}_min, {c}_max, {c}_quantiles" for c in columns)
    raw: dict[str, dict[str, Any]] = {}
    seen_value = False
    for key, value in obj.items():
        column = kind = None
        for suffix in _STAT_SUFFIXES:
            if key.endswith(suffix):
                candidate = key[: -len(suffix)]
                name = candidate if candidate in columns else by_lower.get(candidate.lower())
                if name is not None:
                    column, kind = name, suffix[1:]
                    break
        if column is None or kind is None:
            raise InvalidOptionError(
                f"unknown columnStats key {key!r}; expected keys for the indexed columns: "
                f"{expected or '(none)'}"
            )
        if value is None:
            continue
        seen_value = True
        dt = types[column]
        if kind in ("min", "max"):
            if dt is QDataType.STRING:
                raise InvalidOptionError(
                    f"columnStats {key}: string column {column!r} takes no min/max; use "
                    f"{column}_quantiles with the 'quantiles' transformer"
                )
            raw.setdefault(column, {})[kind] = _stat_value(value, dt, key)
        elif kind == "quantiles":
            if not isinstance(value, list) or len(value) < 2:
                raise InvalidOptionError(
                    f"columnStats {key} must be an array of at least 2 values including both "
                    f"extremes, got {value!r}"
                )
            qs = [_stat_value(v, dt, key) for v in value]
            if any(b < a for a, b in itertools.pairwise(qs)):  # type: ignore[operator]
                raise InvalidOptionError(f"columnStats {key} must be sorted ascending: {value!r}")
            raw.setdefault(column, {})["quantiles"] = tuple(qs)
        else:  # histogram
            if dt is not QDataType.STRING:
                raise InvalidOptionError(
                    f"columnStats {key}: histograms only apply to string columns"
                )
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, str) for v in value)
            ):
                raise InvalidOptionError(
                    f"columnStats {key} must be a non-empty array of strings, got {value!r}"
                )
            raw.setdefault(column, {})["histogram"] = tuple(value)
    if obj and not seen_value:
        raise InvalidOptionError(
            f"columnStats {text!r} is not a valid JSON: every value is null; "
            f"expected e.g. {example}"
        )
    result: dict[str, ColumnStats] = {}
    for column, stats in raw.items():
        has_min, has_max = "min" in stats, "max" in stats
        if has_min != has_max:
            missing = f"{column}_max" if has_min else f"{column}_min"
            raise InvalidOptionError(
                f"columnStats gives only one bound of column {column!r}; add {missing}"
            )
        if has_min and not stats["min"] < stats["max"]:
            raise InvalidOptionError(
                f"columnStats for column {column!r}: min {stats['min']!r} must be less than "
                f"max {stats['max']!r}"
            )
        result[column] = ColumnStats(
            min=stats.get("min"),
            max=stats.get("max"),
            quantiles=stats.get("quantiles"),
            histogram=stats.get("histogram"),
        )
    return result
