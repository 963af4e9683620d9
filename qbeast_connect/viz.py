"""Pictures of a revision's OTree, and small HTML helpers for notebooks.

:func:`plot_index` draws the cubes of one revision with matplotlib: one row per depth, the
cubes of a row in cube order (spec §2.4), an edge from every cube to its nearest present
ancestor, and a colour per cube (its normalized max weight, or its element count). The cubes a
read would open (:func:`selected_cubes_for`) can be highlighted.

matplotlib is optional (the ``viz`` extra) and only imported when a picture is drawn. Figures
are created with :class:`matplotlib.figure.Figure` on an Agg canvas, without ``pyplot``: no
global backend is switched and no figure is kept alive by a figure manager.

Example:
    >>> from qbeast_connect.viz import plot_index, selected_cubes_for
    >>> cubes = selected_cubes_for(snapshot, None, "id < 1000", 0.1)  # doctest: +SKIP
    >>> fig = plot_index(snapshot, selected_cubes=cubes, path="tree.png")  # doctest: +SKIP
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from qbeast_connect.exceptions import InvalidOptionError, MissingDependencyError
from qbeast_connect.metrics import _html_grid, _resolve_revision, leaf_cubes
from qbeast_connect.model.cube_id import CubeId
from qbeast_connect.model.snapshot import CubeStatus, QbeastSnapshot
from qbeast_connect.model.weight import MAX_WEIGHT, fraction_from_weight
from qbeast_connect.paths import check_output_file

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from pyspark.sql import Column

    from qbeast_connect.planning.predicate import Predicate

__all__ = [
    "DEFAULT_MAX_NODES",
    "plot_index",
    "selected_cubes_for",
    "table_html",
]

DEFAULT_MAX_NODES = 2000
"""Above this many cubes :func:`plot_index` draws per-depth histograms instead of nodes."""

ColorBy = Literal["max_weight", "element_count"]

_COLOR_BY = ("max_weight", "element_count")
_HIGHLIGHT = "#d62728"  # selected cubes: node outline, edges between selected cubes, bars
_PLAIN_EDGE = "#4d4d4d"
_TREE_EDGE = "#b3b3b3"
_LABEL_LIMIT = 64  # cube ids are written next to the nodes up to this many cubes
_INSTALL_HINT = "pip install 'qbeast-connect[viz]'"


# ---------------------------------------------------------------------------------------------
# selected cubes
# ---------------------------------------------------------------------------------------------


def selected_cubes_for(
    snapshot: QbeastSnapshot,
    revision_id: int | None,
    predicate: Predicate | str | Column | None,
    fraction: float | None,
    *,
    schema: object = None,
    time_zone: str | None = "UTC",
) -> set[str]:
    """Return the cubes of a revision that a filtered and/or sampled read would traverse.

    This is the cube set of :func:`qbeast_connect.planning.file_planner.plan_files` for that
    revision (its ``RevisionScan.selected_cubes`` is the size of this set): the query space of
    the predicate under the revision's transformations, then the spec §6.3 cube traversal with
    the sample's weight range. When the planner does not use the index (no filter and no
    sample, a staging revision, a revision without transformations, or an unrestricted filter
    without sample) every cube is read and every cube is returned; an empty query space gives
    an empty set.

    Args:
        snapshot: The table snapshot.
        revision_id: The revision; None for the latest.
        predicate: A :class:`~qbeast_connect.planning.predicate.Predicate`, a SQL string, a
            Spark Connect ``Column``, or None.
        fraction: Sample fraction in (0, 1], or None for no sample.
        schema: The table schema; binds the predicate's literals to the column types as
            ``plan_files(schema=…)`` does.
        time_zone: The session time zone (see ``plan_files``).

    Returns:
        Canonical cube id strings (``""`` = root).

    Raises:
        InvalidOptionError: No such revision, an invalid fraction or predicate.
    """
    # file_planner exposes no public traversal; these are its own building blocks, so the
    # result cannot drift from what plan_files selects.
    from qbeast_connect.planning.file_planner import (
        _MAX_DNF_TERMS,
        _NO_UPPER,
        _traverse,
        weight_range_for_fraction,
    )
    from qbeast_connect.planning.predicate import Predicate, from_sql
    from qbeast_connect.planning.query_space import ALL_SPACE, query_space
    from qbeast_connect.spark.columns import from_column

    revision = _resolve_revision(snapshot, revision_id)
    statuses = snapshot.cube_statuses(revision.revision_id)
    every_cube = {cube.to_string() for cube in statuses}
    if predicate is None:
        parsed: Predicate | None = None
    elif isinstance(predicate, Predicate):
        parsed = predicate
    elif isinstance(predicate, str):
        parsed = from_sql(predicate)
    else:
        parsed = from_column(predicate)
    if parsed is not None and schema is not None:
        from qbeast_connect.planning.coercion import bind_for_pruning, column_types, is_utc

        parsed = bind_for_pruning(parsed, column_types(schema), utc=is_utc(time_zone))
    weight_range = None if fraction is None else weight_range_for_fraction(fraction)
    uses_index = (
        revision.revision_id > 0
        and not revision.is_staging
        and bool(revision.transformations)
        and (parsed is not None or weight_range is not None)
    )
    if not uses_index:
        return every_cube
    space = query_space(revision, parsed, max_boxes=_MAX_DNF_TERMS)
    if space.is_empty:
        return set()
    if space is ALL_SPACE and weight_range is None:
        return every_cube
    to_weight = _NO_UPPER
    if weight_range is not None and weight_range[1] is not None:
        to_weight = weight_range[1]
    cubes = _traverse(statuses, revision.root_cube(), space, to_weight)
    return {cube.to_string() for cube in cubes}


# ---------------------------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------------------------


def _import_matplotlib() -> tuple[Any, Any, Any]:
    """Return ``(Figure, FigureCanvasAgg, matplotlib)`` or raise MissingDependencyError."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise MissingDependencyError(
            f"drawing the index needs matplotlib, which is not installed: {_INSTALL_HINT}"
        ) from err
    return Figure, FigureCanvasAgg, matplotlib


