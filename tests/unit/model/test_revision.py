"""Revision JSON, staging revision, revision planning, columnStats (spec §1.2, §1.3, §4.7, §4.8)."""

from __future__ import annotations

import json
import random

import pytest

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError, RevisionConflictError
from qbeast_connect.model.column_spec import ColumnSpec, parse_columns_to_index
from qbeast_connect.model.hashing import to_float32
from qbeast_connect.model.revision import (
    DEFAULT_CUBE_SIZE,
    Revision,
    empty_table_revision,
    parse_column_stats,
    plan_revision,
    staging_revision,
)
from qbeast_connect.model.transformation import (
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    ColumnStats,
    EmptyTransformation,
    EmptyTransformer,
    HashTransformation,
    HashTransformer,
    IdentityTransformation,
    LinearTransformation,
    LinearTransformer,
    QDataType,
)

P = "io.qbeast.core.transform."
INT, STRING, DOUBLE = QDataType.INTEGER, QDataType.STRING, QDataType.DOUBLE
TYPES = {"id": "IntegerDataType", "name": "StringDataType"}
TABLE = "/tmp/t"
SPECS = parse_columns_to_index("id,name")


def rng() -> random.Random:
    return random.Random(7)


# ---- JSON --------------------------------------------------------------------------------------


def test_fixture_revisions_round_trip_byte_identical(configuration: dict[str, str]) -> None:
    keys = [k for k in configuration if k.startswith("qbeast.revision")]
    assert sorted(keys) == ["qbeast.revision.0", "qbeast.revision.1"]
    for key in keys:
        text = configuration[key]
        assert Revision.from_json(text).to_json() == text


def test_fixture_revisions_content(configuration: dict[str, str]) -> None:
    rev0 = Revision.from_json(configuration["qbeast.revision.0"])
    rev1 = Revision.from_json(configuration["qbeast.revision.1"])
    assert rev0.is_staging and not rev1.is_staging
    assert rev0.timestamp == 1726222122374 == rev1.timestamp - 1
    assert rev0.column_transformers == (EmptyTransformer("id"), EmptyTransformer("name"))
    assert rev0.transformations == (EmptyTransformation(), EmptyTransformation())
    assert rev1.revision_id == 1 and rev1.desired_cube_size == 500000
    assert rev1.column_transformers == (
        LinearTransformer("id", INT),
        HashTransformer("name", STRING),
    )
    assert rev1.transformations == (
        LinearTransformation(1, 4000000, 2836883, INT),
        HashTransformation(-1628776639),
    )
    assert rev1.column_names == ("id", "name")
    assert rev1.dimension_count == 2
    assert rev1.columns_to_index == "id:linear,name:hashing"
    assert rev1.transform_point([2000000, "qbeast"]) == (0.49999987499996873, 0.8343347775909746)
    assert rev1.cube("wQ").to_string() == "wQ"


SPEC_STAGING = (
    '{"revisionID":0,"timestamp":1726222122374,"tableID":"/…/big_fake_table","desiredCubeSize":500000,'
    f'"columnTransformers":[{{"className":"{P}EmptyTransformer","columnName":"id"}},'
    f'{{"className":"{P}EmptyTransformer","columnName":"name"}}],'
    f'"transformations":[{{"className":"{P}EmptyTransformation"}},{{"className":"{P}EmptyTransformation"}}]}}'
)

ROUND_TRIP = [
    ("spec-staging-example", SPEC_STAGING),
    (
        "empty-table-revision-0",
        '{"revisionID":0,"timestamp":5,"tableID":"s3://b/t","desiredCubeSize":5000000,'
        f'"columnTransformers":[{{"className":"{P}LinearTransformer","columnName":"a","dataType":"DoubleDataType"}}],'
        '"transformations":[]}',
    ),
    (
        "doubles-and-unicode",
        '{"revisionID":3,"timestamp":1700000000000,"tableID":"/tmp/tablé \\"q\\"",'
        '"desiredCubeSize":100,'
        f'"columnTransformers":[{{"className":"{P}LinearTransformer","columnName":"x","dataType":"DoubleDataType"}},'
        f'{{"className":"{P}CDFStringQuantilesTransformer","columnName":"s"}}],'
        f'"transformations":[{{"className":"{P}LinearTransformation","minNumber":-1.0E-5,"maxNumber":1.0E7,'
        '"nullValue":42.25,"orderedDataType":"DoubleDataType"},'
        f'{{"className":"{P}CDFStringQuantilesTransformation","quantiles":["a","ñ","z"]}}]}}',
    ),
]


