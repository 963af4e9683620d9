"""Row-level changes that keep the index: ``QbeastTable.delete`` and ``update``.

One mechanism for both. The condition prunes the files as a read's filter does (the index
and the files' statistics); one Spark job counts, file by file, the rows it is TRUE for;
the files holding such rows are read (deletion vectors applied), their rows changed —
dropped, or given the new values — and written back in the commit that removes the old
files:

* a row keeps its weight (the hash of its indexed values), so ``sample(f)`` keeps
  returning exactly the surviving rows below f's weight; an updated row whose indexed
  values change gets the weight and the cube of its new values;
* a delete, and an update that sets no indexed or time-partitioning column, write the
  rows back **into their index** (optimize's rewrite: each row to its cube, the files in
  their weight bands), when the files they touch are all of one revision; otherwise the
  rows are written **as an append writes rows**: they join the latest revision's tree,
  or a new revision when an updated value lies outside its space, as appended rows would;
* the commit is a Delta ``DELETE``/``UPDATE`` (``remove`` + ``add`` with
  ``dataChange=true``, the condition in ``operationParameters.predicate``); it reads only
  the files it removes, so a concurrent append does not conflict with it, while a
  concurrent change of one of its files does (``CommitConflictError``, nothing written).

On a table with ``delta.enableDeletionVectors=true`` (and the ``deletionVectors``
feature) the matched rows leave their files through deletion vectors instead, as in Delta:
one Spark job collects their positions (``_metadata.row_index``) and the commit adds to
each file's vector; a delete writes no data file, an update appends only the updated rows.
Where positions cannot be read (partition values, a reader other than Spark's), the files
are rewritten as above.

A row is deleted or updated where the condition is TRUE; where it is FALSE or NULL the row
stays as it is, as in Delta and SQL.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedOperationError
from qbeast_connect.options import parse_write_options
from qbeast_connect.rules.time_partitioning import partitioning_of

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.connect.session import SparkSession
    from pyspark.sql.types import StructType

    from qbeast_connect.model.revision import Revision
    from qbeast_connect.options import WriteOptions
    from qbeast_connect.spark.snapshot import TableState

__all__ = [
    "ChangedTable",
    "RowChangeResult",
    "check_row_change_table",
    "computed_column",
    "delete_rows",
    "rewrite_as_append",
    "update_rows",
    "writes_vectors",
]


class ChangedTable(Protocol):
    """What the row-level changes use of a ``QbeastTable`` (at its latest version)."""

    _spark: SparkSession
    _state: TableState

    @property
    def path(self) -> str: ...

    @property
    def schema(self) -> StructType: ...

    @property
    def latestRevision(self) -> Revision: ...  # noqa: N802 - QbeastTable's name

    def _require_qbeast(self) -> None: ...

    def _read_files(self, paths: Sequence[str]) -> DataFrame: ...

    def _candidate_paths(self, where: Column | str | None) -> list[str]: ...


@dataclass(frozen=True)
class RowChangeResult:
    """What a ``delete``/``update`` did.

    Attributes:
        version: the committed version; None when no row matched (nothing committed).
        num_deleted_rows: rows deleted (``delete``).
        num_updated_rows: rows updated (``update``).
        num_copied_rows: rows of the rewritten files that did not match, written again.
        num_removed_files: files removed.
        num_added_files: files added.
        revision_id: the revision the rewritten rows were indexed with.
        num_deletion_vectors: files whose changed rows were marked in a new deletion
            vector instead of rewritten (tables with ``delta.enableDeletionVectors``; an
            update counts a file left without a live row, which is removed, here too).
    """

    version: int | None
    num_deleted_rows: int = 0
    num_updated_rows: int = 0
    num_copied_rows: int = 0
    num_removed_files: int = 0
    num_added_files: int = 0
    revision_id: int | None = None
    num_deletion_vectors: int = 0


def _condition(condition: Column | str | None) -> tuple[Column, str]:
    """The condition as a Column, and its text for ``operationParameters``."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if condition is None:
        return F.lit(True), "true"
    if isinstance(condition, str):
        if not condition.strip():
            raise InvalidOptionError(
                'the condition is empty: pass SQL text such as "id = 5", a Column, or '
                "None for every row"
            )
        return F.expr(condition), condition
    if isinstance(condition, Column):
        return condition, str(condition)
    raise InvalidOptionError(
        f"condition must be SQL text, a Column or None, not {type(condition).__name__}"
    )


