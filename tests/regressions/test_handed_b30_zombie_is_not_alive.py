"""Handed case B30: ``os.kill(pid, 0)`` succeeds on a zombie, so a kernel whose runner died but
was not reaped looked alive and ``execute`` hung. Here the host's reaping is disabled
(``Popen.poll`` never reports the child), the runner is SIGKILLed, and the kit must still see
it dead within a heartbeat, fail the next cell fast (``died``: the cell was not run), and
leave no zombie once reaping is back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil
import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import wait_until

HEARTBEAT_S = 1.0  # the case: death is seen within one heartbeat interval
FAIL_FAST_S = 5.0


def _no_poll(self: subprocess.Popen[bytes]) -> None:
    return None  # "still running": the dead child stays a zombie


@pytest.mark.parametrize("path", ["spawn", "server"])
def test_zombie_runner_is_dead_and_the_next_cell_fails_fast(monkeypatch, path):
    """Spawn path: the host's reaping is off. Server path: the kernel server that forked the runner
    (its parent) is stopped, so nobody reaps it."""
    transport = LocalTransport(server=path == "server")
    kernel = start_kernel(transport)
    server = transport.server_pids()
    try:
        kernel.execute("keep = 1")
        runner = kernel.runner_pid
        monkeypatch.setattr(subprocess.Popen, "poll", _no_poll)
        for pid in server:
            os.kill(pid, signal.SIGSTOP)
        os.kill(runner, signal.SIGKILL)
        wait_until(lambda: psutil.Process(runner).status() == psutil.STATUS_ZOMBIE, 5.0)
        started = time.monotonic()

        assert not kernel.transport.alive(kernel.launched)  # a zombie is dead
        assert psutil.Process(runner).status() == psutil.STATUS_ZOMBIE  # (and still unreaped)
        for pid in server:
            os.kill(pid, signal.SIGCONT)
        r = kernel.execute("'keep' in globals()")

        assert time.monotonic() - started < FAIL_FAST_S, r.summary()
        assert r.status == "died" and r.kernel.state_lost and r.kernel.reason == "died", r.summary()
        assert kernel.execute("'keep' in globals()").value == "False"  # a new runner, no hang
    finally:
        for pid in server:
            os.kill(pid, signal.SIGCONT)
        monkeypatch.undo()
        kernel.shutdown()
        transport.close()
    # this kernel's dead runner is reaped (not "no zombie child at all": under -n 4 another test's
    # unwaited child in the same worker made this wait time out, on both paths)
    wait_until(lambda: not _zombie(runner), 5.0, what=f"the dead runner (pid {runner}) to be reaped")


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
