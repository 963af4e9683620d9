"""Delta column mapping: logical column names (what users see) vs physical names (what the
data files, ``add.stats`` and ``add.partitionValues`` use).

With ``delta.columnMapping.mode`` = ``name`` or ``id``, every schema field, nested ones
too, carries ``delta.columnMapping.id`` and ``delta.columnMapping.physicalName`` in its
metadata. This module is the one place that translates between the two namings:

* :func:`column_mapping` reads the mode and the schema once into a :class:`ColumnMapping`;
* :meth:`ColumnMapping.physical_schema_json` is the schema to open data files with (and, in
  ``id`` mode, the parquet field ids to write);
* :meth:`ColumnMapping.logical_stats` / :meth:`ColumnMapping.logical_partition_values`
  translate the log's statistics and partition values to logical names. A key the schema
  does not name (a dropped column, a damaged entry) is left out: statistics never prune
  on a column whose translation is not certain.

qbeast's own metadata (``columnsToIndex`` of a revision) stays in logical names, as
qbeast-spark keeps it; :func:`missing_indexed_columns` tells which indexed columns a
rename or drop took away.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from qbeast_connect.exceptions import (
    CorruptLogError,
    IndexedColumnMissingError,
    UnsupportedProtocolError,
)
from qbeast_connect.rules.time_partitioning import partitioning_of

__all__ = [
    "COLUMN_ID_KEY",
    "COLUMN_MAPPING_MODE",
    "MAX_COLUMN_ID",
    "MODES",
    "PHYSICAL_NAME_KEY",
    "ColumnMapping",
    "check_indexed_columns",
    "check_partition_column_mapped",
    "column_mapping",
    "mapping_mode",
    "missing_indexed_columns",
    "same_logical_schema",
    "schema_json_of",
]

COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
COLUMN_ID_KEY = "delta.columnMapping.id"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
MODES = ("none", "name", "id")


def mapping_mode(configuration: Mapping[str, str] | None) -> str:
    """The table's column mapping mode: ``none``, ``name`` or ``id``.

    Raises:
        UnsupportedProtocolError: the property has another value.
    """
    raw = (configuration or {}).get(COLUMN_MAPPING_MODE)
    mode = "none" if raw is None else str(raw).strip().lower()
    if mode not in MODES:
        raise UnsupportedProtocolError(
            f"table property {COLUMN_MAPPING_MODE}={raw!r} is not one of none, name, id"
        )
    return mode


def schema_json_of(schema: object) -> dict[str, Any]:
    """A schema given as Delta ``schemaString`` text, its parsed dict or a pyspark
    ``StructType`` (anything with ``jsonValue()``), as the dict."""
    if isinstance(schema, str | bytes):
        value = json.loads(schema)
    elif isinstance(schema, Mapping):
        value = schema
    elif hasattr(schema, "jsonValue"):
        value = schema.jsonValue()
    else:
        raise CorruptLogError(f"cannot read a schema from {type(schema).__name__}")
    if not isinstance(value, Mapping):
        raise CorruptLogError("the table schema is not a JSON object")
    return dict(value)


@dataclass(frozen=True)
class _Node:
    """One field: its logical name, its column id and its children (struct fields, also
    those inside arrays and maps), by physical name."""

    logical: str
    column_id: int
    children: Mapping[str, _Node]


def _physical_type(type_json: Any, where: str, nodes: dict[str, _Node] | None) -> Any:
    """The type with every nested field renamed to its physical name; struct children are
    recorded into ``nodes`` (physical name -> node)."""
    if not isinstance(type_json, Mapping):
        return type_json
    kind = type_json.get("type")
    if kind == "struct":
        fields = []
        for field in type_json.get("fields", ()):
            fields.append(_physical_field(field, where, nodes))
        return {**type_json, "fields": fields}
    if kind == "array":
        return {**type_json, "elementType": _physical_type(type_json["elementType"], where, nodes)}
    if kind == "map":
        return {
            **type_json,
            "keyType": _physical_type(type_json["keyType"], where, nodes),
            "valueType": _physical_type(type_json["valueType"], where, nodes),
        }
    return type_json


def _physical_field(field: Any, parent: str, nodes: dict[str, _Node] | None) -> dict[str, Any]:
    if not isinstance(field, Mapping) or not isinstance(field.get("name"), str):
        raise CorruptLogError("a schema field has no name; the metaData action is damaged")
    logical = field["name"]
    where = f"{parent}.{logical}" if parent else logical
    metadata = field.get("metadata") or {}
    physical = metadata.get(PHYSICAL_NAME_KEY)
    column_id = metadata.get(COLUMN_ID_KEY)
    if not isinstance(physical, str) or not physical:
        raise CorruptLogError(
            f"column {where} has no {PHYSICAL_NAME_KEY} in a table with column mapping; "
            "the metaData action is damaged"
        )
    try:
        if not isinstance(column_id, int | str) or isinstance(column_id, bool):
            raise TypeError(column_id)
        number = int(column_id)
    except (TypeError, ValueError):
        raise CorruptLogError(
            f"column {where} has no integer {COLUMN_ID_KEY} in a table with column mapping; "
            "the metaData action is damaged"
        ) from None
    children: dict[str, _Node] = {}
    out_type = _physical_type(field.get("type"), where, children)
    if nodes is not None:
        if physical in nodes:
            raise CorruptLogError(
                f"two columns share the physical name {physical!r}; the metaData action is damaged"
            )
        nodes[physical] = _Node(logical, number, children)
    return {**field, "name": physical, "type": out_type}


@dataclass(frozen=True)
class ColumnMapping:
    """A column-mapped table's names: see the module documentation.

    Attributes:
        mode: ``name`` or ``id``.
        logical_schema: the table schema (logical names, with the mapping metadata).
        physical_schema: the same schema with every field (nested too) named by its
            physical name.
    """

    mode: str
    logical_schema: Mapping[str, Any]
    physical_schema: Mapping[str, Any]
    _nodes: Mapping[str, _Node]

    def physical_schema_json(self) -> str:
        """:attr:`physical_schema` as JSON text."""
        return json.dumps(self.physical_schema, separators=(",", ":"))

    @property
    def physical_names(self) -> dict[str, str]:
        """Top-level logical column name -> physical name."""
        return {node.logical: physical for physical, node in self._nodes.items()}

    @property
    def logical_names(self) -> dict[str, str]:
        """Top-level physical column name -> logical name."""
        return {physical: node.logical for physical, node in self._nodes.items()}

    @property
    def max_column_id(self) -> int:
        """The largest column id in the schema (nested fields too; 0 when none)."""
        best = 0
        stack = list(self._nodes.values())
        while stack:
            node = stack.pop()
            best = max(best, node.column_id)
            stack.extend(node.children.values())
        return best

    def physical_name(self, logical: str) -> str | None:
        """The physical name of a top-level column, matched exactly (None: no such
        column)."""
        return self.physical_names.get(logical)

    def logical_partition_values(self, values: Mapping[str, str | None]) -> dict[str, str | None]:
        """``add.partitionValues`` (physical keys) with logical keys; unknown keys left out."""
        names = self.logical_names
        return {names[k]: v for k, v in values.items() if k in names}

    def physical_partition_values(self, values: Mapping[str, str | None]) -> dict[str, str | None]:
        """Partition values keyed by logical names, keyed by physical names."""
        names = self.physical_names
        out: dict[str, str | None] = {}
        for key, value in values.items():
            if key not in names:
                raise CorruptLogError(f"partition column {key!r} is not in the table schema")
            out[names[key]] = value
        return out

    def logical_stats(self, stats: object) -> object:
        """``add.stats`` (JSON text or parsed) with the columns of ``minValues``,
        ``maxValues`` and ``nullCount`` renamed to logical names, nested ones too; entries
        the schema does not name are left out. Other keys (``numRecords``,
        ``tightBounds``) are kept. Unreadable stats are returned as they are (they prove
        nothing either way)."""
        if stats is None:
            return None
        parsed: object = stats
        if isinstance(stats, str | bytes):
            try:
                parsed = json.loads(stats)
            except ValueError:
                return stats
        if not isinstance(parsed, Mapping):
            return stats
        out = dict(parsed)
        for section in ("minValues", "maxValues", "nullCount"):
            if section in out:
                out[section] = _rename(out[section], self._nodes)
        return out


def _rename(section: object, nodes: Mapping[str, _Node]) -> object:
    if not isinstance(section, Mapping):
        return {}
    out: dict[str, object] = {}
    for key, value in section.items():
        node = nodes.get(key) if isinstance(key, str) else None
        if node is None:
            continue
        out[node.logical] = _rename(value, node.children) if isinstance(value, Mapping) else value
    return out


def column_mapping(configuration: Mapping[str, str] | None, schema: object) -> ColumnMapping | None:
    """The table's :class:`ColumnMapping`, or None when its mode is ``none`` (names in
    files and log are the logical ones).

    Args:
        configuration: ``metaData.configuration``.
        schema: the table schema (``schemaString`` text, its dict, or a ``StructType``).

    Raises:
        UnsupportedProtocolError: an unknown mode.
        CorruptLogError: a field without its physical name or column id.
    """
    mode = mapping_mode(configuration)
    if mode == "none":
        return None
    logical = schema_json_of(schema)
    nodes: dict[str, _Node] = {}
    fields = [_physical_field(f, "", nodes) for f in logical.get("fields", ())]
    physical = {**logical, "fields": fields}
    return ColumnMapping(mode, logical, physical, nodes)


def missing_indexed_columns(indexed: Iterable[str], schema: object) -> list[str]:
    """The indexed columns (a revision's ``columnsToIndex``, logical names) the schema
    no longer has, matched case-insensitively as Spark resolves names: columns renamed or
    dropped since the revision was made."""
    names = {
        str(f.get("name")).lower()
        for f in schema_json_of(schema).get("fields", ())
        if isinstance(f, Mapping)
    }
    return [c for c in indexed if c.lower() not in names]


def check_indexed_columns(
    revision_id: int, indexed: Iterable[str], schema: object, table: str = "the table"
) -> None:
    """Refuse to use a revision whose indexed columns the schema no longer has.

    A column renamed or dropped with Delta (``ALTER TABLE ... RENAME COLUMN`` / ``DROP
    COLUMN``, which need column mapping) keeps its data under its physical name, but the
    revision names it by its old logical name; reading the index under the new name could
    return wrong rows, so reads that use the index and writes refuse. A schema without
    fields (unknown) is not checked.

    Raises:
        IndexedColumnMissingError: naming the columns, the revision and the fixes.
    """
    if not schema_json_of(schema).get("fields"):
        return
    missing = missing_indexed_columns(indexed, schema)
    if missing:
        names = ", ".join(missing)
        raise IndexedColumnMissingError(
            f"column(s) {names} indexed by revision {revision_id} of {table} are not in the "
            "table schema: they were renamed or dropped (Delta RENAME/DROP COLUMN). The qbeast "
            "index names its columns by their logical names, so it cannot be used now. Rename "
            f"the column(s) back to {names} (ALTER TABLE ... RENAME COLUMN), or rewrite the "
            "table with qbeast (mode='overwrite' with the new columnsToIndex); reads without "
            "a sample fraction or filter still work"
        )


def _shape(node: Any) -> Any:
    """A schema node without field metadata and with every field nullable."""
    if isinstance(node, Mapping):
        out = {k: _shape(v) for k, v in node.items() if k != "metadata"}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in out:
                out[key] = True
        if isinstance(out.get("name"), str):
            out["name"] = out["name"].lower()
        return out
    if isinstance(node, list):
        return [_shape(v) for v in node]
    return node


def same_logical_schema(left: object, right: object) -> bool:
    """Whether two schemas have the same columns and types, nested fields too, names
    compared case-insensitively, field metadata and nullability ignored."""
    return bool(_shape(schema_json_of(left)) == _shape(schema_json_of(right)))


def check_partition_column_mapped(configuration: Mapping[str, str], schema: object) -> None:
    """Refuse a time-partitioned table (``qc.write(..., partitionBy=...)``) whose partition
    column's physical name is not its logical name (renamed after column mapping was
    enabled): the client finds a file's time partition by the column's name in
    ``add.partitionValues``, which holds the physical name. (Enabling column mapping keeps
    every existing column's name as its physical name, so such tables read as before.)

    Raises:
        UnsupportedProtocolError: naming the column.
    """
    mapping = column_mapping(configuration, schema) if schema is not None else None
    if mapping is None:
        return
    partitioning = partitioning_of(configuration)
    if partitioning is None:
        return
    column = partitioning.column
    if mapping.physical_name(column) != column:
        raise UnsupportedProtocolError(
            f"the time partition column {column!r} of this column-mapped table is stored "
            f"under another physical name ({mapping.physical_name(column)!r}); qbeast-connect "
            "reads time partitions only while the partition column keeps its name: rename "
            "it back with Delta"
        )
