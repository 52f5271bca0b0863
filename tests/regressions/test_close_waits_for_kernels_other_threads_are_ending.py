"""``KernelRegistry.close()`` returns once every kernel of the registry has ended, also one that
another thread is ending (the idle reaper's reap, the eviction at another lease's end).

``close()`` ended the kernels still in the registry's map; a kernel another thread had taken out
of it and was shutting down (seconds: a shutdown's request, SIGTERM and SIGKILL steps) was not
waited for: ``close()`` returned with it still running, and a program (or the leak check of the
fixture that closed the registry) that looked right after found it alive.
"""

from __future__ import annotations

import threading

from pytest_hermes_kernel import KernelKey
from pytest_hermes_kernel.contract._probes import call_in_thread
from pytest_hermes_kernel.kernel.handle import KernelHandle

A = KernelKey(owner="conv-a")
SETTLE_S = 15.0


def test_close_waits_for_the_kernel_the_reaper_is_ending(make_registry, fake_clock, monkeypatch):
    reg = make_registry(idle_timeout=60.0, clock=fake_clock)
    a = reg.get_or_start(A)
    ending, release = threading.Event(), threading.Event()
    shutdown = KernelHandle.shutdown

    def slow(self, now=False, why=""):  # the reaped kernel's shutdown takes its time (its steps' graces)
        ending.set()
        release.wait(SETTLE_S)
        return shutdown(self, now, why)

    monkeypatch.setattr(KernelHandle, "shutdown", slow)
    fake_clock.advance(3600)
    reaping = call_in_thread(reg.reap_once)  # the reaper's thread
    assert ending.wait(SETTLE_S)

    closer = call_in_thread(lambda: (reg.close(), a.exit_info)[1])
    release.set()

    assert closer.result(timeout=SETTLE_S) is not None, "close() returned while the reaped kernel was being shut down"
    assert reaping.result(timeout=SETTLE_S) == 1


def test_close_from_a_signal_handler_does_not_wait_for_the_end_its_own_thread_is_in(make_registry, fake_clock,
                                                                                      monkeypatch):
    import signal
    import time

    reg = make_registry(idle_timeout=60.0, clock=fake_clock)
    reg.get_or_start(A)
    release = threading.Event()
    shutdown = KernelHandle.shutdown
    took: list[float] = []

    def slow(self, now=False, why=""):  # the reap below, in this very thread, is in the kernel's shutdown
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
        release.wait(SETTLE_S)
        return shutdown(self, now, why)

    def handler(signum, frame):  # a program's handler that closes the registry
        began = time.monotonic()
        reg.close()
        took.append(time.monotonic() - began)
        release.set()

    monkeypatch.setattr(KernelHandle, "shutdown", slow)
    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        fake_clock.advance(3600)
        assert reg.reap_once() == 1
    finally:
        signal.signal(signal.SIGUSR1, previous)

    assert took and took[0] < 5.0, f"close() in the handler waited {took} s for the shutdown below it"
