"""Contract: a host-side cancel of ``execute`` leaves no orphaned waiter (B28, variants 1 and 2).

A ``KeyboardInterrupt`` raised in the calling thread while it waits in ``execute`` (Ctrl-C, or
``_thread.interrupt_main`` from a timer) must not leave the cell running with a listener that
later swallows, or answers, the next cell: the next cells get exactly their own output and
value, the loss of the cancelled cell's kernel is reported on the next result, and the host's
thread count returns to its baseline.

Variant 2: cancelling the asyncio task that awaits :func:`~pytest_hermes_kernel.aexecute` starts
the timeout ladder at once; the cancelled cell's result (handed to ``on_cancelled``) says which
rung ended it (``interrupted``: SIGINT worked, state kept; ``reset``: SIGINT was ignored, the
worker was killed and replaced, state lost and reported on the next cell). The next cells get
exactly their own output, and host threads and asyncio tasks return to their baseline.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator

import pytest

from ..kernel.aio import aexecute
from ..kernel.results import CellResult
from ..kernel.watchdog import WatchdogPolicy
from ._probes import CellStarted, wait_until

__all__ = ["test_keyboard_interrupt_in_the_waiting_thread_leaves_no_orphaned_waiter",
           "test_cancelling_the_task_awaiting_a_cell_interrupts_the_kernel",
           "test_cancelling_a_cell_that_ignores_sigint_climbs_to_the_kill"]

#: Seconds after the cell starts at which the test thread is interrupted.
CANCEL_AFTER_S = 0.5
#: The ladder of the cell that ignores SIGINT: its interrupt grace is waited out in full, so it is
#: short (0.5 s until the nineteenth session: the cell set SIG_IGN before it reported that it runs,
#: so it ignores the interrupt however soon the kill follows); the kill is answered, not waited out.
DEAF = WatchdogPolicy(interrupt_grace=0.2, kill_grace=2.0)


def test_keyboard_interrupt_in_the_waiting_thread_leaves_no_orphaned_waiter(kernel):
    kernel.execute("keep = 1")
    baseline = threading.active_count()
    with _ctrl_c_raises_keyboard_interrupt():
        timer = threading.Timer(CANCEL_AFTER_S, _thread.interrupt_main)
        with pytest.raises(KeyboardInterrupt):  # (the timer started inside: its Ctrl-C never lands before)
            timer.start()
            kernel.execute("while True: pass", timeout=60)
        timer.join()

    b = kernel.execute("print('B')")
    c = kernel.execute("1 + 1")
    assert b.status == "ok" and b.stdout == "B\n", b.summary()
    assert b.kernel.state_lost, b.summary()  # the cancelled cell's kernel was ended, and it says so
    assert c.status == "ok" and c.value == "2" and c.stdout == "", c.summary()
    wait_until(lambda: threading.active_count() <= baseline, 5.0, what="host threads back to baseline")


@contextlib.contextmanager
def _ctrl_c_raises_keyboard_interrupt() -> Iterator[None]:
    """Python's own SIGINT handler for the block, as under a terminal.

    ``_thread.interrupt_main`` does nothing while SIGINT is ignored or left to the OS default
    (Python docs), and a pytest started as a background job of a non-interactive shell (``cmd &``
    in a CI script) inherits SIGINT ignored: the cell would run on to its 60 s timeout and the
    test would fail with "DID NOT RAISE" about the backend, not about the waiter.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def _cancel_while_it_runs(kernel, code: str, started: CellStarted) -> tuple[list[CellResult], int]:
    """Await ``code`` through :func:`aexecute` in a task, cancel the task once the cell called
    ``started``; returns what ``on_cancelled`` got and how many tasks are left besides this one."""
    settled: list[CellResult] = []
    task = asyncio.create_task(aexecute(kernel, code, timeout=60, on_cancelled=settled.append))
    await asyncio.sleep(0)  # the task starts the cell's thread
    started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return settled, len(asyncio.all_tasks()) - 1


def _next_cells_are_their_own(kernel) -> CellResult:
    b = kernel.execute("print('B')")
    c = kernel.execute("1 + 1")
    assert b.status == "ok" and b.stdout == "B\n", b.summary()
    assert c.status == "ok" and c.value == "2" and c.stdout == "", c.summary()
    return b


def test_cancelling_the_task_awaiting_a_cell_interrupts_the_kernel(kernel_factory):
    """B28 (variant 2): the cancel starts the ladder, SIGINT ends the cell, the state is kept."""
    started = CellStarted()
    kernel = kernel_factory(tools=started.tools())
    kernel.execute("keep = 1")
    baseline = threading.active_count()

    settled, tasks_left = asyncio.run(_cancel_while_it_runs(kernel, started.CODE + "while True: pass", started))

    assert tasks_left == 0
    [r] = settled
    assert r.status == "timeout" and r.watchdog == "interrupted" and r.ename == "KeyboardInterrupt", r.summary()
    assert r.kernel.note.startswith("cancelled: interrupted"), r.kernel.note  # not "over its budget": it was not
    b = _next_cells_are_their_own(kernel)
    assert not b.kernel.state_lost and kernel.execute("keep").value == "1"
    wait_until(lambda: threading.active_count() <= baseline, 5.0, what="host threads back to baseline")


def test_cancelling_a_cell_that_ignores_sigint_climbs_to_the_kill(kernel_factory):
    """B28 (variant 2): SIGINT ignored: the ladder kills and restarts the kernel, and says so."""
    started = CellStarted()
    kernel = kernel_factory(tools=started.tools(), watchdog=DEAF)
    kernel.execute("keep = 1")
    baseline = threading.active_count()
    deaf = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + started.CODE + "while True: pass"

    settled, tasks_left = asyncio.run(_cancel_while_it_runs(kernel, deaf, started))

    assert tasks_left == 0
    [r] = settled
    assert r.status == "timeout" and r.watchdog == "reset" and r.kernel.state_lost, r.summary()
    b = _next_cells_are_their_own(kernel)
    assert b.kernel.state_lost and b.kernel.reason == "timeout", b.summary()
    wait_until(lambda: threading.active_count() <= baseline, 5.0, what="host threads back to baseline")
