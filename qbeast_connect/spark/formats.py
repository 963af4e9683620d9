"""Names of the server plugin's data sources, as the client's Spark plans spell them.

A leaf module of the transport layer: the session, location, snapshot and operation
modules all name these formats, and none of them needs the others to do it.
"""

from __future__ import annotations

__all__ = ["COMMAND_FORMAT", "QBEAST_FORMAT", "SNAPSHOT_FORMAT", "WRITE_FORMAT"]

#: Format names of the server plugin's data sources.
SNAPSHOT_FORMAT = "qbeast_snapshot"
WRITE_FORMAT = "qbeast_write"
COMMAND_FORMAT = "qbeast_command"
#: The public data source: ``spark.read.format("qbeast")`` / ``df.write.format("qbeast")``.
QBEAST_FORMAT = "qbeast"
