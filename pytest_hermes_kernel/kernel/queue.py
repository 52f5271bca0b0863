"""CellQueue: the order of cells on one kernel, and which of them a ``restart()`` overtook.

Cells on one kernel are serialized: each ``execute`` waits for its turn (the queue's lock), in
the order the cells came (a line in front of the lock, which alone hands it to any waiter).
A ``restart()`` ends the generation the waiting cells were sent to (handed case B27), so a cell
that was already waiting when the restart began is never run on the replacement: it gets its
turn at once and is told it was overtaken (the handle answers it with a final result naming
the old generation). A cell sent while the restart runs waits until the restart is done and
then runs on the new generation, in the order it came. Nothing here knows about the kernel itself.

Locking: the queue's lock is re-entrant (``start()`` inside a cell's turn), and so is the lock of
its line (a signal handler's cell may land inside that bookkeeping: each such cell leaves the
line as it found them); the count of waiting cells is read off the line, never kept apart from
it (a count kept apart could be left one off by a Ctrl-C between the two); the restart's own
moves are serialized by the caller (the handle's control lock), so :meth:`CellQueue.restart`
never runs twice at once. A Ctrl-C (a signal's handler that raises, in the main thread, as any
step of the line's bookkeeping ends) leaves no place in the line, no count of a waiting cell,
and the lock not held: the next cell gets the kernel.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

__all__ = ["CANCEL_LOOK_S", "CellQueue", "Ticket"]

#: How long a restart's end waits for the queue's lock to wake the cells sent meanwhile (seconds):
#: only a running cell holds it longer, and that cell wakes them when its turn ends.
NOTIFY_WAIT_S = 0.5

#: How often a cell waiting its turn looks at its cancel switch (seconds).
CANCEL_LOOK_S = 0.05

#: ``on_placed.callback``, set by the thread that sends a cell, is called once as the cell takes its
#: place in line: :func:`~.aio.aexecute` waits for it, so its cells stand in line in the order the
#: coroutines sent them (their threads could reach the line in any order: 1 of 50 gathered rounds).
on_placed = threading.local()


@dataclass(frozen=True)
class Ticket:
    """Where a cell stood when it was sent: the restart count and the kernel's generation then.

    :param epoch: how many ``restart()`` calls had begun when the cell was sent.
    :param generation: the kernel's generation when the cell was sent (what an overtaken cell names).
    """

    epoch: int
    generation: int


class _Place:
    """A cell's place in line: its thread, the event that tells it it is head, and whether it is
    gone: marked so as the cell leaves, or its ``_wait_turn`` frame no longer runs (the wait ended
    without marking it: its frame can be cleared, which a running one cannot). On Python 3.10 a
    signal's handler also runs as a ``finally`` block begins, so a second Ctrl-C landing as the first one's ``finally`` began left a
    place that waited for ever, and every later cell of other threads behind it (3 of 8 runs of
    1.5 s of SIGINT every 0.3 ms). The frame is asked whether it runs, not watched for its end: a
    kept ``KeyboardInterrupt`` (``sys.last_traceback``, a saved outcome) keeps the ended frame, and
    all its locals, alive for as long as it is kept. Not by looking for it on its thread's stack:
    ``sys._current_frames()`` can run the garbage collector while it holds the interpreter's
    thread list, and a finalizer that needs that list deadlocked (a full run hung in it, 3.11)."""

    __slots__ = ("thread", "event", "gone", "_frame")

    def __init__(self, frame: FrameType) -> None:
        self.thread, self.event, self.gone = threading.get_ident(), threading.Event(), False
        self._frame = frame

    @property
    def waits(self) -> bool:
        if self.gone:
            return False
        try:  # only a frame that no longer runs can be cleared (3.10-3.13): this wait ended unmarked
            self._frame.clear()
        except RuntimeError:  # "cannot clear an executing frame": the wait runs
            return True
        self.gone = True
        return False


class CellQueue:
    """Serializes cells on one kernel; marks off the cells a restart overtook (see module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._turn = threading.Condition(self.lock)
        self._epoch = 0
        self._restarting = False
        self._count_lock = threading.RLock()  # of the line; re-entrant: a signal handler's cell may land inside it
        # places in the order they came; replaced, never changed (read without the lock)
        self._line: tuple[_Place, ...] = ()
        #: Set once the cell of the latest ``aexecute`` call on this kernel stands in line (``None``: none
        #: made); kept by :mod:`.aio`, waited for by cells sent after that call (:meth:`_after_aexecute`).
        self.last_aexecute: threading.Event | None = None

    @property
    def waiting(self) -> int:
        """How many cells wait for their turn now: their places in line."""
        return sum(1 for place in self._line if place.waits)

    def ticket(self, generation: int) -> Ticket:
        """A ticket for a cell sent now, to the kernel's ``generation``."""
        return Ticket(epoch=self._epoch, generation=generation)

    @contextmanager
    def turn(self, ticket: Ticket, cancel: threading.Event | None = None) -> Iterator[bool | None]:
        """Hold the kernel for one cell; yields whether it may run (``False``: a restart overtook it;
        ``None``: its ``cancel`` switch was set before its turn came, and the kernel is not held).

        A cell sent while a restart runs waits here until the restart is done. A cell with a
        switch looks at it every :data:`CANCEL_LOOK_S` while it waits, so a cancel is answered
        at once, not when the cell ahead ends.
        """
        held = [False]  # whether this turn holds the queue's lock: set by _wait_turn as it takes it
        owned = self._turn._is_owned()  # type: ignore[attr-defined]  # (re-entered: start() in a cell's turn)
        try:  # the wait inside it: a Ctrl-C as it returns with the lock (3.10 runs handlers there) releases it
            if not self._wait_turn(ticket, cancel, held, owned):
                yield None
                return
            yield ticket.epoch == self._epoch
        finally:
            if held[0] or (not owned and self._turn._is_owned()):  # type: ignore[attr-defined]  # (cut as it was taken)
                try:
                    self._turn.notify_all()  # the cells a failed restart could not wake itself (see restart())
                finally:  # (also if a signal's handler raised in it)
                    self._turn.release()

    def _wait_turn(self, ticket: Ticket, cancel: threading.Event | None, held: list[bool], owned: bool) -> bool:
        """Wait in line, then take the queue's lock (``held[0]`` says so; the caller releases it; a turn
        re-entered by the thread that holds it, ``owned``, takes it not again) and wait out a running
        restart; ``False`` (lock not held) once ``cancel`` is set. Cells get the lock in the order
        they came: the lock alone handed it to any waiter (a cell sent after five others ran first
        in 1 round of 20). A cell stays head until its restart wait is over too:
        that wait gives the lock up, and cells sent during a restart, all let through to it, raced
        for the lock at its end (163 rounds of 200 out of order)."""
        look_s = -1 if cancel is None else CANCEL_LOOK_S  # (-1: wait without a bound)
        if not owned:
            self._after_aexecute(cancel)
        place = _Place(sys._getframe())  # a place this frame cannot mark gone goes as the frame ends
        head = place.event
        try:
            with self._count_lock:  # a cell from a signal handler of a thread in line takes that thread's place,
                line = self._line  # and the head if its thread holds the kernel already
                here = 0 if owned else next((i for i, p in enumerate(line) if p.thread == place.thread and p.waits), len(line))
                self._line = (*line[:here], place, *line[here:])
                if self._head() is place:
                    head.set()
            placed, on_placed.callback = getattr(on_placed, "callback", None), None
            if placed is not None:
                placed()
            while not (head.is_set() or self._head() is place):  # (it looks too: a handoff a signal cut short)
                if cancel is not None and cancel.is_set():
                    return False
                head.wait(CANCEL_LOOK_S)
            while not owned and not self._turn.acquire(timeout=look_s):  # (re-entered: held already; a second
                if cancel is not None and cancel.is_set():  # hold a Ctrl-C cut before held[0] was set stayed for good)
                    return False
            held[0] = not owned
            while self._restarting and ticket.epoch == self._epoch:
                if cancel is not None and cancel.is_set():
                    if held[0]:
                        held[0] = False  # first: the caller must not release it a second time
                        self._turn.release()
                    return False
                self._turn.wait(NOTIFY_WAIT_S if cancel is None else CANCEL_LOOK_S)  # bounded: see restart()
        finally:  # held, cancelled or interrupted: the next in line is head now
            place.gone = True  # first, in this frame: a signal's handler raising from here on leaves no place
            self._leave_line()
        return True

    def _after_aexecute(self, cancel: threading.Event | None) -> None:
        """A cell sent after an ``aexecute`` call waits until that call's cell stands in line: its thread
        may reach the line later, and a ``to_thread(k.execute, ...)`` sent after the call returned to the
        loop ran first (``NameError``, 2026-12-06; ``aexecute`` waited on the loop for its place before)."""
        pending = self.last_aexecute
        if pending is None or getattr(on_placed, "callback", None) is not None:
            return  # (an aexecute's own thread: aio keeps those in order)
        while not pending.wait(CANCEL_LOOK_S):
            if cancel is not None and cancel.is_set():
                return

    def _head(self) -> _Place | None:
        """The first place in line whose cell still waits (a place left by a cell that is gone
        counts for nothing, also before it is taken out)."""
        return next((p for p in self._line if p.waits), None)

    def _leave_line(self) -> None:
        """Take the places of the cells that are gone out of the line and wake the next in line."""
        with self._count_lock:
            self._line = tuple(p for p in self._line if p.waits)
            if (first := self._head()) is not None:
                first.event.set()

    @contextmanager
    def restart(self) -> Iterator[None]:
        """Mark a restart: every cell waiting now is overtaken; cells sent meanwhile wait for it.

        The body runs with the queue's lock free (a running cell still holds it); enter
        :attr:`lock` inside it to replace the kernel once that cell settled.
        """
        self._epoch += 1  # without the lock: a running cell holds it (restarts are serialized by the caller)
        self._restarting = True
        try:
            yield
        finally:
            self._restarting = False  # a plain store: waiters re-check it under the lock
            # A restart that failed before the running cell settled (its runner did not answer the
            # kill: a paused host) must not wait here for that cell's whole budget: it wakes the
            # waiters only if the lock comes free at once, else the running cell's turn wakes them
            # as it ends (and waiters re-check every NOTIFY_WAIT_S: ``start()`` holds the lock too).
            owned = self._turn._is_owned()  # type: ignore[attr-defined]
            try:
                if self._turn.acquire(timeout=NOTIFY_WAIT_S):
                    try:
                        self._turn.notify_all()
                    finally:
                        self._turn.release()
            except BaseException:  # a signal's handler raised as the lock was taken: it goes back
                if not owned and self._turn._is_owned():  # type: ignore[attr-defined]
                    self._turn.release()
                raise
