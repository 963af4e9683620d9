"""The write of a many-partition input: narrowed to one task per core against shuffled by
file group, next to ``df.write.parquet``, in one server; then the reads of both tables.

Usage: QBEAST_BENCH_DIR=/tmp/qbeast-bench-me python -m bench.narrowed_write_bench \
           --sf 1,10 [--rounds 1] [--cube-size 1000000] [--reads 3] [--out result.json]

Per scale factor and round, taking turns: ``df.write.parquet``, ``qc.write`` as it runs now
(an input of more than ``CONSOLIDATE_ABOVE_PARTITIONS`` partitions narrowed with
``coalesce`` to one write task per server core, each task setting rows aside by file group
on local disk: ``server_plugin/group_spill.py``) and ``qc.write`` with the shuffle by file
group of before (``write_tasks.DIRECT_WRITE_MAX_TASKS = 0``). It records wall times, file
counts and sizes, the peak RSS of the server's Python workers and the load average; then
the 1-column and 2-column 1% filters of ``bench/query_bench.py`` (aggregating the columns
they read) on the plain parquet copy and on both tables, medians of ``--reads``, taking
turns, with the share of bytes the index selects. Answers must agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import dir_bytes, fresh_dir, lineitem, machine, median, warm_up
from bench.query_bench import COLUMNS, aggregate, shapes


class WorkerRss:
    """Peak RSS of any single process under the server JVM (its Python workers), sampled."""

    def __init__(self, root: int | None) -> None:
        self.root = root
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _children(self) -> dict[int, list[int]]:
        tree: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry))
        return tree

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            if self.root is None:
                return
            tree = self._children()
            todo = list(tree.get(self.root, []))
            while todo:
                pid = todo.pop()
                todo.extend(tree.get(pid, []))
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            self.peak_mb = max(self.peak_mb, int(line.split()[1]) / 1024)
                except OSError:
                    continue

    def __enter__(self) -> WorkerRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _server_pid() -> int | None:
    from qbeast_connect.spark.session import embedded_server

    server = embedded_server()
    return None if server is None else server.pid


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="1,10")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cube-size", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=3)
    parser.add_argument("--modes", default="narrowed,shuffled")
    parser.add_argument("--out", default=None)
    parser.add_argument("--warm-sf", type=float, default=None,
                        help="warm up on this scale factor instead of the measured one")
    parser.add_argument("--qbeast-first", action="store_true",
                        help="start every even round with the qbeast writes")
    args = parser.parse_args()

    import qbeast_connect as qc
    from qbeast_connect.spark import write_tasks

    default_max = write_tasks.DIRECT_WRITE_MAX_TASKS
    spark = qc.session()
    columns = ",".join(COLUMNS)
    report: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python -m bench.narrowed_write_bench " + " ".join(sys.argv[1:]),
        "cube_size": args.cube_size,
        "server_cores": write_tasks.server_cores(spark),
        "sizes": {},
    }
    modes = args.modes.split(",")
    for sf in [float(x) for x in args.sf.split(",")]:
        source = lineitem(sf)
        df = spark.read.parquet(source)
        rows = df.count()
        warm_up(df if args.warm_sf is None else spark.read.parquet(lineitem(args.warm_sf)),
                columns)
        times: dict[str, list[float]] = {}
        files: dict[str, int] = {}
        sizes: dict[str, int] = {}
        rss: dict[str, float] = {}
        loads: list[float] = []
        paths: dict[str, str] = {}
        for r in range(args.rounds):
            order = ["parquet", *modes]
            if (r % 2 == 1) != args.qbeast_first:
                order.reverse()
            for engine in order:
                path = fresh_dir(f"narrowed_{engine}_{sf:g}")
                paths[engine] = path
                with WorkerRss(_server_pid()) as watch:
                    start = time.perf_counter()
                    if engine == "parquet":
                        df.write.parquet(path)
                    else:
                        write_tasks.DIRECT_WRITE_MAX_TASKS = (
                            0 if engine == "shuffled" else default_max
                        )
                        try:
                            result = qc.write(df, path, columnsToIndex=columns,
                                              cubeSize=args.cube_size)
                        finally:
                            write_tasks.DIRECT_WRITE_MAX_TASKS = default_max
                        files[engine] = result.num_files
                    times.setdefault(engine, []).append(time.perf_counter() - start)
                rss[engine] = max(rss.get(engine, 0.0), watch.peak_mb)
                loads.append(os.getloadavg()[0])
                sizes[engine] = dir_bytes(path)
                if engine == "parquet":
                    files[engine] = sum(1 for p in Path(path).glob("*.parquet"))
                print(sf, engine, round(times[engine][-1], 1), files[engine],
                      f"load {loads[-1]:.1f}", flush=True)
        base = median(times["parquet"])
        reads: dict[str, dict[str, Any]] = {}
        plain = spark.read.parquet(paths["parquet"])
        tables = {m: qc.QbeastTable.forPath(spark, paths[m]) for m in modes}
        for shape in shapes(source)[:2] if args.reads else []:
            where = shape["where"]
            walls: dict[str, list[float]] = {}
            answers: dict[str, Any] = {}
            for i in range(args.reads):
                order = ["parquet", *modes]
                if i % 2:
                    order.reverse()
                for engine in order:
                    start = time.perf_counter()
                    if engine == "parquet":
                        answers[engine] = aggregate(plain.filter(where))
                    else:
                        answers[engine] = aggregate(tables[engine].read(where=where))
                    walls.setdefault(engine, []).append(time.perf_counter() - start)
            if len({repr(a) for a in answers.values()}) != 1:
                raise SystemExit(f"answers differ at sf {sf}, {shape['name']}: {answers}")
            entry: dict[str, Any] = {
                "where": where,
                "seconds": {k: round(median(v), 3) for k, v in walls.items()},
                "ratio_to_parquet": {
                    k: round(median(v) / median(walls["parquet"]), 2) for k, v in walls.items()
                },
            }
            for m in modes:
                scan = tables[m].explainScan(where=where)
                total = tables[m].getIndexMetrics().bytes
                entry[f"{m}_files"] = f"{scan.selected_files}/{len(tables[m].toDF().inputFiles())}"
                entry[f"{m}_bytes_share"] = round(scan.selected_bytes / max(1, total), 3)
            reads[shape["name"]] = entry
            print(sf, shape["name"], json.dumps(entry), flush=True)
        report["sizes"][f"sf{sf:g}"] = {
            "rows": rows,
            "times": {k: [round(v, 1) for v in vs] for k, vs in times.items()},
            "ratios": {k: round(median(vs) / base, 2) for k, vs in times.items()},
            "files": files,
            "bytes": sizes,
            "worker_peak_rss_mb": {k: round(v) for k, v in rss.items()},
            "load_average_1min": [round(x, 1) for x in loads],
            "reads": reads,
        }
        print(json.dumps(report["sizes"][f"sf{sf:g}"], indent=1), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))
    qc.stop()


if __name__ == "__main__":
    main()
