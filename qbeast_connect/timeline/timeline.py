"""Partition timelines: which partitions of one update period exist, kept in memory.

A timeline answers "does partition p exist?" without touching storage. It is saved as
string key/value pairs in the Delta table's ``metaData.configuration`` and changes in
the same commit as the data files, so it never disagrees with the table.

Three implementations of :class:`PartitionTimeline` (the Lens design):

* :class:`StoreAllTimeline` stores every partition in a sorted list. Best for a few,
  widely spaced partitions. Property: ``partitions`` = comma-separated list.
* :class:`EndsAndHolesTimeline` (the default) stores the first and the latest partition
  and the *holes*, the missing partitions in between. Best for long runs of data with
  few gaps. Properties: ``first``, ``latest``, ``holes`` (comma-separated).
* :class:`RangesTimeline` stores sorted, merged ranges ``[a, b)`` of existing partitions
  and uses binary search. Property: ``ranges`` = ``a1,b1,a2,b2,...`` (``b`` exclusive).

Configuration keys (all values are strings)::

    qbeast.timeline.<column>.present            "true" when the timelines below are
                                                complete; absent or "false": rebuild
                                                them from the table's files
    qbeast.timeline.<column>.<period>.impl      StoreAll | EndsAndHoles | Ranges
    qbeast.timeline.<column>.<period>.<prop>    the implementation's properties

``<column>`` is the partition column name with ``%`` written ``%25`` and ``.`` written
``%2E`` (so keys stay unambiguous); ``<period>`` is the lower-case period name
(``hourly``). Choosing an implementation: set its ``impl`` key (see
``qbeast_connect.timeline.set_timeline_impl``); a stored timeline in another
implementation is converted, without reading the table's files.

Pure standard library: no pyspark, pyarrow or numpy.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from typing import ClassVar

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.timeline.partition import TimePartition
from qbeast_connect.timeline.update_period import UpdatePeriod

__all__ = [
    "DEFAULT_IMPL",
    "IMPLEMENTATIONS",
    "TIMELINE_PREFIX",
    "EndsAndHolesTimeline",
    "PartitionTimeline",
    "RangesTimeline",
    "StoreAllTimeline",
    "build_timelines",
    "column_prefix",
    "column_timelines",
    "configured_impl",
    "configured_periods",
    "impl_key",
    "migrate_timeline",
    "new_timeline",
    "present_key",
    "read_timelines",
    "table_timelines",
    "timeline_class",
    "timeline_prefix",
    "timelines_present",
    "write_timelines",
]

#: Prefix of every timeline key in ``metaData.configuration``.
TIMELINE_PREFIX = "qbeast.timeline."
#: Property naming a timeline's implementation.
IMPL_PROPERTY = "impl"
#: Column-level flag: the stored timelines are complete.
PRESENT_PROPERTY = "present"


class PartitionTimeline(ABC):
    """The partitions of one update period that exist in one table's partition column.

    Every partition given to a timeline must be of its period. The methods of the Lens
    interface are also available under their Java names (``isEmpty``, ``isConsistent``,
    ``toProperties``, ``initFromProperties``).

    Args:
        period: the update period of the partitions.
    """

    #: Name stored in the ``impl`` property.
    impl_name: ClassVar[str]

    def __init__(self, period: UpdatePeriod | str) -> None:
        self._period = UpdatePeriod.from_name(period)

    @property
    def period(self) -> UpdatePeriod:
        """The update period of this timeline's partitions."""
        return self._period

    def _ordinal(self, partition: TimePartition) -> int:
        if not isinstance(partition, TimePartition):
            raise InvalidOptionError(
                f"expected a TimePartition, got {type(partition).__name__}; "
                f"use TimePartition.parse({partition!r})"
            )
        if partition.period is not self._period:
            raise InvalidOptionError(
                f"partition {partition} is {partition.period.value} but this timeline holds "
                f"{self._period.value} partitions"
            )
        return partition.ordinal

    def _partition(self, ordinal: int) -> TimePartition:
        return TimePartition.from_ordinal(self._period, ordinal)

    def _parse(self, text: str, key: str) -> int:
        try:
            return self._period.parse_ordinal(text)
        except InvalidOptionError as exc:
            raise MetadataFormatError(
                f"timeline property {key!r} holds {text!r}, which is not a "
                f"{self._period.value} partition"
            ) from exc

    def _parse_list(self, text: str, key: str) -> list[int]:
        return [self._parse(item, key) for item in text.split(",") if item != ""]

    # -- the Lens interface --------------------------------------------------------------

    def add(self, partition: TimePartition) -> bool:
        """Register ``partition``; return True if it was not there before."""
        return self._add(self._ordinal(partition))

    def drop(self, partition: TimePartition) -> bool:
        """Unregister ``partition``; return True if it was there."""
        return self._drop(self._ordinal(partition))

    def exists(self, partition: TimePartition) -> bool:
        """Whether ``partition`` is registered (answered from memory)."""
        return self._exists(self._ordinal(partition))

    def latest(self) -> TimePartition | None:
        """The latest partition, or None when the timeline is empty."""
        n = self._last()
        return None if n is None else self._partition(n)

    def first(self) -> TimePartition | None:
        """The earliest partition, or None when the timeline is empty."""
        n = self._first()
        return None if n is None else self._partition(n)

    def is_empty(self) -> bool:
        """Whether no partition is registered."""
        return self._first() is None

    @abstractmethod
    def is_consistent(self) -> bool:
        """Whether the internal state satisfies the implementation's invariants."""

    @abstractmethod
    def to_properties(self) -> dict[str, str]:
        """The state as string properties (keys without the configuration prefix)."""

    def init_from_properties(self, properties: Mapping[str, str]) -> bool:
        """Replace the state with the one saved by :meth:`to_properties`.

        Args:
            properties: the timeline's own properties (keys without prefix); other keys
                are ignored.

        Returns:
            True if the properties held a state for this implementation; False if they
            held none (the timeline is then empty).

        Raises:
            MetadataFormatError: a value is malformed or the state is inconsistent.
        """
        found = self._init(properties)
        if not self.is_consistent():
            raise MetadataFormatError(
                f"the stored {self.impl_name} timeline of {self._period.value} partitions is "
                f"inconsistent: {dict(properties)!r}"
            )
        return found

    # -- more than Lens --------------------------------------------------------------------

    @abstractmethod
    def ordinals(self) -> Iterator[int]:
        """Ordinals of the registered partitions, ascending."""

    def partitions(self) -> Iterator[TimePartition]:
        """The registered partitions, ascending."""
        for n in self.ordinals():
            yield self._partition(n)

    def add_all(self, partitions: Iterable[TimePartition]) -> bool:
        """Register several partitions; return True if any was new."""
        changed = False
        for p in partitions:
            changed = self.add(p) or changed
        return changed

    def exists_ordinal(self, ordinal: int) -> bool:
        """Whether the partition numbered ``ordinal`` is registered."""
        return self._exists(ordinal)

    def __contains__(self, item: object) -> bool:
        return (
            isinstance(item, TimePartition)
            and item.period is self._period
            and self._exists(item.ordinal)
        )

    def __iter__(self) -> Iterator[TimePartition]:
        return self.partitions()

    def __len__(self) -> int:
        return sum(1 for _ in self.ordinals())

    def __repr__(self) -> str:
        if self.is_empty():
            return f"{type(self).__name__}({self._period.value}, empty)"
        return (
            f"{type(self).__name__}({self._period.value}, {self.first()}..{self.latest()}, "
            f"{len(self)} partitions)"
        )

    # Java spellings of the Lens interface
    def isEmpty(self) -> bool:
        """Same as :meth:`is_empty`."""
        return self.is_empty()

    def isConsistent(self) -> bool:
        """Same as :meth:`is_consistent`."""
        return self.is_consistent()

    def toProperties(self) -> dict[str, str]:
        """Same as :meth:`to_properties`."""
        return self.to_properties()

    def initFromProperties(self, properties: Mapping[str, str]) -> bool:
        """Same as :meth:`init_from_properties`."""
        return self.init_from_properties(properties)

    # -- implementation hooks ------------------------------------------------------------

    @abstractmethod
    def _add(self, n: int) -> bool: ...

    @abstractmethod
    def _drop(self, n: int) -> bool: ...

    @abstractmethod
    def _exists(self, n: int) -> bool: ...

    @abstractmethod
    def _first(self) -> int | None: ...

    @abstractmethod
    def _last(self) -> int | None: ...

    @abstractmethod
    def _init(self, properties: Mapping[str, str]) -> bool: ...


