"""Prepare the data and run every benchmark, then write BENCHMARKS.md and the plots.

Usage (from the repository root, after ``pip install -e ".[bench]"``):

    python bench/run_all.py            # full run: TPC-H sf 0.1 and 1, 1,000-commit log
    python bench/run_all.py --quick    # small sizes, for a smoke test of the scripts

Each workload runs in its own process (so client memory is measured per workload) and
writes a JSON result under bench/out/; the report is rendered from those files.
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
sys.path.insert(0, str(ROOT))

from bench.common import machine, md_table  # noqa: E402


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


def plots(read: dict[str, Any]) -> list[str]:
    """Draw the sampling and filter curves; return the PNG paths (relative to the root)."""
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
    right.plot(fractions, [s["spark_sample_s"] for s in sampling], "s--", label="parquet .sample(f)")
    right.set_xscale("log")
    right.set_xlabel("sample fraction f")
    right.set_ylabel("seconds (count)")
    right.legend()
    fig.suptitle(f"Sampling, TPC-H lineitem sf={read['sf']:g} ({read['rows']:,} rows)")
    fig.tight_layout()
    path = ROOT / "bench" / "sampling.png"
    fig.savefig(path, dpi=110)
    made.append("bench/sampling.png")

    filters = [f for f in read["filters"] if f["amplification_qbeast"] is not None]
    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [f"{f['dims']}D {100 * f['selectivity']:g}%" for f in filters]
    xs = range(len(filters))
    ax.bar([x - 0.2 for x in xs], [f["amplification_qbeast"] for f in filters], 0.4, label="qbeast")
    ax.bar([x + 0.2 for x in xs],
           [f["amplification_zorder"] or 0 for f in filters], 0.4, label="deltalake z-order")
    ax.set_xticks(list(xs), labels)
    ax.set_yscale("log")
    ax.set_ylabel("read amplification (rows read / rows matching)")
    ax.axhline(1.0, color="grey", linestyle=":")
    ax.legend()
    ax.set_title("Range filters: read amplification (median over random queries)")
    fig.tight_layout()
    fig.savefig(ROOT / "bench" / "filters.png", dpi=110)
    made.append("bench/filters.png")
    return made


FINDINGS = """## Reading these numbers: targets met and missed

- **Write ratio (target <= 1.5x): not reliably met.** This run measured 1.87x at sf 1 while other
  test jobs shared the 2 cores; an earlier run on a quieter machine measured 1.45x
  (`python bench/write_bench.py --sf 1 --rounds 1`: 20.0 s parquet, 28.9 s qbeast). The write is
  three jobs (statistics, a sampled estimation, the write) and one Python pass over all columns.
- **Client memory (target: independent of data size): met.** 151 MiB after the writes at sf 0.1
  and at sf 1; the client holds only summaries (cube domains, the table state).
- **Sampling bytes (targets <= 2% for 0.01, <= 15% for 0.1): missed** (4.3% and 90%). The rollup of
  spec 5.7 merges small child cubes into their parent's file, so the files of the top of the
  tree also carry deep rows and a sample must read them whole. Planned fix: roll small cubes up
  with their siblings instead, so files stay within one depth. Sampling time is also behind
  Spark's own `sample(f).count()`, which needs no column at all, while ours hashes three columns
  over 362 files.
