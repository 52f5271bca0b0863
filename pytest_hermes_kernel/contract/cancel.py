"""Contract: a host-side cancel of ``execute`` leaves no orphaned waiter (B28, variant 1).

A ``KeyboardInterrupt`` raised in the calling thread while it waits in ``execute`` (Ctrl-C, or
``_thread.interrupt_main`` from a timer) must not leave the cell running with a listener that
later swallows, or answers, the next cell: the next cells get exactly their own output and
value, the loss of the cancelled cell's kernel is reported on the next result, and the host's
thread count returns to its baseline.
"""

from __future__ import annotations

import _thread
import threading

import pytest

from ._probes import wait_until

#: Seconds after the cell starts at which the test thread is interrupted.
CANCEL_AFTER_S = 0.5


def test_keyboard_interrupt_in_the_waiting_thread_leaves_no_orphaned_waiter(kernel):
    kernel.execute("keep = 1")
    baseline = threading.active_count()
    timer = threading.Timer(CANCEL_AFTER_S, _thread.interrupt_main)
    timer.start()

    with pytest.raises(KeyboardInterrupt):
        kernel.execute("while True: pass", timeout=60)
    timer.join()

    b = kernel.execute("print('B')")
    c = kernel.execute("1 + 1")
    assert b.status == "ok" and b.stdout == "B\n", b.summary()
    assert b.kernel.state_lost, b.summary()  # the cancelled cell's kernel was ended, and it says so
    assert c.status == "ok" and c.value == "2" and c.stdout == ""
    wait_until(lambda: threading.active_count() <= baseline, 5.0, what="host threads back to baseline")
