"""Prepare the data and run the round 1 benchmarks, then write their report and the plots.

Usage (from the repository root, after ``pip install -e ".[bench]"``):

    python bench/run_all.py            # full run: TPC-H sf 0.1 and 1, 1,000-commit log,
                                       # six synthetic data sets of 1,000,000 rows
    python bench/run_all.py --quick    # small sizes, for a smoke test of the scripts
    python bench/run_all.py --reuse    # keep the results already in bench/out

Each workload runs in its own process (so client memory is measured per workload) and
writes a JSON result under bench/out/; the report (``bench/out/run_all.md``, with a
"targets" section for the round 1 targets of this run) and the plots are computed from those
files. BENCHMARKS.md is kept by hand from each round's runs, with its summary of every
target at the top: this script never writes it. To publish a fresh run, copy the sections
of its report that changed into BENCHMARKS.md and update the summary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
#: Where the report goes; not BENCHMARKS.md, which holds every round's figures.
REPORT = OUT / "run_all.md"
sys.path.insert(0, str(ROOT))

from bench.common import machine, md_table, median  # noqa: E402
from bench.read_workloads import (  # noqa: E402
    FILTER_HEADER,
    SAMPLING_HEADER,
    filters_md,
    sampling_md,
)
from bench.scaling_bench import markdown as scaling_markdown  # noqa: E402


def run(name: str, *, args: list[str], reuse: bool = False) -> dict[str, Any]:
    """Run one benchmark script and return its JSON report (printed last on stdout)."""
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"{name}.json"
    if reuse and target.exists():
        return dict(json.loads(target.read_text()))
    cmd = [sys.executable, str(ROOT / "bench" / args[0]), *args[1:], "--out", str(target)]
    print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
    started = time.time()
    subprocess.run(cmd, check=True, cwd=ROOT)
    report = json.loads(target.read_text())
    report["_command"] = "python " + " ".join(["bench/" + args[0], *args[1:]])
    report["_seconds"] = time.time() - started
    target.write_text(json.dumps(report, indent=2, default=str))
    return report


def plots(read: dict[str, Any], dest: Path = OUT) -> list[str]:
    """Draw the TPC-H sampling and filter plots into ``dest``; return their paths relative to
    the report's folder (or absolute, outside it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    sampling = read["sampling"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    fractions = [s["fraction"] for s in sampling]
    left.plot(fractions, [100 * s["bytes_share"] for s in sampling], "o-", label="qbeast sample(f)")
    left.plot(fractions, [100.0 for _ in sampling], "--", label="full scan (Spark sample)")
    left.plot(fractions, [100 * f for f in fractions], ":", label="ideal (f)")
    left.set_xscale("log")
    left.set_xlabel("sample fraction f")
    left.set_ylabel("bytes read, % of table")
    left.legend()
    right.plot(fractions, [s["qbeast_s"] for s in sampling], "o-", label="qbeast sample(f)")
    right.plot(
        fractions, [s["spark_sample_s"] for s in sampling], "s--", label="parquet .sample(f)"
    )
    right.set_xscale("log")
    right.set_xlabel("sample fraction f")
    right.set_ylabel("seconds (count)")
    right.legend()
    fig.suptitle(f"Sampling, TPC-H lineitem sf={read['sf']:g} ({read['rows']:,} rows)")
    fig.tight_layout()
    fig.savefig(dest / "sampling.png", dpi=110)
    plt.close(fig)
    made.append(_rel(dest / "sampling.png"))

    filters = [f for f in read["filters"] if f["amplification_qbeast"] is not None]
    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [f"{f['dims']} col {100 * f['selectivity']:g}%" for f in filters]
    _amplification_bars(ax, filters, labels)
    ax.set_yscale("log")
    ax.set_ylabel("read amplification (rows read / rows matching)")
    ax.axhline(1.0, color="grey", linestyle=":")
    ax.legend()
    ax.set_title("TPC-H range filters: read amplification (median over random queries)")
    fig.tight_layout()
    fig.savefig(dest / "filters.png", dpi=110)
    plt.close(fig)
    made.append(_rel(dest / "filters.png"))
    return made


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPORT.parent.resolve()))
    except ValueError:
        return str(path)


