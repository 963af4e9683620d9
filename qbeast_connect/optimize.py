"""What ``QbeastTable.optimize`` rewrites: the choice of files, then the jobs of
:mod:`qbeast_connect.spark.operations`.

The functions take the table as a :class:`OptimizedTable` (what they need of a
``QbeastTable`` at its latest version), so this module does not import ``table``, which
imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model.weight import fraction_from_weight
from qbeast_connect.options import WriteOptions, parse_write_options
from qbeast_connect.spark.operations import OptimizeResult, index_staging, rewrite_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.connect.session import SparkSession

    from qbeast_connect.model.revision import Revision
    from qbeast_connect.model.snapshot import QbeastSnapshot
    from qbeast_connect.spark.snapshot import TableState

__all__ = ["OptimizedTable", "merge_revisions", "run_optimize"]


class OptimizedTable(Protocol):
    """What the optimize helpers use of a ``QbeastTable``."""

    _spark: SparkSession
    _state: TableState

    @property
    def path(self) -> str: ...

    @property
    def snapshot(self) -> QbeastSnapshot: ...

    @property
    def latestRevision(self) -> Revision: ...  # noqa: N802 - QbeastTable's name

    def version(self) -> int: ...

    def refresh(self) -> Any: ...

    def lastRevisionID(self) -> int: ...  # noqa: N802

    def revision(self, revisionID: int | None = None) -> Revision: ...  # noqa: N803

    def _require_qbeast(self) -> None: ...

    def _read_files(self, paths: Sequence[str]) -> DataFrame: ...


def run_optimize(
    table: OptimizedTable,
    revisionID: int | None = None,  # noqa: N803
    fraction: float = 1.0,
    files: Sequence[str] | None = None,
    options: Mapping[str, str] | None = None,
) -> OptimizeResult:
    """Pick the files to rewrite on ``table`` (at its latest version) and rewrite them."""
    opts = parse_write_options(dict(options or {}))
    snapshot = table.snapshot
    if files is not None:
        return _optimize_paths(table, [str(f) for f in files], opts)
    rid = table.lastRevisionID() if revisionID is None else revisionID
    if rid == 0 or (rid in snapshot.revisions and snapshot.revisions[rid].is_staging):
        return _optimize_staging(table, fraction, opts)
    revision = table.revision(rid)
    chosen = [
        f.path
        for f in snapshot.files_of(revision.revision_id)
        if fraction >= 1.0 or any(fraction_from_weight(b.min_weight) <= fraction for b in f.blocks)
    ]
    return _rewrite(table, revision.revision_id, chosen, opts)


def _optimize_paths(table: OptimizedTable, paths: list[str], opts: WriteOptions) -> OptimizeResult:
    snapshot = table.snapshot
    by_path = {f.path: f for f in snapshot.files}
    unknown = [p for p in paths if p not in by_path]
    if unknown:
        raise InvalidOptionError(
            f"files {unknown[:5]} are not live files of the table at version {table.version()}"
        )
    results = []
    staging = [p for p in paths if by_path[p].revision_id == 0]
    if staging:
        results.append(_index_staging(table, staging, opts))
    revisions = sorted({by_path[p].revision_id for p in paths} - {0})
    for rid in revisions:
        table = table.refresh() if results else table
        chosen = [p for p in paths if by_path[p].revision_id == rid]
        results.append(_rewrite(table, rid, chosen, opts))
    if not results:
        return OptimizeResult(None, table.lastRevisionID(), 0, 0, 0)
    last = results[-1]
    return OptimizeResult(
        last.version,
        last.revision_id,
        sum(r.removed_files for r in results),
        sum(r.added_files for r in results),
        sum(r.rows for r in results),
    )


def _rewrite(
    table: OptimizedTable, revision_id: int, paths: list[str], opts: WriteOptions
) -> OptimizeResult:
    if not paths:
        return OptimizeResult(None, revision_id, 0, 0, 0)
    return rewrite_files(
        table._spark,
        table._read_files(paths),
        table.path,
        table.version(),
        table.snapshot,
        revision_id,
        paths,
        opts,
        table._state.adds,
    )


def _optimize_staging(table: OptimizedTable, fraction: float, opts: WriteOptions) -> OptimizeResult:
    staging = sorted(table.snapshot.staging_files(), key=lambda f: f.modification_time)
    if not staging:
        return OptimizeResult(None, 0, 0, 0, 0)
    budget = fraction * sum(f.size for f in staging)
    chosen: list[str] = []
    used = 0
    for f in staging:
        if chosen and used + f.size > budget:
            break
        chosen.append(f.path)
        used += f.size
    return _index_staging(table, chosen, opts)


def merge_revisions(
    table: OptimizedTable, request: object, options: Mapping[str, str] | None
) -> OptimizeResult:
    """Re-index the rows of the revisions ``request`` names into one new revision."""
    import random
    import time

    from qbeast_connect.model.revision_merge import merged_revision, revisions_to_merge

    opts = parse_write_options(dict(options or {}))
    table._require_qbeast()
    snapshot = table.snapshot
    ids = revisions_to_merge(snapshot, request)
    if not ids:
        return OptimizeResult(None, table.lastRevisionID(), 0, 0, 0)
    latest = table.latestRevision
    target = merged_revision(
        [snapshot.revisions[r] for r in ids],
        latest,
        table.path,
        int(time.time() * 1000),
        random.Random(),
    )
    paths = [f.path for r in ids for f in snapshot.files_of(r)]
    return index_staging(table._read_files(paths), table.path, latest, paths, opts, target)


def _index_staging(table: OptimizedTable, paths: list[str], opts: WriteOptions) -> OptimizeResult:
    latest = table.latestRevision
    return index_staging(table._read_files(paths), table.path, latest, paths, opts)