@pytest.mark.parametrize("text", [t for _, t in ROUND_TRIP], ids=[i for i, _ in ROUND_TRIP])
def test_revision_round_trip(text: str) -> None:
    assert Revision.from_json(text).to_json() == text


def test_unknown_fields_ignored(configuration: dict[str, str]) -> None:
    obj = json.loads(configuration["qbeast.revision.1"])
    obj["somethingNew"] = {"a": [1, 2]}
    obj["columnTransformers"][0]["extra"] = 1
    assert Revision.from_json(json.dumps(obj)).to_json() == configuration["qbeast.revision.1"]


def test_empty_table_revision_is_not_staging() -> None:
    rev = Revision.from_json(ROUND_TRIP[1][1])
    assert not rev.is_staging and rev.transformations == ()
    with pytest.raises(InvalidOptionError, match="no transformations"):
        rev.transform_point([1.0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "cannot parse revision JSON"),
        ("[]", "must be an object"),
        (
            '{"revisionID":"1","timestamp":1,"tableID":"t","desiredCubeSize":1,"columnTransformers":[]}',
            "revisionID",
        ),
        (
            '{"revisionID":1,"timestamp":1,"tableID":2,"desiredCubeSize":1,"columnTransformers":[]}',
            "tableID",
        ),
        ('{"revisionID":1,"timestamp":1,"tableID":"t","desiredCubeSize":1}', "columnTransformers"),
        (
            '{"revisionID":1,"timestamp":1,"tableID":"t","desiredCubeSize":1,"columnTransformers":[]}',
            "at least one",
        ),
        (
            '{"revisionID":1,"timestamp":1,"tableID":"t","desiredCubeSize":0,'
            f'"columnTransformers":[{{"className":"{P}EmptyTransformer","columnName":"a"}}]}}',
            "desired cube size",
        ),
        (
            '{"revisionID":1,"timestamp":1,"tableID":"t","desiredCubeSize":1,'
            f'"columnTransformers":[{{"className":"{P}EmptyTransformer","columnName":"a"}}],'
            f'"transformations":[{{"className":"{P}EmptyTransformation"}},{{"className":"{P}EmptyTransformation"}}]}}',
            "2 transformations",
        ),
        ('{"revisionID":1,"timestamp":NaN,"tableID":"t"}', "cannot parse"),
    ],
    ids=[
        "not-json",
        "array",
        "id-string",
        "table-id-number",
        "no-transformers",
        "zero-transformers",
        "cube-size-zero",
        "length-mismatch",
        "nan",
    ],
)
def test_revision_json_errors(text: str, message: str) -> None:
    with pytest.raises(MetadataFormatError, match=message):
        Revision.from_json(text)


def test_staging_revision() -> None:
    rev = staging_revision("/t", 500000, ["id", "name"], 1726222122374)
    assert rev.is_staging
    assert Revision.staging_revision("/t", 500000, ["id", "name"], 1726222122374) == rev
    assert rev.to_json() == SPEC_STAGING.replace("/…/big_fake_table", "/t")


def test_float_revision_json_uses_java_text() -> None:
    rev = Revision(
        2,
        1,
        "t",
        10,
        (LinearTransformer("f", QDataType.FLOAT),),
        (LinearTransformation(to_float32(0.1), 1e10, 2.5, QDataType.FLOAT),),
    )
    assert '"minNumber":0.1,"maxNumber":1.0E10,"nullValue":2.5' in rev.to_json()
    assert Revision.from_json(rev.to_json()) == rev


# ---- plan_revision -----------------------------------------------------------------------------


