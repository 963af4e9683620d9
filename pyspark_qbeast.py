"""``format("qbeast")`` for every client of a Spark server that has qbeast-connect installed.

Spark (4.0+) looks for top-level modules named ``pyspark_*`` in the Python environment of
the server's driver the first time a query uses a Python data source, and registers the
``DefaultSource`` class of each one under its ``name()``. Installing qbeast-connect into
that environment is therefore enough for any Spark Connect client, in any language, to use::

    spark.read.format("qbeast").load("/data/events").where("ts > '2024-01-01'")
    df.write.format("qbeast").mode("append").save("/data/events")

See :mod:`server_plugin.qbeast_format` for what the reader and the writer do. This module
stays tiny: Spark imports every ``pyspark_*`` module it finds.
"""

from __future__ import annotations

from server_plugin.qbeast_format import QbeastDataSource

#: The data source Spark's static lookup registers, as ``"qbeast"``.
DefaultSource = QbeastDataSource

__all__ = ["DefaultSource"]
