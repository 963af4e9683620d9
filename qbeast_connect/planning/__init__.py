"""Read planning: filters as predicates, query spaces per revision, and file selection.

Pure (no pyspark at import time). Import names from their modules:
:mod:`~qbeast_connect.planning.predicate`, :mod:`~qbeast_connect.planning.query_space` and
:mod:`~qbeast_connect.planning.file_planner`.
"""
