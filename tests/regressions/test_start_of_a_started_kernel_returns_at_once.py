"""``start()`` of a started kernel returns at once while a cell runs in another thread.

It took the kernel's cell lock to see that the kernel had started, and the running cell holds
that lock: it waited for the whole cell, though the API says later calls return at once (a
transfer's start, a ``with k:``). The same wait hung a tool's transfer to its own cell's kernel
for ever: ``test_a_tool_moves_files_of_the_kernel_that_called_it.py``.
"""

from __future__ import annotations

import time

from pytest_hermes_kernel.contract._probes import CellStarted, call_in_thread, run_in_thread

DEADLINE_S = 15.0


def test_start_of_a_started_kernel_returns_at_once_while_a_cell_runs(make_kernel) -> None:
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    cell = run_in_thread(k, probe.CODE + "import time\ntime.sleep(20)\n'slept'")
    probe.wait()
    began = time.monotonic()

    assert call_in_thread(k.start).result(timeout=DEADLINE_S) is k
    assert time.monotonic() - began < 5.0, "start() waited for the running cell"
    assert cell.done() is False, "the cell was still running"
    k.interrupt()
    assert cell.result(timeout=DEADLINE_S).status == "interrupted"
