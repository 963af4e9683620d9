"""``QbeastTable.merge``: Delta's MERGE, keeping the index (issue #33).

The builder is ``DeltaTable``'s: ``table.alias("t").merge(source.alias("s"), "t.id =
s.id")``, then ``whenMatchedUpdate``/``whenMatchedUpdateAll``/``whenMatchedDelete``,
``whenNotMatchedInsert``/``whenNotMatchedInsertAll``,
``whenNotMatchedBySourceUpdate``/``whenNotMatchedBySourceDelete``, then ``execute()``.

Execution, one mechanism with :mod:`qbeast_connect.row_changes`: the table's rows (each
tagged with its file) are joined with the source (full outer join on the condition); the
first clause of each kind whose condition is TRUE decides a row's fate (the clauses'
order is the user's, as in Delta); a target row that more than one source row matches is
an error when a MATCHED clause exists, as in Delta. The files holding an updated or
deleted row are rewritten with their other rows, the changed rows and the inserted rows,
as an append writes rows (weights kept, new values placed like appended ones), in one
``MERGE`` commit that removes those files. On a table with deletion vectors on, as in
Delta, the updated and deleted rows leave their files through vectors instead (each
target row carries its position: :func:`qbeast_connect.spark.files.rows_with_positions`)
and only the updated and inserted rows are written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedOperationError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from qbeast_connect.row_changes import ChangedTable

__all__ = ["MergeResult", "QbeastMergeBuilder"]

_T = "__qbeast_merge_target"
_S = "__qbeast_merge_source"
_FILE = "__qbeast_merge_file"
_ROW = "__qbeast_merge_row"
_POSITION = "__qbeast_merge_position"
_ACTION = "__qbeast_merge_action"
#: columns of the flattened join (:func:`_merge_rows`): the pair matched; it has a target row
_MATCHED = "__qbeast_merge_matched"
_HAS_TARGET = "__qbeast_merge_has_target"


@dataclass(frozen=True)
class MergeResult:
    """What a merge did (Delta's ``MERGE`` metrics).

    Attributes:
        version: the committed version; None when no row changed (nothing committed).
        num_target_rows_updated, num_target_rows_deleted, num_target_rows_inserted: rows.
        num_target_rows_copied: unchanged rows of the rewritten files, written again.
        num_removed_files, num_added_files: files.
        num_target_files_before_skipping, num_target_files_after_skipping: the table's
            files, and those the merge read (see :func:`_target_bounds`).
        num_deletion_vectors: files whose updated or deleted rows were marked in a new
            deletion vector instead of rewritten (tables with deletion vectors on).
    """

    version: int | None
    num_target_rows_updated: int = 0
    num_target_rows_deleted: int = 0
    num_target_rows_inserted: int = 0
    num_target_rows_copied: int = 0
    num_removed_files: int = 0
    num_added_files: int = 0
    num_target_files_before_skipping: int = 0
    num_target_files_after_skipping: int = 0
    num_deletion_vectors: int = 0


@dataclass(frozen=True)
class _Clause:
    kind: str  # "matched", "notMatched", "notMatchedBySource"
    action: str  # "update", "delete", "insert"
    condition: Any  # Column or None
    values: Mapping[str, Any] | None  # column -> Column; None: every column from the source


def _column(value: Column | str, what: str) -> Column:
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, str):
        if not value.strip():
            raise InvalidOptionError(f"{what} is empty")
        return F.expr(value)
    if isinstance(value, Column):
        return value
    raise InvalidOptionError(
        f"{what} must be SQL text or a Column, not {type(value).__name__} (write a literal "
        'as SQL text: "\'a\'" or "5")'
    )


class QbeastMergeBuilder:
    """Clauses of a MERGE on a qbeast table (``DeltaMergeBuilder``'s methods)."""

    def __init__(
        self,
        table: ChangedTable,
        target_alias: str | None,
        source: DataFrame,
        condition: Column | str,
    ) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(source, DataFrame):
            raise InvalidOptionError(f"merge needs a source DataFrame, not {type(source).__name__}")
        self._table = table
        self._target_alias = target_alias or "target"
        plan = getattr(source, "_plan", None)
        self._source_alias = getattr(plan, "_alias", None) or "source"
        self._source = source if getattr(plan, "_alias", None) else source.alias("source")
        self._condition_text = condition if isinstance(condition, str) else str(condition)
        self._condition_sql = condition if isinstance(condition, str) else None
        self._condition = _column(condition, "the merge condition")
        self._clauses: list[_Clause] = []

    def _add(
        self,
        kind: str,
        action: str,
        condition: Column | str | None,
        values: Mapping[str, Column | str] | None,
        all_columns: bool = False,
    ) -> QbeastMergeBuilder:
        if any(c.kind == kind and c.condition is None for c in self._clauses):
            raise InvalidOptionError(
                f"a {kind} clause follows one without a condition, so it can never apply; "
                "put the clauses with conditions first"
            )
        columns: dict[str, Column] | None = None
        if not all_columns and action != "delete":
            if not isinstance(values, Mapping) or not values:
                what = "set" if action == "update" else "values"
                raise InvalidOptionError(
                    f"{kind} {action} needs {what}={{column: value}}, e.g. "
                    f'{what}={{"v": "{self._source_alias}.v"}}'
                )
            columns = {str(k): _column(v, f"the value of {k!r}") for k, v in values.items()}
        cond = None if condition is None else _column(condition, f"the {kind} condition")
        self._clauses.append(_Clause(kind, action, cond, columns))
        return self

    def whenMatchedUpdate(  # noqa: N802 - DeltaMergeBuilder's names
        self, condition: Column | str | None = None, set: Mapping[str, Any] | None = None
    ) -> QbeastMergeBuilder:
        """Update matched rows (where ``condition``, if given) with ``set``."""
        return self._add("matched", "update", condition, set)

    def whenMatchedUpdateAll(  # noqa: N802
        self, condition: Column | str | None = None
    ) -> QbeastMergeBuilder:
        """Set every column of matched rows to the source's column of the same name."""
        return self._add("matched", "update", condition, None, all_columns=True)

    def whenMatchedDelete(self, condition: Column | str | None = None) -> QbeastMergeBuilder:  # noqa: N802
        """Delete matched rows (where ``condition``, if given)."""
        return self._add("matched", "delete", condition, None)

    def whenNotMatchedInsert(  # noqa: N802
        self, condition: Column | str | None = None, values: Mapping[str, Any] | None = None
    ) -> QbeastMergeBuilder:
        """Insert source rows no target row matches, with ``values`` (others NULL)."""
        return self._add("notMatched", "insert", condition, values)

    def whenNotMatchedInsertAll(  # noqa: N802
        self, condition: Column | str | None = None
    ) -> QbeastMergeBuilder:
        """Insert unmatched source rows, every column from the source's of the same name."""
        return self._add("notMatched", "insert", condition, None, all_columns=True)

    def whenNotMatchedBySourceUpdate(  # noqa: N802
        self, condition: Column | str | None = None, set: Mapping[str, Any] | None = None
    ) -> QbeastMergeBuilder:
        """Update target rows no source row matches."""
        return self._add("notMatchedBySource", "update", condition, set)

    def whenNotMatchedBySourceDelete(  # noqa: N802
        self, condition: Column | str | None = None
    ) -> QbeastMergeBuilder:
        """Delete target rows no source row matches."""
        return self._add("notMatchedBySource", "delete", condition, None)

    def execute(self) -> MergeResult:
        """Run the merge in one commit.

        Raises:
            InvalidOptionError: no clause, an unknown column, a source without a column an
                ``...All`` clause needs.
            UnsupportedOperationError: several source rows match one target row and a
                MATCHED clause exists; a table with Delta partition columns other than a
                time partitioning's.
            CommitConflictError: a concurrent commit changed a file the merge rewrites.
        """
        if not self._clauses:
            raise InvalidOptionError(
                "merge needs at least one clause: whenMatchedUpdate(...), "
                "whenNotMatchedInsertAll(), ..."
            )
        return _execute(self)


def _values_of(builder: QbeastMergeBuilder, clause: _Clause) -> dict[str, Column]:
    """Clause values per table column (cast to its type); insert: NULL where not given."""
    from pyspark.sql import functions as F

    from qbeast_connect.planning.predicate import quote_identifier
    from qbeast_connect.row_changes import computed_column, refuse_computed

    table = builder._table
    # the writer computes a time partition column: ...All leaves it out
    fields = [f for f in table.schema.fields if computed_column(table, f.name) is None]
    by_lower = {f.name.lower(): f for f in table.schema.fields}
    source_columns = {c.lower(): c for c in builder._source.columns}
    out: dict[str, Column] = {}
    if clause.values is None:  # ...All: every column from the source
        missing = [f.name for f in fields if f.name.lower() not in source_columns]
        if missing:
            raise InvalidOptionError(
                f"{clause.kind} {clause.action}All needs source columns {missing}, which the "
                f"source does not have (its columns: {builder._source.columns}); name the "
                "values instead"
            )
        for f in fields:
            name = quote_identifier(source_columns[f.name.lower()])
            ref = f"{quote_identifier(builder._source_alias)}.{name}"
            out[f.name] = F.col(ref).cast(f.dataType)
        return out
    for name, value in clause.values.items():
        field = by_lower.get(name.lower())
        if field is None:
            raise InvalidOptionError(
                f"merge sets column {name!r}, which the table does not have; its columns are "
                f"{[f.name for f in fields]}"
            )
        refuse_computed(table, field.name, "merge")
        out[field.name] = value.cast(field.dataType)
    if clause.action == "insert":
        for f in fields:
            out.setdefault(f.name, F.lit(None).cast(f.dataType))
    return out


def _execute(builder: QbeastMergeBuilder) -> MergeResult:
    from pyspark.sql import functions as F

    from qbeast_connect.planning.predicate import quote_identifier
    from qbeast_connect.row_changes import check_row_change_table, writes_vectors
    from qbeast_connect.spark.files import rows_with_file, rows_with_positions, table_file
    from qbeast_connect.spark.write_input import freeze, release

    table = builder._table
    check_row_change_table(table, "MERGE")
    fields = table.schema.fields
    adds = {str(a.get("path")): a for a in table._state.adds}
    paths = sorted(adds)
    before_skipping = len(paths)
    bounds = _target_bounds(builder)
    if bounds == _NO_TARGET_ROW:
        paths = []
    elif bounds is not None:
        paths = sorted(table._candidate_paths(bounds))
    files = [table_file(adds[p]) for p in paths]
    # with deletion vectors on, changed rows leave their files through vectors: each
    # target row carries its position
    vectors = writes_vectors(table._state) and bool(paths)
    tagged = None
    if vectors:
        located = rows_with_positions(
            table._spark, table.path, table.schema, files, table._state.configuration
        )
        if located is not None:
            tagged = (
                located[0]
                .withColumnRenamed("_qbeast_file", _FILE)
                .withColumnRenamed("_qbeast_row", _POSITION),
                located[1],
            )
        vectors = tagged is not None
    if not vectors:
        tagged = rows_with_file(table._spark, table.path, table.schema, files, _FILE)
    log_path: Callable[[str | None], str | None]
    if tagged is None:  # rows not told apart by file: every file is rewritten if any changes
        frame = (
            table._read_files(paths) if paths else table._spark.createDataFrame([], table.schema)
        ).withColumn(_FILE, F.lit(None).cast("string"))
        log_path = _no_file
    else:
        frame, log_path = tagged
    target = frame.withColumn(_ROW, F.monotonically_increasing_id())
    target = target.withColumn(_T, F.lit(True)).alias(builder._target_alias)
    source = builder._source.withColumn(_S, F.lit(True)).alias(builder._source_alias)
    joined = target.join(source, on=builder._condition, how="full_outer")
    present_t = F.col(f"{quote_identifier(builder._target_alias)}.{_T}").isNotNull()
    present_s = F.col(f"{quote_identifier(builder._source_alias)}.{_S}").isNotNull()
    groups = {
        "matched": present_t & present_s,
        "notMatchedBySource": present_t & ~present_s,
        "notMatched": ~present_t & present_s,
    }
    # the first clause of its kind wins: later ones apply only where earlier ones do not
    action = _first_clause_wins(builder, groups)
    rows = joined.withColumn(_ACTION, action)
    target_file = F.col(f"{quote_identifier(builder._target_alias)}.{_FILE}")
    target_row = F.col(f"{quote_identifier(builder._target_alias)}.{_ROW}")

    kinds = {str(i): (c.kind, c.action) for i, c in enumerate(builder._clauses)}
    # each row's output columns: the clause's values where its action sets them
    values = {
        index: _values_of(builder, clause)
        for index, clause in enumerate(builder._clauses)
        if clause.action in ("update", "insert")
    }
    outputs = []
    for f in fields:
        column = F.col(f"{quote_identifier(builder._target_alias)}.{quote_identifier(f.name)}")
        for index in sorted(values):
            value = values[index].get(f.name)
            if value is not None:
                column = F.when(F.col(_ACTION) == str(index), value).otherwise(column)
        outputs.append(column.alias(f.name))
    position = F.col(f"{quote_identifier(builder._target_alias)}.{_POSITION}")
    flat = rows.select(
        *outputs,
        F.col(_ACTION),
        groups["matched"].alias(_MATCHED),
        present_t.alias(_HAS_TARGET),
        target_row.alias(_ROW),
        target_file.alias(_FILE),
        (position if vectors else F.lit(None).cast("long")).alias(_POSITION),
    )
    # with vectors only the pairs that matched or that a clause acts on are needed; a
    # rewrite also needs the rows it keeps of the files it rewrites
    needed = F.col(_ACTION) != "skip"
    if vectors:
        needed = F.col(_MATCHED) | F.col(_ACTION).isin(list(kinds))
    # the join computed once, kept on the executors: every later step reads this copy
    joined_once = freeze(flat.where(needed))
    try:
        return _merge_rows(
            builder,
            joined_once,
            kinds,
            vectors,
            tagged is not None,
            paths,
            log_path,
            before_skipping,
        )
    finally:
        release(joined_once)


def _merge_rows(
    builder: QbeastMergeBuilder,
    rows: DataFrame,
    kinds: Mapping[str, tuple[str, str]],
    vectors: bool,
    by_file: bool,
    paths: list[str],
    log_path: Callable[[str | None], str | None],
    before_skipping: int,
) -> MergeResult:
    """The merge from its join, one flat row per pair or unmatched row (:func:`_execute`):
    the output columns for the row's action, the action, whether the pair matched, whether
    it has a target row, and the target row's id, file and position. Changed target rows
    leave their files through deletion vectors (``vectors``) or the files holding them are
    rewritten (``by_file``: rows are told apart by file; else every file is), in one
    ``MERGE`` commit with the written rows."""
    from pyspark.sql import functions as F

    from qbeast_connect.plan_codec import encode_row_positions
    from qbeast_connect.planning.predicate import quote_identifier
    from qbeast_connect.row_changes import rewrite_as_append

    table = builder._table
    _refuse_repeated_matches(builder, rows.where(F.col(_MATCHED)), F.col(_ROW))
    updated, deleted, inserted = _action_counts(rows, kinds)
    if not (updated or deleted or inserted):
        return MergeResult(None)
    changed = [a for a, (_k, act) in kinds.items() if act in ("update", "delete")]
    updates = [a for a, (_k, act) in kinds.items() if act == "update"]
    inserts = [a for a, (_k, act) in kinds.items() if act == "insert"]
    fields = [F.col(quote_identifier(f.name)) for f in table.schema.fields]
    skipping = {
        "num_target_files_before_skipping": before_skipping,
        "num_target_files_after_skipping": len(paths),
        "num_target_rows_updated": updated,
        "num_target_rows_deleted": deleted,
        "num_target_rows_inserted": inserted,
    }
    text = builder._condition_text
    if vectors:
        positions: dict[str, list[int]] = {}
        if changed:
            hit = rows.where(F.col(_ACTION).isin(changed))
            grouped = hit.groupBy(_FILE).agg(F.collect_list(_POSITION).alias("rows"))
            for row in grouped.collect():
                path = log_path(row[_FILE])
                if path is None:
                    raise UnsupportedOperationError(
                        f"MERGE: a changed row's file {row[_FILE]!r} is not one of the "
                        "table's files"
                    )
                positions.setdefault(path, []).extend(int(r) for r in row["rows"])
        encoded = {p: encode_row_positions(r) for p, r in positions.items()}
        new_rows = rows.where(F.col(_ACTION).isin(updates + inserts)).select(*fields)
        result = rewrite_as_append(table, new_rows, sorted(encoded), "MERGE", text, None, encoded)
        if result.version is None:
            return MergeResult(None)
        return MergeResult(
            result.version,
            num_added_files=result.num_files,
            num_deletion_vectors=len(encoded),
            **skipping,
        )
    touched: list[str] = []
    in_touched = F.lit(False)
    if changed:
        found = rows.where(F.col(_ACTION).isin(changed)).select(F.col(_FILE).alias("f")).distinct()
        names = {r["f"] for r in found.collect()}
        mapped = {log_path(n) for n in names}
        if not by_file or None in mapped:
            touched, in_touched = paths, F.col(_HAS_TARGET)  # every file
        else:
            touched = sorted(str(p) for p in mapped)
            in_touched = F.col(_FILE).isin(sorted(str(n) for n in names))
    # the rows of the touched files (changed, or as they were) and the inserted rows
    keep = (in_touched & F.col(_ACTION).isin([*updates, "keep"])) | F.col(_ACTION).isin(inserts)
    result = rewrite_as_append(
        table, rows.where(keep).select(*fields), touched, "MERGE", text, None
    )
    if result.version is None:
        return MergeResult(None)
    return MergeResult(
        result.version,
        num_target_rows_copied=max(0, result.num_rows - updated - inserted),
        num_removed_files=len(touched),
        num_added_files=result.num_files,
        **skipping,
    )


def _refuse_repeated_matches(builder: QbeastMergeBuilder, matched: DataFrame, row: Column) -> None:
    """Refuse a merge where several source rows match one target row (``matched``: the
    matched pairs, ``row``: the target row's id), as Delta does, when a clause acts on
    matched rows."""
    if not any(c.kind == "matched" for c in builder._clauses):
        return
    if matched.groupBy(row).count().where("count > 1").limit(1).count():
        raise UnsupportedOperationError(
            "MERGE: several source rows match the same target row, so which one "
            "updates or deletes it is ambiguous (Delta refuses it too); keep one source "
            "row per target row (e.g. deduplicate the source on the join key)"
        )


def _action_counts(rows: DataFrame, kinds: Mapping[str, tuple[str, str]]) -> tuple[int, int, int]:
    """Rows updated, deleted and inserted, from the rows' actions."""
    counts = {
        str(r[_ACTION]): int(r["count"])
        for r in rows.groupBy(_ACTION).count().collect()
        if r[_ACTION] is not None
    }
    done = {"update": 0, "delete": 0, "insert": 0}
    for action, n in counts.items():
        kind = kinds.get(action)
        if kind is not None:
            done[kind[1]] += n
    return done["update"], done["delete"], done["insert"]


_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_EQUALITY = re.compile(rf"^\s*({_IDENT})\s*\.\s*({_IDENT})\s*=\s*({_IDENT})\s*\.\s*({_IDENT})\s*$")
#: Column types whose source bounds are compared with the target's exactly as the join's
#: equality compares them (no float -0.0/NaN, no time zone).
_BOUNDED_TYPES = ("byte", "short", "integer", "long", "decimal", "string", "date")
#: :func:`_target_bounds` when no target row can match any source row.
_NO_TARGET_ROW = "FALSE"


def _unquote(identifier: str) -> str:
    if identifier.startswith("`"):
        return identifier[1:-1].replace("``", "`")
    return identifier


def _conjuncts(text: str) -> list[str] | None:
    """``text`` split at its top-level ``AND``s (None when it holds quotes, ``OR``s or
    anything this split could misread)."""
    if any(q in text for q in ("'", '"')) or re.search(r"\bor\b", text, re.IGNORECASE):
        return None
    if re.search(r"`[^`]*\band\b[^`]*`", text, re.IGNORECASE):
        return None
    if "(" in text or ")" in text:
        return None
    return re.split(r"\s+and\s+", text, flags=re.IGNORECASE)


def _target_bounds(builder: QbeastMergeBuilder) -> str | None:
    """A filter on the target that every row a source row can match satisfies, so the
    files it rules out are not read (Delta's file skipping for MERGE).

    From each top-level ``target.col = source.col`` of the condition (a condition given as
    SQL text; same column types, of those in :data:`_BOUNDED_TYPES`), the source's smallest
    and largest values bound the target column: a target row outside them (or NULL) can
    equal no source row. None when nothing bounds the target, or when a NOT MATCHED BY
    SOURCE clause needs every target row.
    """
    from pyspark.sql import functions as F

    from qbeast_connect.planning.predicate import quote_identifier
    from qbeast_connect.planning.predicate.sql_render import literal_sql

    if any(c.kind == "notMatchedBySource" for c in builder._clauses):
        return None
    text = builder._condition_sql
    if text is None:
        return None
    parts = _conjuncts(text)
    if parts is None:
        return None
    target_types = {f.name.lower(): f for f in builder._table.schema.fields}
    source_types = {f.name.lower(): f for f in builder._source.schema.fields}
    aliases = (builder._target_alias.lower(), builder._source_alias.lower())
    pairs: dict[str, str] = {}
    for part in parts:
        found = _EQUALITY.match(part)
        if found is None:
            continue
        a, ca, b, cb = (_unquote(g) for g in found.groups())
        sides = {a.lower(): ca, b.lower(): cb}
        if set(sides) != set(aliases) or a.lower() == b.lower():
            continue
        t = target_types.get(sides[aliases[0]].lower())
        src = source_types.get(sides[aliases[1]].lower())
        if t is None or src is None or t.dataType != src.dataType:
            continue
        kind = t.dataType.typeName()
        if kind not in _BOUNDED_TYPES or (kind == "string" and t.dataType.simpleString() != kind):
            continue  # a collated string's equality is not its bytes' order
        pairs[t.name] = src.name
    if not pairs:
        return None
    aggregates = []
    for i, source_column in enumerate(pairs.values()):
        column = F.col(quote_identifier(source_column))
        aggregates += [F.min(column).alias(f"lo{i}"), F.max(column).alias(f"hi{i}")]
    row = builder._source.agg(*aggregates).collect()[0]
    leaves = []
    for i, target_column in enumerate(pairs):
        lo, hi = row[f"lo{i}"], row[f"hi{i}"]
        if lo is None or hi is None:  # no non-NULL source key: no target row can match
            return _NO_TARGET_ROW
        name = quote_identifier(target_column)
        leaves.append(f"{name} >= {literal_sql(lo)} AND {name} <= {literal_sql(hi)}")
    return " AND ".join(leaves)


def _no_file(name: str | None) -> str | None:
    return None


def _first_clause_wins(builder: QbeastMergeBuilder, groups: Mapping[str, Column]) -> Column:
    """The action of a row: the index of the first clause of its group whose condition
    is TRUE, else ``"keep"`` (a target row) or ``"skip"`` (an unmatched source row)."""
    from pyspark.sql import functions as F

    present_t = groups["matched"] | groups["notMatchedBySource"]
    action: Column = F.when(present_t, F.lit("keep")).otherwise(F.lit("skip"))
    for index in reversed(range(len(builder._clauses))):
        clause = builder._clauses[index]
        applies = groups[clause.kind]
        if clause.condition is not None:
            applies = applies & F.coalesce(clause.condition, F.lit(False))
        action = F.when(applies, F.lit(str(index))).otherwise(action)
    return action
