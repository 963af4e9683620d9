"""The Delta Lake transaction log, implemented in Python (protocol reader 1 / writer 2).

Modules (import names from the module that defines them):

- ``uris``: physical paths, log paths (percent-encoded) and replay keys.
- ``faults``: crash injection for the reliability tests (``QBEAST_CRASH_AT``).
- ``storage``: the ``Storage`` interface with atomic put-if-absent (``storage.base``), its
  local (``storage.local``) and S3 (``storage.s3``) implementations, and ``storage_for``.
- ``actions``: frozen action dataclasses and the commit-file JSON codec.
- ``schema``: pyarrow schema <-> Delta ``schemaString``.
- ``file_stats``: per-file ``stats`` JSON from Arrow data.
- ``protocol``: supported versions/features; read and write gates.
- ``log_reader``: listing and replay into a ``DeltaSnapshot``; history; time travel.
- ``checkpoint``: classic checkpoints and ``_last_checkpoint``.
- ``conflicts``: pure optimistic-concurrency conflict checks.
- ``committer``: ``commit()`` with put-if-absent, conflict checks and retries.
- ``properties``: the ``delta.*`` table properties used here, with their defaults.
"""
