"""Found by the breaker session (2026-12-05): the thread probe named a thread by its
``threading`` ident alone, which is the address of its pthread and is handed to the next thread
as soon as one ends. A thread there before the test (another test's leftover, a library's worker)
that ended during it lent its ident to a thread the test left running: the leak check saw
"nothing new" and passed. A thread is named by its ident and its kernel thread id now."""

from __future__ import annotations

import threading

from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import Probe, threads


#: Tries of the scenario: another thread of the process (an xdist worker's, a library's) that
#: starts between the old thread's end and the new one's start may take the ident first.
TRIES = 500  # (each ~1 ms; 20 ran out once in a unit run beside a clean-clone CI run, load 6.6)


def test_a_thread_left_running_is_seen_when_it_took_the_ident_of_one_that_ended():
    for _ in range(TRIES):
        gate, stop = threading.Event(), threading.Event()
        old = threading.Thread(target=gate.wait, daemon=True)
        old.start()
        checker = LeakChecker([Probe("thread", threads)], grace=0.0)
        before = checker.before()

        gate.set()
        old.join()
        new = threading.Thread(target=stop.wait, name="left-running", daemon=True)
        new.start()
        try:
            if new.ident != old.ident:
                continue  # another thread took it: try again
            report = checker.after(before)
            assert any("'left-running'" in desc for desc in report.leaks.get("thread", {}).values()), \
                report.format("test")
            return
        finally:
            stop.set()
            new.join()
    raise AssertionError(f"pthreads never handed a new thread the ident of one just ended in {TRIES} tries")
