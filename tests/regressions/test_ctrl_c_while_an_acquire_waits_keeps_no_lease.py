"""Ctrl-C in a registry call that waits for another thread's start of its key's kernel (or in the
shutdown of the kernel its acquire evicts) leaves no lease behind, and no start nobody runs.

The acquire counted its lease, then waited; a ``KeyboardInterrupt`` there propagated without
giving the lease back: the key's kernel counted as in use for good, so it was never idle-reaped
nor evicted (until ``close()``). Cut short in the eviction's shutdown, the acquire that made the
key's entry left it pending: every later acquire of the key, ``shutdown_all()`` and ``close()``
waited for a start no thread would run: forever.
"""

from __future__ import annotations

import signal
import threading

import pytest

from pytest_hermes_kernel import KernelKey
from pytest_hermes_kernel.contract._probes import call_in_thread
from pytest_hermes_kernel.kernel.handle import KernelHandle
from tests.support import wait_until

A, B = KernelKey(owner="conv-a"), KernelKey(owner="conv-b")
SETTLE_S = 15.0


def test_ctrl_c_while_waiting_for_another_threads_start_gives_the_lease_back(make_registry, fake_clock,
                                                                             monkeypatch):
    reg = make_registry(idle_timeout=60.0, clock=fake_clock)
    release = threading.Event()
    start = KernelHandle.start
    monkeypatch.setattr(KernelHandle, "start", lambda self: (release.wait(SETTLE_S), start(self))[1])
    starter = call_in_thread(reg.execute, A, "1")
    wait_until(lambda: [s.leases for s in reg.snapshot()] == [1], 5.0, what="the other thread's start")

    pressed: list[str] = []  # what the presser did (a failure below says it)

    def press_ctrl_c_once_waiting() -> None:
        try:
            wait_until(lambda: [s.leases for s in reg.snapshot()] == [2], 5.0, what="this thread to wait")
        except AssertionError as exc:
            pressed.append(f"not pressed: {exc}")
            return
        pressed.append("pressed")
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # Ctrl-C

    # Python's own Ctrl-C handler, as under a terminal: a pytest started as a background job
    # (`cmd &` in a CI script) inherits SIGINT ignored, and the press would do nothing at all
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=press_ctrl_c_once_waiting, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            reg.execute(A, "2")
            pytest.fail(f"DID NOT RAISE KeyboardInterrupt; the presser: {pressed}")
    finally:
        signal.signal(signal.SIGINT, previous)
    release.set()
    assert starter.result(timeout=SETTLE_S).value == "1"

    assert [s.leases for s in reg.snapshot()] == [0], "the interrupted acquire kept its lease"
    fake_clock.advance(3600)
    assert reg.reap_once() == 1, "an idle kernel with a leaked lease is never reaped"


def test_ctrl_c_in_the_eviction_an_acquire_causes_leaves_no_pending_entry(make_registry, monkeypatch):
    reg = make_registry(max_kernels=1, idle_timeout=None)
    reg.execute(A, "1")
    shutdown = KernelHandle.shutdown

    def cut_short(self, now=False, why=""):
        info = shutdown(self, now, why)
        raise KeyboardInterrupt  # Ctrl-C as the evicted kernel's shutdown returns

    monkeypatch.setattr(KernelHandle, "shutdown", cut_short)
    with pytest.raises(KeyboardInterrupt):
        reg.execute(B, "2")  # evicts A on its way
    monkeypatch.setattr(KernelHandle, "shutdown", shutdown)

    assert call_in_thread(reg.execute, B, "40 + 2").result(timeout=SETTLE_S).value == "42"
    assert call_in_thread(reg.shutdown_all).result(timeout=SETTLE_S) == 1
