"""The write rules both writers share: ``qbeast_connect.write`` and ``format("qbeast")``.

Pure functions over plain values (schema JSON, option dicts, revisions), one module per
concept, so the client writer and the server's one-pass writer cannot drift apart:

* :mod:`~qbeast_connect.rules.schema`: Spark type names, the schema a write commits;
* :mod:`~qbeast_connect.rules.columns`: column-name checks, the indexed columns and types;
* :mod:`~qbeast_connect.rules.table_config`: the table configuration a write commits;
* :mod:`~qbeast_connect.rules.table_properties`: the ``delta.*`` properties a write may set.
"""