def first_write(**kwargs: object) -> Revision:
    plan = plan_revision(
        None,
        SPECS,
        TYPES,
        {"id": ColumnStats(1, 4000000)},
        {},
        kwargs.get("cube_size"),
        TABLE,
        1000,
        rng(),  # type: ignore[arg-type]
    )
    return plan.revision


def test_first_write() -> None:
    plan = plan_revision(
        None, SPECS, TYPES, {"id": ColumnStats(1, 4000000)}, {}, None, TABLE, 1000, rng()
    )
    assert plan.is_new
    rev = plan.revision
    assert (rev.revision_id, rev.timestamp, rev.table_id, rev.desired_cube_size) == (
        1,
        1000,
        TABLE,
        DEFAULT_CUBE_SIZE,
    )
    assert rev.column_transformers == (
        LinearTransformer("id", INT),
        HashTransformer("name", STRING),
    )
    lin, hsh = rev.transformations
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (
        1,
        4000000,
    )
    assert 1 <= lin.null_value < 4000000
    assert isinstance(hsh, HashTransformation) and isinstance(hsh.null_value, int)
    assert plan.staging == staging_revision(TABLE, DEFAULT_CUBE_SIZE, ["id", "name"], 999)


def test_first_write_cube_size_and_user_stats_widen() -> None:
    plan = plan_revision(
        None,
        SPECS,
        TYPES,
        {"id": ColumnStats(10, 20)},
        {"id": ColumnStats(0, 100)},
        500000,
        TABLE,
        1,
        rng(),
    )
    assert plan.revision.desired_cube_size == 500000
    lin = plan.revision.transformations[0]
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (0, 100)


def test_first_write_user_stats_never_shrink() -> None:
    plan = plan_revision(
        None,
        SPECS,
        TYPES,
        {"id": ColumnStats(-5, 20)},
        {"id": ColumnStats(0, 10)},
        None,
        TABLE,
        1,
        rng(),
    )
    lin = plan.revision.transformations[0]
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (-5, 20)


def test_first_write_quantiles() -> None:
    specs = parse_columns_to_index("id:quantiles")
    with pytest.raises(
        InvalidOptionError, match=r"Empty transformation for column 'id'.*id_quantiles"
    ):
        plan_revision(None, specs, TYPES, {}, {}, None, TABLE, 1, rng())
    plan = plan_revision(
        None, specs, TYPES, {}, {"id": ColumnStats(quantiles=(0, 5, 10))}, None, TABLE, 1, rng()
    )
    assert plan.revision.transformations == (
        CDFNumericQuantilesTransformation((0.0, 5.0, 10.0), INT),
    )
    assert plan.revision.column_transformers == (CDFNumericQuantilesTransformer("id", INT),)


