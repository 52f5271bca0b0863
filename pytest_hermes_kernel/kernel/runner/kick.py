"""Make a SIGINT that the worker's main thread took in C, but not yet in Python, count now.

CPython runs a Python signal handler at the main thread's next bytecode boundary, and a blocking
call returns early for it only when the signal interrupts that very call (``EINTR``). A SIGINT
that lands after the thread's last check but before it enters a blocking call (``time.sleep``, a
lock's wait, a read) is taken by the C handler and then waits until that call ends by itself:
``time.sleep(30)`` ran its 30 s with the cell's interrupt pending, and the cell came back
``timeout`` instead of ``interrupted`` (measured: 1-4 in 300 interrupts sent right after a tool
call returned, on a loaded 2-core machine; the supervisor had sent the signal, the worker's
handler never ran).

The worker's signal wakeup fd tells a small daemon thread that a signal arrived. For a SIGINT it
sends the main thread a signal of its own (:data:`KICK_SIGNAL`, a real-time signal whose handler
does nothing) a few times over the next second, until the SIGINT handler has run: the kick's
``EINTR`` makes CPython run the pending handler. A kick when nothing is pending runs only the
no-op, and PEP 475 retries the call it cut. Linux only (no ``SIGRTMIN`` elsewhere: nothing runs).
"""

from __future__ import annotations

import os
import signal
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: The signal the watcher sends the main thread (``None`` where there are no real-time signals).
KICK_SIGNAL: int | None = signal.SIGRTMIN + 3 if hasattr(signal, "SIGRTMIN") else None
#: Seconds between the kicks that follow one SIGINT, while its handler has not run.
KICK_AFTER_S = (0.02, 0.05, 0.1, 0.2, 0.6)


class SigintKicker:
    """The watcher (see module docstring).

    :param handled: how many times the worker's SIGINT handler has run so far.
    """

    def __init__(self, handled: Callable[[], int]) -> None:
        self._handled = handled
        self._main = threading.get_ident()
        self._w = -1

    def start(self) -> None:
        """Install the kick's handler and the wakeup fd, start the watcher (in the main thread)."""
        if KICK_SIGNAL is None:
            return
        r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        signal.signal(KICK_SIGNAL, _noop)
        self.arm()
        threading.Thread(target=self._watch, args=(r,), name="hermes-sigint-kicker", daemon=True).start()

    def arm(self) -> None:
        """Make the watcher's pipe the wakeup fd again (main thread; before each cell: a cell's
        event loop may have replaced it)."""
        if self._w >= 0:
            signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)

    def _watch(self, r: int) -> None:
        while True:
            try:
                data = os.read(r, 512)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT not in data:
                continue
            before = self._handled()
            for delay in KICK_AFTER_S:
                time.sleep(delay)
                if self._handled() != before:
                    break
                try:
                    signal.pthread_kill(self._main, KICK_SIGNAL)  # type: ignore[arg-type]
                except (OSError, ValueError):
                    return


def _noop(*_: object) -> None:
    """The kick's handler: its work is the ``EINTR`` it caused."""
