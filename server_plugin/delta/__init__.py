"""The Delta Lake transaction log, implemented in Python (protocol reader 1 / writer 2).

Modules, lowest first (import names from the module that defines them; a module imports
only the ones above it, and ``qbeast_connect`` core):

- ``uris``: physical paths, log paths (percent-encoded) and replay keys.
- ``faults``: crash injection for the reliability tests (``QBEAST_CRASH_AT``).
- ``storage``: the ``Storage`` interface with atomic put-if-absent (``storage.base``), its
  local (``storage.local``) and S3 (``storage.s3``) implementations, and ``storage_for``.
- ``properties``: the ``delta.*`` table properties used here, with their defaults.
- ``actions``: frozen action dataclasses and the commit-file JSON codec.
- ``schema``: pyarrow schema <-> Delta ``schemaString``.
- ``file_stats``: per-file ``stats`` JSON from Arrow data.
- ``protocol``: supported versions/features; read and write gates.
- ``conflicts``: pure optimistic-concurrency conflict checks.
- ``log_files``: the names of the files in ``_delta_log`` and the ``_last_checkpoint``
  pointer (read and write).
- ``snapshot``: ``DeltaSnapshot``, the state of the table at one version.
- ``checkpoint``: write classic checkpoints, read classic and multi-part ones.
- ``log_reader``: listing and replay (from a checkpoint) into a ``DeltaSnapshot``;
  history; time travel.
- ``committer``: ``commit()`` with put-if-absent, conflict checks and retries.
"""
