"""Make a SIGINT that the worker's main thread took in C, but not yet in Python, count now.

CPython runs a Python signal handler at the main thread's next bytecode boundary, and a blocking
call returns early for it only when the signal interrupts that very call (``EINTR``). A SIGINT
that lands after the thread's last check but before it enters a blocking call (``time.sleep``, a
lock's wait, a read) is taken by the C handler and then waits until that call ends by itself:
``time.sleep(30)`` ran its 30 s with the cell's interrupt pending, and the cell came back
``timeout`` instead of ``interrupted`` (measured: 1-4 in 300 interrupts sent right after a tool
call returned, on a loaded 2-core machine; the supervisor had sent the signal, the worker's
handler never ran; two clean-clone CI runs failed on it).

So the supervisor follows each SIGINT it sends a running cell with a few kicks
(:data:`KICK_SIGNAL` to the worker at :data:`KICK_AFTER_S`, while that cell runs): a real-time
signal whose handler in the worker does nothing. Its ``EINTR`` cuts the blocking call short, and
CPython then runs the pending SIGINT handler. A kick when nothing is pending runs only the no-op
(PEP 475 retries the call it cut), and a SIGINT handler runs once however many kicks come. No
thread and no fd in the worker. Linux only (no ``SIGRTMIN`` elsewhere: no kicks).

Also here, the worker's other care of SIGINT at a cell's start: one blocked and pending since an
earlier cell is dropped (:func:`drop_blocked_sigint`).
"""

from __future__ import annotations

import os
import signal
import time

#: The kick (``None`` where there are no real-time signals).
KICK_SIGNAL: int | None = signal.SIGRTMIN + 3 if hasattr(signal, "SIGRTMIN") else None
#: Seconds after a SIGINT at which the running cell's worker is kicked.
KICK_AFTER_S = (0.02, 0.05, 0.1, 0.2, 0.4)


def install_kick_handler() -> None:
    """In the worker: give the kick its no-op handler (without a handler there is no ``EINTR``)."""
    if KICK_SIGNAL is not None:
        signal.signal(KICK_SIGNAL, _noop)


def _noop(*_: object) -> None:
    """The kick's handler: its work is the ``EINTR`` it caused."""


class Kicks:
    """The supervisor's kicks of one worker, due after its last SIGINT."""

    def __init__(self) -> None:
        self._due: list[float] = []

    def after_sigint(self) -> None:
        """Plan the kicks that follow a SIGINT sent now."""
        if KICK_SIGNAL is not None:
            now = time.monotonic()
            self._due = [now + s for s in KICK_AFTER_S]

    def timeout(self, timeout: float | None) -> float | None:
        """``timeout`` (seconds, ``None``: none), shortened to the next kick."""
        if not self._due:
            return timeout
        left = max(0.0, self._due[0] - time.monotonic())
        return left if timeout is None else min(timeout, left)

    def send_due(self, pid: int | None, running: bool) -> None:
        """Kick worker ``pid`` for each kick now due; none once its cell ended (``running``), nor to a
        worker whose cell took the kick's handler away (``SIG_DFL``: a real-time signal's default
        ends the process, and an interrupted cell that went on came back ``died``, signal 37)."""
        if not running or pid is None:
            self._due = []
            return
        now = time.monotonic()
        while self._due and self._due[0] <= now:
            self._due.pop(0)
            if not catches(pid, KICK_SIGNAL):  # type: ignore[arg-type]
                self._due = []
                return
            try:
                os.kill(pid, KICK_SIGNAL)  # type: ignore[arg-type]
            except ProcessLookupError:
                self._due = []


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (``SigCgt`` in its ``/proc`` status)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def drop_blocked_sigint() -> None:
    """In the worker, between cells: take a SIGINT that waits, blocked (a cell's
    ``pthread_sigmask``), so that it interrupts no later cell that unblocks it."""
    if hasattr(signal, "sigtimedwait") and signal.SIGINT in signal.sigpending():
        signal.sigtimedwait({signal.SIGINT}, 0)
