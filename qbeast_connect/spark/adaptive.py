"""Spark's adaptive query execution (AQE) set aside around queries it cannot improve.

AQE re-plans a query between its stages from what the finished stages measured: it merges
small shuffle partitions, splits skewed ones, switches join strategies. A query with no
shuffle has nothing of that kind to change, yet on Spark 4 AQE still wraps its one stage
and re-plans around it. For a query of ~100 ms (a one-file aggregate of ``approx``) that
costs 30-50 ms on two cores (``bench/approx_floor_bench.py``, BENCHMARKS.md).

Spark Connect has no per-query setting, so :func:`adaptive_off` sets
``spark.sql.adaptive.enabled=false`` on the session for the duration of the block and puts
the previous value back afterwards. AQE never changes what a query returns, only how it
runs, so a query of another thread that runs meanwhile in the same session gets the same
answer. Blocks of several threads on one session nest: the first one in records the value,
the last one out restores it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["ADAPTIVE_KEY", "adaptive_off"]

ADAPTIVE_KEY = "spark.sql.adaptive.enabled"

_lock = threading.Lock()
#: session id -> (blocks inside, the value before the first one: None if it was not set)
_held: dict[str, tuple[int, str | None]] = {}


def _session_key(spark: Any) -> str:
    return str(getattr(spark, "session_id", None) or id(spark))


@contextmanager
def adaptive_off(spark: Any) -> Iterator[None]:
    """Run the block with AQE off on ``spark``'s session; the setting is restored after it,
    also when the block raises (a failure to restore is raised only if the block did not
    raise first)."""
    key = _session_key(spark)
    with _lock:
        entry = _held.get(key)
        if entry is None:
            previous = spark.conf.get(ADAPTIVE_KEY, None)
            spark.conf.set(ADAPTIVE_KEY, "false")
            _held[key] = (1, previous)
        else:
            _held[key] = (entry[0] + 1, entry[1])
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        with _lock:
            inside, previous = _held[key]
            if inside > 1:
                _held[key] = (inside - 1, previous)
            else:
                del _held[key]
                try:
                    if previous is None:
                        spark.conf.unset(ADAPTIVE_KEY)
                    else:
                        spark.conf.set(ADAPTIVE_KEY, previous)
                except Exception:
                    if not failed:
                        raise
