"""Code that runs inside the Spark Connect server: the Delta log and the qbeast data sources."""
