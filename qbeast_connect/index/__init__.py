"""Vectorized (numpy / Arrow) index algorithms used inside Spark Python workers.

* :mod:`.hashing_np` - Scala 2.12 ``bytesHash`` and Spark ``hash()`` over Arrow arrays.
* :mod:`.normalize` - transformations of Arrow columns to points in ``[0, 1]^d``.
* :mod:`.cubes` - integer cube coordinates, packed keys and the cube string codec.
* :mod:`.estimation` - local OTrees and cube domains (``DomainEstimator``).
* :mod:`.assignment` - row -> cube assignment and block summaries.
* :mod:`.layout` - estimated per-cube counts and the layout of rows into files (weight
  bands, then runs of cubes).

Submodules are imported explicitly (nothing is re-exported here) to keep imports light.
"""
