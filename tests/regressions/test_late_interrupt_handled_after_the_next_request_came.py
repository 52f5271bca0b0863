"""A cell's interrupt whose SIGINT the worker handled late interrupted the next cell instead.

The supervisor signals the worker while it still books the cell; the worker's Python handler
runs only when its main thread holds the GIL. A thread the ended cell left running (here one
that spins with a long switch interval) kept it from the main thread until the host had the
result and had sent the next cell: the handler saw that request waiting and took the SIGINT for
the next cell's, which came back ``interrupted`` without running (seen, without the GIL hog,
in about 1 in 20 tries of an interrupt() loop racing a watchdog timeout under -n 2). Now the
supervisor signals a cell only once the worker said it runs, and the worker ignores a SIGINT
between cells. The runner is stopped for a moment so that it reads the interrupt before the
cell's result (local only: the test stops the runner's process).
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tests.support import wait_until

CELL = """\
import sys, threading, time, pathlib
sys.setswitchinterval(30)
def hog():
    time.sleep(0.9)  # the cell has ended and its result is sent by then
    pathlib.Path({hog!r}).touch()
    end = time.monotonic() + 1.5
    while time.monotonic() < end:  # holds the GIL: the main thread cannot run its SIGINT handler
        pass
threading.Thread(target=hog, daemon=True).start()
pathlib.Path({began!r}).touch()
time.sleep(0.3)
"""


def test_a_late_interrupt_handled_after_the_next_request_came_leaves_that_cell_alone(hermes_transport, hermes_kernel_factory,
                                                                                       tmp_path):
    if hermes_transport.name != "local":
        pytest.skip("stops the runner's process: it must be on this host, in reach of os.kill")
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")
    began, hog = tmp_path / "began", tmp_path / "hog"
    results = []
    cell = threading.Thread(target=lambda: results.append(kernel.execute(CELL.format(began=str(began), hog=str(hog)))))
    cell.start()
    wait_until(began.exists, 10, what="the cell began")
    runner = kernel.runner_pid
    os.kill(runner, signal.SIGSTOP)  # the interrupt then waits in the runner with the cell's result
    try:
        kernel.interrupt()
        wait_until(hog.exists, 10, what="the cell ended and its thread holds the GIL")
    finally:
        os.kill(runner, signal.SIGCONT)
    cell.join(10)

    after = kernel.execute("kept")

    assert after.status == "ok" and after.value == "'yes'", after.summary()