@pytest.mark.parametrize(
    ("specs", "types", "cube_size", "message"),
    [
        ((), TYPES, None, "columnsToIndex is required"),
        (parse_columns_to_index("nope"), TYPES, None, "'nope' to index is not in the data"),
        (parse_columns_to_index("name:linear"), TYPES, None, "cannot use 'linear'"),
        (SPECS, TYPES, 0, "cubeSize must be an integer"),
        (SPECS, TYPES, 2**31, "cubeSize must be an integer"),
    ],
    ids=["no-columns", "unknown-column", "misfit", "cube-size-zero", "cube-size-overflow"],
)
def test_first_write_errors(
    specs: tuple[ColumnSpec, ...], types: dict[str, str], cube_size: int | None, message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        plan_revision(None, specs, types, {"id": ColumnStats(1, 2)}, {}, cube_size, TABLE, 1, rng())


def test_append_reuses_latest_when_nothing_changes() -> None:
    latest = first_write()
    for stats in (
        {"id": ColumnStats(1, 4000000)},
        {"id": ColumnStats(5, 50)},
        {},
        {"id": ColumnStats(7, 7)},
    ):
        plan = plan_revision(latest, SPECS, TYPES, stats, {}, None, TABLE, 2000, rng())
        assert plan.revision is latest and not plan.is_new and plan.staging is None
    plan = plan_revision(
        latest,
        (),
        TYPES,
        {"id": ColumnStats(2, 3)},
        {},
        latest.desired_cube_size,
        TABLE,
        2000,
        rng(),
    )
    assert plan.revision is latest


def test_append_wider_range_creates_next_revision() -> None:
    latest = first_write()
    plan = plan_revision(
        latest, SPECS, TYPES, {"id": ColumnStats(0, 5000000)}, {}, None, "/other", 2000, rng()
    )
    assert plan.is_new and plan.staging is None
    rev = plan.revision
    assert (rev.revision_id, rev.timestamp, rev.table_id) == (2, 2000, "/other")
    lin = rev.transformations[0]
    # the union [0, 5000000] grew on both sides: one more span of headroom above, where
    # the data went a quarter of the old span past it; none below, where it found a new
    # extreme one unit past the old one (model.headroom)
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (
        0,
        10000000,
    )
    assert rev.transformations[1] is latest.transformations[1]  # hash never changes
    # an identity outside the range also widens it (upward only: headroom above)
    plan = plan_revision(
        latest, SPECS, TYPES, {"id": ColumnStats(9000000, 9000000)}, {}, None, TABLE, 3, rng()
    )
    lin = plan.revision.transformations[0]
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (
        1,
        1 + 2 * (9000000 - 1),
    )


def test_append_cube_size_change_creates_revision() -> None:
    latest = first_write()
    plan = plan_revision(latest, SPECS, TYPES, {}, {}, 1000, TABLE, 2000, rng())
    assert plan.is_new and plan.revision.desired_cube_size == 1000
    assert plan.revision.transformations == latest.transformations


def test_append_column_mismatch_is_a_conflict() -> None:
    latest = first_write()
    with pytest.raises(
        RevisionConflictError, match=r"indexed on \(id, name\).*asked for \(name, id\)"
    ):
        plan_revision(
            latest, parse_columns_to_index("name,id"), TYPES, {}, {}, None, TABLE, 1, rng()
        )
    with pytest.raises(RevisionConflictError, match=r"asked for \(id\)"):
        plan_revision(latest, parse_columns_to_index("id"), TYPES, {}, {}, None, TABLE, 1, rng())
    plan = plan_revision(
        latest, parse_columns_to_index("ID,Name"), TYPES, {}, {}, None, TABLE, 1, rng()
    )
    assert plan.revision is latest


def test_append_transformer_change() -> None:
    latest = first_write()
    plan = plan_revision(
        latest, parse_columns_to_index("id:hashing,name"), TYPES, {}, {}, None, TABLE, 5, rng()
    )
    assert plan.is_new and plan.revision.revision_id == 2
    assert plan.revision.column_transformers[0] == HashTransformer("id", INT)
    assert isinstance(plan.revision.transformations[0], HashTransformation)
    # the same type in another case is not a change (the reference would create a revision)
    plan = plan_revision(
        latest, parse_columns_to_index("id:LINEAR,name:hash"), TYPES, {}, {}, None, TABLE, 5, rng()
    )
    assert plan.revision is latest


def test_append_change_to_quantiles_needs_stats() -> None:
    latest = first_write()
    specs = parse_columns_to_index("id:quantiles,name")
    with pytest.raises(InvalidOptionError, match="Empty transformation for column 'id'"):
        plan_revision(latest, specs, TYPES, {"id": ColumnStats(1, 2)}, {}, None, TABLE, 5, rng())
    plan = plan_revision(
        latest, specs, TYPES, {}, {"id": ColumnStats(quantiles=(1, 9))}, None, TABLE, 5, rng()
    )
    assert plan.revision.transformations[0] == CDFNumericQuantilesTransformation((1.0, 9.0), INT)


def test_append_keeps_cdf_without_quantiles() -> None:
    specs = parse_columns_to_index("id:quantiles")
    latest = plan_revision(
        None, specs, TYPES, {}, {"id": ColumnStats(quantiles=(0, 10))}, None, TABLE, 1, rng()
    ).revision
    assert plan_revision(latest, (), TYPES, {}, {}, None, TABLE, 2, rng()).revision is latest
    changed = plan_revision(
        latest, (), TYPES, {}, {"id": ColumnStats(quantiles=(0, 20))}, None, TABLE, 2, rng()
    )
    assert changed.is_new and changed.revision.transformations[
        0
    ] == CDFNumericQuantilesTransformation((0.0, 20.0), INT)


def test_append_to_staging_revision() -> None:
    latest = staging_revision(TABLE, 100, ["id", "name"], 1)
    plan = plan_revision(latest, (), TYPES, {"id": ColumnStats(3, 9)}, {}, None, TABLE, 50, rng())
    assert plan.is_new and plan.staging is None
    rev = plan.revision
    assert rev.revision_id == 1 and rev.desired_cube_size == 100
    assert rev.column_transformers == (
        LinearTransformer("id", INT),
        HashTransformer("name", STRING),
    )
    assert isinstance(rev.transformations[0], LinearTransformation)


def test_append_to_empty_table_revision() -> None:
    latest = empty_table_revision(SPECS, TYPES, 1000, TABLE, 1)
    assert latest.revision_id == 0 and latest.transformations == () and not latest.is_staging
    plan = plan_revision(latest, (), TYPES, {"id": ColumnStats(5, 5)}, {}, None, TABLE, 9, rng())
    assert plan.is_new and plan.staging is None and plan.revision.revision_id == 1
    assert plan.revision.transformations[0] == IdentityTransformation(5, INT)


def test_append_identity_becomes_linear() -> None:
    latest = plan_revision(
        None, SPECS, TYPES, {"id": ColumnStats(5, 5)}, {}, None, TABLE, 1, rng()
    ).revision
    assert latest.transformations[0] == IdentityTransformation(5, INT)
    assert (
        plan_revision(
            latest, (), TYPES, {"id": ColumnStats(5, 5)}, {}, None, TABLE, 2, rng()
        ).revision
        is latest
    )
    plan = plan_revision(latest, (), TYPES, {"id": ColumnStats(1, 9)}, {}, None, TABLE, 2, rng())
    lin = plan.revision.transformations[0]
    # [1, 9] grew beyond 5 both ways: one span of headroom on each side
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (-7, 17)


# ---- columnStats -------------------------------------------------------------------------------

COLUMNS = {
    "a": "IntegerDataType",
    "b": "DoubleDataType",
    "c": "StringDataType",
    "t": "TimestampDataType",
    "d": "DateDataType",
    "f": "FloatDataType",
    "m": "DecimalDataType",
}


def test_column_stats_spec_example() -> None:
    text = '{"a_min":0,"a_max":10,"b_min":20.0,"b_max":70.0,"c_quantiles":["x","y","z"]}'
    assert parse_column_stats(text, COLUMNS) == {
        "a": ColumnStats(0, 10),
        "b": ColumnStats(20.0, 70.0),
        "c": ColumnStats(quantiles=("x", "y", "z")),
    }


STATS_CASES = [
    ("none", None, {}),
    ("blank", "  ", {}),
    ("empty-object", "{}", {}),
    ("int-bounds-for-double", '{"b_min":1,"b_max":2}', {"b": ColumnStats(1.0, 2.0)}),
    (
        "timestamp",
        '{"t_min":"2024-01-15 10:30:00.000000Z","t_max":"2024-01-15 10:30:00.001999Z"}',
        {"t": ColumnStats(1705314600000, 1705314600001)},
    ),
    (
        "date",
        '{"d_min":"1970-01-01","d_max":"2024-01-15"}',
        {"d": ColumnStats(0, 19737 * 86_400_000)},
    ),
    ("float", '{"f_min":0.1,"f_max":0.2}', {"f": ColumnStats(to_float32(0.1), to_float32(0.2))}),
    ("decimal-string", '{"m_min":"1.5","m_max":2}', {"m": ColumnStats(1.5, 2.0)}),
    ("numeric-quantiles", '{"a_quantiles":[1,5,5,9]}', {"a": ColumnStats(quantiles=(1, 5, 5, 9))}),
    (
        "timestamp-quantiles",
        '{"t_quantiles":["1970-01-01 00:00:00.000000Z","1970-01-01 00:00:01.000000Z"]}',
        {"t": ColumnStats(quantiles=(0, 1000))},
    ),
    ("histogram", '{"c_histogram":["a","m"]}', {"c": ColumnStats(histogram=("a", "m"))}),
    ("case-insensitive-column", '{"A_min":0,"A_max":1}', {"a": ColumnStats(0, 1)}),
    (
        "null-means-missing",
        '{"a_min":null,"a_max":null,"b_min":0,"b_max":1}',
        {"b": ColumnStats(0.0, 1.0)},
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in STATS_CASES], ids=[c[0] for c in STATS_CASES]
)
def test_parse_column_stats(text: str | None, expected: dict[str, ColumnStats]) -> None:
    assert parse_column_stats(text, COLUMNS) == expected


STATS_ERRORS = [
    ("malformed", '{"a_min":', "not valid JSON"),
    ("nan-literal", '{"b_min":NaN,"b_max":1}', "not valid JSON"),
    ("not-object", "[1,2]", "must be a JSON object"),
    ("unknown-key", '{"a_mean":1}', "unknown columnStats key 'a_mean'"),
    ("unknown-column", '{"z_min":1,"z_max":2}', "unknown columnStats key 'z_min'"),
    ("only-min", '{"a_min":1}', "only one bound of column 'a'; add a_max"),
    ("only-max", '{"a_max":1}', "add a_min"),
    ("min-above-max", '{"a_min":5,"a_max":1}', "must be less than max"),
    ("min-equals-max", '{"a_min":5,"a_max":5}', "must be less than max"),
    ("float-for-int", '{"a_min":0.5,"a_max":1}', "expected an integer"),
    ("int-overflow", '{"a_min":0,"a_max":3000000000}', "outside the range"),
    ("string-for-double", '{"b_min":"x","b_max":1}', "expected a number"),
    (
        "bad-timestamp",
        '{"t_min":"2024/01/15","t_max":"2024-01-16 00:00:00.000000Z"}',
        "not a timestamp",
    ),
    ("bad-date", '{"d_min":"2024-13-01","d_max":"2024-12-01"}', "invalid date"),
    ("one-quantile", '{"a_quantiles":[1]}', "at least 2 values"),
    ("unsorted-quantiles", '{"a_quantiles":[3,1,2]}', "sorted ascending"),
    ("min-on-string", '{"c_min":"a","c_max":"z"}', "takes no min/max"),
    ("histogram-on-number", '{"a_histogram":["a"]}', "only apply to string"),
    ("all-null", '{"a_min":null}', "every value is null"),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in STATS_ERRORS], ids=[c[0] for c in STATS_ERRORS]
)
def test_parse_column_stats_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        parse_column_stats(text, COLUMNS)


