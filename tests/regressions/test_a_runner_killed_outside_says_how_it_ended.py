"""A local kernel whose runner is SIGKILLed from outside says the runner ended, and how.

The next cell's note read ``channel lost: ... Connection reset by peer (runner still alive;
killed)``: a runner killed outside closes its channel an instant before its end shows (its files
are closed first), so the look at once found it alive, and the kill the host then sent was
reported as what ended it. The host now waits a moment for the runner's exit status before it
calls the runner alive: the note says ``the kernel runner ended: killed by signal 9``.

On docker and ssh a forked runner's end is what its kernel server reported; the note said only
``end of stream (the kernel runner or its relay is gone)``. The reason stays ``transport_lost``
there (DESIGN.md section 8: a re-attachable kernel's loss, its runner really gone). Its worker,
running the cell, ran it on for good, reparented (the ssh probe now ends it too): the host now
kills what is left of a runner it sees gone.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import signal_in_kernel, wait_until


@pytest.mark.parametrize("server", [True, False], ids=["forked", "spawned"])
@pytest.mark.parametrize("when", ["between-cells", "mid-cell"])
def test_a_local_runner_killed_outside_is_not_called_alive(server: bool, when: str) -> None:
    transport = LocalTransport(server=server)
    try:
        with KernelHandle(transport).start() as kernel:
            assert kernel.execute("x = 1").status == "ok"
            runner = kernel.runner_pid
            if when == "between-cells":
                os.kill(runner, signal.SIGKILL)
                result = kernel.execute("x")
            else:
                killer = threading.Thread(target=lambda: (
                    wait_until(lambda: kernel.state.value == "busy", 10, what="the cell to run"),
                    os.kill(runner, signal.SIGKILL)))
                killer.start()
                result = kernel.execute("import time; time.sleep(30)")
                killer.join()

            info = result.kernel
            assert (result.status, info.state_lost, info.reason) == ("died", True, "died"), result
            assert "the kernel runner ended: killed by signal 9" in info.note, info.note
            assert "still alive" not in info.note, info.note
            assert kernel.execute("x = 2; x").value == "2"  # a fresh kernel took its place
    finally:
        transport.close()


@pytest.mark.hermes_transports("docker", "ssh")
@pytest.mark.parametrize("when", ["between-cells", "mid-cell"])
def test_a_forked_remote_runner_killed_outside_says_how_it_ended(hermes_kernel, when: str) -> None:
    runner = int(hermes_kernel.execute("import os; x = 1; os.getppid()").value)
    if when == "between-cells":  # (from here once the cell is back: a 0.3-s timer the cell started killed
        signal_in_kernel(hermes_kernel, runner, signal.SIGKILL)  # it first when the result took longer)
        wait_until(lambda: not hermes_kernel.transport.alive(hermes_kernel.launched), 10, what="the runner to end")
        result = hermes_kernel.execute("x")
    else:
        result = hermes_kernel.execute(f"import os, threading, time; threading.Timer(0.3, os.kill, ({runner}, 9)).start()"
                                       "; time.sleep(3600)")

    info = result.kernel
    assert (result.status, info.state_lost, info.reason) == ("died", True, "transport_lost"), result
    assert "the kernel runner ended: killed by signal 9" in info.note, info.note
    # its worker, reparented, ran the cell on for good: nothing ended it (no kill for a runner seen gone)
    wait_until(lambda: not hermes_kernel.transport.kernel_processes(hermes_kernel.kernel_id), 5,
               what="the dead runner's worker to end with it")
    assert hermes_kernel.execute("x = 2; x").value == "2"
