"""The docker and ssh spawn path's reap (``detached.REAP_SCRIPT``, run by one exec where the
runner lives): it waits for a runner that was asked to exit, removes its kernel dir only once
the runner has ended, and says ``alive`` (leaving the dir) when the runner outlives the wait,
so the caller kills it from outside. Run here with this interpreter, as an exec runs it there."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from pytest_hermes_kernel.transports.detached import REAP_SCRIPT


def reap(pid: int, wait_s: float, *dirs: Path) -> str:
    out = subprocess.run([sys.executable, "-c", REAP_SCRIPT, str(pid), str(wait_s), *map(str, dirs)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_runner_that_ends_within_the_wait_is_gone_and_its_dir_removed(tmp_path: Path) -> None:
    kdir = tmp_path / "kernel"
    (kdir / "sub").mkdir(parents=True)
    proc = subprocess.Popen(["sleep", "0.5"])
    try:
        started = time.monotonic()
        assert reap(proc.pid, 10, kdir) == "gone"  # a zombie (not yet waited for here) has ended
        assert time.monotonic() - started < 5, "returned when the process ended, not at the wait's end"
        assert not kdir.exists()
    finally:
        proc.kill()
        proc.wait()


def test_a_runner_that_outlives_the_wait_is_alive_and_its_dir_kept(tmp_path: Path) -> None:
    kdir = tmp_path / "kernel"
    kdir.mkdir()
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert reap(proc.pid, 0.3, kdir) == "alive"
        assert kdir.exists(), "a live runner's dir (its socket, its log) must stay"
    finally:
        proc.kill()
        proc.wait()