def test_column_stats_feed_plan_revision() -> None:
    stats = parse_column_stats('{"id_min":-10,"id_max":10}', {"id": "IntegerDataType"})
    plan = plan_revision(
        None, SPECS, TYPES, {"id": ColumnStats(0, 5)}, stats, None, TABLE, 1, rng()
    )
    lin = plan.revision.transformations[0]
    assert isinstance(lin, LinearTransformation) and (lin.min_number, lin.max_number) == (-10, 10)


def test_spark_type_names_are_accepted() -> None:
    stats = parse_column_stats(
        '{"a_min":0,"a_max":9,'
        '"t_min":"1970-01-01 00:00:01.000000Z","t_max":"1970-01-02 00:00:00Z"}',
        {"a": "integer", "t": "timestamp"},
    )
    assert stats == {"a": ColumnStats(0, 9), "t": ColumnStats(1000, 86_400_000)}
    plan = plan_revision(
        None,
        SPECS,
        {"id": "int", "name": "string"},
        {"id": ColumnStats(1, 2)},
        {},
        None,
        TABLE,
        1,
        rng(),
    )
    assert plan.revision.column_transformers[1] == HashTransformer("name", STRING)
    with pytest.raises(InvalidOptionError, match="'a' to index is not in the data"):
        parse_column_stats('{"a_min":0,"a_max":9}', {"a": ""})
    with pytest.raises(InvalidOptionError, match="cannot be indexed"):
        parse_column_stats('{"a_min":0,"a_max":9}', {"a": "binary"})
