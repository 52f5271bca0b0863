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

    def slow(self, now=False):  # the reaped kernel's shutdown takes its time (its steps' graces)
        ending.set()
        release.wait(SETTLE_S)
        return shutdown(self, now)

    monkeypatch.setattr(KernelHandle, "shutdown", slow)
    fake_clock.advance(3600)
    reaping = call_in_thread(reg.reap_once)  # the reaper's thread
    assert ending.wait(SETTLE_S)

    closer = call_in_thread(lambda: (reg.close(), a.exit_info)[1])
    release.set()

    assert closer.result(timeout=SETTLE_S) is not None, "close() returned while the reaped kernel was being shut down"
    assert reaping.result(timeout=SETTLE_S) == 1
