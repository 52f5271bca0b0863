"""Seen (suite-cost round, 2026-12-07): ``hermes-kernel sweep --kept`` took ~1.2 s for each kept
local kernel (5.3 s for 4, 0.34 CPU-s: a wait), and a test's teardown that swept 10 kept kernels
10.7 s. A kept runner's server was the pytest process that kept it, gone by then: the runner is
init's child, and the shutdown waited for its reaping, up to ``REAPED_WAIT_S`` (1 s), for nothing
(this VM's init reaps later than that, and no wait here brings it sooner). A runner with no server
here is no longer waited for once it ended; one its own server forked still is (no zombie left).

Here the runner is a child of this test that it does not reap yet (as init did not), and
``REAPED_WAIT_S`` is an hour: the old wait held the shutdown's ``wait`` for that hour.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from pytest_hermes_kernel.transports import local
from pytest_hermes_kernel.transports.local import ForkedRunner

#: Seconds the ended runner's ``wait`` may take here (the old one took REAPED_WAIT_S, an hour).
BOUND_S = 30.0


def test_an_ended_kept_runner_nobody_here_reaps_is_seen_ended_without_waiting_for_its_reaper(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "REAPED_WAIT_S", 3600.0)
    child = subprocess.Popen([sys.executable, "-c", "pass"])  # a zombie once it exits, until polled below
    runner = ForkedRunner(child.pid, None)  # as a kept kernel is attached: no server of this process
    said: list[bool] = []
    waiting = threading.Thread(target=lambda: said.append(runner.wait(BOUND_S)), daemon=True)
    try:
        waiting.start()
        waiting.join(BOUND_S)
        assert said == [True], "the ended runner's wait did not return: it waited for a reaping nobody here does"
    finally:
        runner.close()
        child.wait()
