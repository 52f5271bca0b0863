"""A cell sent from a signal handler that lands inside the cell queue's own bookkeeping (the few
lines where a cell takes or leaves its place in line) runs, and so does the cell
it interrupted.

The bookkeeping lock was a plain lock: a handler landing while its thread held it waited for
that same thread for ever (left alone in the closing note of 2026-12-05, fixed the session
after); and a handler landing just after its thread had left the line holding the kernel went
to the back of the line and waited for the cell behind, which waited for the kernel its own
thread held. The window is a few bytecodes wide, so these tests send the signal from inside it:
the queue's bookkeeping lock is wrapped to raise the signal on its thread's n-th entry.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from pytest_hermes_kernel import KernelState
from tests.support import hang_alarm, in_line, wait_until

# The main thread's entries into the bookkeeping lock during one cell that waits behind another:
# 1 in line, 2 out of line (its turn came: the kernel is held). (The count of waiting cells was
# kept apart under it too, two more entries, until it was read off the line.)
ENTRIES = {1: "taking its place in line", 2: "leaving the line, kernel held"}


class _SignalInside:
    """The queue's bookkeeping lock, raising SIGUSR1 in the main thread on its ``fire_at``-th entry."""

    def __init__(self, lock: Any, fire_at: int, kernel: Any) -> None:
        self._lock, self._fire_at, self._entries, self._kernel = lock, fire_at, 0, kernel
        self._main = threading.get_ident()
        self.in_line_then: int | None = None  # cells in line as the signal was raised

    def __enter__(self) -> None:
        self._lock.__enter__()
        if threading.get_ident() == self._main:
            self._entries += 1
            if self._entries == self._fire_at:
                self.in_line_then = in_line(self._kernel)
                try:
                    os.kill(os.getpid(), signal.SIGUSR1)  # the handler runs at the next bytecode, lock held
                except BaseException:  # the hang alarm: leave the lock free for the kernel's teardown
                    self._lock.__exit__(None, None, None)
                    raise

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


@pytest.mark.parametrize("fire_at", sorted(ENTRIES), ids=[v.replace(" ", "-") for v in ENTRIES.values()])
def test_a_signal_handlers_cell_inside_the_queues_bookkeeping_runs(make_kernel, fire_at: int) -> None:
    gate = threading.Event()
    k = make_kernel(tools={"gate": lambda: gate.wait(30.0)})
    k.execute("order = []")
    queue = k._queue
    ahead = threading.Thread(target=k.execute, args=("import hermes_tools; hermes_tools.gate(); order.append('ahead')",))
    ahead.start()
    wait_until(lambda: k.state is KernelState.BUSY, 10.0)
    behind: list[threading.Thread] = []

    def send_behind() -> None:  # a cell that waits in line behind the main thread's; then the one ahead ends
        try:
            wait_until(lambda: in_line(k) >= 1, 10.0)
            behind.append(threading.Thread(target=k.execute, args=("order.append('behind')",)))
            behind[0].start()
            if fire_at >= 2:  # (at 1 the handler's cell waits holding the bookkeeping lock: others queue after it)
                wait_until(lambda: in_line(k) >= 2, 10.0)
        finally:
            gate.set()

    previous = signal.signal(signal.SIGUSR1, lambda *_: k.execute("order.append('handler')"))
    bookkeeping = queue._count_lock
    queue._count_lock = inside = _SignalInside(bookkeeping, fire_at, k)
    try:
        threading.Thread(target=send_behind, daemon=True).start()
        with hang_alarm(20, f"a handler's cell landing while its thread was {ENTRIES[fire_at]} waited for ever"):
            k.execute("order.append('outer')")
            ahead.join(10.0)
            wait_until(lambda: behind and not behind[0].is_alive(), 10.0)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        queue._count_lock = bookkeeping
        gate.set()
        ahead.join(10.0)
    order = k.execute("order").value
    assert "'handler'" in order and "'outer'" in order and "'behind'" in order, order
    if fire_at >= 2:  # the case is the one named only with the cell behind in line as the kernel was held
        assert inside.in_line_then, f"no cell waited behind the main thread's as the signal was raised: {order}"