class StoreAllTimeline(PartitionTimeline):
    """Stores every partition in a sorted list (the Lens ``StoreAllPartitionTimeline``)."""

    impl_name = "StoreAll"

    def __init__(self, period: UpdatePeriod | str) -> None:
        super().__init__(period)
        self._all: list[int] = []

    def _add(self, n: int) -> bool:
        i = bisect.bisect_left(self._all, n)
        if i < len(self._all) and self._all[i] == n:
            return False
        self._all.insert(i, n)
        return True

    def _drop(self, n: int) -> bool:
        i = bisect.bisect_left(self._all, n)
        if i < len(self._all) and self._all[i] == n:
            del self._all[i]
            return True
        return False

    def _exists(self, n: int) -> bool:
        i = bisect.bisect_left(self._all, n)
        return i < len(self._all) and self._all[i] == n

    def _first(self) -> int | None:
        return self._all[0] if self._all else None

    def _last(self) -> int | None:
        return self._all[-1] if self._all else None

    def ordinals(self) -> Iterator[int]:
        return iter(list(self._all))

    def __len__(self) -> int:
        return len(self._all)

    def is_consistent(self) -> bool:
        return all(a < b for a, b in zip(self._all, self._all[1:], strict=False))

    def to_properties(self) -> dict[str, str]:
        return {"partitions": ",".join(self._period.format_ordinal(n) for n in self._all)}

    def _init(self, properties: Mapping[str, str]) -> bool:
        text = properties.get("partitions")
        self._all = [] if text is None else sorted(set(self._parse_list(text, "partitions")))
        return text is not None


