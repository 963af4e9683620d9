"""Which files each step of :meth:`QbeastTable.approx` opens, planned from the log alone.

The planner asks the file planner (:func:`qbeast_connect.planning.file_planner.plan_files`)
for the files of one weight band and widens the band to what those files hold
(:func:`qbeast_connect.approx.bands.covered_fraction`). Everything it needs is in the
snapshot: the files that may match the filter (planned once per ``approx`` call), their row
counts, and their blocks' weights. No step costs a Spark query before the one that reads
its band.

The first band of an online aggregation is sized so that, in the common case, it is also
the last one (:meth:`BandPlanner.first_band`): it is the smallest power-of-two sample whose
files hold the rows :func:`qbeast_connect.approx.result.rows_needed` asks for. Because a
file is read whole, the band then takes every row those files hold below the next unopened
file's smallest weight, at no extra byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from qbeast_connect.approx.bands import covered_fraction
from qbeast_connect.approx.estimators import UnreadExtremes
from qbeast_connect.approx.result import first_fraction
from qbeast_connect.model.block import IndexFile
from qbeast_connect.model.weight import weight_from_fraction
from qbeast_connect.planning.file_planner import ScanPlan, numeric_range

__all__ = ["Band", "BandPlanner", "PlanFiles"]

#: ``(fraction, from_fraction) -> the files a read of that sample (or band) opens``;
#: ``(None, None)`` plans the files that may hold a row matching the filter, whatever its
#: weight. The caller binds the filter, the table's statistics and its time zone once.
PlanFiles = Callable[[float | None, float | None], ScanPlan]

#: From this fraction on a band reads the whole table instead: the rest costs about as much
#: again, and the answer is then exact (as :func:`qbeast_connect.approx.result.next_fraction`).
_READ_ALL_FROM = 0.5

#: A first band the prior sizes beyond this share of the candidate rows is preceded by a
#: pilot band (:meth:`BandPlanner.first_band`), whose measured spread sizes the next one.
_PILOT_SHARE = 1.0 / 16.0


@dataclass(frozen=True, slots=True)
class Band:
    """One step's read: the rows of weight in ``[weight(from_fraction), weight(to_fraction))``
    of the files of ``plan``.

    ``to_fraction`` is the band's end as read: at least the end asked, and as far as the
    files opened hold every candidate row (see :func:`covered_fraction`).
    """

    plan: ScanPlan
    from_fraction: float
    to_fraction: float

    @property
    def files(self) -> int:
        """Files the step opens."""
        return len(self.plan.files)

    @property
    def bytes(self) -> int:
        """Bytes of the files the step opens."""
        return self.plan.selected_bytes


def _with_files(plan: ScanPlan, more: tuple[IndexFile, ...]) -> ScanPlan:
    """``plan`` opening also the files of ``more`` it does not open yet."""
    held = {f.path for f in plan.files}
    extra = tuple(f for f in more if f.path not in held)
    if not extra:
        return plan
    return dataclasses.replace(
        plan,
        files=plan.files + extra,
        selected_bytes=plan.selected_bytes + sum(f.size for f in extra),
    )


class BandPlanner:
    """Plans the bands of one ``approx`` call from the table's snapshot.

    Args:
        plan: the file planner bound to the call's filter (see :data:`PlanFiles`).
        plan_nulls: the file planner bound to the filter and "every indexed column is NULL":
            the files the first band also opens, to read those rows in full
            (:func:`~qbeast_connect.approx.bands.approx_band_sql`). None: no such files.
        weighted_revisions: the revisions whose weights hash the columns the sample does.
        file_stats: each file's Delta statistics by path (``stats_by_path``), for
            :meth:`unread_extremes`; None: not known.
    """

    def __init__(
        self,
        plan: PlanFiles,
        plan_nulls: PlanFiles | None = None,
        weighted_revisions: frozenset[int] = frozenset(),
        file_stats: Mapping[str, Any] | None = None,
    ) -> None:
        self._plan = plan
        self._plan_nulls = plan_nulls
        self._weighted = weighted_revisions
        self._file_stats = file_stats
        self._ranges: dict[tuple[str, str], tuple[float, float] | None] = {}
        self._candidates: tuple[IndexFile, ...] | None = None
        self._null_files: tuple[IndexFile, ...] | None = None

    @property
    def candidates(self) -> tuple[IndexFile, ...]:
        """The files that may hold a row matching the filter (planned once)."""
        if self._candidates is None:
            self._candidates = self._plan(None, None).files
        return self._candidates

    def candidate_rows(self) -> int:
        """Rows stored in :attr:`candidates` (from their statistics or blocks): at least
        the rows matching the filter."""
        return sum(f.live_rows for f in self.candidates)

    @property
    def null_files(self) -> tuple[IndexFile, ...]:
        """The files that may hold a row matching the filter whose indexed columns are all
        NULL (from the Delta statistics' null counts; planned once)."""
        if self._null_files is None:
            self._null_files = (
                () if self._plan_nulls is None else self._plan_nulls(None, None).files
            )
        return self._null_files

    def band(self, from_fraction: float, to_fraction: float, widen: bool = True) -> Band:
        """The files of the band ``[from_fraction, to_fraction)``, and for the first band
        (``from_fraction`` 0) also :attr:`null_files`; with ``widen``, the band reaches as far
        as those files hold every candidate row."""
        plan = self._plan(to_fraction, from_fraction if from_fraction > 0.0 else None)
        if from_fraction <= 0.0 and to_fraction < 1.0:
            plan = _with_files(plan, self.null_files)
        if widen:
            to_fraction = covered_fraction(self.candidates, plan.files, from_fraction, to_fraction)
        return Band(plan, from_fraction, to_fraction)

    def sampled_share(self, to_fraction: float) -> float | None:
        """The share of the candidate rows whose weight is below ``weight(to_fraction)``,
        when the log tells it exactly; else None.

        A sample of weights holds each weight with probability ``p``, but the rows it
        actually holds are one draw: on TPC-H sf 1, 93,107 rows lie below ``weight(1/64)``
        where ``p`` expects 93,769 (2.2 standard deviations fewer), and every estimate that
        divides by ``p`` is that much low. When each candidate file lies wholly below or
        wholly at or above the band's end (its rows' largest weight, the writer's tag
        ``qbeastConnect.maxRowWeight``, and its smallest, from the blocks), the rows below
        it are the sum of those files' ``numRecords``, and their share of the candidates'
        rows is the sample's realized rate: the estimators use it for ``p`` (a ratio
        estimator on the candidate rows, docs/approx.md). None when a file straddles the end,
        lacks the tag or its statistics, has deleted rows, belongs to a revision hashing
        other columns, or when rows whose indexed columns are all NULL may match (read in
        full, they are no part of the sample).
        """
        if to_fraction >= 1.0 or self.null_files:
            return None
        end = weight_from_fraction(to_fraction)
        below = total = 0
        for f in self.candidates:
            if (
                f.is_staging
                or f.num_records is None
                or f.deleted_rows
                or f.revision_id not in self._weighted
            ):
                return None
            total += f.num_records
            if f.max_row_weight is not None and f.max_row_weight < end:
                below += f.num_records
            elif f.min_row_weight < end:
                return None  # rows on both sides of the end, or no tag to tell
        return below / total if below > 0 else None

    def unread_extremes(
        self, columns: Iterable[str], to_fraction: float
    ) -> dict[str, UnreadExtremes]:
        """Per measure column, its extremes in the candidate files that may hold a row not
        read by a sample up to ``to_fraction`` (every candidate file but those whose rows'
        largest weight, the writer's tag, is below the band's end), from their Delta
        statistics (:class:`~qbeast_connect.approx.estimators.UnreadExtremes`). A column is
        left out when one such file does not tell its range; nothing after a full read."""
        if to_fraction >= 1.0 or self._file_stats is None:
            return {}
        stats = self._file_stats
        end = weight_from_fraction(to_fraction)
        unread = [
            f.path for f in self.candidates if f.max_row_weight is None or f.max_row_weight >= end
        ]
        out = {}
        for column in sorted(set(columns)):
            ranges = []
            for path in unread:  # each file's statistics parsed once per call of approx
                key = (path, column)
                if key not in self._ranges:
                    self._ranges[key] = numeric_range(stats.get(path), column)
                ranges.append(self._ranges[key])
            if all(r is not None for r in ranges):
                out[column] = UnreadExtremes.of(r for r in ranges if r is not None)
        return out

    def known_rows(self) -> int | None:
        """The live rows of :attr:`candidates` when every one records its count (Delta's
        ``numRecords``, less the rows its deletion vector marks deleted: the vector's
        exact ``cardinality``), else None. Without a filter these are exactly the rows an
        answer covers. (``numRecords`` alone counted deleted rows too: ``count(*)`` of a
        table with deletion vectors was given, as exact, the rows before the deletes.)"""
        if any(f.num_records is None for f in self.candidates):
            return None
        return self.candidate_rows()

    def first_band(self, rows: int) -> Band:
        """The first band of an online aggregation that wants about ``rows`` sampled rows.

        The band the prior asks for: starting from the power of two holding about ``rows``
        of the candidate rows (at least :func:`first_fraction`'s few thousand), it doubles
        until the files it opens hold ``rows`` candidate rows (its widened end times the
        candidate rows), or until it would read half of the table or more: then all of it.

        When that band would hold more than :data:`_PILOT_SHARE` of the candidate rows (a
        small table, or a high precision), the prior decides too much: a pilot band holding
        a sixteenth of ``rows`` (at least a few thousand) is read first, and the bands
        after it are sized from the spread it measured
        (:func:`~qbeast_connect.approx.result.next_fraction`). On a large table the prior's
        band is a small share of it and is read at once: one query in the common case.
        """
        total = self.candidate_rows()
        band = self._sized(total, rows)
        if band.to_fraction <= _PILOT_SHARE:
            return band
        pilot = self._sized(total, max(4096, rows // 16))
        return pilot if pilot.to_fraction < band.to_fraction else band

    def _sized(self, total: int, rows: int) -> Band:
        """The smallest first band (from the power of two holding about ``rows`` of the
        ``total`` candidate rows, doubling) whose files hold ``rows`` candidate rows."""
        fraction = first_fraction(total, max(rows, 1))
        fraction = max(fraction, first_fraction(total))
        while True:
            if fraction >= _READ_ALL_FROM:
                return self.band(0.0, 1.0, widen=False)
            band = self.band(0.0, fraction)
            if band.to_fraction >= 1.0 or band.to_fraction * total >= rows:
                return band
            fraction *= 2.0