def _as_cubes(selected: Iterable[str | CubeId], dimensions: int) -> set[CubeId]:
    if isinstance(selected, str | CubeId):
        raise InvalidOptionError(
            "selected_cubes must be a collection of cube ids (strings or CubeId), "
            f"got a single {type(selected).__name__}"
        )
    out: set[CubeId] = set()
    for item in selected:
        if isinstance(item, CubeId):
            if item.dimensions != dimensions:
                raise InvalidOptionError(
                    f"selected cube {item!r} has {item.dimensions} dimensions; the revision "
                    f"has {dimensions}"
                )
            out.add(item)
        elif isinstance(item, str):
            out.add(CubeId.from_string(item, dimensions))
        else:
            raise InvalidOptionError(
                f"selected_cubes items must be cube id strings or CubeId, got {item!r}"
            )
    return out


def _values(statuses: Mapping[CubeId, CubeStatus], color_by: str) -> dict[CubeId, float]:
    if color_by == "max_weight":
        return {
            c: 1.0 if s.max_weight == MAX_WEIGHT else fraction_from_weight(s.max_weight)
            for c, s in statuses.items()
        }
    return {c: float(s.element_count) for c, s in statuses.items()}


@dataclass(frozen=True)
class _Drawing:
    """What both pictures show: the cubes, the value each is coloured by, the selection."""

    statuses: Mapping[CubeId, CubeStatus]
    color_by: str
    selected: set[CubeId] | None

    @cached_property
    def cubes(self) -> list[CubeId]:
        return list(self.statuses)

    @cached_property
    def values(self) -> dict[CubeId, float]:
        return _values(self.statuses, self.color_by)

    def value_range(self) -> tuple[float, float, str]:
        """``(lo, hi, label)`` of the colour scale: 0-1 for weights, else the values' span."""
        if self.color_by == "max_weight":
            return 0.0, 1.0, "normalized max weight"
        values = self.values.values()
        lo, hi = min(values), max(values)
        return lo, (hi if hi > lo else lo + 1.0), "element count (rows)"