class EndsAndHolesTimeline(PartitionTimeline):
    """Stores the first and latest partitions and the missing ones in between (default).

    With partitions 1, 2, 3, 4, 9, 10 it stores first = 1, latest = 10, holes = 5..8.
    """

    impl_name = "EndsAndHoles"

    def __init__(self, period: UpdatePeriod | str) -> None:
        super().__init__(period)
        self._lo: int | None = None
        self._hi: int | None = None
        self._holes: set[int] = set()

    def _add(self, n: int) -> bool:
        if self._lo is None or self._hi is None:
            self._lo = self._hi = n
            return True
        if n < self._lo:
            self._holes.update(range(n + 1, self._lo))
            self._lo = n
            return True
        if n > self._hi:
            self._holes.update(range(self._hi + 1, n))
            self._hi = n
            return True
        if n in self._holes:
            self._holes.discard(n)
            return True
        return False

    def _drop(self, n: int) -> bool:
        if not self._exists(n):
            return False
        assert self._lo is not None and self._hi is not None
        if self._lo == self._hi:
            self._lo = self._hi = None
            self._holes.clear()
        elif n == self._lo:
            lo = n + 1
            while lo in self._holes:
                self._holes.discard(lo)
                lo += 1
            self._lo = lo
        elif n == self._hi:
            hi = n - 1
            while hi in self._holes:
                self._holes.discard(hi)
                hi -= 1
            self._hi = hi
        else:
            self._holes.add(n)
        return True

    def _exists(self, n: int) -> bool:
        if self._lo is None or self._hi is None:
            return False
        return self._lo <= n <= self._hi and n not in self._holes

    def _first(self) -> int | None:
        return self._lo

    def _last(self) -> int | None:
        return self._hi

    def ordinals(self) -> Iterator[int]:
        if self._lo is None or self._hi is None:
            return iter(())
        holes = set(self._holes)
        return iter([n for n in range(self._lo, self._hi + 1) if n not in holes])

    def __len__(self) -> int:
        if self._lo is None or self._hi is None:
            return 0
        return self._hi - self._lo + 1 - len(self._holes)

    @property
    def holes(self) -> list[TimePartition]:
        """The missing partitions between the first and the latest, ascending."""
        return [self._partition(n) for n in sorted(self._holes)]

    def is_consistent(self) -> bool:
        if self._lo is None or self._hi is None:
            return self._lo is None and self._hi is None and not self._holes
        return self._lo <= self._hi and all(self._lo < h < self._hi for h in self._holes)

    def to_properties(self) -> dict[str, str]:
        fmt = self._period.format_ordinal
        return {
            "first": "" if self._lo is None else fmt(self._lo),
            "latest": "" if self._hi is None else fmt(self._hi),
            "holes": ",".join(fmt(n) for n in sorted(self._holes)),
        }

    def _init(self, properties: Mapping[str, str]) -> bool:
        first = properties.get("first")
        latest = properties.get("latest")
        holes = properties.get("holes")
        self._lo = self._parse(first, "first") if first else None
        self._hi = self._parse(latest, "latest") if latest else None
        self._holes = set(self._parse_list(holes, "holes")) if holes else set()
        return first is not None or latest is not None or holes is not None


