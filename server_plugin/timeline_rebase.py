"""The partition timelines part of rebasing a commit over concurrent appends.

A time-partitioned table keeps the partitions that exist in its configuration
(``qbeast.timeline.<column>.<period>.*``, see :mod:`qbeast_connect.timeline.timeline`),
and an append that writes into a new partition commits the grown timeline in the same
``metaData`` as its files. Two appends that each add partitions therefore both change the
metaData, yet they commute: a timeline is a set of partitions per period, and each append
only adds elements to it. :mod:`server_plugin.revision_rebase` uses the two functions here:

* :func:`timelines_only_grow` tells whether a configuration change, on the timeline keys,
  only adds partitions (decoded, per column and period: the same implementation, the
  ``present`` flag kept, every partition of before still there). A dropped partition, an
  overwrite that starts a timeline again, a changed implementation or a timeline that
  does not decode is not such a change, and so stays a conflict;
* :func:`merged_timelines` gives the winner's configuration with the partitions the
  transaction adds put into the winner's timelines (a set union done on the decoded
  timelines and encoded again in the winner's implementation), so none of the winner's
  partitions is lost.
"""

from __future__ import annotations

from collections.abc import Mapping

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.timeline.partition import TimePartition
from qbeast_connect.timeline.timeline import (
    TIMELINE_PREFIX,
    PartitionTimeline,
    new_timeline,
    present_key,
    read_timelines,
    timeline_prefix,
    timelines_present,
    write_timelines,
)
from qbeast_connect.timeline.update_period import UpdatePeriod

__all__ = ["is_timeline_key", "merged_timelines", "timelines_only_grow"]

Timelines = dict[UpdatePeriod, PartitionTimeline]


def is_timeline_key(key: str) -> bool:
    """Whether ``key`` belongs to a partition timeline (merged, not compared as text)."""
    return key.startswith(TIMELINE_PREFIX)


def _columns(configuration: Mapping[str, str]) -> set[str]:
    """The escaped names of the columns with timeline keys."""
    return {
        key[len(TIMELINE_PREFIX) :].split(".", 1)[0]
        for key in configuration
        if is_timeline_key(key)
    }


def _unescape(escaped: str) -> str:
    # the reverse of timeline._escape_column: every '%' there is followed by '25' or '2E'
    return escaped.replace("%2E", ".").replace("%25", "%")


def _keys(configuration: Mapping[str, str], escaped: str) -> dict[str, str]:
    prefix = f"{TIMELINE_PREFIX}{escaped}."
    return {k: v for k, v in configuration.items() if k.startswith(prefix)}


def _decoded(configuration: Mapping[str, str], column: str) -> Timelines | None:
    """The column's complete, decodable timelines, or None (nothing safe to merge)."""
    if not timelines_present(configuration, column):
        return None
    try:
        timelines = read_timelines(configuration, column)
    except (MetadataFormatError, InvalidOptionError):
        return None
    return timelines


def _stray(configuration: Mapping[str, str], escaped: str, timelines: Timelines) -> dict[str, str]:
    """The column's keys that are neither its present flag nor part of a timeline."""
    column = _unescape(escaped)
    prefixes = tuple(timeline_prefix(column, period) for period in timelines)
    flag = present_key(column)
    return {
        k: v
        for k, v in _keys(configuration, escaped).items()
        if k != flag and not k.startswith(prefixes)
    }


def _grows(old: Timelines, new: Timelines) -> bool:
    for period, timeline in old.items():
        grown = new.get(period)
        if grown is None or grown.impl_name != timeline.impl_name:
            return False
        if any(not grown.exists_ordinal(n) for n in timeline.ordinals()):
            return False
    return True


def _changed_columns(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    return sorted(
        escaped
        for escaped in _columns(before) | _columns(after)
        if _keys(before, escaped) != _keys(after, escaped)
    )


def timelines_only_grow(before: Mapping[str, str], after: Mapping[str, str]) -> bool:
    """Whether ``after`` differs from ``before`` on timeline keys only by added partitions.

    True when no timeline key changed. For every column whose timeline keys changed, both
    configurations must hold complete (``present``) timelines that decode, every period
    of ``before`` must keep its implementation and all its partitions in ``after``, and
    the column's other keys must be unchanged.
    """
    for escaped in _changed_columns(before, after):
        column = _unescape(escaped)
        old, new = _decoded(before, column), _decoded(after, column)
        if old is None or new is None or not _grows(old, new):
            return False
        if _stray(before, escaped, old) != _stray(after, escaped, new):
            return False
    return True


def merged_timelines(
    before: Mapping[str, str], winner: Mapping[str, str], ours: Mapping[str, str]
) -> dict[str, str]:
    """``winner`` with the partitions ``ours`` added to ``before`` put into its timelines.

    Both ``winner`` and ``ours`` must have been checked with :func:`timelines_only_grow`
    against ``before``. Timelines the transaction did not grow keep the winner's keys as
    they are; a grown one is the union of the winner's partitions and the transaction's
    new ones, in the winner's implementation (a period only the transaction has keeps the
    transaction's).

    Raises:
        MetadataFormatError: a timeline that passed the check does not decode any more
            (not expected: the checks decode the same text).
    """
    out = dict(winner)
    for escaped in _changed_columns(before, ours):
        column = _unescape(escaped)
        old, mine = _decoded(before, column), _decoded(ours, column)
        theirs = _decoded(winner, column)
        if old is None or mine is None or theirs is None:
            raise MetadataFormatError(
                f"the timelines of column {column!r} no longer decode while merging "
                "concurrent appends; re-read the table and retry the write"
            )
        grown: Timelines = {}
        for period, timeline in mine.items():
            target = theirs.get(period) or new_timeline(period, timeline.impl_name)
            known = old.get(period)
            added = [
                n
                for n in timeline.ordinals()
                if (known is None or not known.exists_ordinal(n)) and not target.exists_ordinal(n)
            ]
            if added or period not in theirs:
                for n in added:
                    target.add(TimePartition.from_ordinal(period, n))
                grown[period] = target
        if grown:
            out = write_timelines(out, column, grown)
    return out
