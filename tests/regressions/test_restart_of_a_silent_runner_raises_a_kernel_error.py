"""Found by the breaker session: ``restart()`` of a kernel whose runner did not answer (its host
paused: ``docker pause``, a stopped process) raised the channel's bare builtin ``TimeoutError``
("no reply for 2 on kernel ..."), which is no :class:`HermesKernelError` and not what its
docstring promises. It raises :class:`KernelStartError` now, saying the old worker may run on;
the loss is still reported on the next cell once the runner answers again.
"""

from __future__ import annotations

import os
import signal

import pytest

from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.kernel import link
from tests.support import CellStarted, run_in_thread


def test_restart_of_a_stopped_runner_raises_kernel_start_error(make_kernel, monkeypatch):
    monkeypatch.setattr(link, "KILL_WORKER_TIMEOUT_S", 1.0)  # the runner's answer to the kill: 10 s
    k = make_kernel()
    k.execute("x = 1")
    os.kill(k.runner_pid, signal.SIGSTOP)  # what `docker pause` does to a container's processes
    try:
        with pytest.raises(KernelStartError, match="no answer from its runner.*may still run") as caught:
            k.restart()
    finally:
        os.kill(k.runner_pid, signal.SIGCONT)
    assert caught.value.kernel_id == k.kernel_id
    r = k.execute("'x' in globals()", timeout=20)
    assert r.status == "ok" and r.value == "False" and r.kernel.state_lost, r.summary()


def test_restart_of_a_stopped_runner_during_a_cell_does_not_wait_for_the_cells_budget(make_kernel, monkeypatch):
    """A restart that got no answer raised only once the running cell had settled: it waited on
    the cell queue's lock, which the cell holds for its whole budget (63 s for a 60 s cell).
    It raises while the cell still waits now; the cell then ends ``died``/``reset`` when the
    runner answers again, as a restart that went through would have made it."""
    monkeypatch.setattr(link, "KILL_WORKER_TIMEOUT_S", 1.0)
    started = CellStarted()
    k = make_kernel(tools=started.tools())
    k.execute("x = 1")
    cell = run_in_thread(k, started.CODE + "import time; time.sleep(60)", timeout=120)
    started.wait()
    os.kill(k.runner_pid, signal.SIGSTOP)
    try:
        with pytest.raises(KernelStartError, match="no answer from its runner"):
            k.restart()
        assert not cell.done(), "restart() waited for the running cell to settle"
    finally:
        os.kill(k.runner_pid, signal.SIGCONT)
    r = cell.result(timeout=30)
    assert (r.status, r.kernel.reason) == ("died", "reset"), r.summary()
    assert k.execute("'x' in globals()", timeout=20).value == "False"
