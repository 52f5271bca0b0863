"""A Ctrl-C that lands while a cell gets in line for its kernel, or leaves the line with the
kernel, leaves the kernel to the next cell (``kernel.queue.CellQueue``).

The line in front of the queue's lock (cells run in the order they came) is kept under a lock of
its own, and a signal's handler runs in the main thread between two steps of it, as each such
block ends. Before: one landing as the cell's place was put in line left that place at the
head for good (every later cell on the kernel waited for ever); one landing as the place was
taken out, or as the count of waiting cells came down, left the kernel's lock held by the
interrupted thread (every other thread's cell waited for ever); one landing as the count went up
left ``queued`` one too high for good.
"""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel.contract._probes import call_in_thread
from pytest_hermes_kernel.kernel.queue import CellQueue

#: The blocks under the line's lock one cell's turn goes through, in order.
BLOCKS = ["count-up", "get-in-line", "leave-the-line", "count-down"]


class CtrlCAtTheEnd:
    """A lock whose ``when``-th block in the main thread (1-based) ends with ``KeyboardInterrupt``,
    right after the lock is released: a Ctrl-C whose handler ran just then."""

    def __init__(self, when: int) -> None:
        self._lock, self._blocks, self._when = threading.Lock(), 0, when

    def __enter__(self) -> CtrlCAtTheEnd:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        if threading.current_thread() is threading.main_thread():
            self._blocks += 1
            if self._blocks == self._when:
                raise KeyboardInterrupt


def _take_turn(queue: CellQueue) -> bool | None:
    with queue.turn(queue.ticket(0)) as may_run:
        return may_run


@pytest.mark.parametrize("when", range(1, len(BLOCKS) + 1), ids=BLOCKS)
def test_a_ctrl_c_in_the_line_leaves_the_kernel_to_the_next_cell(when: int) -> None:
    queue = CellQueue()
    queue._count_lock = CtrlCAtTheEnd(when)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        _take_turn(queue)

    other = call_in_thread(_take_turn, queue)
    assert other.result(timeout=10.0) is True, "another thread's cell got the kernel"
    assert queue.waiting == 0, "no cell waits"
    assert _take_turn(queue) is True, "this thread's next cell got the kernel"
