"""The ssh log filter (transports/ssh/logs.py) drops a banner error and, for TRACEBACK_S, the ERROR
lines of its thread (the traceback paramiko logs after it). Its thread was known by its ident only,
which a thread started after that one ended takes again (a re-attach try's next connection): that
connection's own ERROR lines, within 2 s, were dropped too, though the kit never reported them.
"""

from __future__ import annotations

import logging
import threading

from pytest_hermes_kernel.transports.ssh.logs import LOG_CHANNEL


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _in_a_thread(step) -> int | None:
    thread = threading.Thread(target=step)
    thread.start()
    thread.join()
    return thread.ident


def test_a_later_threads_error_with_a_reused_ident_is_kept() -> None:
    log = logging.getLogger(LOG_CHANNEL)
    kept, level = _Kept(), log.level
    log.addHandler(kept)
    log.setLevel(logging.DEBUG)
    try:
        first = _in_a_thread(lambda: log.error("Error reading SSH protocol banner[Errno 9] Bad file descriptor"))
        kept.messages.clear()

        def later() -> None:  # another thread that took the first one's ident (reuse made sure of, not waited for:
            record = log.makeRecord(log.name, logging.ERROR, __file__, 0,  # glibc reuses a stack when it likes,
                                    "Exception (client): Incompatible ssh server (no acceptable ciphers)", (), None)
            record.thread = first  # and a loaded run's other threads took it: 1 in 2 clean-clone runs)
            log.handle(record)

        _in_a_thread(later)
        assert kept.messages == ["Exception (client): Incompatible ssh server (no acceptable ciphers)"]
    finally:
        log.removeHandler(kept)
        log.setLevel(level)
