"""Read planning: filters as predicates, query spaces per revision, and file selection.

Pure: nothing here imports pyspark, not even for type checking (translating Spark Connect
Columns is :mod:`qbeast_connect.spark.columns`). Import names from their modules:
:mod:`~qbeast_connect.planning.predicate`, :mod:`~qbeast_connect.planning.query_space` and
:mod:`~qbeast_connect.planning.file_planner`.
"""