def _amplification_bars(ax: Any, filters: list[dict[str, Any]], labels: list[str]) -> None:
    """Grouped bars: qbeast, deltalake z-order and the rank Z-curve per filter row."""
    series = [
        ("amplification_qbeast", "qbeast"),
        ("amplification_zorder", "deltalake z-order"),
        ("amplification_zorder_ranks", "Z-curve on ranks (in memory)"),
    ]
    series = [(k, n) for k, n in series if any(f.get(k) is not None for f in filters)]
    width = 0.8 / len(series)
    xs = range(len(filters))
    for i, (key, name) in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width
        ax.bar([x + offset for x in xs], [f.get(key) or 0 for f in filters], width, label=name)
    ax.set_xticks(list(xs), labels)


def synthetic_plot(syn: dict[str, Any], dest: Path = OUT) -> str:
    """Sampling bytes share vs f and 1%-filter amplification, per synthetic data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = syn["datasets"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 8))
    fractions = [s["fraction"] for s in datasets[0]["sampling"]]
    for d in datasets:
        top.plot(
            [s["fraction"] for s in d["sampling"]],
            [100 * s["bytes_share"] for s in d["sampling"]],
            "o-",
            label=d["name"],
        )
    top.plot(fractions, [100 * f for f in fractions], "k:", label="ideal (f)")
    top.set_xscale("log")
    top.set_yscale("log")
    top.set_xlabel("sample fraction f")
    top.set_ylabel("bytes read by sample(f), % of table")
    top.legend(fontsize=8)
    top.set_title(f"Synthetic data, {syn['rows']:,} rows, cubeSize {syn['cube_size']:,}")
    rows, labels = [], []
    for d in datasets:
        for f in d["filters"]:
            if f["selectivity"] == 0.01 and f["amplification_qbeast"] is not None:
                rows.append(f)
                labels.append(f"{d['name']}\n{f['dims']} col")
    _amplification_bars(bottom, rows, labels)
    bottom.tick_params(axis="x", labelsize=7)
    bottom.set_yscale("log")
    bottom.axhline(1.0, color="grey", linestyle=":")
    bottom.set_ylabel("read amplification, 1% filters")
    bottom.legend(fontsize=8, ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout()
    fig.savefig(dest / "synthetic.png", dpi=110)
    plt.close(fig)
    return _rel(dest / "synthetic.png")


def _status(ok: bool | None) -> str:
    return "not assessed" if ok is None else ("**met**" if ok else "**missed**")


def _filter_row(filters: list[dict[str, Any]], dims: int, selectivity: float) -> dict | None:
    return next((f for f in filters if f["dims"] == dims and f["selectivity"] == selectivity), None)


def _vs_zorder(f: dict[str, Any] | None, key: str, files: str) -> tuple[str, bool | None]:
    """Measured text and status of "qbeast amplification <= half of this layout's"."""
    if f is None or f["amplification_qbeast"] is None or not f.get(key):
        return "not measured", None
    ratio = f["amplification_qbeast"] / f[key]
    return (
        f"{f['amplification_qbeast']:.1f}x vs {f[key]:.1f}x = {ratio:.2f} ({files})",
        ratio <= 0.5,
    )


def _floor_ratio(write: dict[str, Any]) -> float | None:
    """Median time of the receive-only Python writer over the median parquet write."""
    times = write["times"]
    if "python_writer_floor" not in times:
        return None
    return median(times["python_writer_floor"]) / median(times["parquet"])


def targets(results: dict[str, dict[str, Any]]) -> str:
    """The "targets met and missed" section, computed from the results of this run."""
    rows: list[list[str]] = []
    big = results.get("write_big")
    if big:
        at_sf1 = big["sf"] == 1
        runs = " / ".join(
            f"{q / p:.2f}x"
            for q, p in zip(big["times"]["qbeast"], big["times"]["parquet"], strict=False)
        )
        rows.append(
            [
                "qbeast write <= 1.5x of `df.write.parquet` (TPC-H sf 1)",
                f"{big['ratio_median']:.2f}x (median of {runs}) at sf {big['sf']:g}"
                + (
                    "; a receive-only Python writer alone (the Arrow hop every Python "
                    f"Data Source writer pays): {floor:.2f}x"
                    if (floor := _floor_ratio(big)) is not None
                    else ""
                ),
                _status(big["ratio_median"] <= 1.5 if at_sf1 else None)
                + ("" if at_sf1 else " (not sf 1)"),
            ]
        )
    small = results.get("write_small")
    if big and small:
        grew = big["rows"] / small["rows"]
        mem_small = small["client_peak_rss_mb_after_writes"]
        mem_big = big["client_peak_rss_mb_after_writes"]
        ok = None if grew < 2 else mem_big <= 1.2 * mem_small
        rows.append(
            [
                "client peak memory independent of data size (within 20% for >= 2x the rows)",
                f"{mem_small:.0f} MiB at {small['rows']:,} rows, {mem_big:.0f} MiB at "
                f"{big['rows']:,} rows ({grew:.0f}x the rows)",
                _status(ok) + (" (same size)" if ok is None else ""),
            ]
        )
    read = results.get("read")
    if read:
        at_sf1 = read["sf"] == 1
        share = {s["fraction"]: s["bytes_share"] for s in read["sampling"]}
        for fraction, limit in ((0.01, 0.02), (0.1, 0.15)):
            if fraction not in share:
                continue
            rows.append(
                [
                    f"`sample({fraction:g})` reads <= {limit:.0%} of the bytes (TPC-H sf 1)",
                    f"{share[fraction]:.2%} at sf {read['sf']:g}",
                    _status(share[fraction] <= limit if at_sf1 else None)
                    + ("" if at_sf1 else " (not sf 1)"),
                ]
            )
        f = _filter_row(read["filters"], 2, 0.01)
        files = f"{read['files']} vs {read['zorder_files']} files"
        text, ok = _vs_zorder(f, "amplification_zorder", files)
        rows.append(
            [
                "2-column ~1% filters: amplification <= half of deltalake z-order's (TPC-H)",
                text,
                _status(ok),
            ]
        )
        if f is not None and f.get("amplification_zorder_ranks"):
            text, ok = _vs_zorder(f, "amplification_zorder_ranks", f"{read['files']} files each")
            rows.append(["same, against the Z-curve on ranks (TPC-H)", text, _status(ok)])
    syn = results.get("synthetic")
    if syn:
        for d in syn["datasets"]:
            f = _filter_row(d["filters"], 2, 0.01)
            if f is None:
                continue
            text_z, ok_z = _vs_zorder(
                f, "amplification_zorder", f"{d['files']} vs {d['zorder_files']} files"
            )
            text_r, ok_r = _vs_zorder(f, "amplification_zorder_ranks", "ranks")
            rows.append(
                [
                    f"same, {d['name']} ({d['rows']:,} rows): vs deltalake; vs ranks",
                    f"{text_z}; {text_r}",
                    f"{_status(ok_z)}; {_status(ok_r)}",
                ]
            )
    lines = [
        "## Targets: met and missed",
        "",
        "Computed by `bench/run_all.py` from the results of this run. A target stated at "
        "TPC-H sf 1 "
        'is not assessed from a run at another size. "Similar file count": the deltalake '
        "copy's target file size is tuned once towards the qbeast file count; the rank "
        "Z-curve has exactly the qbeast file count.",
        "",
        md_table(["target", "measured", "status"], rows),
        "",
    ]
    log = results.get("log")
    if log:
        lines += [
            f"Context (log scale, {log['files']:,} files): the plugin's log replay took "
            f"{log['snapshot_ours_s'] / log['snapshot_deltalake_s']:.1f}x deltalake's; commit "
            f"latency median {log['commit_latency_median_ms']:.0f} ms over all commits, "
            f"{log['commit_latency_last100_median_ms']:.0f} ms over the last 100.",
            "",
        ]
    return "\n".join(lines)


FILTERS_TEXT = (
    "Boxes centred on a random row, equally wide in quantile space on each queried column, "
    "scaled to the stated selectivity (the measured median is in brackets); {queries} "
    "queries per row; medians. Read amplification = rows in the files read / rows matching "
    "(ideal 1x). deltalake z-order: a `write_deltalake` copy `optimize.z_order`-ed on "
    "({zcols}), {zfiles} files, pruned by its files' min/max statistics. Z-curve on ranks: "
    "the rows sorted by the Morton code of their per-column quantile ranks on ({cols}) and "
    "cut into {files} equal files, computed in memory (rows only). In our measurements the "
    "files of deltalake 1.x's `z_order` each span most of every column's range (its key is "
    "built from the values' binary encoding, not from a Morton order of the values), so the "
    "rank Z-curve is the stronger Z-order baseline. Times: `count()` of the qbeast filter next to "
    "the same filter on the unindexed parquet."
)


def render_layout_choice(path: Path = ROOT / "bench" / "layout_comparison.json") -> list[str]:
    """The measurement behind the file layout: reference rollup vs weight bands (one-off)."""
    if not path.exists():
        return []
    c = json.loads(path.read_text())
    old, new = c["rollup_39cab83"], c["bands_b03a361"]
    rows = [
        [f"sample({f}) bytes / table", f"{old['sampling'][f]:.2%}", f"{new['sampling'][f]:.2%}"]
        for f in ("0.001", "0.01", "0.1", "0.5")
    ]
    for key, label in (
        ("1:0.01", "1 column 1%"),
        ("2:0.01", "2 columns 1%"),
        ("3:0.01", "3 columns 1%"),
    ):
        o, n = old["filters"][key], new["filters"][key]
        rows.append(
            [
                f"filter amplification, {label} (rank Z-curve, same files)",
                f"{o['qbeast']:.1f}x ({o['ranks']:.1f}x)",
                f"{n['qbeast']:.1f}x ({n['ranks']:.1f}x)",
            ]
        )
    rows.append(["files", str(old["files"]), str(new["files"])])
    return [
        "### Layout choice: the reference's rollup vs weight bands",
        "",
        f"{c['data']}; `{c['command']}`, {c['date']}. The reference rolls small cubes into "
        "their parent's file; we cut files by weight band (fractions 2^-k), then into runs "
        "of neighbouring cubes (`qbeast_connect/index/layout.py`). Bands make sampling read "
        "at most about 2f of the table; the price is coarser files per band, so range "
        "filters read about twice as many rows as with the rollup, which had matched the "
        "rank Z-curve.",
        "",
        md_table(["measure", "rollup (39cab83)", "weight bands (b03a361)"], rows),
        "",
    ]


def render_read(r: dict[str, Any], pngs: list[str]) -> list[str]:
    """The TPC-H read section."""
    cols = r.get("columns", ["l_extendedprice", "l_partkey", "l_shipdate"])
    # results from before the shared read workloads z-ordered on the first two columns
    zcols = r.get("zorder_columns", cols[:2])
    return [
        f"## Reads: TPC-H lineitem sf={r['sf']:g}, cubeSize {r['cube_size']:,}, "
        f"{r['files']} files after optimize, tree height {r['height']} (ideal {r['min_height']})",
        "",
        f"Command: `{r['_command']}`",
        "",
        "### Sampling",
        "",
        md_table(SAMPLING_HEADER, sampling_md(r["sampling"])),
        "",
        "### Range filters",
        "",
        (
            FILTERS_TEXT.format(
                queries=r["filters"][0]["queries"],
                zcols=", ".join(zcols),
                zfiles=r["zorder_files"],
                cols=", ".join(cols),
                files=r["zorder_ranks_files"],
            )
            if "zorder_ranks_files" in r
            else "Results of the earlier read benchmark: ranges placed uniformly at random in "
            f"quantile space, {r['filters'][0]['queries']} queries per row, medians; deltalake "
            f"copy z-ordered on ({', '.join(zcols)}), {r['zorder_files']} files."
        )
        + f" Columns k = the first k of ({', '.join(cols)}).",
        "",
        md_table(FILTER_HEADER, filters_md(r["filters"])),
        "",
        *[f"![{p}]({p})" for p in pngs],
        "",
    ]


def render_synthetic(syn: dict[str, Any], png: str | None) -> list[str]:
    """The synthetic data section: writes and sampling for all data sets, then one filter
    table per data set."""
    datasets = syn["datasets"]
    fractions = [s["fraction"] for s in datasets[0]["sampling"]] if datasets else []
    lines = [
        f"## Synthetic data: {syn['rows']:,} rows per data set, cubeSize {syn['cube_size']:,}",
        "",
        f"Command: `{syn['_command']}`",
        "",
        "Columns `id`, `c0`..`c{d-1}` (double, all indexed) and a random 50-character "
        "`payload`; fixed numpy seeds. uniform: [0, 1) per column. zipf: numpy `zipf(1.3)` "
        "clipped at 10^6 plus [0, 1) jitter, per column (a quarter of the rows in [1, 2)). "
        "clustered: 98% of the rows in 8 Gaussian clusters (sigma 0.01) with unequal "
        "weights, 2% uniform noise (correlated columns). Matrix: "
        f"{', '.join(syn['matrix'])} (each distribution at 3 dimensions, uniform also at 2 "
        "and 4, and Zipf at 3 with the `quantiles` transformer fed by "
        "`qc.computeQuantilesForColumn` - the remedy for skew, its time counted in the "
        "write; `--dists`, `--dims`, `--datasets` change it).",
        "",
        "### Writes and layout",
        "",
        md_table(
            [
                "data set",
                "df.write.parquet s",
                "qbeast write s",
                "ratio",
                "optimize s",
                "write_deltalake s",
                "z_order s",
                "files qbeast / deltalake",
                "height (ideal)",
            ],
            [
                [
                    d["name"],
                    f"{d['parquet_write_s']:.1f}",
                    f"{d['write_s']:.1f}",
                    f"{d['write_ratio']:.2f}x",
                    f"{d['optimize_s']:.1f}",
                    f"{d['zorder_write_s']:.1f}",
                    f"{d['zorder_s']:.1f}",
                    f"{d['files']} / {d['zorder_files']}",
                    f"{d['height']} ({d['min_height']})",
                ]
                for d in datasets
            ],
        ),
        "",
        "`write_deltalake` and `z_order` run in this (client) process with Rust; "
        "`write_deltalake` reads the parquet source as a stream. Context only.",
        "",
        "### Sampling: bytes read by `sample(f)` / table (time / parquet `.sample(f)` time)",
        "",
        md_table(
            ["data set", *[f"f = {f:g}" for f in fractions]],
            [
                [
                    d["name"],
                    *[
                        f"{s['bytes_share']:.2%} ({s['qbeast_s'] / s['spark_sample_s']:.2f}x)"
                        for s in d["sampling"]
                    ],
                ]
                for d in datasets
            ],
        ),
        "",
    ]
    for d in datasets:
        lines += [
            f"### Range filters: {d['name']}",
            "",
            FILTERS_TEXT.format(
                queries=d["filters"][0]["queries"],
                zcols=", ".join(d["zorder_columns"]),
                zfiles=d["zorder_files"],
                cols=", ".join(d["columns"]),
                files=d["zorder_ranks_files"],
            )
            if d is datasets[0]
            else f"As for {datasets[0]['name']}; {d['zorder_files']} deltalake files, "
            f"{d['files']} qbeast files.",
            "",
            md_table(FILTER_HEADER, filters_md(d["filters"])),
            "",
        ]
    if png:
        lines += [f"![{png}]({png})", ""]
    return lines


def render(
    results: dict[str, dict[str, Any]], pngs: list[str], synthetic_png: str | None = None
) -> str:
    """The report's text (``bench/out/run_all.md``)."""
    lines = [
        "# Benchmarks",
        "",
        f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d')}. "
        "Produced by `python bench/run_all.py` into `bench/out/run_all.md` (each section "
        "names its own command). "
        "The machine is shared and noisy: compare the ratios measured side by side in one "
        "run; absolute seconds are context only. The Connect server is the embedded one "
        "(`local[2]`, driver memory 4g).",
        "",
    ]
    for name in sorted(k for k in results if k.startswith("write_")):
        w = results[name]
        t = w["times"]
        med = {k: median(v) for k, v in t.items()}
        lines += [
            f"## Write: TPC-H lineitem sf={w['sf']:g} ({w['rows']:,} rows), indexed on "
            "l_shipdate, l_extendedprice, l_partkey",
            "",
            f"Command: `{w['_command']}`",
            "",
            md_table(
                ["workload", "seconds (runs)", "ratio"],
                [
                    ["df.write.parquet", " / ".join(f"{x:.1f}" for x in t["parquet"]), "1.00x"],
                    [
                        "qbeast_connect.write (new table)",
                        " / ".join(f"{x:.1f}" for x in t["qbeast"]),
                        f"**{w['ratio_median']:.2f}x** (target <= 1.5x)",
                    ],
                    [
                        "append 10% rows, same revision",
                        f"{med['append_same_revision']:.1f}",
                        f"{med['append_same_revision'] / med['parquet_append']:.2f}x of parquet append",
                    ],
                    [
                        "append 10% rows, new revision",
                        f"{med['append_new_revision']:.1f}",
                        f"{med['append_new_revision'] / med['parquet_append']:.2f}x of parquet append",
                    ],
                    ["parquet append of the same rows", f"{med['parquet_append']:.1f}", "1.00x"],
                ]
                + (
                    [
                        [
                            "floor of any Python writer: the same rows (+ weight) into a "
                            "receive-only Python Data Source",
                            " / ".join(f"{x:.1f}" for x in t["python_writer_floor"]),
                            f"{med['python_writer_floor'] / med['parquet']:.2f}x",
                        ]
                    ]
                    if "python_writer_floor" in med
                    else []
                )
                + [
                    [
                        "optimize revision 1 "
                        f"({w['optimize']['files_before']} -> {w['optimize']['files_after']} files)",
                        f"{med['optimize_revision_1']:.1f}",
                        f"{med['optimize_revision_1'] / med['parquet']:.2f}x of the parquet write",
                    ],
                ]
                + (
                    [
                        [
                            "deltalake write_deltalake (in-process, Rust)",
                            f"{med['deltalake_write']:.1f}",
                            "context",
                        ],
                        [
                            "deltalake optimize.z_order (3 columns)",
                            f"{med['deltalake_zorder']:.1f}",
                            "context",
                        ],
                    ]
                    if "deltalake_write" in med
                    else []
                ),
            ),
            "",
            f"Files: parquet {w['files']['parquet']}, qbeast {w['files']['qbeast']}. "
            f"Client peak RSS after the writes: {w['client_peak_rss_mb_after_writes']:.0f} MiB "
            f"(whole script incl. deltalake in-process: {w['client_peak_rss_mb']:.0f} MiB); "
            f"server (driver JVM) peak RSS: {w['server_peak_rss_mb']:.0f} MiB.",
            "",
        ]
        if w.get("write_phases"):
            phase_med = {k: median(v) for k, v in w["write_phases"].items()}
            lines += [
                "Phases of the indexed write (`WriteResult.timings`, medians): "
                + ", ".join(f"{k} {v:.1f} s" for k, v in phase_med.items())
                + ". The write job moves every row from the JVM to a Python worker as "
                "Arrow; the receive-only writer above measures that hop alone.",
                "",
            ]
    if "read" in results:
        lines += render_read(results["read"], pngs)
        lines += render_layout_choice()
    if "synthetic" in results:
        lines += render_synthetic(results["synthetic"], synthetic_png)
    if "log" in results:
        lg = results["log"]
        lines += [
            f"## Log scale: {lg['commits']:,} commits, {lg['files']:,} files",
            "",
            f"Command: `{lg['_command']}`",
            "",
            md_table(
                ["measure", "value"],
                [
                    ["log replay (ours, in the server)", f"{lg['snapshot_ours_s'] * 1000:.0f} ms"],
                    [
                        "deltalake DeltaTable load + add actions",
                        f"{lg['snapshot_deltalake_s'] * 1000:.0f} ms",
                    ],
                    [
                        "ratio ours / deltalake",
                        f"{lg['snapshot_ours_s'] / lg['snapshot_deltalake_s']:.2f}x",
                    ],
                    [
                        "client: qbeast snapshot from the adds",
                        f"{lg['client_snapshot_build_s'] * 1000:.0f} ms",
                    ],
                    [
                        "client: plan a sample and a filter",
                        f"{lg['client_planning_s'] * 1000:.0f} ms",
                    ],
                    [
                        "QbeastTable.forPath through Connect",
                        f"{lg['forPath_roundtrip_s'] * 1000:.0f} ms",
                    ],
                    [
                        "commit latency, median / p95",
                        f"{lg['commit_latency_median_ms']:.1f} / {lg['commit_latency_p95_ms']:.1f} ms",
                    ],
                    [
                        "commit latency, last 100 commits (median)",
                        f"{lg['commit_latency_last100_median_ms']:.1f} ms",
                    ],
                ],
            ),
            "",
        ]
    if "scaling" in results:
        sc = results["scaling"]
        lines += [
            "## How cost grows",
            "",
            "The indexed write next to the parquet write, the read of a 1% 2-column filter "
            "(aggregating the columns it reads) on both, and `forPath` + planning, at each size "
            "in one run; (xN) is the growth from the previous size.",
            "",
            scaling_markdown(sc),
            "",
            f"Command: `{sc['_command']}`",
            "",
        ]
    if "timeline" in results:
        lines += ["## Partition timelines", "", results["timeline"]["markdown"], ""]
    if "query" in results:
        lines += [
            "## Queries that read columns (issue #18)",
            "",
            f"Command: `{results['query']['_command']}`",
            "",
            results["query"]["markdown"],
            "",
        ]
    lines += [targets(results)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep results already in bench/out")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    big = "0.1" if args.quick else "1"
    results["write_small"] = run(
        "write_small",
        reuse=args.reuse,
        args=["write_bench.py", "--sf", "0.1", "--rounds", "3", "--cube-size", "50000"],
    )
    results["write_big"] = run(
        "write_big",
        reuse=args.reuse,
        args=["write_bench.py", "--sf", big, "--rounds", "3", "--zorder"],
    )
    results["read"] = run(
        "read",
        reuse=args.reuse,
        args=[
            "read_bench.py",
            "--sf",
            big,
            "--cube-size",
            "1000" if args.quick else "10000",
            "--queries",
            "5" if args.quick else "10",
        ],
    )
    results["log"] = run(
        "log",
        reuse=args.reuse,
        args=[
            "log_bench.py",
            "--commits",
            "100" if args.quick else "1000",
            "--files-per-commit",
            "10",
        ],
    )
    results["scaling"] = run(
        "scaling",
        reuse=args.reuse,
        args=["scaling_bench.py", "--sizes", "0.05,0.1,0.2" if args.quick else "1,10,30"]
        + (["--cube-size", "100000", "--repeats", "2"] if args.quick else []),
    )
    results["synthetic"] = run(
        "synthetic",
        reuse=args.reuse,
        args=["synthetic_bench.py"]
        + (
            ["--rows", "100000", "--cube-size", "2000", "--queries", "3"]
            if args.quick
            else ["--rows", "1000000", "--cube-size", "10000", "--queries", "8"]
        ),
    )
    results["timeline"] = run("timeline", reuse=args.reuse, args=["timeline_cover.py"])
    results["query"] = run(
        "query",
        reuse=args.reuse,
        args=["query_bench.py"]
        + (
            ["--sf", "0.01", "--quick"]
            if args.quick
            else ["--sf", big, "--cube-sizes", "1000000,5000000"]
        ),
    )
    pngs = plots(results["read"])
    synthetic_png = synthetic_plot(results["synthetic"])
    REPORT.write_text(render(results, pngs, synthetic_png))
    print(f"wrote {REPORT} (BENCHMARKS.md is edited by hand: see this script's docstring)")


if __name__ == "__main__":
    main()
