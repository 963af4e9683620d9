"""Write options and delta.* table properties are validated before anything runs."""

from __future__ import annotations

import pytest

from qbeast_connect.exceptions import InvalidOptionError, UnsupportedProtocolError
from qbeast_connect.options import parse_mode, parse_write_options


def test_mode_none_is_errorifexists_and_other_types_are_refused() -> None:
    assert parse_mode(None) == "errorifexists"
    assert parse_mode(" Append ") == "append"
    with pytest.raises(InvalidOptionError, match="must be a string"):
        parse_mode(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [2**63, -1, "-5", str(2**64)])
def test_txn_version_must_fit_a_signed_64_bit_integer(version: object) -> None:
    with pytest.raises(InvalidOptionError, match="between 0 and 2\\*\\*63-1"):
        parse_write_options({"txnAppId": "a", "txnVersion": version})


def test_txn_version_bounds_are_accepted() -> None:
    for version in (0, 2**63 - 1):
        assert parse_write_options({"txnAppId": "a", "txnVersion": version}).txn_version == (
            version
        )


def test_column_stats_dict_becomes_json() -> None:
    options = parse_write_options({"columnStats": {"x_min": 0, "x_max": 1.5}})
    assert options.column_stats == '{"x_min": 0, "x_max": 1.5}'
    with pytest.raises(InvalidOptionError, match="JSON values"):
        parse_write_options({"columnStats": {"x_min": float("nan")}})
    with pytest.raises(InvalidOptionError, match="JSON string or a dict"):
        parse_write_options({"columnStats": 5})


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("delta.checkpointInterval", "0", InvalidOptionError),
        ("delta.checkpointinterval", "-1", InvalidOptionError),
        ("delta.checkpointInterval", "ten", InvalidOptionError),
        ("delta.logRetentionDuration", "30 fortnights", InvalidOptionError),
        ("delta.deletedFileRetentionDuration", "interval -1 days", InvalidOptionError),
        ("delta.setTransactionRetentionDuration", "", InvalidOptionError),
        ("delta.dataSkippingNumIndexedCols", "-2", InvalidOptionError),
        ("delta.appendOnly", "yes please", InvalidOptionError),
        ("delta.enableChangeDataFeed", "TRUE", UnsupportedProtocolError),
        ("delta.enableRowTracking", "true", UnsupportedProtocolError),
        ("delta.enableInCommitTimestamps", "true", UnsupportedProtocolError),
        ("delta.columnMapping.mode", "name", UnsupportedProtocolError),
        ("delta.feature.deletionVectors", "supported", UnsupportedProtocolError),
    ],
)
def test_bad_delta_properties_are_refused(key: str, value: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_write_options({key: value})


def test_good_delta_properties_get_canonical_keys() -> None:
    options = parse_write_options(
        {
            "delta.checkpointinterval": " 5 ",
            "delta.enableDeletionVectors": True,
            "delta.logRetentionDuration": "interval 2 days",
            "delta.custom.Thing": " kept as given ",
        }
    )
    assert dict(options.table_properties) == {
        "delta.checkpointInterval": "5",
        "delta.enableDeletionVectors": "true",
        "delta.logRetentionDuration": "interval 2 days",
        "delta.custom.Thing": " kept as given ",
    }