def _layout(cubes: list[CubeId]) -> tuple[dict[CubeId, float], dict[CubeId, CubeId]]:
    """Tidy-tree x positions and each cube's nearest present ancestor.

    Cubes without a present descendant take consecutive slots in cube order; every other
    cube sits at the mean of its first and last displayed child. Since cube order is a
    pre-order DFS, rows keep cube order and edges never cross.
    """
    present = set(cubes)
    parent_of: dict[CubeId, CubeId] = {}
    children: dict[CubeId, list[CubeId]] = {}
    for cube in cubes:  # cube order: a parent is always seen before its children
        up = cube.parent
        while up is not None and up not in present:
            up = up.parent
        if up is not None:
            parent_of[cube] = up
            children.setdefault(up, []).append(cube)
    x: dict[CubeId, float] = {}
    slot = 0
    for cube in cubes:
        if cube not in children:
            x[cube] = float(slot)
            slot += 1
    for cube in reversed(cubes):  # descendants come after their ancestor in cube order
        kids = children.get(cube)
        if kids:
            x[cube] = (x[kids[0]] + x[kids[-1]]) / 2.0
    return x, parent_of


def _draw_tree(fig: Figure, ax: Axes, mpl: Any, drawing: _Drawing) -> None:
    from matplotlib.collections import LineCollection
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D

    cubes, values, selected = drawing.cubes, drawing.values, drawing.selected
    x, parent_of = _layout(cubes)
    n = len(cubes)
    height = max(c.depth for c in cubes) + 1

    plain_segments = []
    selected_segments = []
    for cube, parent in parent_of.items():
        segment = [(x[parent], -parent.depth), (x[cube], -cube.depth)]
        if selected is not None and cube in selected and parent in selected:
            selected_segments.append(segment)
        else:
            plain_segments.append(segment)
    edge_width = 1.0 if n <= 200 else 0.5
    ax.add_collection(LineCollection(plain_segments, colors=_TREE_EDGE, linewidths=edge_width))
    if selected_segments:
        ax.add_collection(
            LineCollection(selected_segments, colors=_HIGHLIGHT, linewidths=edge_width * 2)
        )

    lo, hi, label = drawing.value_range()
    norm = Normalize(vmin=lo, vmax=hi)
    if drawing.color_by == "max_weight":
        label += " (leaves = 1.0)"
    size = max(6.0, min(300.0, 12000.0 / n))
    is_selected = [selected is not None and c in selected for c in cubes]
    edge_colors = [_HIGHLIGHT if s else _PLAIN_EDGE for s in is_selected]
    line_widths = [2.0 if s else 0.5 for s in is_selected]
    points = ax.scatter(
        [x[c] for c in cubes],
        [-c.depth for c in cubes],
        c=[values[c] for c in cubes],
        cmap=mpl.colormaps["viridis"],
        norm=norm,
        s=size,
        edgecolors=edge_colors,
        linewidths=line_widths,
        zorder=3,
    )
    fig.colorbar(points, ax=ax, label=label, fraction=0.04, pad=0.02)

    if n <= _LABEL_LIMIT:
        for cube in cubes:
            ax.annotate(
                cube.to_string() or "root",
                (x[cube], -cube.depth),
                xytext=(0, 7 + size**0.5 / 2),
                textcoords="offset points",
                ha="center",
                fontsize=7,
            )

    if selected is not None:
        k = sum(is_selected)
        handles = [
            Line2D(
                [],
                [],
                marker="o",
                linestyle="",
                markerfacecolor="none",
                markeredgecolor=color,
                markeredgewidth=width,
                label=text,
            )
            for color, width, text in (
                (_HIGHLIGHT, 2.0, f"selected ({k})"),
                (_PLAIN_EDGE, 0.5, f"not selected ({n - k})"),
            )
        ]
        ax.legend(handles=handles, loc="upper left", fontsize=8, framealpha=0.9)

    span = max(x.values()) if x else 0.0
    ax.set_xlim(-0.75, span + 0.75)
    ax.set_ylim(-(height - 1) - 0.6, 0.6)
    ax.set_yticks([-d for d in range(height)], [f"depth {d}" for d in range(height)])
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)