def check_row_change_table(table: ChangedTable, operation: str) -> None:
    """Refuse a row-level change the table cannot take: no qbeast metadata, or Delta
    partition columns other than a time partitioning's (a time-partitioned table's rows are
    written again as an append writes them: each lands in the partition its time names)."""
    table._require_qbeast()
    state = table._state
    partitioning = partitioning_of(state.configuration)
    columns = list(state.metadata.get("partitionColumns") or [])
    if columns and (partitioning is None or columns != [partitioning.column]):
        raise UnsupportedOperationError(
            f"{operation} on a table partitioned by {columns} is not supported; use Delta's own "
            f"{operation} (qc.session(delta=True), then {operation} ... delta.`<path>`) and "
            "optimize(0) afterwards to index the files it writes"
        )


def computed_column(table: ChangedTable, name: str) -> str | None:
    """The column a change may not set because the writer computes it (a time partitioning's
    partition column, from the time column), matched to ``name`` case-insensitively."""
    partitioning = partitioning_of(table._state.configuration)
    if partitioning is not None and partitioning.column.lower() == name.lower():
        return partitioning.column
    return None


def refuse_computed(table: ChangedTable, name: str, operation: str) -> None:
    """Raise when ``operation`` sets a column the writer computes."""
    column = computed_column(table, name)
    if column is not None:
        partitioning = partitioning_of(table._state.configuration)
        assert partitioning is not None
        raise InvalidOptionError(
            f"{operation} sets column {column!r}, which partitionBy="
            f"{partitioning.text!r} computes from {partitioning.time_column!r}; set "
            f"{partitioning.time_column!r} instead and the row moves to its partition"
        )


def _touched(
    table: ChangedTable, where: Column | str | None, condition: Column
) -> tuple[list[str], int]:
    """The files holding a row ``condition`` is TRUE for, and how many such rows."""
    from qbeast_connect.spark.files import matching_rows_per_file, table_file

    candidates = table._candidate_paths(where)
    if not candidates:
        return [], 0
    adds = {str(a.get("path")): a for a in table._state.adds}
    files = [table_file(adds[p]) for p in candidates]
    per_file = matching_rows_per_file(table._spark, table.path, table.schema, files, condition)
    if per_file is None:
        # counted over all candidates at once: each is rewritten when any row matches
        matched = table._read_files(candidates).where(condition).count()
        return (list(candidates) if matched else []), matched
    touched = [p for p in candidates if per_file.get(p, 0) > 0]
    return touched, sum(per_file.values())


def _change_options(table: ChangedTable, options: Mapping[str, str] | None) -> WriteOptions:
    """The write options of a row change: the table's own index with the user's others."""
    latest = table.latestRevision
    raw: dict[str, Any] = {
        "columnsToIndex": ",".join(latest.column_names),
        "cubeSize": latest.desired_cube_size,
    }
    for key, value in (options or {}).items():
        if key in ("columnsToIndex", "cubeSize"):
            raise InvalidOptionError(
                f"option {key} is the table's own ({raw[key]}) for a row-level change"
            )
        raw[key] = value
    return parse_write_options(raw)


def _txn_done(state: TableState, options: WriteOptions, operation: str) -> bool:
    """Whether the change's ``txnAppId`` already committed its ``txnVersion`` (then it is
    skipped with a warning, as a write is)."""
    app, version = options.txn_app_id, options.txn_version
    if app is None or version is None:
        return False
    done = state.txns.get(app)
    if done is None or done < version:
        return False
    warnings.warn(
        f"skipping {operation}: txnAppId {app!r} already committed txnVersion {done} >= {version}",
        UserWarning,
        stacklevel=5,
    )
    return True


def rewrite_as_append(
    table: ChangedTable,
    rows: DataFrame,
    touched: list[str],
    operation: str,
    predicate: str,
    options: Mapping[str, str] | None,
    vector_rows: Mapping[str, str] | None = None,
) -> Any:
    """Write ``rows`` as an append and remove ``touched`` in one commit; with
    ``vector_rows`` (path -> encoded positions), ``touched`` stay and those rows of them
    are marked deleted in vectors instead."""
    from qbeast_connect.spark.write import _Writer

    adds = {str(a.get("path")): a for a in table._state.adds}
    return _Writer(
        rows,
        table.path,
        "append",
        _change_options(table, options),
        remove_paths=() if vector_rows else tuple(touched),
        data_change=True,
        operation=operation,
        operation_parameters={"predicate": json.dumps([predicate])},
        expected_files={p: adds[p].get("deletionVector") for p in touched},
        vector_rows=vector_rows,
    ).run()


