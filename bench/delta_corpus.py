"""Read a corpus of Delta tables at every version through the plugin's ``format("qbeast")``
reader and compare the rows with ``deltalake`` (issue #32).

A table is any folder under ROOT holding a ``_delta_log``. For each version the log still
lets one rebuild, the rows our reader returns (log replay, checkpoints, deletion vectors,
column mapping, partition values: the same code a server runs) are compared, as a multiset,
with the rows ``deltalake`` returns (and, with ``--delta-jvm``, Delta's JVM settles the
versions ``deltalake`` cannot read or reads otherwise). Each table ends in one of:

* ``agree``: every version both readers read holds the same rows;
* ``mismatch``: some version differs (a wrong answer: the one outcome never allowed);
* ``refused``: we refuse the table with a QbeastError (code and message reported);
* ``crash``: we fail with anything else (a bug: errors must be QbeastErrors);
* ``ours only``: no reference reads the table (``deltalake`` cannot read deletion vectors
  or v2 checkpoints; ``--delta-jvm`` asks Delta's own engine for those).

A version neither we nor the references can read (``neither reads``: its data files are
missing, as in several delta-rs tables that hold only logs) counts for nothing; our error
there must still be a QbeastError. No Spark server is needed but for ``--delta-jvm``: the
data source's reader is driven in this process.

    python -m bench.delta_corpus ROOT [--json out.json] [--delta-jvm]

The delta-rs corpus is its repository's ``crates/test/tests/data`` folder (fetch it with git
and point ROOT at that folder).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def tables_under(root: Path) -> list[Path]:
    """Every folder under ``root`` with a ``_delta_log`` (not inside another table's log)."""
    found = []
    for log in sorted(root.rglob("_delta_log")):
        if log.is_dir() and "_delta_log" not in log.parent.parts:
            found.append(log.parent)
    return found


def _norm(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    if hasattr(value, "tzinfo") and getattr(value, "tzinfo", None) is not None:
        return value.timestamp()
    return value


def row_multiset(table: Any) -> Counter[str]:
    """The rows of a pyarrow table as a multiset, columns in name order."""
    names = sorted(table.column_names)
    rows = table.select(names).to_pylist()
    return Counter(repr(tuple(_norm(row[n]) for n in names)) for row in rows)


def ours(path: Path, version: int) -> Any:
    """The rows ``format("qbeast")`` returns at ``version``, as a pyarrow table."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from server_plugin.qbeast_format import QbeastDataSource

    source = QbeastDataSource({"path": str(path), "versionAsOf": str(version)})
    schema = source.schema()
    reader = source.reader(schema)
    batches = [b for part in reader.partitions() for b in reader.read(part)]
    if not batches:
        return to_arrow_schema(schema, timezone="UTC").empty_table()
    return pa.Table.from_batches(batches)


def theirs(path: Path, version: int) -> Any:
    import deltalake

    return deltalake.DeltaTable(str(path), version=version).to_pyarrow_table()


def versions(path: Path) -> list[int]:
    """Versions named by commit files (checkpoints alone do not name a readable version)."""
    log = path / "_delta_log"
    out = set()
    for f in log.iterdir():
        stem = f.name.split(".")[0]
        if stem.isdigit() and (f.name.endswith(".json") or ".checkpoint" in f.name):
            out.add(int(stem))
    return sorted(out)


def check_table(path: Path, jvm: Any = None) -> dict[str, Any]:
    """Every version of the table at ``path``, read by us and by the references."""
    from qbeast_connect.exceptions import QbeastError

    result: dict[str, Any] = {"table": str(path), "versions": {}}
    for version in versions(path):
        entry: dict[str, Any] = {}
        mine = None
        try:
            mine = ours(path, version)
            entry["rows"] = mine.num_rows
        except QbeastError as exc:
            entry["ours"] = f"{exc.code}: {str(exc)[:300]}"
        except Exception as exc:  # a crash: reported, never hidden
            entry["ours"] = f"CRASH {type(exc).__name__}: {str(exc)[:300]}"
        reference, by = None, None
        try:
            reference, by = theirs(path, version), "deltalake"
        except Exception as exc:
            entry["deltalake"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        same = None
        if mine is not None and reference is not None:
            same = row_multiset(mine) == row_multiset(reference)
        if jvm is not None and mine is not None and not same:
            # deltalake cannot read it, or reads it otherwise: Delta's own engine decides
            try:
                reference, by = jvm(path, version), "Delta JVM"
                same = row_multiset(mine) == row_multiset(reference)
            except Exception as exc:
                entry["delta_jvm"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        if reference is not None:
            entry["reference_rows"], entry["reference"] = reference.num_rows, by
        if same is not None:
            entry["same"] = same
        entry["status"] = _status(entry, mine is not None, reference is not None)
        result["versions"][version] = entry
    statuses = [e["status"] for e in result["versions"].values()]
    for outcome in ("crash", "mismatch", "refused"):
        if outcome in statuses:
            break
    else:
        outcome = next((s for s in ("agree", "ours only") if s in statuses), "neither reads")
    result["outcome"] = outcome
    result["compared_versions"] = statuses.count("agree") + statuses.count("mismatch")
    refusals = [e["ours"] for e in result["versions"].values() if "ours" in e]
    if refusals:
        result["refusal"] = refusals[-1]
    return result


def _status(entry: dict[str, Any], read: bool, referenced: bool) -> str:
    if str(entry.get("ours", "")).startswith("CRASH"):
        return "crash"
    if read and referenced:
        return "agree" if entry.get("same") else "mismatch"
    if read:
        return "ours only"
    # we refuse: a refusal where a reference reads the version, else both fail alike
    return "refused" if referenced else "neither reads"


def delta_jvm() -> Any:
    """A reader of Delta tables by Delta's JVM (a server started with ``delta=True``)."""
    import qbeast_connect as qc

    spark = qc.session(delta=True)
    # Delta refuses time travel past the table's deleted-file retention (corpus tables are
    # years old); their files are all there, so every version is asked for
    spark.conf.set(
        "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration",
        "false",
    )

    def read(path: Path, version: int) -> Any:
        frame = spark.read.format("delta").option("versionAsOf", version).load(str(path))
        return frame.toArrow()

    return read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--delta-jvm",
        action="store_true",
        help="settle the versions deltalake cannot read (or reads otherwise) with Delta's "
        "JVM, on an embedded server started with delta=True",
    )
    args = parser.parse_args(argv)
    jvm = delta_jvm() if args.delta_jvm else None
    results = [check_table(p, jvm) for p in tables_under(args.root)]
    counts = Counter(r["outcome"] for r in results)
    for r in results:
        name = str(Path(r["table"]).relative_to(args.root))
        extra = r.get("refusal", "") if r["outcome"] in ("refused", "crash") else ""
        if r["outcome"] == "mismatch":
            extra = str([v for v, e in r["versions"].items() if e.get("same") is False])
        print(f"{r['outcome']:10} {name} ({r['compared_versions']} versions compared) {extra}")
    print(f"{len(results)} tables: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "tables": results}, indent=1))
    return 1 if counts.get("mismatch") or counts.get("crash") else 0


if __name__ == "__main__":
    sys.exit(main())
