"""The rows of a Connect DataFrame as Arrow, by one ``ExecutePlan`` call.

pyspark's public calls each add a round trip on Spark Connect: ``DataFrame.collect()``
first asks the server for a setting (how to return binary values) and
``DataFrame.toArrow()`` first asks for the schema. The Connect DataFrame's
``_to_table()`` runs the plan alone. It is private to pyspark, so this module is the one
place that calls it, and ``tests/unit/test_execute.py`` checks that the installed pyspark
still has it: an upgrade that removes it fails that test instead of silently adding round
trips to every snapshot read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_in_one_call"]


def arrow_in_one_call(df: Any) -> pa.Table | None:
    """The rows of ``df`` as an Arrow table by one ``ExecutePlan`` call, or None when
    ``df`` cannot be run that way (not a Spark Connect DataFrame): the caller then
    collects it with a public call."""
    to_table = getattr(df, "_to_table", None)
    if to_table is None:
        return None
    table: pa.Table = to_table()[0]
    return table
