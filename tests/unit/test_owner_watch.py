"""The reaper that stops a server's process group when its owner dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from qbeast_connect.spark.server import watch_owner

REPO = str(Path(__file__).resolve().parents[2])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _wait_gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_group_is_stopped_when_the_owner_is_killed() -> None:
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import subprocess, time
                from qbeast_connect.spark.server import watch_owner
                group = subprocess.Popen(["sleep", "600"], start_new_session=True)
                watch = watch_owner(group.pid, grace_s=2)
                print(group.pid, watch.pid, flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    assert owner.stdout is not None
    group_pid, reaper_pid = (int(x) for x in owner.stdout.readline().split())
    try:
        assert _alive(group_pid) and _alive(reaper_pid)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert _wait_gone(group_pid, 10), "the group outlived its owner"
        assert _wait_gone(reaper_pid, 10), "the reaper did not exit"
    finally:
        if _alive(group_pid):
            os.killpg(group_pid, signal.SIGKILL)


def test_release_stops_watching_without_touching_the_group() -> None:
    group = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        watch = watch_owner(group.pid, grace_s=1)
        reaper = watch.pid
        watch.release()
        assert _wait_gone(reaper, 5)
        time.sleep(0.3)
        assert group.poll() is None, "release() must leave the group to its owner"
        watch.release()  # twice is harmless
    finally:
        group.kill()
        group.wait()


def test_a_term_resistant_group_is_killed_after_the_grace_period() -> None:
    group = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ok', flush=True); time.sleep(600)",
        ],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert group.stdout is not None and group.stdout.readline().strip() == "ok"
    watch = watch_owner(group.pid, grace_s=0.5)
    assert watch._write_end is not None
    os.close(watch._write_end)  # as the owner's death would
    watch._write_end = None
    try:
        assert group.wait(timeout=10) == -signal.SIGKILL
    finally:
        watch.release()
