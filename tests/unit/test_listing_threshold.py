"""A read of many table files asks the session to check them on the driver (no listing job)."""

from __future__ import annotations

from typing import Any

from qbeast_connect.spark import files


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.gets = 0

    def get(self, key: str) -> str | None:
        self.gets += 1
        return self.values.get(key, "32")

    def set(self, key: str, value: str) -> None:
        self.values[key] = value


class _Session:
    def __init__(self, **values: str) -> None:
        self.conf = _Conf(dict(values))


def _threshold(spark: Any) -> str | None:
    return spark.conf.values.get(files.LISTING_THRESHOLD_CONF)


def test_read_of_many_local_files_raises_the_listing_threshold_once() -> None:
    spark = _Session()
    assert files.check_paths_on_driver(spark, "/data/t", 33)
    assert _threshold(spark) == str(files.DRIVER_LISTING_PATHS)
    assert files.check_paths_on_driver(spark, "file:///data/t", 5_000)
    assert spark.conf.gets == 1  # the session's setting is read once


def test_read_of_few_files_leaves_the_session_alone() -> None:
    spark = _Session()
    assert files.check_paths_on_driver(spark, "/data/t", 32)
    assert _threshold(spark) is None and spark.conf.gets == 0


def test_object_store_reads_keep_sparks_listing_job() -> None:
    spark = _Session()
    assert not files.check_paths_on_driver(spark, "s3a://bucket/t", 500)
    assert _threshold(spark) is None and spark.conf.gets == 0


def test_a_higher_threshold_of_the_session_is_kept() -> None:
    spark = _Session(**{files.LISTING_THRESHOLD_CONF: "1000000"})
    assert files.check_paths_on_driver(spark, "hdfs://nn/t", 200_000)
    assert _threshold(spark) == "1000000"
