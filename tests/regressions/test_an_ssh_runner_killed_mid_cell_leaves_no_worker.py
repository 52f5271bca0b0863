"""Seen: the kernel runner on the ssh host was SIGKILLed during a cell (an OOM killer's pick, a
``kill -9`` on the host). The cell came back ``died`` and the next cell ran on a fresh runner,
but the dead runner's worker ran the old cell on, reparented (to the kernel server on the server
path, to init on the spawn path), with nothing left to end it: no orphan timer (that is the
runner's), no kill (the runner was seen gone, so none was sent). ``shutdown()`` said
``confirmed=True`` with no leftovers, and the worker still ran 15 s later (a ``while True: pass``
cell: a core at 100 % for good outside pytest; under it, only the leak check found it).

Now the probe that finds the runner gone (the re-attach's, in the same exec) SIGKILLs what is
left of its session. Both start paths.
"""

from __future__ import annotations

import signal

import pytest

from pytest_hermes_kernel.transports.detached import ALIVE_SCRIPT
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import CellStarted, run_in_thread, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Seconds the dead runner's worker may outlive its shutdown.
BOUND_S = 5.0


def _processes(transport: SshTransport, kernel_id: str) -> list[str]:
    return transport.kernel_processes(kernel_id)


def test_a_runner_killed_mid_cell_takes_its_worker_along(own_sshd, start):
    started = CellStarted()
    k = start(own_sshd, tools=started.tools())
    assert k.execute("x = 1").status == "ok"
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(3600)", timeout=120)
    started.wait()
    own_sshd.signal_pid(k.launched, k.runner_pid, signal.SIGKILL)

    lost = fut.result(timeout=30)
    assert lost.status == "died" and lost.kernel.state_lost, lost.summary()
    after = k.execute("'x' in globals()")
    assert (after.status, after.value) == ("ok", "False"), after.summary()
    info = k.shutdown()
    assert info.confirmed, info

    wait_until(lambda: not _processes(own_sshd, k.kernel_id), BOUND_S, interval=0.2,
               what="the dead runner's worker to end with it")


def test_a_cells_child_without_the_kernels_environment_goes_too(own_sshd, start):
    """What a cell started with an environment of its own (``env={}``) is in the runner's
    session too, without the kernel's id: it is ended with the session all the same."""
    started = CellStarted()
    k = start(own_sshd, tools=started.tools())
    child = k.execute("import subprocess\nsubprocess.Popen(['sleep', '300'], env={}).pid")
    assert child.status == "ok", child.summary()
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(3600)", timeout=120)
    started.wait()
    own_sshd.signal_pid(k.launched, k.runner_pid, signal.SIGKILL)
    assert fut.result(timeout=30).status == "died"
    assert k.execute("1").status == "ok"

    wait_until(lambda: not _runs(own_sshd, int(child.value)), BOUND_S, interval=0.2,
               what=f"the cell's child {child.value} to end with the dead runner's session")


def _runs(transport: SshTransport, pid: int) -> bool:
    code, _ = transport.run_script(transport.connection(), ALIVE_SCRIPT, str(pid))
    return code == 0
