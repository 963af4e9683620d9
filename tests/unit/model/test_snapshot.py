"""QbeastSnapshot over the qbeast-spark reference log (spec §1, §5.1)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.revision import Revision, staging_revision
from qbeast_connect.model.snapshot import CubeStatus, QbeastSnapshot
from qbeast_connect.model.transformation import HashTransformer, LinearTransformer, QDataType
from qbeast_connect.model.weight import MAX_WEIGHT

INT_MAX = 2147483647


def replay(commits: list[list[dict[str, Any]]], upto: int) -> QbeastSnapshot:
    conf: dict[str, str] = {}
    adds: dict[str, dict[str, Any]] = {}
    for actions in commits[: upto + 1]:
        for action in actions:
            if "metaData" in action:
                conf = action["metaData"]["configuration"]
            elif "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    return QbeastSnapshot.from_delta(conf, list(adds.values()), upto)


# Hand-read from the two commits: (cube, max weight after commit 0, count after commit 0,
# max weight after both, count after both).
EXPECTED = {
    "": (-1610612736, 500689, -1879048192, 500689 + 250441),
    "A": (545404427, 500608, -801096427, 500608 + 249188),
    "Q": (529133588, 499610, -809289081, 499610 + 249965),
    "g": (546816660, 499865, -800348665, 499865 + 250669),
    "w": (527919017, 499691, -809909012, 499691 + 250195),
    "AA": (INT_MAX, 93477, INT_MAX, 93477 + 172114),
    "AQ": (INT_MAX, 91931, INT_MAX, 91931 + 170212),
    "Ag": (INT_MAX, 93449, INT_MAX, 93449 + 172184),
    "Aw": (INT_MAX, 92051, INT_MAX, 92051 + 169954),
    "QA": (INT_MAX, 94253, INT_MAX, 94253 + 172310),
    "QQ": (INT_MAX, 95148, INT_MAX, 95148 + 173371),
    "Qg": (INT_MAX, 94027, INT_MAX, 94027 + 171811),
    "Qw": (INT_MAX, 95147, INT_MAX, 95147 + 173717),
    "gA": (INT_MAX, 93289, INT_MAX, 93289 + 171857),
    "gQ": (INT_MAX, 92189, INT_MAX, 92189 + 169113),
    "gg": (INT_MAX, 93532, INT_MAX, 93532 + 172049),
    "gw": (INT_MAX, 92019, INT_MAX, 92019 + 169364),
    "wA": (INT_MAX, 94334, INT_MAX, 94334 + 172253),
    "wQ": (INT_MAX, 95296, INT_MAX, 95296 + 173780),
    "wg": (INT_MAX, 94260, INT_MAX, 94260 + 172143),
    "ww": (INT_MAX, 95135, INT_MAX, 95135 + 173310),
}


@pytest.mark.parametrize("upto", [0, 1], ids=["after-overwrite", "after-append"])
def test_fixture_snapshot(commits: list[list[dict[str, Any]]], upto: int) -> None:
    snap = replay(commits, upto)
    assert snap.is_qbeast and snap.version == upto
    assert snap.last_revision_id == 1
    assert list(snap.revisions) == [0, 1]
    rev0, rev1 = snap.revisions[0], snap.revisions[1]
    assert rev0.is_staging and rev0.column_names == ("id", "name")
    assert snap.latest_revision is rev1 and snap.revision(1) is rev1
    assert rev1.column_transformers == (
        LinearTransformer("id", QDataType.INTEGER),
        HashTransformer("name", QDataType.STRING),
    )
    assert rev1.transformations[0].null_value == 2836883  # type: ignore[attr-defined]
    assert rev1.transformations[1].null_value == -1628776639  # type: ignore[attr-defined]

    assert len(snap.files) == 5 * (upto + 1)
    assert snap.staging_files() == ()
    assert len(snap.files_of(1)) == 5 * (upto + 1)
    assert sum(f.num_records or 0 for f in snap.files) == 4_000_000 * (upto + 1)

    statuses = snap.cube_statuses(1)
    assert len(statuses) == 21
    assert sum(s.element_count for s in statuses.values()) == 4_000_000 * (upto + 1)
    for text, (w0, c0, w1, c1) in EXPECTED.items():
        status = statuses[CubeId.from_string(text, 2)]
        assert (status.max_weight, status.element_count) == ((w0, c0) if upto == 0 else (w1, c1)), (
            text
        )
        assert len(status.files) == upto + 1
    root = statuses[CubeId.root(2)]
    if upto == 0:
        assert root.max_weight == -1610612736  # weight(500000 / 4000000)
    else:
        assert root.max_weight == min(-1610612736, -1879048192) == -1879048192
    assert root.files[0] == "155c83c4-0e8a-46e4-93d9-29c7ca800e4e.parquet"
    # statuses iterate in cube order (pre-order DFS)
    assert list(statuses) == sorted(statuses)
    assert [c.to_string() for c in statuses][:6] == ["", "A", "AA", "AQ", "Ag", "Aw"]
    assert snap.cube_statuses(0) == {}


def test_fixture_table_properties_and_pickle(commits: list[list[dict[str, Any]]]) -> None:
    snap = replay(commits, 1)
    assert snap.table_properties() == {"qbeast.lastRevisionID": "1"}
    again = pickle.loads(pickle.dumps(snap))
    assert again.cube_statuses(1) == snap.cube_statuses(1)
    with pytest.raises(TypeError):
        snap.configuration["x"] = "y"  # type: ignore[index]


def test_non_qbeast_table_and_staging_files() -> None:
    files = [
        {"path": "a.parquet", "size": 10, "modificationTime": 1},
        {"path": "b.parquet", "size": 5, "tags": {}},
    ]
    snap = QbeastSnapshot.from_delta({"delta.appendOnly": "false"}, files, 3)
    assert not snap.is_qbeast and snap.last_revision_id == -1 and snap.latest_revision is None
    assert len(snap.staging_files()) == 2
    with pytest.raises(InvalidOptionError, match="revision 0 does not exist"):
        snap.cube_statuses(0)
    with pytest.raises(InvalidOptionError, match="revision 5 does not exist"):
        snap.revision(5)


def test_converted_table_staging_cube_status() -> None:
    rev0 = staging_revision("/t", 100, ["a", "b"], 1)
    conf = {"qbeast.lastRevisionID": "0", "qbeast.revision.0": rev0.to_json()}
    snap = QbeastSnapshot.from_delta(
        conf, [{"path": "a.parquet", "size": 1}, {"path": "b.parquet", "size": 2}], 0
    )
    assert snap.is_qbeast and snap.latest_revision == rev0
    assert snap.cube_statuses(0) == {
        CubeId.root(2): CubeStatus(CubeId.root(2), MAX_WEIGHT, 0, ("a.parquet", "b.parquet"))
    }


def test_non_canonical_cube_strings_merge() -> None:
    rev1 = Revision.from_json(
        staging_revision("/t", 100, ["a", "b"], 1)
        .to_json()
        .replace('"revisionID":0', '"revisionID":1')
    )
    conf = {"qbeast.lastRevisionID": "1", "qbeast.revision.1": rev1.to_json()}
    adds = [
        {
            "path": "x",
            "tags": {
                "revision": "1",
                "blocks": '[{"cubeId":"A","minWeight":0,"maxWeight":10,"elementCount":1}]',
            },
        },
        {
            "path": "y",
            "tags": {
                "revision": "1",
                "blocks": '[{"cubeId":"B","minWeight":0,"maxWeight":5,"elementCount":2}]',
            },
        },
    ]
    statuses = QbeastSnapshot.from_delta(conf, adds, 0).cube_statuses(1)
    assert statuses == {
        CubeId.from_string("A", 2): CubeStatus(CubeId.from_string("A", 2), 5, 3, ("x", "y"))
    }


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"qbeast.lastRevisionID": "1"}, "no key 'qbeast.revision.1'"),
        ({"qbeast.lastRevisionID": "x"}, "not an integer"),
        (
            {"qbeast.revision.2": staging_revision("/t", 1, ["a"], 1).to_json()},
            "holds revisionID 0",
        ),
        ({"qbeast.revision.x": "{}"}, "does not end with a revision id"),
        ({"qbeast.revision.0": "{broken"}, "qbeast.revision.0"),
    ],
    ids=["missing-latest", "bad-last-id", "id-mismatch", "bad-key", "bad-json"],
)
def test_metadata_errors(conf: dict[str, str], message: str) -> None:
    with pytest.raises(MetadataFormatError, match=message):
        QbeastSnapshot.from_delta(conf, [], 0)
