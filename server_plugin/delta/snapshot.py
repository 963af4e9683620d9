"""The state of a Delta table at one version, as replay leaves it.

Built by the log reader (:func:`~server_plugin.delta.log_reader.read_snapshot`), written
out by the checkpoint writer, read by commits and by the plugin's data sources.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from .actions import Action, AddFile, DomainMetadata, FrozenMap, Metadata, Protocol, RemoveFile, Txn
from .schema import delta_to_arrow_schema

__all__ = ["DeltaSnapshot"]


@dataclass(frozen=True, slots=True)
class DeltaSnapshot:
    """The state of a Delta table at one version.

    Attributes:
        version: The table version.
        protocol: The table's protocol (already checked readable).
        metadata: The table's metaData.
        files: Live ``add`` actions keyed by normalized path (percent-decoded, relative
            to the table root when inside it; the key is the path to give to Storage).
        tombstones: ``remove`` actions of logical files (path and deletion vector) not
            re-added, keyed by :func:`~.log_reader.tombstone_key`.
        txns: Last ``txn`` per ``appId`` (expired ones dropped).
        domain_metadata: Live ``domainMetadata`` per domain.
        timestamp: Commit time of ``version`` in epoch milliseconds.
        checkpoint_version: Version of the checkpoint replay started from, if any.
    """

    version: int
    protocol: Protocol
    metadata: Metadata
    files: Mapping[str, AddFile]
    tombstones: Mapping[str, RemoveFile] = field(default_factory=FrozenMap)
    txns: Mapping[str, Txn] = field(default_factory=FrozenMap)
    domain_metadata: Mapping[str, DomainMetadata] = field(default_factory=FrozenMap)
    timestamp: int = 0
    checkpoint_version: int | None = None

    def txn_version(self, app_id: str) -> int | None:
        """Return the last committed ``txn`` version of ``app_id``, or None."""
        txn = self.txns.get(app_id)
        return None if txn is None else txn.version

    def arrow_schema(self) -> pa.Schema:
        """Return the table schema as pyarrow (parsed from ``schemaString``)."""
        return delta_to_arrow_schema(self.metadata.schema_string)

    @property
    def configuration(self) -> Mapping[str, str]:
        """The table properties (``metaData.configuration``)."""
        return self.metadata.configuration

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """The partition columns."""
        return self.metadata.partition_columns

    @property
    def num_files(self) -> int:
        """Number of live files."""
        return len(self.files)

    @property
    def size_in_bytes(self) -> int:
        """Total size of the live files."""
        return sum(add.size for add in self.files.values())

    def state_actions(self) -> Iterator[Action]:
        """Yield the actions that state this version: protocol, metaData, txns, live adds.

        In that order; tombstones and domain metadata are left to the caller.
        """
        yield self.protocol
        yield self.metadata
        yield from self.txns.values()
        yield from self.files.values()
