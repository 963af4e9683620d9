"""query_space: predicates mapped through a revision's transformations (spec §6.3)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pytest

from qbeast_connect.exceptions import InvalidOptionError
from qbeast_connect.model import (
    CDFNumericQuantilesTransformation,
    CDFNumericQuantilesTransformer,
    CDFStringQuantilesTransformation,
    CDFStringQuantilesTransformer,
    CubeId,
    HashTransformation,
    HashTransformer,
    IdentityTransformation,
    LinearTransformation,
    LinearTransformer,
    QbeastSnapshot,
    QDataType,
    Revision,
)
from qbeast_connect.planning.predicate import FALSE, TRUE, Opaque, Predicate, from_sql
from qbeast_connect.planning.query_space import (
    ALL_SPACE,
    EMPTY_SPACE,
    EPSILON,
    Box,
    Boxes,
    QuerySpace,
    query_space,
)

from ._helpers import fixture_log, make_revision

UTC = dt.UTC
ID_MAX = 4_000_000
ID_SCALE = 1.0 / (ID_MAX - 1)
QBEAST = 0.8343347775909746  # HashTransformation("qbeast"), spec vector T13
A = 0.9137243399926109  # HashTransformation("a")
NAME_NULL = 0.7649340288550286  # HashTransformation(-1628776639): the fixture's name nullValue
ID_NULL = (2836883 - 1) * ID_SCALE  # the fixture's id nullValue


def t_id(v: float) -> float:
    return (v - 1) * ID_SCALE


@pytest.fixture(scope="module")
def revision() -> Revision:
    configuration, adds = fixture_log()
    return QbeastSnapshot.from_delta(configuration, adds, 1).revision(1)


def space(revision: Revision, sql: str) -> QuerySpace:
    return query_space(revision, from_sql(sql))


def one_box(s: QuerySpace) -> Box:
    assert isinstance(s, Boxes), s
    assert len(s.boxes) == 1, s
    return s.boxes[0]


CASES: list[tuple[str, QuerySpace | Box]] = [
    ("id < 100", Box((None, None), (t_id(100), None))),
    ("id <= 100", Box((None, None), (t_id(100), None))),
    ("100 > id", Box((None, None), (t_id(100), None))),
    ("ID < 100", Box((None, None), (t_id(100), None))),
    ("id > 100", Box((t_id(100), None), (None, None))),
    ("id BETWEEN 100 AND 200", Box((t_id(100), None), (t_id(200), None))),
    ("id > 100 AND id < 200 AND id >= 150", Box((t_id(150), None), (t_id(200), None))),
    ("id = 2000000", Box((t_id(2000000), None), (t_id(2000000), None))),
    ("id IN (1000, 5, 70)", Box((t_id(5), None), (t_id(1000), None))),
    ("id IN (1000, NULL, 5)", Box((t_id(5), None), (t_id(1000), None))),
    ("id < 100.5", Box((None, None), (t_id(100.5), None))),
    ("id < 1e2", Box((None, None), (t_id(100), None))),
    ("id <= 1", Box((None, None), (0.0, None))),
    ("id IS NULL", Box((ID_NULL, None), (ID_NULL, None))),
    ("name = 'qbeast'", Box((None, QBEAST), (None, QBEAST), (None, (QBEAST,)))),
    ("name IN ('qbeast', 'a')", Box((None, QBEAST), (None, A), (None, (QBEAST, A)))),
    ("name IN ('qbeast', 'a') AND name = 'a'", Box((None, A), (None, A), (None, (A,)))),
    ("name IS NULL", Box((None, NAME_NULL), (None, NAME_NULL), (None, (NAME_NULL,)))),
    (
        "id < 100 AND name = 'a'",
        Box((None, A), (t_id(100), A), (None, (A,))),
    ),
    # ranges on a hash dimension do not restrict it (the reference bug is avoided)
    ("id < 100 AND name > 'x'", Box((None, None), (t_id(100), None))),
    ("id < 100 AND name BETWEEN 'a' AND 'b'", Box((None, None), (t_id(100), None))),
    # no restriction at all
    ("name > 'x'", ALL_SPACE),
    ("name <> 'x'", ALL_SPACE),
    ("age < 30", ALL_SPACE),
    ("id >= 1", ALL_SPACE),
    ("id <= 4000000", ALL_SPACE),
    ("id > -5", ALL_SPACE),
    ("id < 'abc'", ALL_SPACE),
    ("id < DATE '2024-01-01'", ALL_SPACE),
    ("name = 5", ALL_SPACE),
    ("id NOT IN (1, 2)", ALL_SPACE),
    ("lower(name) = 'a'", ALL_SPACE),
    ("id IS NOT NULL", ALL_SPACE),
    ("id < 100 OR age > 3", ALL_SPACE),
    ("TRUE", ALL_SPACE),
    # nothing can match
    ("id > 4000001", EMPTY_SPACE),
    ("id < 0", EMPTY_SPACE),
    ("id > 200 AND id < 100", EMPTY_SPACE),
    ("id = NULL", EMPTY_SPACE),
    ("id IN (NULL)", EMPTY_SPACE),
    ("name = 'qbeast' AND name = 'a'", EMPTY_SPACE),
    ("FALSE", EMPTY_SPACE),
    ("id > 5000000 OR id < -3", EMPTY_SPACE),
]


@pytest.mark.parametrize(("sql", "expected"), CASES, ids=[c[0] for c in CASES])
def test_fixture_revision_spaces(revision: Revision, sql: str, expected: QuerySpace | Box) -> None:
    got = space(revision, sql)
    if isinstance(expected, Box):
        assert one_box(got) == expected
    else:
        assert got == expected


def test_or_gives_one_box_per_disjunct(revision: Revision) -> None:
    got = space(revision, "id < 100 OR id > 3999900 OR name = 'a'")
    assert isinstance(got, Boxes)
    assert set(got.boxes) == {
        Box((None, None), (t_id(100), None)),
        Box((t_id(3999900), None), (None, None)),
        Box((None, A), (None, A), (None, (A,))),
    }


def test_boxes_inside_another_are_dropped(revision: Revision) -> None:
    got = space(revision, "id < 100 OR id < 50 OR (id < 10 AND name = 'a')")
    assert one_box(got) == Box((None, None), (t_id(100), None))
    assert one_box(space(revision, "id < 100 OR id < 100")) == Box((None, None), (t_id(100), None))


def test_no_predicate_and_constants(revision: Revision) -> None:
    assert query_space(revision, None) is ALL_SPACE
    assert query_space(revision, TRUE) is ALL_SPACE
    assert query_space(revision, FALSE) is EMPTY_SPACE
    assert query_space(revision, Opaque("f(x)")) is ALL_SPACE


def test_staging_revision_is_unrestricted() -> None:
    configuration, adds = fixture_log()
    staging = QbeastSnapshot.from_delta(configuration, adds, 1).revision(0)
    assert staging.is_staging
    assert query_space(staging, from_sql("id < 100")) is ALL_SPACE


# ---------------------------------------------------------------------------------------------
# box ∩ cube
# ---------------------------------------------------------------------------------------------


def cube(s: str, d: int = 2) -> CubeId:
    return CubeId.from_string(s, d)


@pytest.mark.parametrize(
    ("cube_id", "expected"),
    [("", True), ("A", True), ("Q", True), ("g", False), ("w", False), ("AA", True),
     ("AQ", True), ("Ag", False), ("Aw", False), ("AAA", True), ("AgA", False)],
)  # fmt: skip
def test_box_intersects_cube(revision: Revision, cube_id: str, expected: bool) -> None:
    box = one_box(space(revision, "id < 100"))
    assert box.intersects_cube(cube(cube_id)) is expected


def test_upper_bound_on_a_cube_edge_reaches_the_upper_cube() -> None:
    # A value equal to 0.5 lives in the upper half (spec §2.2), so [.., 0.5] must reach it.
    box = Box((None, None), (0.5, None))
    assert box.intersects_cube(cube("g")) and box.intersects_cube(cube("A"))
    below = Box((None, None), (0.5 - 4 * EPSILON, None))
    assert below.intersects_cube(cube("A")) and not below.intersects_cube(cube("g"))


def test_lower_bound_one_reaches_only_the_last_cubes() -> None:
    box = Box((1.0, None), (None, None))
    assert box.intersects_cube(cube("w")) and box.intersects_cube(cube("g"))
    assert not box.intersects_cube(cube("Q")) and not box.intersects_cube(cube("A"))
    assert box.intersects_cube(cube("gg")) and not box.intersects_cube(cube("gA"))


def test_point_dimension_intersection() -> None:
    box = Box((None, 0.5), (None, 0.5), (None, (0.5,)))
    assert box.intersects_cube(cube("Q")) and not box.intersects_cube(cube("A"))
    multi = Box((None, 0.1), (None, 0.9), (None, (0.1, 0.9)))
    assert multi.intersects_cube(cube("AA")) and multi.intersects_cube(cube("Qw"))
    assert not multi.intersects_cube(cube("AQ")) and not multi.intersects_cube(cube("Qg"))


def test_box_validation() -> None:
    with pytest.raises(InvalidOptionError):
        Box((None,), (None, None))
    with pytest.raises(InvalidOptionError):
        Box((), ())
    with pytest.raises(InvalidOptionError):
        Box((None,), (None,)).intersects_cube(cube("A"))
    with pytest.raises(InvalidOptionError):
        Boxes(())


def test_box_contains() -> None:
    wide = Box((None, None), (0.5, None))
    narrow = Box((0.1, 0.2), (0.3, 0.4))
    points = Box((0.1, 0.3), (0.3, 0.3), (None, (0.3,)))
    assert wide.contains(narrow) and not narrow.contains(wide)
    assert wide.contains(points) and not points.contains(wide)
    assert points.contains(Box((0.2, 0.3), (0.25, 0.3), (None, (0.3,))))


# ---------------------------------------------------------------------------------------------
# other transformations and types
# ---------------------------------------------------------------------------------------------


def single(transformer: object, transformation: object) -> Revision:
    return Revision(1, 0, "t", 10, (transformer,), (transformation,))  # type: ignore[arg-type]


DAY_MS = 86_400_000


def test_timestamp_literals_are_floored_to_milliseconds() -> None:
    t = LinearTransformation(-DAY_MS, DAY_MS, 0, QDataType.TIMESTAMP)
    rev = single(LinearTransformer("t", QDataType.TIMESTAMP), t)
    got = one_box(query_space(rev, from_sql("t < TIMESTAMP '1970-01-01 00:00:00.0015'")))
    assert got.to == (t.transform(1),)
    # before 1970, floor (the writer's Timestamp.getTime) differs from truncation
    got = one_box(query_space(rev, from_sql("t <= TIMESTAMP '1969-12-31 23:59:59.9995'")))
    assert got.to == (t.transform(-1),)
    got = one_box(query_space(rev, from_sql("t >= '1970-01-01 12:00:00'")))
    assert got.from_ == (t.transform(DAY_MS // 2),)
    got = one_box(query_space(rev, from_sql("t >= DATE '1970-01-01'")))
    assert got.from_ == (0.5,)


def test_date_columns() -> None:
    t = LinearTransformation(0, 100 * DAY_MS, 0, QDataType.DATE)
    rev = single(LinearTransformer("d", QDataType.DATE), t)
    expected = Box((t.transform(dt.date(1970, 1, 11)),), (t.transform(dt.date(1970, 1, 11)),))
    assert one_box(query_space(rev, from_sql("d = DATE '1970-01-11'"))) == expected
    assert one_box(query_space(rev, from_sql("d = '1970-01-11'"))) == expected
    # a string that Spark would cast to a date by truncation gives no bound
    assert query_space(rev, from_sql("d = '1970-01-11 10:00:00'")) is ALL_SPACE
    ts = dt.datetime(1970, 1, 11, 12, tzinfo=UTC)
    got = one_box(query_space(rev, from_sql("d < TIMESTAMP '1970-01-11 12:00:00'")))
    assert got.to == (t.transform(ts),)


def test_hash_literals_must_match_the_hashed_text() -> None:
    int_rev = single(HashTransformer("k", QDataType.INTEGER), HashTransformation(7))
    five = HashTransformation(7).transform(5)
    for sql in ("k = 5", "k = 5.0", "k = 5.00BD", "k = 5D", "k IN (5)"):
        assert one_box(query_space(int_rev, from_sql(sql))).points == ((five,),), sql
    assert query_space(int_rev, from_sql("k = 5.5")) is ALL_SPACE
    assert query_space(int_rev, from_sql("k = '5'")) is ALL_SPACE
    assert query_space(int_rev, from_sql("k = 3000000000")) is ALL_SPACE
    dbl_rev = single(HashTransformer("x", QDataType.DOUBLE), HashTransformation(7))
    assert one_box(query_space(dbl_rev, from_sql("x = 1.5"))).points == ((0.03773991625650782,),)
    for sql in ("x = 0.0", "x = 1e8", "x = 1e-5"):  # -0.0, and JVM Double.toString differences
        assert query_space(dbl_rev, from_sql(sql)) is ALL_SPACE, sql
    ts_rev = single(HashTransformer("t", QDataType.TIMESTAMP), HashTransformation(7))
    assert query_space(ts_rev, from_sql("t = TIMESTAMP '2024-01-01 00:00:00'")) is ALL_SPACE


def test_identity_dimensions_never_restrict() -> None:
    rev = single(
        LinearTransformer("a", QDataType.INTEGER), IdentityTransformation(5, QDataType.INTEGER)
    )
    assert query_space(rev, from_sql("a = 5")) is ALL_SPACE
    assert query_space(rev, from_sql("a = 7")) is ALL_SPACE


def test_quantile_transformations() -> None:
    num = CDFNumericQuantilesTransformation((0, 10, 20, 30, 40), QDataType.INTEGER)
    rev = single(CDFNumericQuantilesTransformer("q", QDataType.INTEGER), num)
    assert one_box(query_space(rev, from_sql("q < 15"))).to == (0.375,)
    assert one_box(query_space(rev, from_sql("q IS NULL"))) == Box((None,), (0.0,))
    text = CDFStringQuantilesTransformation(("a", "c", "e"))
    srev = single(CDFStringQuantilesTransformer("s"), text)
    assert one_box(query_space(srev, from_sql("s >= 'd'"))).from_ == (0.5,)
    # Java (UTF-16) and Spark (code point) orders differ past U+D800: no bound
    assert query_space(srev, from_sql("s >= '\uffff'")) is ALL_SPACE


def test_each_revision_uses_its_own_transformations() -> None:
    rng = random.Random(0)
    narrow = make_revision(1, (0, 1000), (-1.0, 1.0), rng)
    wide = make_revision(2, (-500, 2000), (-2.0, 3.0), rng)
    p = from_sql("x < 500")
    assert one_box(query_space(narrow, p)).to[0] == pytest.approx(0.5)
    assert one_box(query_space(wide, p)).to[0] == pytest.approx(0.4)
    assert query_space(narrow, from_sql("x > 1500")) is EMPTY_SPACE
    assert isinstance(query_space(wide, from_sql("x > 1500")), Boxes)


def test_nan_and_infinite_literals() -> None:
    rev = single(
        LinearTransformer("y", QDataType.DOUBLE),
        LinearTransformation(0.0, 10.0, 1.0, QDataType.DOUBLE),
    )
    from qbeast_connect.planning.predicate import Comparison

    assert query_space(rev, Comparison("y", "<", float("nan"))) is ALL_SPACE
    assert query_space(rev, Comparison("y", "<", float("inf"))) is ALL_SPACE
    # NaN > +inf in Spark: the rows holding NaN sit at the top of the dimension
    assert query_space(rev, Comparison("y", ">", float("inf"))) == Boxes((Box((1.0,), (None,)),))
    assert query_space(rev, Comparison("y", "<", Decimal("2.5"))) == Boxes((Box((None,), (0.25,)),))


def test_dnf_explosion_is_widened_not_wrong(revision: Revision) -> None:
    parts = " AND ".join(f"(id = {i} OR id = {i + 1000})" for i in range(10))
    p: Predicate = from_sql(parts)
    assert isinstance(query_space(revision, p, max_boxes=8), QuerySpace)
