"""CellStartTimer: run an action ``delay`` seconds after a cell has started in the worker.

What ``during_cell`` faults (markers, catalog scenarios) are timed with. A wall-time timer from
``execute()`` is wrong on a loaded machine: the cell may reach the worker seconds later, and the
action then hits an idle worker. This timer starts counting at the kernel's ``running`` event
(see :attr:`~.options.KernelOptions.report_running`), and an action whose cell ended first
never runs, so it cannot hit a later cell either.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["CellStartTimer"]


class CellStartTimer:
    """Runs ``action`` ``delay`` seconds after :meth:`started`, unless :meth:`end` came first.

    Its own daemon thread waits; the action runs on that thread, at most once.

    :param delay: seconds after the cell's start.
    :param action: what to run then (a fault's injection).
    :param start_timeout: seconds to wait for :meth:`started` (the cell's timeout); ``None``:
        until :meth:`end`. A cell that has not started by then is given up on.
    :param name: the thread's name.
    """

    def __init__(self, delay: float, action: Callable[[], None], start_timeout: float | None, *,
                 name: str = "hermes-cell-timer") -> None:
        self.delay = delay
        self.fired = False
        self._running = threading.Event()
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._wait, args=(action, start_timeout), daemon=True, name=name)
        self._thread.start()

    def started(self) -> None:
        """The cell has started in the worker (its ``running`` event): the delay begins now."""
        self._running.set()

    def end(self) -> None:
        """The cell ended (or its test did): an action that has not run yet never will."""
        self._ended.set()
        self._running.set()

    def _wait(self, action: Callable[[], None], start_timeout: float | None) -> None:
        if not self._running.wait(start_timeout) or self._ended.is_set():
            return
        if not self._ended.wait(self.delay):
            self.fired = True
            action()
