"""The command line, pictures, notebook summaries and progress, against the test server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qbeast_connect as qc
from qbeast_connect import cli, progress
from qbeast_connect.spark.session import embedded_server

HIGHLIGHT = np.array([214, 39, 40]) / 255.0  # selected cubes are outlined in "#d62728"


@pytest.fixture(scope="module")
def url(spark: Any) -> str:
    server = embedded_server()
    return os.environ.get("SPARK_REMOTE") or (server.url if server else "")


@pytest.fixture(scope="module")
def table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("tools") / "t")
    df = spark.range(0, 4_000, numPartitions=2).selectExpr(
        "id", "cast(id % 500 as double) as x", "concat('k', cast(id % 23 as string)) as k"
    )
    qc.write(df, path, columnsToIndex="x,k", cubeSize=400)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_inspects_a_table(capsys: pytest.CaptureFixture[str], url: str, table: str) -> None:
    code, out, _ = run(capsys, "describe", table, "--remote", url)
    assert code == 0
    assert "indexed columns  x:linear,k:hashing" in out and "rows             4,000" in out
    code, out, _ = run(capsys, "describe", table, "--remote", url, "--json")
    assert json.loads(out)["revisions"] == [0, 1]
    code, out, _ = run(capsys, "metrics", table, "--remote", url, "--json")
    metrics = json.loads(out)
    assert (metrics["element_count"], metrics["dimension_count"]) == (4_000, 2)
    code, out, _ = run(capsys, "history", table, "--remote", url, "--limit", "1")
    assert code == 0 and out.splitlines()[1].split()[0] == "0" and "WRITE" in out


def test_cli_maintains_tables(
    capsys: pytest.CaptureFixture[str], spark: Any, url: str, table: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "p")
    spark.range(0, 1_000).selectExpr("id", "id % 10 as g").write.parquet(path)
    code, out, _ = run(
        capsys, "convert", path, "--remote", url, "--columns", "id,g", "--cube-size", "100"
    )
    assert code == 0 and "is a qbeast table indexed on id,g (version 0)" in out
    code, out, _ = run(capsys, "describe", path, "--remote", url, "--json")
    summary = json.loads(out)
    assert summary["staging files"] == summary["files"] > 0 and summary["rows"] == "1,000"
    code, out, err = run(
        capsys, "vacuum", path, "--remote", url, "--retention-hours", "0", "--dry-run"
    )
    assert code == 2 and err.startswith("error: retentionHours=0.0 is shorter")
    code, out, _ = run(capsys, "optimize", table, "--remote", url)
    assert code == 0 and "optimized revision 1" in out and "4,000 rows" in out


def test_cli_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path
) -> None:
    code, out, err = run(capsys, "describe", str(tmp_path / "none"), "--remote", url)
    assert code == 2 and out == ""
    assert err.startswith("error: no table at ") and err.count("\n") == 1
    code, _, err = run(capsys, "convert", str(tmp_path / "none"), "--remote", url, "--columns", "a")
    assert code == 2 and "Traceback" not in err


def test_cli_viz_writes_a_png(
    capsys: pytest.CaptureFixture[str], url: str, table: str, tmp_path: Path
) -> None:
    from matplotlib.image import imread

    picture = tmp_path / "index.png"
    code, out, _ = run(
        capsys,
        "viz",
        table,
        "--remote",
        url,
        "-o",
        str(picture),
        "--where",
        "x < 50",
        "--fraction",
        "0.5",
    )
    assert code == 0 and out.strip() == f"wrote {picture}"
    pixels = imread(str(picture))
    height, width = pixels.shape[:2]
    assert width >= 600 and height >= 300
    rgb = pixels[..., :3]
    red = np.all(np.abs(rgb - HIGHLIGHT) < 0.08, axis=-1).sum()
    assert red > 50  # the selected cubes' outlines and edges
    assert len(np.unique(rgb.reshape(-1, 3).round(2), axis=0)) > 20  # the colour scale
    plain = tmp_path / "plain.png"
    assert cli.main(["viz", table, "--remote", url, "-o", str(plain)]) == 0
    rgb = imread(str(plain))[..., :3]
    assert np.all(np.abs(rgb - HIGHLIGHT) < 0.08, axis=-1).sum() == 0


def test_table_plot_and_notebook_summary(spark: Any, table: str, tmp_path: Path) -> None:
    t = qc.QbeastTable.forPath(spark, table)
    figure = t.plot(fraction=0.2, path=str(tmp_path / "t.png"), color_by="element_count")
    assert figure.get_suptitle().endswith("selected")
    assert (tmp_path / "t.png").stat().st_size > 1_000
    html = t._repr_html_()
    for text in (table, "x:linear,k:hashing", "4,000", "revisions", "cube size", "bytes"):
        assert text in html
    assert "<table" in t.getIndexMetrics()._repr_html_()


def test_progress_handlers_see_the_stages_of_a_write(spark: Any, tmp_path: Path) -> None:
    events: list[tuple[int, bool]] = []

    def record(
        stages: Any = None, inflight_tasks: int = 0, operation_id: Any = None, done: bool = False
    ) -> None:
        events.append((len(list(stages or ())), done))

    class Tty:
        def __init__(self) -> None:
            self.text = ""

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return True

    line = Tty()
    printer = progress.StageProgress(line)  # type: ignore[arg-type]
    assert progress.attach(spark) is progress.attach(spark)  # qc.session() attached one
    spark.registerProgressHandler(record)
    spark.registerProgressHandler(printer)
    spark.conf.set("spark.connect.progress.reportInterval", "20ms")
    try:
        df = spark.range(0, 50_000, numPartitions=4).selectExpr(
            "id", "cast(id % 97 as double) as x"
        )
        qc.write(df, str(tmp_path / "t"), columnsToIndex="x", cubeSize=2_000)
    finally:
        spark.conf.unset("spark.connect.progress.reportInterval")
        spark.removeProgressHandler(record)
        spark.removeProgressHandler(printer)
    assert any(done for _, done in events)  # every operation ends with a final call
    assert any(n > 0 for n, _ in events)  # stage reports arrived while it ran
    assert "\rstage 1/" in line.text and " tasks" in line.text
