"""format("qbeast") writes NaN and infinities into an existing revision without widening it."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model import (
    IdentityTransformation,
    LinearTransformation,
    LinearTransformer,
    QDataType,
    Revision,
)
from server_plugin.qbeast_format import weighted_batches

DOUBLE = QDataType.DOUBLE


def _revision(t: object) -> Revision:
    return Revision(1, 0, "t", 10, (LinearTransformer("x", DOUBLE),), (t,))  # type: ignore[arg-type]


def _weighted(t: object, values: list[float | None]) -> pa.RecordBatch:
    batch = pa.RecordBatch.from_pydict({"x": pa.array(values, pa.float64())})
    (out,) = list(weighted_batches(_revision(t), "/t", [batch]))
    return out


@pytest.mark.parametrize(
    "t",
    [IdentityTransformation(5.0, DOUBLE), LinearTransformation(0.0, 10.0, 1.0, DOUBLE)],
    ids=["identity", "linear"],
)
def test_non_finite_values_fit_any_revision(t: object) -> None:
    out = _weighted(t, [5.0, math.nan, math.inf, -math.inf, None])
    assert out.num_rows == 5 and out.num_columns == 2


def test_finite_values_outside_the_revision_are_still_refused() -> None:
    with pytest.raises(InvalidOptionError, match="outside the space"):
        _weighted(IdentityTransformation(5.0, DOUBLE), [5.0, 6.0])
    with pytest.raises(InvalidOptionError, match="outside the space"):
        _weighted(LinearTransformation(0.0, 10.0, 1.0, DOUBLE), [11.0])
