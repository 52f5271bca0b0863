"""How a filecell shutdown waits for its runner to end, on the far side.

The wait's shell loop looked once, then every 50 ms. A runner told to shut down is usually gone a
few ms after the shutdown's execute returns, so most shutdowns paid one whole 50-ms step: the
median filecell shutdown read 80 ms in the seventeenth session's benchmark run, 30 ms once the
first looks come every 5 ms. The loop's ``sleep`` is replaced here by a shim that logs each wait.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.transports.filecell import scripts


@pytest.fixture
def sleeps(tmp_path: Path) -> Path:
    """A PATH dir whose ``sleep`` appends its argument to ``<tmp>/slept`` and returns at once."""
    shim = tmp_path / "bin" / "sleep"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$1" >> {tmp_path}/slept\n')
    shim.chmod(0o755)
    return tmp_path


def run_reap(sleeps: Path, pid: int, timeout: float) -> tuple[str, list[float]]:
    cmd = scripts.reap_command(kdir=str(sleeps / "kdir"), pid=pid, timeout=timeout)
    env = {**os.environ, "PATH": f"{sleeps / 'bin'}:{os.environ['PATH']}"}
    out = subprocess.run(["sh", "-c", cmd], env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    log = sleeps / "slept"
    return out.strip(), [float(x) for x in log.read_text().split()] if log.exists() else []


def test_a_runner_that_never_ends_is_waited_for_the_whole_timeout_first_in_small_steps(sleeps: Path) -> None:
    # A process whose cmdline holds the kernel dir's socket path stands in for the runner.
    marker = f"{sleeps / 'kdir'}/{scripts.SOCKET_NAME}"
    runner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        out, waits = run_reap(sleeps, runner.pid, timeout=2.0)
    finally:
        runner.kill()
        runner.wait()
    assert out == "ALIVE"
    assert waits[:10] == [0.005] * 10, waits[:12]  # the first 50 ms in 5-ms looks
    assert set(waits[10:]) == {0.05}
    assert sum(waits) == pytest.approx(2.0, abs=0.06)  # the wait is as long as it was asked to be


def test_a_runner_already_gone_is_reported_without_a_wait(sleeps: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert run_reap(sleeps, gone.pid, timeout=2.0) == ("GONE", [])