def _draw_histograms(fig: Figure, axes: Any, drawing: _Drawing) -> None:
    import numpy as np

    ax_counts, ax_hist = axes
    cubes, values, selected = drawing.cubes, drawing.values, drawing.selected
    height = max(c.depth for c in cubes) + 1
    depths = np.arange(height)
    per_depth = np.bincount([c.depth for c in cubes], minlength=height)
    leaves = leaf_cubes(cubes)
    leaf_per_depth = np.bincount([c.depth for c in cubes if c in leaves], minlength=height)

    ax_counts.barh(depths, per_depth, color="#9ecae1", label="inner cubes")
    ax_counts.barh(
        depths, leaf_per_depth, left=per_depth - leaf_per_depth, color="#3182bd", label="leaf cubes"
    )
    if selected is not None:
        sel_per_depth = np.bincount([c.depth for c in cubes if c in selected], minlength=height)
        ax_counts.barh(
            depths,
            sel_per_depth,
            height=0.35,
            color=_HIGHLIGHT,
            label=f"selected ({int(sel_per_depth.sum())})",
        )
    ax_counts.set_yticks(depths, [f"depth {d}" for d in depths])
    ax_counts.invert_yaxis()
    ax_counts.set_xlabel("cubes")
    ax_counts.set_title("cubes per depth", fontsize=10)
    ax_counts.legend(fontsize=8, loc="lower right")

    bins = 20
    vals = np.array([values[c] for c in cubes], dtype=float)
    lo, hi, label = drawing.value_range()
    grid, _, _ = np.histogram2d(
        np.array([c.depth for c in cubes], dtype=float),
        vals,
        bins=[height, bins],
        range=[[-0.5, height - 0.5], [lo, hi]],
    )
    image = ax_hist.imshow(
        np.ma.masked_equal(grid, 0),
        aspect="auto",
        origin="upper",
        cmap="viridis",
        extent=(lo, hi, height - 0.5, -0.5),
        interpolation="nearest",
    )
    ax_hist.set_yticks(depths, [f"depth {d}" for d in depths])
    ax_hist.set_xlabel(label)
    ax_hist.set_title(f"cubes per depth and {label}", fontsize=10)
    fig.colorbar(image, ax=ax_hist, label="cubes", fraction=0.04, pad=0.02)