- **Filter amplification (target: at most half of Z-order's at a similar file count): met for 2
  columns at 1%** (6.5x vs 15.0x with 362 vs 652 files, 0.43x) and for every other measured
  case; query times are still above the unindexed parquet scan on this small table, because
  the planned files are many and small (next: larger files per cube, fewer per query).
- **Log scale**: our replay is 8.7x slower than deltalake's Rust reader on 10,000 files; the
  commit latency grows with the log when the committer re-reads the snapshot.
"""


def render(results: dict[str, dict[str, Any]], pngs: list[str]) -> str:
    """The BENCHMARKS.md text."""
    lines = [
        "# Benchmarks",
        "",
        f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d')}. "
        "Produced by `python bench/run_all.py` (each section names its own command). "
        "The machine is shared and noisy: compare the ratios measured side by side in one "
        "run; absolute seconds are context only. The Connect server is the embedded one "
        "(`local[2]`, driver memory 4g).",
        "",
    ]
    for name in sorted(k for k in results if k.startswith("write_")):
        w = results[name]
        t = w["times"]
        med = {k: sorted(v)[len(v) // 2] for k, v in t.items()}
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
                    ["qbeast_connect.write (new table)", " / ".join(f"{x:.1f}" for x in t["qbeast"]),
                     f"**{w['ratio_median']:.2f}x** (target <= 1.5x)"],
                    ["append 10% rows, same revision",
                     f"{med['append_same_revision']:.1f}",
                     f"{med['append_same_revision'] / med['parquet_append']:.2f}x of parquet append"],
                    ["append 10% rows, new revision",
                     f"{med['append_new_revision']:.1f}",
                     f"{med['append_new_revision'] / med['parquet_append']:.2f}x of parquet append"],
                    ["parquet append of the same rows", f"{med['parquet_append']:.1f}", "1.00x"],
                    ["optimize revision 1 "
                     f"({w['optimize']['files_before']} -> {w['optimize']['files_after']} files)",
                     f"{med['optimize_revision_1']:.1f}",
                     f"{med['optimize_revision_1'] / med['parquet']:.2f}x of the parquet write"],
                ]
                + (
                    [["deltalake write_deltalake (in-process, Rust)",
                      f"{med['deltalake_write']:.1f}", "context"],
                     ["deltalake optimize.z_order (3 columns)",
                      f"{med['deltalake_zorder']:.1f}", "context"]]
                    if "deltalake_write" in med else []
                ),
            ),
            "",
            f"Files: parquet {w['files']['parquet']}, qbeast {w['files']['qbeast']}. "
            f"Client peak RSS after the writes: {w['client_peak_rss_mb_after_writes']:.0f} MiB "
            f"(whole script incl. deltalake in-process: {w['client_peak_rss_mb']:.0f} MiB); "
            f"server (driver JVM) peak RSS: {w['server_peak_rss_mb']:.0f} MiB.",
            "",
        ]
    if "read" in results:
        r = results["read"]
        lines += [
            f"## Reads: TPC-H lineitem sf={r['sf']:g}, cubeSize {r['cube_size']:,}, "
            f"{r['files']} files after optimize, tree height {r['height']} (ideal {r['min_height']})",
            "",
            f"Command: `{r['_command']}`",
            "",
            "### Sampling",
            "",
            md_table(
                ["f", "bytes read / table", "files", "rows (qbeast)", "qbeast s",
                 "parquet .sample(f) s", "time ratio"],
                [
                    [s["fraction"], f"{s['bytes_share']:.2%}", s["files"], f"{s['rows_qbeast']:,}",
                     f"{s['qbeast_s']:.2f}", f"{s['spark_sample_s']:.2f}",
                     f"{s['qbeast_s'] / s['spark_sample_s']:.2f}x"]
                    for s in r["sampling"]
                ],
            ),
            "",
            "Targets: sample(0.01) <= 2% and sample(0.1) <= 15% of the bytes.",
            "",
            "### Range filters",
            "",
            f"Random ranges (about the given selectivity) on 1, 2 and 3 indexed columns "
            f"(l_extendedprice, l_partkey, l_shipdate); {r['filters'][0]['queries']} queries per "
            "row; medians. Read amplification = rows in the files read / rows matching (ideal "
            f"1x). Z-order: a deltalake copy z-ordered on (l_extendedprice, l_partkey) with "
            f"{r['zorder_files']} files (qbeast: {r['files']}); its files are pruned by their "
            "min/max statistics.",
            "",
            md_table(
                ["columns", "selectivity", "amplification qbeast", "amplification z-order",
                 "qbeast s", "unindexed parquet s"],
                [
                    [f["dims"], f"{100 * f['selectivity']:g}%",
                     "-" if f["amplification_qbeast"] is None else f"{f['amplification_qbeast']:.1f}x",
                     "-" if f["amplification_zorder"] is None else f"{f['amplification_zorder']:.1f}x",
                     f"{f['qbeast_s']:.2f}", f"{f['parquet_s']:.2f}"]
                    for f in r["filters"]
                ],
            ),
            "",
        ]
        lines += [f"![{p}]({p})" for p in pngs] + [""]
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
                    ["deltalake DeltaTable load + add actions",
                     f"{lg['snapshot_deltalake_s'] * 1000:.0f} ms"],
                    ["ratio ours / deltalake",
                     f"{lg['snapshot_ours_s'] / lg['snapshot_deltalake_s']:.2f}x"],
                    ["client: qbeast snapshot from the adds",
                     f"{lg['client_snapshot_build_s'] * 1000:.0f} ms"],
                    ["client: plan a sample and a filter", f"{lg['client_planning_s'] * 1000:.0f} ms"],
                    ["QbeastTable.forPath through Connect", f"{lg['forPath_roundtrip_s'] * 1000:.0f} ms"],
                    ["commit latency, median / p95",
                     f"{lg['commit_latency_median_ms']:.1f} / {lg['commit_latency_p95_ms']:.1f} ms"],
                    ["commit latency, last 100 commits (median)",
                     f"{lg['commit_latency_last100_median_ms']:.1f} ms"],
                ],
            ),
            "",
        ]
    if "scaling" in results:
        sc = results["scaling"]
        lines += [
            "## How cost grows",
            "",
            "Write time of the indexed write next to the parquet write, and client planning "
            "time, at three sizes (same script, same run).",
            "",
            md_table(
                ["rows", "qbeast write s", "parquet write s", "ratio", "planning ms"],
                [[f"{p['rows']:,}", f"{p['qbeast_s']:.1f}", f"{p['parquet_s']:.1f}",
                  f"{p['qbeast_s'] / p['parquet_s']:.2f}x", f"{p['planning_ms']:.1f}"]
                 for p in sc["points"]],
            ),
            "",
            f"Command: `{sc['_command']}`",
            "",
        ]
    if "timeline" in results:
        lines += ["## Partition timelines", "", results["timeline"]["markdown"], ""]
    lines += [FINDINGS]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep results already in bench/out")
    args = parser.parse_args()
    results: dict[str, dict[str, Any]] = {}
    big = "0.1" if args.quick else "1"
    results["write_small"] = run("write_small", reuse=args.reuse, args=["write_bench.py", "--sf", "0.1", "--rounds", "2",
                                                 "--cube-size", "50000"])
    results["write_big"] = run("write_big", reuse=args.reuse, args=["write_bench.py", "--sf", big, "--rounds", "2",
                                             "--zorder"])
    results["read"] = run("read", reuse=args.reuse, args=["read_bench.py", "--sf", big, "--cube-size",
                                   "1000" if args.quick else "10000", "--queries",
                                   "5" if args.quick else "10"])
    results["log"] = run("log", reuse=args.reuse, args=["log_bench.py", "--commits", "100" if args.quick else "1000",
                                 "--files-per-commit", "10"])
    results["scaling"] = run("scaling", reuse=args.reuse, args=["scaling_bench.py", "--sizes",
                                         "0.05,0.1,0.2" if args.quick else "0.1,0.3,1"])
    results["timeline"] = run("timeline", reuse=args.reuse, args=["timeline_cover.py"])
    pngs = plots(results["read"])
    (ROOT / "BENCHMARKS.md").write_text(render(results, pngs))
    print("wrote BENCHMARKS.md")


if __name__ == "__main__":
    main()