def delete_rows(
    table: ChangedTable,
    condition: Column | str | None = None,
    options: Mapping[str, str] | None = None,
) -> RowChangeResult:
    """Delete the rows ``condition`` is TRUE for (every row when None), keeping the index.

    Raises:
        InvalidOptionError: an empty or mistyped condition.
        UnsupportedOperationError: a table with Delta partition columns other than a time
            partitioning's.
        CommitConflictError: a concurrent commit changed a file this delete rewrites.
    """
    from pyspark.sql import functions as F

    check_row_change_table(table, "DELETE")
    cond, text = _condition(condition)
    if writes_vectors(table._state):
        marked = _delete_in_vectors(table, condition, cond, text, options)
        if marked is not None:
            return marked
    touched, matched = _touched(table, condition, cond)
    if not touched or not matched:
        return RowChangeResult(None)
    survivors = table._read_files(touched).where(~F.coalesce(cond, F.lit(False)))
    done = _rewrite(table, survivors, touched, "DELETE", text, options)
    if done is None:
        return RowChangeResult(None)
    version, revision_id, written, added = done
    return RowChangeResult(
        version,
        num_deleted_rows=matched,
        num_copied_rows=written,
        num_removed_files=len(touched),
        num_added_files=added,
        revision_id=revision_id,
    )


def _rewrite(
    table: ChangedTable,
    rows: DataFrame,
    touched: list[str],
    operation: str,
    predicate: str,
    options: Mapping[str, str] | None,
    changed_columns: Sequence[str] = (),
) -> tuple[int, int | None, int, int] | None:
    """Replace ``touched`` with ``rows`` (what the change leaves of them) in one commit of
    ``operation``: ``(version, revision, rows written, files added)``, or None when nothing
    was committed (the ``txnAppId``/``txnVersion`` committed already).

    When every row keeps its point and weight (a delete's survivors; an update that sets
    none of the ``changed_columns`` that place a row: indexed columns, the time
    partitioning's) and ``touched`` are files of one revision, the rows go back **into
    their index**: each to its cube, the files in their weight bands
    (:func:`~qbeast_connect.spark.operations.rewrite_files`, optimize's rewrite). Otherwise
    (staging files, files of several revisions, each with its own space, rows that move)
    they are written **as an append**, which lays them out as new rows."""
    from qbeast_connect.spark.operations import rewrite_files

    state = table._state
    snapshot = state.qbeast()
    revision_of = {f.path: f.revision_id for f in snapshot.files}
    revisions = {revision_of.get(p, 0) for p in touched}
    placing: set[str] = set()
    if len(revisions) == 1 and 0 not in revisions:
        placing = {c.lower() for c in snapshot.revisions[min(revisions)].column_names}
        partitioning = partitioning_of(state.configuration)
        if partitioning is not None:
            placing |= {partitioning.time_column.lower(), partitioning.column.lower()}
    if not placing or placing & {c.lower() for c in changed_columns}:
        result = rewrite_as_append(table, rows, touched, operation, predicate, options)
        if result.version is None:
            return None
        return result.version, result.revision_id, result.num_rows, result.num_files
    opts = _change_options(table, options)
    if _txn_done(state, opts, operation):
        return None
    kept = rewrite_files(
        table._spark,
        rows,
        table.path,
        state.version,
        snapshot,
        min(revisions),
        touched,
        opts,
        state.adds,
        change=(operation, {"predicate": json.dumps([predicate])}),
    )
    if kept.version is None:
        return None
    return kept.version, kept.revision_id, kept.rows, kept.added_files


def writes_vectors(state: TableState) -> bool:
    """Whether row changes (delete, update, merge) mark rows in deletion vectors instead of
    rewriting files (Delta's rule,
    :func:`~qbeast_connect.rules.table_properties.deletion_vectors_on`)."""
    from qbeast_connect.rules.table_properties import deletion_vectors_on

    protocol = state.protocol
    return deletion_vectors_on(
        state.configuration, protocol.get("readerFeatures"), protocol.get("writerFeatures")
    )


def _vector_positions(
    table: ChangedTable, where: Column | str | None, condition: Column
) -> dict[str, str] | None:
    """The positions of the rows ``condition`` is TRUE for, encoded per log path, in the
    files the index cannot rule out for ``where`` (empty: no such row). None when the
    positions cannot be read (partition values, a reader other than Spark's)."""
    from qbeast_connect.plan_codec import encode_row_positions
    from qbeast_connect.spark.files import matching_row_indexes, table_file

    state = table._state
    candidates = table._candidate_paths(where)
    if not candidates:
        return {}
    adds = {str(a.get("path")): a for a in state.adds}
    files = [table_file(adds[p]) for p in candidates]
    positions = matching_row_indexes(
        table._spark, table.path, table.schema, files, condition, state.configuration
    )
    if positions is None:
        return None
    return {p: encode_row_positions(rows) for p, rows in positions.items()}


