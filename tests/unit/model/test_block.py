"""Blocks tag codec and AddFile classification (spec §1.4, §1.5; T24)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qbeast_connect.exceptions import InvalidOptionError, MetadataFormatError
from qbeast_connect.model.block import (
    Block,
    IndexFile,
    decode_blocks,
    encode_blocks,
    index_file_from_add,
    tags_for,
)
from qbeast_connect.model.weight import MAX_WEIGHT, MIN_WEIGHT

T24 = '[{"cubeId":"","minWeight":2147483647,"maxWeight":2147483647,"elementCount":1}]'


def test_t24_encode_root_block() -> None:
    assert encode_blocks([Block("", MAX_WEIGHT, MAX_WEIGHT, 1)]) == T24
    assert decode_blocks(T24) == (Block("", MAX_WEIGHT, MAX_WEIGHT, 1),)


def test_encode_several_and_empty() -> None:
    blocks = [Block("g", -1610608506, 546816660, 499865), Block("gw", 546853981, MAX_WEIGHT, 92019)]
    text = encode_blocks(blocks)
    assert text == (
        '[{"cubeId":"g","minWeight":-1610608506,"maxWeight":546816660,"elementCount":499865},'
        '{"cubeId":"gw","minWeight":546853981,"maxWeight":2147483647,"elementCount":92019}]'
    )
    assert decode_blocks(text) == tuple(blocks)
    assert encode_blocks([]) == "[]"
    assert tags_for(3, blocks) == {"revision": "3", "blocks": text}


DECODE_CASES = [
    ("empty-array", "[]", ()),
    ("leading-space", "  []", ()),
    ("trailing-garbage", '[{"cubeId":"A"}]xyz', (Block("A", MIN_WEIGHT, MAX_WEIGHT, 0),)),
    ("defaults", '[{"cubeId":"A"}]', (Block("A", MIN_WEIGHT, MAX_WEIGHT, 0),)),
    (
        "replicated-ignored",
        '[{"cubeId":"w","minWeight":1,"maxWeight":2,"elementCount":3,"replicated":false}]',
        (Block("w", 1, 2, 3),),
    ),
    (
        "any-key-order",
        '[{"elementCount":3,"maxWeight":2,"cubeId":"w","minWeight":1}]',
        (Block("w", 1, 2, 3),),
    ),
    (
        "cube-alias",
        '[{"cube":"Q","minWeight":1,"maxWeight":2,"elementCount":3}]',
        (Block("Q", 1, 2, 3),),
    ),
    (
        "numeric-strings",
        '[{"cubeId":"Q","minWeight":"-5","maxWeight":" 7","elementCount":"9"}]',
        (Block("Q", -5, 7, 9),),
    ),
    (
        "unknown-key-ignored",
        '[{"cubeId":"Q","state":"FLOODED"}]',
        (Block("Q", MIN_WEIGHT, MAX_WEIGHT, 0),),
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in DECODE_CASES], ids=[c[0] for c in DECODE_CASES]
)
def test_decode_blocks(text: str, expected: tuple[Block, ...]) -> None:
    assert decode_blocks(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cubeId":""}', "must be a JSON array"),
        ("[{]", "cannot parse"),
        ('[{"minWeight":1}]', "no cubeId"),
        ('[{"cubeId":3}]', "must be a string"),
        ("[1]", "must be objects"),
        ('[{"cubeId":"","minWeight":"x"}]', "must be a number"),
        ('[{"cubeId":"","maxWeight":2147483648}]', "outside the int32 range"),
        ('[{"cubeId":"","elementCount":-1}]', "element count"),
        ('[{"cubeId":"","minWeight":true}]', "must be a number"),
    ],
    ids=[
        "object",
        "broken",
        "missing-cube",
        "cube-number",
        "not-object",
        "bad-number",
        "weight-overflow",
        "negative-count",
        "boolean",
    ],
)
def test_decode_blocks_errors(text: str, message: str) -> None:
    with pytest.raises(MetadataFormatError, match=message):
        decode_blocks(text)


def test_block_invariants() -> None:
    with pytest.raises(InvalidOptionError):
        Block("", MIN_WEIGHT - 1, 0, 0)
    with pytest.raises(InvalidOptionError):
        Block("", 0, 0, -1)


def add(tags: Any = None, **extra: Any) -> dict[str, Any]:
    action: dict[str, Any] = {
        "path": "f.parquet",
        "partitionValues": {},
        "size": 100,
        "modificationTime": 1726222576710,
        "dataChange": True,
        "stats": '{"numRecords":42,"minValues":{}}',
    }
    if tags is not ...:
        action["tags"] = tags
    action.update(extra)
    return action


STAGING_ROOT = (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),)

ADD_CASES = [
    ("no-tags-key", add(...), 0, STAGING_ROOT),
    ("null-tags", add(None), 0, STAGING_ROOT),
    ("empty-tags", add({}), 0, STAGING_ROOT),
    ("tags-without-revision", add({"other": "x"}), 0, STAGING_ROOT),
    ("revision-0", add({"revision": "0", "blocks": T24}), 0, STAGING_ROOT),
    ("revision-without-blocks", add({"revision": "2"}), 2, (Block("", MIN_WEIGHT, MAX_WEIGHT, 0),)),
    (
        "revision-and-blocks",
        add({"revision": "1", "blocks": T24}),
        1,
        (Block("", MAX_WEIGHT, MAX_WEIGHT, 1),),
    ),
    (
        "legacy-flat-tags",
        add(
            {
                "state": "FLOODED",
                "cube": "gA",
                "revision": "1",
                "minWeight": "-10",
                "maxWeight": "20",
                "elementCount": "5",
            }
        ),
        1,
        (Block("gA", -10, 20, 5),),
    ),
]


@pytest.mark.parametrize(
    ("action", "revision_id", "blocks"), [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES]
)
def test_index_file_from_add(
    action: dict[str, Any], revision_id: int, blocks: tuple[Block, ...]
) -> None:
    f = index_file_from_add(action)
    assert f == IndexFile("f.parquet", 100, 1726222576710, revision_id, blocks, 42)
    assert f.is_staging is (revision_id == 0)


def test_index_file_from_wrapped_add_and_missing_stats() -> None:
    action = add({"revision": "1", "blocks": T24})
    del action["stats"]
    f = index_file_from_add({"add": action})
    assert f.num_records is None and f.element_count == 1


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"size": 1}, "without a path"),
        (add({"revision": "one"}), "not an integer"),
        (add({"revision": "1", "blocks": "{}"}), "must be a JSON array"),
        (add(None, size="big"), "must be an integer"),
    ],
    ids=["no-path", "bad-revision", "bad-blocks", "bad-size"],
)
def test_index_file_from_add_errors(action: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataFormatError, match=message):
        index_file_from_add(action)


def test_fixture_blocks_round_trip_without_replicated(commits: list[list[dict[str, Any]]]) -> None:
    count = 0
    for actions in commits:
        for action in actions:
            if "add" not in action:
                continue
            text = action["add"]["tags"]["blocks"]
            blocks = decode_blocks(text)
            expected = [{k: v for k, v in b.items() if k != "replicated"} for b in json.loads(text)]
            assert json.loads(encode_blocks(blocks)) == expected
            assert encode_blocks(blocks) == text.replace(',"replicated":false', "")
            count += len(blocks)
    assert count == 42


def test_max_row_weight_tag_round_trip_and_bad_values() -> None:
    from qbeast_connect.model.block import MAX_ROW_WEIGHT_TAG, index_file_from_add, tags_for

    blocks = [Block("", -100, 500, 3)]
    tags = tags_for(1, blocks, 42)
    assert tags[MAX_ROW_WEIGHT_TAG] == "42" and "42" not in tags["blocks"]
    assert MAX_ROW_WEIGHT_TAG not in tags_for(1, blocks)
    add = {"path": "a.parquet", "size": 1, "tags": tags}
    f = index_file_from_add(add)
    assert f.max_row_weight == 42 and f.min_row_weight == -100
    # a reading hint only: anything but an int weight reads as absent (the filter stays)
    for bad in ("x", "1.5", str(2**31), "", None):
        bad_tags = {**tags, MAX_ROW_WEIGHT_TAG: bad}
        assert index_file_from_add({**add, "tags": bad_tags}).max_row_weight is None
    assert index_file_from_add({"path": "b.parquet"}).max_row_weight is None


def test_rows_inside_band() -> None:
    from qbeast_connect.model.block import IndexFile
    from qbeast_connect.model.weight import weight_from_fraction
    from qbeast_connect.planning.file_planner import rows_inside_band

    quarter, half = weight_from_fraction(0.25), weight_from_fraction(0.5)

    def file(low: int, top: int | None, revision: int = 1) -> IndexFile:
        return IndexFile("f", 1, 0, revision, (Block("", low, MAX_WEIGHT, 1),), 1, top)

    inside = file(quarter, half - 1)
    assert rows_inside_band([inside], 0.25, 0.5)
    assert rows_inside_band([inside], 0.0, 0.5)
    assert rows_inside_band([], 0.1, 0.2)
    # the upper bound is strict (hash < weight(f)), the lower one inclusive
    assert not rows_inside_band([file(quarter, half)], 0.25, 0.5)
    assert not rows_inside_band([file(quarter - 1, half - 1)], 0.25, 0.5)
    # unknown largest weight, or a staging file: never inside a band that filters
    assert not rows_inside_band([inside, file(quarter, None)], 0.0, 0.5)
    assert not rows_inside_band([file(MIN_WEIGHT, None, revision=0)], 0.0, 0.5)
    # the whole table has no upper filter
    assert rows_inside_band([file(quarter, None)], 0.0, 1.0)