class RangesTimeline(PartitionTimeline):
    """Stores sorted, merged ranges ``[a, b)`` of existing partitions.

    With partitions 1, 2, 3, 5, 6, 9 it stores [1, 4), [5, 7), [9, 10). Every operation
    is a binary search plus at most one merge or split.
    """

    impl_name = "Ranges"

    def __init__(self, period: UpdatePeriod | str) -> None:
        super().__init__(period)
        self._starts: list[int] = []
        self._ends: list[int] = []  # exclusive

    def _find(self, n: int) -> int:
        """Index of the last range starting at or before ``n`` (-1 if none)."""
        return bisect.bisect_right(self._starts, n) - 1

    def _exists(self, n: int) -> bool:
        i = self._find(n)
        return i >= 0 and n < self._ends[i]

    def _add(self, n: int) -> bool:
        i = self._find(n)
        if i >= 0 and n < self._ends[i]:
            return False
        joins_left = i >= 0 and self._ends[i] == n
        joins_right = i + 1 < len(self._starts) and self._starts[i + 1] == n + 1
        if joins_left and joins_right:
            self._ends[i] = self._ends[i + 1]
            del self._starts[i + 1]
            del self._ends[i + 1]
        elif joins_left:
            self._ends[i] = n + 1
        elif joins_right:
            self._starts[i + 1] = n
        else:
            self._starts.insert(i + 1, n)
            self._ends.insert(i + 1, n + 1)
        return True

    def _drop(self, n: int) -> bool:
        i = self._find(n)
        if i < 0 or n >= self._ends[i]:
            return False
        start, end = self._starts[i], self._ends[i]
        if start == n and end == n + 1:
            del self._starts[i]
            del self._ends[i]
        elif start == n:
            self._starts[i] = n + 1
        elif end == n + 1:
            self._ends[i] = n
        else:
            self._ends[i] = n
            self._starts.insert(i + 1, n + 1)
            self._ends.insert(i + 1, end)
        return True

    def _first(self) -> int | None:
        return self._starts[0] if self._starts else None

    def _last(self) -> int | None:
        return self._ends[-1] - 1 if self._ends else None

    def ordinals(self) -> Iterator[int]:
        pairs = list(zip(self._starts, self._ends, strict=True))
        return (n for start, end in pairs for n in range(start, end))

    def __len__(self) -> int:
        return sum(e - s for s, e in zip(self._starts, self._ends, strict=True))

    @property
    def ranges(self) -> list[tuple[TimePartition, TimePartition]]:
        """The stored ranges as (first partition, first partition after the range)."""
        return [
            (self._partition(s), self._partition(e))
            for s, e in zip(self._starts, self._ends, strict=True)
        ]

    def is_consistent(self) -> bool:
        if len(self._starts) != len(self._ends):
            return False
        if any(s >= e for s, e in zip(self._starts, self._ends, strict=True)):
            return False
        # sorted, and merged: each range ends strictly before the next one starts
        return all(self._ends[i] < self._starts[i + 1] for i in range(len(self._starts) - 1))

    def to_properties(self) -> dict[str, str]:
        fmt = self._period.format_ordinal
        items: list[str] = []
        for s, e in zip(self._starts, self._ends, strict=True):
            items.append(fmt(s))
            items.append(fmt(e))
        return {"ranges": ",".join(items)}

    def _init(self, properties: Mapping[str, str]) -> bool:
        text = properties.get("ranges")
        self._starts, self._ends = [], []
        if text is None:
            return False
        values = self._parse_list(text, "ranges")
        if len(values) % 2:
            raise MetadataFormatError(
                f"timeline property 'ranges' needs pairs 'start,end', got {len(values)} values"
            )
        self._starts = values[0::2]
        self._ends = values[1::2]
        return True


#: Implementation name (the ``impl`` property) -> class.
IMPLEMENTATIONS: dict[str, type[PartitionTimeline]] = {
    cls.impl_name: cls for cls in (StoreAllTimeline, EndsAndHolesTimeline, RangesTimeline)
}
#: The implementation used when none is configured.
DEFAULT_IMPL = EndsAndHolesTimeline.impl_name


