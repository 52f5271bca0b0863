"""The timeout ladder: interrupt -> kill -> restart, or abandon.

A cell over its budget gets SIGINT and ``interrupt_grace`` seconds to end (state kept). If it
does not, its worker's process group is killed and gets ``kill_grace`` seconds to be seen dead,
then a fresh worker starts (state lost). If the runner cannot be reached at all, the kernel is
killed from outside through the transport; when even that cannot be confirmed and the transport
did not see the runner gone (``Transport.seen_gone``: "cannot tell" is not "gone"), the cell is
abandoned: not reset, and the work may still be running. (The seed system's watchdog
document, with its pause flag: while paused, e.g. during a tool call waiting on a human, the
budget does not run down; a cancel cuts through a pause.) The grace periods are a
:class:`~.options.WatchdogPolicy` (re-exported here), a field of the kernel's options.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

from .options import WatchdogPolicy

__all__ = ["Action", "CellBudget", "POLL_SLICE_S", "WatchdogPolicy"]

Action = Literal["interrupt", "kill", "abandon"]
"""A rung of the ladder: SIGINT the cell; SIGKILL the worker; give up on an unreachable runner."""

POLL_SLICE_S = 0.1
"""Longest single wait, so a cancel or an external pause is noticed within this many seconds."""


class CellBudget:
    """Budget of one cell, with a pause flag and a cancel switch; thread-safe.

    :param timeout: seconds of unpaused running time; ``None`` is no limit.
    :param clock: a monotonic clock in seconds (a seam for tests).
    :param switch: the cancel switch, when the caller holds it (set from any thread, also before
        the cell started, it cancels the budget); a fresh one by default.
    """

    def __init__(self, timeout: float | None, policy: WatchdogPolicy,
                 clock: Callable[[], float] = time.monotonic, *, switch: threading.Event | None = None) -> None:
        self.timeout = timeout
        self.policy = policy
        self.clock = clock
        self._lock = threading.Lock()
        self._used = 0.0
        self._since: float | None = clock()
        self._pauses = 0
        self._switch = switch or threading.Event()
        self.stage: Literal["running", "interrupting", "killing", "abandoned"] = "running"
        self._stage_deadline: float | None = None

    def used(self) -> float:
        with self._lock:
            return self._used + (self.clock() - self._since if self._since is not None else 0.0)

    def pause(self) -> None:
        with self._lock:
            if self._pauses == 0 and self._since is not None:
                self._used += self.clock() - self._since
                self._since = None
            self._pauses += 1

    def resume(self) -> None:
        with self._lock:
            self._pauses = max(0, self._pauses - 1)
            if self._pauses == 0 and self._since is None:
                self._since = self.clock()

    @contextmanager
    def paused(self) -> Iterator[None]:
        self.pause()
        try:
            yield
        finally:
            self.resume()

    def cancel(self) -> None:
        self._switch.set()

    @property
    def cancelled(self) -> bool:
        """:meth:`cancel` was called, or the caller's switch was set."""
        return self._switch.is_set()

    def next_wait(self) -> float:
        """Seconds to wait for the result before :meth:`due` should be asked again."""
        if self.stage != "running":
            left = (self._stage_deadline or 0.0) - self.clock()
        elif self.cancelled:
            left = 0.0
        elif self.timeout is None or self._pauses:
            left = POLL_SLICE_S
        else:
            left = self.timeout - self.used()
        return max(0.0, min(left, POLL_SLICE_S))

    def due(self) -> Action | None:
        """The escalation due now, if any; advancing the stage when one is returned."""
        now = self.clock()
        if self.stage == "running":
            over = self.timeout is not None and not self._pauses and self.used() >= self.timeout
            if over or self.cancelled:
                self.stage, self._stage_deadline = "interrupting", now + self.policy.interrupt_grace
                return "interrupt"
        elif self._stage_deadline is not None and now >= self._stage_deadline:
            if self.stage == "interrupting":
                self.stage, self._stage_deadline = "killing", now + self.policy.kill_grace
                return "kill"
            if self.stage == "killing":
                self.stage, self._stage_deadline = "abandoned", None
                return "abandon"
        return None