def _delete_in_vectors(
    table: ChangedTable,
    where: Column | str | None,
    condition: Column,
    text: str,
    options: Mapping[str, str] | None,
) -> RowChangeResult | None:
    """Delete by marking the matching rows in deletion vectors (no data file rewritten;
    :mod:`server_plugin.row_deletes` commits). None when the rows' positions cannot be read
    (partition values, a reader other than Spark's): the caller rewrites instead."""
    import uuid

    from qbeast_connect.spark.operations import run_command

    parsed = parse_write_options(
        {"columnsToIndex": ",".join(table.latestRevision.column_names), **dict(options or {})}
    )
    state = table._state
    app, app_version = parsed.txn_app_id, parsed.txn_version
    if _txn_done(state, parsed, "DELETE"):
        return RowChangeResult(None)  # this txn committed already
    positions = _vector_positions(table, where, condition)
    if positions is None:
        return None
    if not positions:
        return RowChangeResult(None)
    command: dict[str, Any] = {
        "command": "delete_vectors",
        "path": table.path,
        "readVersion": state.version,
        "predicate": text,
        "files": positions,
        "txnId": str(uuid.uuid4()),
        "txnAppId": app,
        "txnVersion": app_version,
        "userMetadata": parsed.user_metadata,
    }
    (result,) = run_command(table._spark, command)
    if result["version"] is None:
        return RowChangeResult(None)
    return RowChangeResult(
        int(result["version"]),
        num_deleted_rows=int(result["deletedRows"]),
        num_removed_files=int(result["removedFiles"]),
        num_deletion_vectors=int(result["vectorFiles"]),
    )


def update_rows(
    table: ChangedTable,
    condition: Column | str | None,
    assignments: Mapping[str, Column | str],
    options: Mapping[str, str] | None = None,
) -> RowChangeResult:
    """Set ``assignments`` (column -> SQL text or Column, computed from the row's old
    values and cast to the column's type) on the rows ``condition`` is TRUE for.

    Raises:
        InvalidOptionError: no assignment, a column the table does not have, an empty or
            mistyped condition or value.
        UnsupportedOperationError: a table with Delta partition columns other than a time
            partitioning's.
        CommitConflictError: a concurrent commit changed a file this update rewrites.
    """
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    from qbeast_connect.planning.predicate import quote_identifier

    check_row_change_table(table, "UPDATE")
    if not isinstance(assignments, Mapping) or not assignments:
        raise InvalidOptionError(
            'update needs set={column: value}, e.g. set={"price": "price * 1.1"}'
        )
    fields = {f.name.lower(): f for f in table.schema.fields}
    values: dict[str, Column] = {}
    for name, value in assignments.items():
        field = fields.get(str(name).lower())
        if field is None:
            raise InvalidOptionError(
                f"update sets column {name!r}, which the table does not have; its columns "
                f"are {[f.name for f in table.schema.fields]}"
            )
        if field.name in values:
            raise InvalidOptionError(f"update sets column {field.name!r} twice")
        refuse_computed(table, field.name, "update")
        if isinstance(value, str):
            column = F.expr(value)
        elif isinstance(value, Column):
            column = value
        else:
            raise InvalidOptionError(
                f"the value of {name!r} must be SQL text or a Column, not "
                f'{type(value).__name__} (write a literal as SQL text: "\'a\'" or "5")'
            )
        values[field.name] = column.cast(field.dataType)
    cond, text = _condition(condition)
    hit = F.coalesce(cond, F.lit(False))
    columns = [
        (
            F.when(hit, values[f.name]).otherwise(F.col(quote_identifier(f.name)))
            if f.name in values
            else F.col(quote_identifier(f.name))
        ).alias(f.name)
        for f in table.schema.fields
    ]
    positions = _vector_positions(table, condition, cond) if writes_vectors(table._state) else None
    if positions is not None:
        # Delta's UPDATE on a table with vectors: the old rows leave their files through
        # vectors, the updated rows are appended
        if not positions:
            return RowChangeResult(None)
        touched = list(positions)
        rows = table._read_files(touched).where(hit).select(*columns)
        result = rewrite_as_append(table, rows, touched, "UPDATE", text, options, positions)
        if result.version is None:
            return RowChangeResult(None)
        return RowChangeResult(
            result.version,
            num_updated_rows=result.num_rows,
            num_added_files=result.num_files,
            revision_id=result.revision_id,
            num_deletion_vectors=len(touched),
        )
    touched, matched = _touched(table, condition, cond)
    if not touched or not matched:
        return RowChangeResult(None)
    rows = table._read_files(touched).select(*columns)
    done = _rewrite(table, rows, touched, "UPDATE", text, options, list(values))
    if done is None:
        return RowChangeResult(None)
    version, revision_id, written, added = done
    return RowChangeResult(
        version,
        num_updated_rows=matched,
        num_copied_rows=max(0, written - matched),
        num_removed_files=len(touched),
        num_added_files=added,
        revision_id=revision_id,
    )