def timeline_class(impl: str) -> type[PartitionTimeline]:
    """The class of the implementation named ``impl`` (case-insensitive).

    Raises:
        InvalidOptionError: unknown name; the message lists the accepted ones.
    """
    if isinstance(impl, str):
        for name, cls in IMPLEMENTATIONS.items():
            if name.lower() == impl.strip().lower():
                return cls
    raise InvalidOptionError(
        f"unknown timeline implementation {impl!r}: use one of {', '.join(IMPLEMENTATIONS)}"
    )


def new_timeline(period: UpdatePeriod | str, impl: str = DEFAULT_IMPL) -> PartitionTimeline:
    """An empty timeline of ``period`` in the implementation named ``impl``."""
    return timeline_class(impl)(period)


def migrate_timeline(timeline: PartitionTimeline, impl: str) -> PartitionTimeline:
    """A copy of ``timeline`` in the implementation ``impl`` (the same object if it is one)."""
    cls = timeline_class(impl)
    if type(timeline) is cls:
        return timeline
    out = cls(timeline.period)
    for n in timeline.ordinals():
        out._add(n)
    return out


# ------------------------------------------------------------------------ configuration


def _escape_column(column: str) -> str:
    return column.replace("%", "%25").replace(".", "%2E")


def column_prefix(column: str) -> str:
    """``qbeast.timeline.<column>.``: the prefix of all of a column's timeline keys."""
    return f"{TIMELINE_PREFIX}{_escape_column(column)}."


def timeline_prefix(column: str, period: UpdatePeriod) -> str:
    """``qbeast.timeline.<column>.<period>.``: the prefix of one timeline's keys."""
    return f"{column_prefix(column)}{period.value}."


def impl_key(column: str, period: UpdatePeriod) -> str:
    """The key naming the implementation of the (column, period) timeline."""
    return timeline_prefix(column, period) + IMPL_PROPERTY


def present_key(column: str) -> str:
    """The key of the column's "timelines present" flag."""
    return column_prefix(column) + PRESENT_PROPERTY


def timelines_present(configuration: Mapping[str, str], column: str) -> bool:
    """Whether the configuration holds complete timelines for ``column``."""
    return str(configuration.get(present_key(column), "")).strip().lower() == "true"


def configured_impl(configuration: Mapping[str, str], column: str, period: UpdatePeriod) -> str:
    """The implementation chosen for (column, period); :data:`DEFAULT_IMPL` when unset.

    Raises:
        InvalidOptionError: the configured name is unknown.
    """
    value = configuration.get(impl_key(column, period))
    if value is None or value == "":
        return DEFAULT_IMPL
    return timeline_class(value).impl_name


def configured_periods(configuration: Mapping[str, str], column: str) -> list[UpdatePeriod]:
    """The periods that have an ``impl`` key (a stored or pre-configured timeline)."""
    return [p for p in UpdatePeriod if impl_key(column, p) in configuration]


def read_timelines(
    configuration: Mapping[str, str], column: str
) -> dict[UpdatePeriod, PartitionTimeline]:
    """Decode the timelines of ``column`` stored in a table configuration.

    Every period with an ``impl`` key gets a timeline (empty when it has no state). The
    present flag is not checked: see :func:`timelines_present`.

    Raises:
        MetadataFormatError: a stored timeline is malformed or inconsistent.
        InvalidOptionError: an ``impl`` key names an unknown implementation.
    """
    out: dict[UpdatePeriod, PartitionTimeline] = {}
    for period in configured_periods(configuration, column):
        prefix = timeline_prefix(column, period)
        props = {k[len(prefix) :]: v for k, v in configuration.items() if k.startswith(prefix)}
        props.pop(IMPL_PROPERTY, None)
        impl = configured_impl(configuration, column, period)
        timeline = new_timeline(period, impl)
        if not timeline.init_from_properties(props) and props:
            timeline = _decode_other_impl(period, impl, props)
        out[period] = timeline
    return out


