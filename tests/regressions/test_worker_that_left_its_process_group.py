"""Found by the mutation run's survivors (issue #13): a cell that moves its worker into another
process group (``os.setpgid``) escaped every signal the supervisor sends to the worker's group.
A restart waited 5 s, said ``reset`` and left the old worker running with its state; an
interrupt reached no one. The supervisor signals the worker itself when it has left its group.
"""

from __future__ import annotations

import os
import signal

import pytest

from pytest_hermes_kernel.kernel.runner import worker_process
from pytest_hermes_kernel.procs import pid_alive
from tests.support import CellStarted, run_in_thread, wait_until

LEAVE_GROUP = "import os\nos.setpgid(0, os.getpgid(os.getppid()))\n"  # the supervisor's group


def test_restart_ends_a_worker_that_left_its_process_group(make_kernel):
    k = make_kernel()
    old = int(k.execute(LEAVE_GROUP + "x = 1\nos.getpid()").value)

    info = k.restart()

    assert info.state_lost and info.pid != old and not pid_alive(old), info
    assert k.execute("x").ename == "NameError"


def test_restart_ends_a_worker_that_left_its_group_to_a_child_of_its_own(make_kernel):
    """The group still has a member (a child the cell started before leaving): the signal to the
    group succeeds, and reaches the child only; the worker is signalled itself too."""
    k = make_kernel()
    code = ("import subprocess\nchild = subprocess.Popen(['sleep', '60'])\n" + LEAVE_GROUP
            + "x = 1\nchild.pid, os.getpid()")
    child, old = eval(k.execute(code).value)  # noqa: S307 - our own cell's repr of two ints

    info = k.restart()

    assert info.pid != old and not pid_alive(old), info
    # the group's SIGKILL ends the child when it next runs: on a loaded machine a moment after the
    # restart returned (seen in a clean-clone run, 2026-12-07); the bug left it for its 60 s
    wait_until(lambda: not pid_alive(child), 10.0, what=f"the worker's child {child} to end")
    assert k.execute("x").ename == "NameError"


def test_an_interrupt_reaches_a_worker_that_left_its_process_group(make_kernel):
    started = CellStarted()
    k = make_kernel(tools=started.tools())
    k.execute(LEAVE_GROUP + "y = 2")
    cell = run_in_thread(k, started.CODE + "import time\ntime.sleep(60)", timeout=30)
    started.wait()

    k.interrupt()

    r = cell.result(timeout=20)
    assert r.status == "interrupted", r.summary()
    assert k.execute("y").value == "2" and not r.kernel.state_lost


def test_a_group_the_supervisor_may_not_signal_does_not_end_the_supervisor(monkeypatch):
    """``killpg`` refuses (EPERM) when no member of the group may be signalled, e.g. a worker that
    ran a set-user-ID program; the supervisor then tries the worker alone and carries on."""
    sent: list[tuple[int, int]] = []

    def refused(pgid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(worker_process.os, "killpg", refused)
    monkeypatch.setattr(worker_process.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    worker = worker_process.WorkerProcess.__new__(worker_process.WorkerProcess)
    worker.pid = os.getpid() + 1_000_000  # never signalled: os.kill is recorded, not called

    worker.signal_group(signal.SIGKILL)

    assert sent == [(worker.pid, signal.SIGKILL)]


@pytest.mark.parametrize("refusal", [PermissionError(1, "Operation not permitted"),
                                     ProcessLookupError(3, "No such process")])
def test_a_worker_out_of_its_group_that_refuses_the_signal_does_not_end_the_supervisor(monkeypatch, refusal):
    """The worker alone refuses too (it runs a set-user-ID program) or is gone: nothing raises."""
    def empty_group(pgid: int, sig: int) -> None:
        raise ProcessLookupError(3, "No such process")

    def refused(pid: int, sig: int) -> None:
        raise refusal

    monkeypatch.setattr(worker_process.os, "killpg", empty_group)
    monkeypatch.setattr(worker_process.os, "kill", refused)
    worker = worker_process.WorkerProcess.__new__(worker_process.WorkerProcess)
    worker.pid = os.getpid() + 1_000_000

    worker.signal_group(signal.SIGKILL)  # returns: the supervisor's wait then reports what became of it
