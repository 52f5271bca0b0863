"""What paramiko logs for the kit's ssh connections: only what the kit does not report itself.

The kit's connections log on their own channel (:data:`LOG_CHANNEL`, under paramiko's
``paramiko.transport``), with a ``NullHandler`` as a library should: with no logging set up,
Python's last-resort handler printed paramiko's ERROR lines beside the error that reports them
already. Two kinds of paramiko ERROR line are dropped: a refused channel open (the kit retries
it, or raises an error that names it) and a banner that never came, with the traceback paramiko
logs after it line by line from the same thread (the kit's connect raises its own error; a
re-attach try the kit gave up and closed logged ``Error reading SSH protocol banner[Errno 9] Bad
file descriptor`` and two chained tracebacks, ~25 ERROR lines in a failed test's "Captured log").
"""

from __future__ import annotations

import logging
import threading
import time

#: paramiko's log channel for the kit's connections, under its own ``paramiko.transport``.
LOG_CHANNEL = "paramiko.transport.hermes"
#: Seconds after a dropped banner error during which its thread's ERROR lines (the traceback) are dropped too.
TRACEBACK_S = 2.0


class _ReportedHere(logging.Filter):
    """Drops paramiko's ERROR lines for what the kit reports itself (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        # thread ident -> (that thread, until when its ERROR lines are its traceback): the thread itself too, as
        # a thread started after it ended may take its ident (a re-attach's next connection, whose errors were dropped)
        self._tracebacks: dict[int | None, tuple[threading.Thread, float]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "open FAILED" in message:  # a refused channel open: retried, or raised naming it
            return False
        now, thread = time.monotonic(), threading.current_thread()  # (a filter runs in the thread that logs)
        with self._lock:
            if "Error reading SSH protocol banner" in message:
                self._tracebacks[record.thread] = (thread, now + TRACEBACK_S)
                return False
            its = self._tracebacks.get(record.thread)
            if its is None:
                return True
            if its[0] is thread and now < its[1] and record.levelno >= logging.ERROR:
                return False
            del self._tracebacks[record.thread]
            return True


logging.getLogger(LOG_CHANNEL).addFilter(_ReportedHere())
logging.getLogger(LOG_CHANNEL).addHandler(logging.NullHandler())

__all__ = ["LOG_CHANNEL", "TRACEBACK_S"]
