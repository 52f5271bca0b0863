"""A cell that set ``signal.default_int_handler`` for SIGINT let a late interrupt end the worker.

Code that puts Python's own Ctrl-C handler back (``signal.signal(SIGINT,
signal.default_int_handler)``: scripts, libraries undoing an earlier ``SIG_IGN``) replaced the
worker's handler, which raises ``KeyboardInterrupt`` only inside a cell and defers it out of the
runner's frame I/O. An ``interrupt()`` whose SIGINT landed as its cell ended then raised in the
runner's own code: the worker exited with code 70 and the next cell said ``state_lost``,
"the kernel died between cells (exit code 70)", 1 cell in 10 to 30. ``signal.default_int_handler``
in the worker is now the worker's handler: in a cell it raises ``KeyboardInterrupt`` as before.
"""

from __future__ import annotations

import threading
import time

from tests.support import CellStarted, run_in_thread


def test_interrupts_at_a_cells_end_never_end_the_worker(hermes_kernel):
    hermes_kernel.execute("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); kept = 1")
    assert hermes_kernel.execute("signal.getsignal(signal.SIGINT) is signal.default_int_handler").value == "True"

    statuses = set()
    deadline = time.monotonic() + 30
    for i in range(150):
        timer = threading.Timer(0.0005 * (i % 8), hermes_kernel.interrupt)
        timer.start()
        result = hermes_kernel.execute("sum(range(20000))")
        timer.join()
        assert not result.kernel.state_lost, (i, result.summary())
        statuses.add(result.status)
        assert time.monotonic() < deadline

    assert statuses <= {"ok", "interrupted"}
    after = hermes_kernel.execute("kept")
    assert (after.value, after.kernel.state_lost) == ("1", False), after.summary()


def test_the_default_handler_still_interrupts_a_cell(hermes_kernel_factory):
    """(The interrupt follows the cell's start: a 0.3-s timer's came before the cell was sent when
    the test's thread was held up that long, and an ``interrupt()`` with no cell does nothing.)"""
    probe = CellStarted()
    kernel = hermes_kernel_factory(tools=probe.tools())
    kernel.execute("import signal; signal.signal(signal.SIGINT, signal.default_int_handler)")
    cell = run_in_thread(kernel, probe.CODE + "import time; time.sleep(30)", timeout=20)
    probe.wait(30)
    kernel.interrupt()

    result = cell.result(timeout=60)

    assert (result.status, result.ename) == ("interrupted", "KeyboardInterrupt"), result.summary()