def plot_index(
    snapshot: QbeastSnapshot,
    revision_id: int | None = None,
    *,
    selected_cubes: Iterable[str | CubeId] | None = None,
    color_by: ColorBy = "max_weight",
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Figure:
    """Draw the OTree of a revision.

    Each cube is a node: one row per depth (root at the top), the cubes of a row in cube
    order, an edge from each cube to its nearest present ancestor (its parent in a normal
    index). The fill colour is the cube's normalized max weight (``fraction(max_weight)``,
    1.0 for leaves written with ``MAX_WEIGHT``) or its element count. Selected cubes get a red
    outline, edges between two selected cubes are red, and a legend counts them.

    Above ``max_nodes`` cubes a node picture is unreadable, so two per-depth histograms are
    drawn instead: cubes per depth (inner vs leaf, selected overlaid) and a depth-by-colour
    value heat map.

    Args:
        snapshot: The table snapshot.
        revision_id: The revision; None for the latest.
        selected_cubes: Cubes to highlight, e.g. from :func:`selected_cubes_for` (cube id
            strings or :class:`CubeId`); None for no highlighting.
        color_by: ``"max_weight"`` or ``"element_count"``.
        path: When given, the figure is also saved there as PNG.
        title: Figure title; by default the revision, cube count and height.
        max_nodes: Largest cube count drawn as nodes (default 2000).

    Returns:
        The matplotlib ``Figure`` (on an Agg canvas; not registered with ``pyplot``).

    Raises:
        MissingDependencyError: matplotlib is not installed.
        InvalidOptionError: No such revision, an unknown ``color_by``, a bad selection, or a
            ``path`` inside a table directory.
        NotAQbeastTableError: ``revision_id`` is None and the table has no qbeast metadata.
    """
    if color_by not in _COLOR_BY:
        raise InvalidOptionError(f"color_by must be one of {_COLOR_BY}, got {color_by!r}")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise InvalidOptionError(f"max_nodes must be an int ≥ 1, got {max_nodes!r}")
    # never a file inside a table (its _delta_log, its data files): refused before drawing
    target = None if path is None else check_output_file(os.fspath(path))
    figure_cls, canvas_cls, mpl = _import_matplotlib()
    revision = _resolve_revision(snapshot, revision_id)
    statuses = snapshot.cube_statuses(revision.revision_id)
    selected = (
        None
        if selected_cubes is None
        else _as_cubes(selected_cubes, revision.dimension_count) & set(statuses)
    )
    n = len(statuses)
    height = max((c.depth for c in statuses), default=-1) + 1
    if title is None:
        title = f"Revision {revision.revision_id}: {n} cubes, height {height}"
        if selected is not None:
            title += f", {len(selected)} selected"

    if n == 0:
        fig: Figure = figure_cls(figsize=(6.0, 2.0))
        canvas_cls(fig)
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, f"revision {revision.revision_id} has no cubes", ha="center", va="center")
        ax.set_axis_off()
    elif n > max_nodes:
        fig = figure_cls(figsize=(12.0, max(3.0, 0.45 * height + 2.0)), layout="constrained")
        canvas_cls(fig)
        axes = fig.subplots(1, 2)
        _draw_histograms(fig, axes, _Drawing(statuses, color_by, selected))
        title += f" (more than {max_nodes} cubes: per-depth histograms)"
    else:
        slots = len(leaf_cubes(statuses))
        width = min(max(6.0, 0.32 * slots + 2.0), 24.0)
        fig = figure_cls(figsize=(width, max(3.0, 1.1 * height + 1.5)), layout="constrained")
        canvas_cls(fig)
        ax = fig.add_subplot()
        _draw_tree(fig, ax, mpl, _Drawing(statuses, color_by, selected))
    fig.suptitle(title, fontsize=11)
    if target is not None:
        fig.savefig(target, format="png", dpi=100)
    return fig


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------


def _cell_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return ", ".join(_cell_value(v) for v in items)
    return str(value)


def table_html(summary: Mapping[str, object], *, title: str | None = None) -> str:
    """Render a summary mapping as a two-column HTML table (for ``_repr_html_``).

    Keys and values are converted with ``str`` and HTML-escaped; None becomes an empty cell,
    sequences are joined with ``", "`` and nested mappings are rendered as ``k=v`` pairs.

    Args:
        summary: Property name → value, in display order.
        title: Optional heading above the table.

    Returns:
        An HTML fragment.
    """
    grid = _html_grid(("property", "value"), [(str(k), _cell_value(v)) for k, v in summary.items()])
    if title is None:
        return f'<div class="qbeast-summary">{grid}</div>'
    return f'<div class="qbeast-summary"><h4>{html.escape(title)}</h4>{grid}</div>'