def _decode_other_impl(
    period: UpdatePeriod, impl: str, props: Mapping[str, str]
) -> PartitionTimeline:
    """Decode a state saved by another implementation and convert it to ``impl``.

    This happens when the ``impl`` key was changed by hand: the stored state is migrated
    without reading the table's files.
    """
    for cls in IMPLEMENTATIONS.values():
        candidate = cls(period)
        if candidate.init_from_properties(props):
            return migrate_timeline(candidate, impl)
    raise MetadataFormatError(
        f"the stored {period.value} timeline has properties {sorted(props)} that no "
        f"implementation ({', '.join(IMPLEMENTATIONS)}) recognizes"
    )


def build_timelines(
    values: Iterable[str | None],
    configuration: Mapping[str, str],
    column: str,
) -> dict[UpdatePeriod, PartitionTimeline]:
    """Rebuild the timelines of ``column`` from the partition values of the table's files.

    Each value is a canonical partition string and names its own period; nulls are
    skipped. Each timeline uses the implementation configured for its period. Periods
    configured (``impl`` key) without any file get an empty timeline.

    Raises:
        MetadataFormatError: a value is not a time partition string.
    """
    out: dict[UpdatePeriod, PartitionTimeline] = {}
    for period in configured_periods(configuration, column):
        out[period] = new_timeline(period, configured_impl(configuration, column, period))
    for value in set(values):
        if value is None:
            continue
        try:
            partition = TimePartition.parse(value)
        except InvalidOptionError as exc:
            raise MetadataFormatError(
                f"partition column {column!r} holds {value!r}, which is not a time partition "
                f"string ({exc.message})"
            ) from exc
        timeline = out.get(partition.period)
        if timeline is None:
            impl = configured_impl(configuration, column, partition.period)
            timeline = out[partition.period] = new_timeline(partition.period, impl)
        timeline.add(partition)
    return out


def write_timelines(
    configuration: Mapping[str, str],
    column: str,
    timelines: Mapping[UpdatePeriod, PartitionTimeline],
) -> dict[str, str]:
    """A new configuration holding ``timelines`` for ``column``, with the present flag set.

    The stored state of each given period is replaced (stale keys of an earlier
    implementation are removed, which Delta allows because a ``metaData`` action replaces
    the whole configuration); other keys are kept.
    """
    out = dict(configuration)
    for period, timeline in timelines.items():
        if timeline.period is not period:
            raise InvalidOptionError(
                f"timeline of {timeline.period.value} partitions given for {period.value}"
            )
        prefix = timeline_prefix(column, period)
        for key in [k for k in out if k.startswith(prefix)]:
            del out[key]
        out[prefix + IMPL_PROPERTY] = timeline.impl_name
        for prop, value in timeline.to_properties().items():
            out[prefix + prop] = value
    out[present_key(column)] = "true"
    return out


def column_timelines(
    configuration: Mapping[str, str],
    column: str,
    values: Iterable[str | None],
) -> dict[UpdatePeriod, PartitionTimeline] | None:
    """The timelines of one partition column: stored ones, or rebuilt from file values.

    Stored timelines are used when the column's ``present`` flag is ``"true"`` and they
    decode; otherwise they are rebuilt from ``values`` (the column's partition value in
    each live file), in memory only.

    Returns:
        The timelines per period, or None when the column is not a time partition column
        (no timeline keys and no value that is a time partition string).

    Raises:
        MetadataFormatError: the column mixes time partition strings and other values.
    """
    if timelines_present(configuration, column):
        try:
            return read_timelines(configuration, column)
        except MetadataFormatError:
            pass  # the files are the truth: rebuild below
    values = list(values)
    has_keys = any(k.startswith(column_prefix(column)) for k in configuration)
    if not has_keys and not any(
        v is not None and UpdatePeriod.detect(v) is not None for v in values
    ):
        return None
    return build_timelines(values, configuration, column)


def table_timelines(
    configuration: Mapping[str, str],
    partition_columns: Iterable[str],
    partition_values: Iterable[Mapping[str, str | None]],
) -> dict[tuple[str, UpdatePeriod], PartitionTimeline]:
    """All timelines of a table, keyed by (partition column, update period).

    Args:
        configuration: the table's ``metaData.configuration``.
        partition_columns: the table's partition columns.
        partition_values: the ``partitionValues`` of every live file.
    """
    rows = list(partition_values)
    out: dict[tuple[str, UpdatePeriod], PartitionTimeline] = {}
    for column in partition_columns:
        found = column_timelines(configuration, column, (r.get(column) for r in rows))
        for period, timeline in (found or {}).items():
            out[(column, period)] = timeline
    return out
