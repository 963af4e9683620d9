"""OTree pictures (qbeast_connect.viz) and the selected-cube helper, on the reference log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qbeast_connect.exceptions import (
    InvalidOptionError,
    MissingDependencyError,
    NotAQbeastTableError,
)
from qbeast_connect.model.block import Block, IndexFile
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.snapshot import QbeastSnapshot
from qbeast_connect.model.weight import MAX_WEIGHT, MIN_WEIGHT, weight_from_fraction
from qbeast_connect.planning.file_planner import plan_files
from qbeast_connect.planning.predicate import Comparison, from_sql
from qbeast_connect.viz import plot_index, selected_cubes_for, table_html

LOG_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "qbeast_spark_table" / "_delta_log"
HIGHLIGHT_RGB = np.array([214, 39, 40]) / 255.0  # "#d62728"


def _replay() -> tuple[dict[str, str], list[dict[str, Any]]]:
    conf: dict[str, str] = {}
    adds: dict[str, dict[str, Any]] = {}
    for path in sorted(LOG_DIR.glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "metaData" in action:
                conf = action["metaData"]["configuration"]
            elif "add" in action:
                adds[action["add"]["path"]] = action["add"]
    return conf, list(adds.values())


@pytest.fixture(scope="module")
def snapshot() -> QbeastSnapshot:
    conf, adds = _replay()
    return QbeastSnapshot.from_delta(conf, adds, 1)


def _synthetic(levels: int, last_level: int) -> QbeastSnapshot:
    """A 2-D revision-1 tree: full up to ``levels - 1``, then ``last_level`` cubes below."""
    conf, _ = _replay()
    cubes = [CubeId.root(2)]
    level = [CubeId.root(2)]
    for depth in range(1, levels + 1):
        level = [child for cube in level for child in cube.children()]
        if depth == levels:
            level = level[:last_level]
        cubes.extend(level)
    present = set(cubes)
    blocks = []
    for i, cube in enumerate(cubes):
        inner = any(child in present for child in cube.children())
        max_weight = weight_from_fraction(0.1 * (cube.depth + 1)) if inner else MAX_WEIGHT
        blocks.append(Block(cube.to_string(), MIN_WEIGHT, max_weight, 100 + i % 900))
    files = [IndexFile(f"f{i}.parquet", 1000 + i, 0, 1, tuple(blocks[i::40])) for i in range(40)]
    return QbeastSnapshot(conf, files, 1)


def _pixels(path: Path) -> np.ndarray:
    import matplotlib.image

    image = matplotlib.image.imread(str(path))
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300
    return image[..., :3]


def _near(image: np.ndarray, rgb: np.ndarray, tol: float = 0.03) -> int:
    return int(np.all(np.abs(image - rgb) <= tol, axis=-1).sum())


# ---------------------------------------------------------------------------------------------
# selected_cubes_for
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "fraction", "expected"),
    [
        # root max weight = weight(0.0625) < weight(0.1), the children's are above 0.3
        (None, 0.1, {"", "A", "Q", "g", "w"}),
        # id in [1, 4e6] linear; id < 500000 is x < 0.125: lower half then lower quarter of dim 0
        ("id < 500000", None, {"", "A", "Q", "AA", "AQ", "QA", "QQ"}),
        ("id < 500000", 0.1, {"", "A", "Q"}),
        ("id > 9999999", None, set()),
    ],
    ids=["sample", "filter", "filter+sample", "empty"],
)
def test_selected_cubes_match_the_planner(
    snapshot: QbeastSnapshot, where: str | None, fraction: float | None, expected: set[str]
) -> None:
    got = selected_cubes_for(snapshot, 1, where, fraction)
    assert got == expected
    plan = plan_files(snapshot, None if where is None else from_sql(where), fraction)
    (scan,) = [s for s in plan.per_revision if s.revision_id == 1]
    assert scan.selected_cubes == len(got)


def test_selected_cubes_without_index_use_and_input_forms(snapshot: QbeastSnapshot) -> None:
    every = {c.to_string() for c in snapshot.cube_statuses(1)}
    assert len(every) == 21
    assert selected_cubes_for(snapshot, None, None, None) == every
    assert selected_cubes_for(snapshot, None, None, 1.0) == every
    assert selected_cubes_for(snapshot, 1, Comparison("id", "<", 500000), None) == (
        selected_cubes_for(snapshot, 1, "id < 500000", None)
    )
    assert selected_cubes_for(snapshot, 0, "id < 5", 0.1) == set()  # no staging files
    with pytest.raises(InvalidOptionError):
        selected_cubes_for(snapshot, 1, None, 1.5)
    plain = QbeastSnapshot.from_delta({}, [{"path": "a.parquet", "size": 3}], 0)
    with pytest.raises(NotAQbeastTableError):
        selected_cubes_for(plain, None, None, 0.1)


# ---------------------------------------------------------------------------------------------
# plot_index
# ---------------------------------------------------------------------------------------------


def test_plot_index_writes_a_png(snapshot: QbeastSnapshot, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    out = tmp_path / "tree.png"
    fig = plot_index(snapshot, path=out)
    assert isinstance(fig, Figure)
    assert out.stat().st_size > 10_000
    pixels = _pixels(out)
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colours) > 10
    assert "21 cubes, height 3" in fig.texts[0].get_text()
    # without selection there is no highlight colour
    assert _near(pixels, HIGHLIGHT_RGB) == 0


def test_selected_cubes_change_the_picture(snapshot: QbeastSnapshot, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plain, marked = tmp_path / "plain.png", tmp_path / "marked.png"
    plot_index(snapshot, path=plain, title="t")
    selected = selected_cubes_for(snapshot, 1, "id < 500000", 0.1)
    fig = plot_index(snapshot, selected_cubes=selected, path=marked, title="t")
    a, b = _pixels(plain), _pixels(marked)
    assert a.shape == b.shape and not np.array_equal(a, b)
    assert _near(b, HIGHLIGHT_RGB) > 100
    (legend,) = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["selected (3)", "not selected (18)"]
    # CubeId objects work too, and cubes outside the tree are ignored
    again = plot_index(snapshot, selected_cubes=[CubeId.from_string("A", 2), "wwww"])
    assert "1 selected" in again.texts[0].get_text()


def test_color_by_element_count(snapshot: QbeastSnapshot, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    weights, counts = tmp_path / "w.png", tmp_path / "c.png"
    plot_index(snapshot, path=weights)
    fig = plot_index(snapshot, path=counts, color_by="element_count")
    assert not np.array_equal(_pixels(weights), _pixels(counts))
    assert any("element count" in ax.get_ylabel() for ax in fig.axes)
    with pytest.raises(InvalidOptionError, match="color_by"):
        plot_index(snapshot, color_by="size")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="single str"):
        plot_index(snapshot, selected_cubes="A")


def test_large_tree_draws_depth_histograms(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    big = _synthetic(levels=6, last_level=1000)  # 1365 + 1000 cubes
    assert len(big.cube_statuses(1)) == 2365
    out = tmp_path / "big.png"
    fig = plot_index(big, selected_cubes=["", "A", "AA"], path=out)
    assert "per-depth histograms" in fig.texts[0].get_text()
    titles = [ax.get_title() for ax in fig.axes]
    assert "cubes per depth" in titles
    assert not any(
        ax.collections and len(ax.collections[0].get_offsets()) == 2365 for ax in fig.axes
    )  # no node scatter
    pixels = _pixels(out)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10
    assert _near(pixels, HIGHLIGHT_RGB) > 0  # the selected bars
    # the same tree as nodes when the limit allows it, and a small limit on the fixture
    as_nodes = plot_index(big, max_nodes=5000)
    assert "histograms" not in as_nodes.texts[0].get_text()


def test_small_limit_and_empty_revision(snapshot: QbeastSnapshot, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    fig = plot_index(snapshot, max_nodes=10, color_by="element_count", path=tmp_path / "h.png")
    assert "histograms" in fig.texts[0].get_text()
    empty = plot_index(snapshot, 0, path=tmp_path / "e.png")
    assert "no cubes" in empty.axes[0].texts[0].get_text()
    with pytest.raises(InvalidOptionError, match="max_nodes"):
        plot_index(snapshot, max_nodes=0)


def test_missing_matplotlib_names_the_extra(
    snapshot: QbeastSnapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'qbeast-connect\[viz\]'"):
        plot_index(snapshot)


# ---------------------------------------------------------------------------------------------
# table_html
# ---------------------------------------------------------------------------------------------


def test_table_html_escapes_everything() -> None:
    page = table_html(
        {"path": "/t/<x>&y", "revisions": [0, 1], "props": {"k<": "v>"}, "none": None},
        title="<b>table</b>",
    )
    assert "<x>" not in page and "<b>" not in page and "k<" not in page
    assert "/t/&lt;x&gt;&amp;y" in page and "&lt;b&gt;table&lt;/b&gt;" in page
    assert "0, 1" in page and "k&lt;=v&gt;" in page
    assert page.count("<tr>") == 5  # header + 4 rows
