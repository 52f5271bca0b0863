"""Found by the flaky-by-construction hunt (2026-12-06): ``KernelRegistry.close()`` told its idle
reaper to stop and returned without waiting for it: right after a ``with KernelRegistry(...)``
block, its ``hermes-kernel-idle-reaper`` thread was still alive in 2000 of 2000 tries. A count of
reaper threads taken then (``tests/unit/test_registry_settings_refused.py`` took one before each
case) held a thread that ended a moment later. An idle reaper has ended when ``close()`` returns;
a signal handler's ``close()`` that landed in the registry's own bookkeeping does not wait for it.
"""

from __future__ import annotations

import threading

from pytest_hermes_kernel import KernelRegistry
from pytest_hermes_kernel.kernel import reaper as reaper_module

REAPER = "hermes-kernel-idle-reaper"


def _reapers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == REAPER and t.is_alive()}


def test_no_reaper_thread_of_a_closed_registry_is_left() -> None:
    for _ in range(20):
        before = _reapers()
        with KernelRegistry(reap_interval=30.0, transport_factory=lambda key: None):
            assert len(_reapers() - before) == 1, "the registry has its reaper while open"
        left = _reapers() - before
        assert not left, f"close() returned with its reaper thread still running: {left}"


def test_a_close_inside_the_reapers_own_bookkeeping_does_not_wait_for_it(monkeypatch) -> None:
    """As a SIGTERM handler's ``close()`` that ran while this thread was in the reaper's ``poke()``:
    the reaper needs the lock held below this frame to end, so waiting for it is waiting in vain.
    Told by a deadline on that return (30 s), not by how long it took: a close that waits for the
    reaper waits out ``STOP_WAIT_S`` (made 60 s here; 5 s, and a 2-s bound, before)."""
    monkeypatch.setattr(reaper_module, "STOP_WAIT_S", 60.0)
    registry = KernelRegistry(reap_interval=30.0, transport_factory=lambda key: None)
    reaper = registry._reaper
    assert reaper is not None
    closed, in_time = threading.Event(), []
    watcher = threading.Thread(target=lambda: in_time.append(closed.wait(30.0)))
    watcher.start()
    with reaper._changed:  # the interrupted poke()'s hold
        registry.close()
        closed.set()
    watcher.join()
    assert in_time == [True], "close() waited for a reaper that could not end"
    reaper._thread.join(10)
    assert not reaper._thread.is_alive(), "the reaper ends once the hold is let go"
