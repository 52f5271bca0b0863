"""Seed bug: the idle reaper and the LRU cap killed kernels in the middle of a cell.

A lease (the seed's ``attached`` count) exempts a kernel from reaping and eviction.
"""

from __future__ import annotations

import threading

from pytest_hermes_kernel import KernelKey
from tests.support import gone, wait_until

A, B, C = (KernelKey(owner=o) for o in ("conv-a", "conv-b", "conv-c"))


def test_reap_skips_a_leased_kernel(make_registry, fake_clock):
    reg = make_registry(max_kernels=4, idle_timeout=10.0, clock=fake_clock)
    reg.execute(A, "x = 'a'")

    with reg.lease(A) as handle:
        pid = handle.pid
        fake_clock.advance(3600)
        assert reg.reap_once() == 0
        assert not gone(pid)
        assert handle.execute("x").value == "'a'"

    fake_clock.advance(3600)
    assert reg.reap_once() == 1  # unleased and idle now: reaped
    wait_until(lambda: gone(pid), 5.0, what="the reaped kernel to end")
    r = reg.execute(A, "'fresh'")
    assert r.kernel.state_lost and r.kernel.reason == "idle_reaped"


def test_reap_during_a_running_cell_does_not_kill_it(make_registry, fake_clock):
    reg = make_registry(max_kernels=4, idle_timeout=10.0, clock=fake_clock)
    reg.execute(A, "import time\nx = 'a'")
    results = []
    cell = threading.Thread(target=lambda: results.append(reg.execute(A, "time.sleep(0.5)\nx")))
    cell.start()
    wait_until(lambda: [s.leases for s in reg.snapshot()] == [1], 5.0, what="the cell to hold its lease")

    fake_clock.advance(3600)
    assert reg.reap_once() == 0
    cell.join(10)

    assert results and results[0].status == "ok" and results[0].value == "'a'"
    assert not results[0].kernel.state_lost


def test_evict_skips_a_leased_kernel(make_registry, fake_clock):
    reg = make_registry(max_kernels=1, idle_timeout=None, clock=fake_clock)
    reg.execute(A, "x = 'a'")

    with reg.lease(A) as handle:
        pid = handle.pid
        reg.execute(B, "y = 'b'")  # over the cap of 1, but A is leased and B is the newcomer
        reg.execute(C, "z = 'c'")  # now B is the unleased LRU victim
        assert not gone(pid)
        assert handle.execute("x").value == "'a'"
        assert {s.key for s in reg.snapshot()} == {reg.resolve(A), reg.resolve(C)}

    reg.execute(B, "1")  # A is unleased again: it is the LRU victim now
    wait_until(lambda: gone(pid), 5.0, what="the evicted kernel to end")
    r = reg.execute(A, "x")
    assert r.ename == "NameError" and r.kernel.state_lost and r.kernel.reason == "evicted"
