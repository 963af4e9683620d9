"""docker/Dockerfile and docker/compose.yaml refer to files and commands that exist.

No container engine runs here; these checks catch the mistakes a build would: a COPY of a
missing file, a command line the CLI rejects, a compose file pointing at the wrong place.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from qbeast_connect import cli

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE = REPO / "docker" / "compose.yaml"


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def _json_list(instruction: str) -> list[str]:
    values = [rest for keyword, rest in _instructions() if keyword == instruction]
    assert len(values) == 1, instruction
    parsed = json.loads(values[0])
    assert isinstance(parsed, list)
    return parsed


def test_base_image_and_java_fit_the_project() -> None:
    instructions = _instructions()
    base = next(rest for keyword, rest in instructions if keyword == "FROM")
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert base.startswith("python:3.11-") and ">=3.11" in requires
    assert "bookworm" in base  # the Debian release that packages openjdk-17
    run = " ".join(rest for keyword, rest in instructions if keyword == "RUN")
    assert "openjdk-17-jdk-headless" in run and "tini" in run
    assert "pip install ." in run and "-e" not in run.split("pip install")[1].split("&&")[0]


def test_copied_files_exist_and_cover_the_package() -> None:
    copied: list[str] = []
    for keyword, rest in _instructions():
        if keyword == "COPY":
            *sources, _ = rest.split()
            copied += sources
    for source in copied:
        assert (REPO / source).exists(), source
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    modules = project["tool"]["setuptools"]["py-modules"]
    packages = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {f"{m}.py" for m in modules} <= set(copied)
    assert {p.rstrip("*") for p in packages} <= set(copied)
    assert project["project"]["readme"] in copied and "pyproject.toml" in copied


def test_the_container_command_is_a_valid_cli_call() -> None:
    entrypoint = _json_list("ENTRYPOINT")
    command = _json_list("CMD")
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["tini", "--", "qbeast-connect"] and "qbeast-connect" in scripts
    args = cli.build_parser().parse_args(command)
    assert args.func is cli.cmd_server_start
    assert (args.foreground, args.host, args.port) == (True, "0.0.0.0", 15002)
    health = next(rest for keyword, rest in _instructions() if keyword == "HEALTHCHECK")
    check = json.loads(health.split("CMD", 1)[1].strip())
    assert check[0] == "qbeast-connect"
    status = cli.build_parser().parse_args(check[1:])
    assert status.func is cli.cmd_server_status and status.state_dir == args.state_dir
    assert "EXPOSE" in dict(_instructions()) and dict(_instructions())["EXPOSE"] == "15002"


def test_compose_builds_the_dockerfile_and_runs_the_server() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load(COMPOSE.read_text())
    (service,) = compose["services"].values()
    build = service["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    command = [re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(c)) for c in service["command"]]
    args = cli.build_parser().parse_args(command)
    assert args.func is cli.cmd_server_start and args.port == 15002 and args.foreground
    assert service["ports"] == ["127.0.0.1:${QBEAST_PORT:-15002}:15002"]
    assert service["healthcheck"]["test"][1:3] == ["qbeast-connect", "server"]
    status = cli.build_parser().parse_args(service["healthcheck"]["test"][2:])
    assert status.state_dir == args.state_dir
    data = "${QBEAST_DATA:-/tmp}"
    assert service["volumes"] == [f"{data}:{data}"]  # the same path inside and outside
