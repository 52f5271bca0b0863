"""The idle reaper and the LRU cap leave alone a kernel that runs a cell sent through the handle
``registry.get_or_start(key)`` gave, and its idle clock restarts when such a cell ends.

``get_or_start`` keeps no lease, and only a lease counted as use: a cell run on its handle (as
the contract suite's in-flight tests and an agent holding its conversation's kernel do) was
killed by the reaper once ``idle_timeout`` had passed since the ``get_or_start``, or by the
eviction another key's first cell caused, mid-cell; the cell ended ``died`` with
``reason="reset"`` ("the kernel was shut down while the cell ran"), never naming the registry,
and the handle's next cell raised ``KernelShutdownError``. A kernel used that way for an hour was
reaped right after its last cell, as if idle all along.
"""

from __future__ import annotations

from pytest_hermes_kernel import KernelKey
from pytest_hermes_kernel.contract._probes import CellStarted, run_in_thread

A, B = KernelKey(owner="conv-a"), KernelKey(owner="conv-b")
SETTLE_S = 15.0


def test_the_reaper_spares_a_cell_sent_through_get_or_start(make_registry, fake_clock):
    probe = CellStarted()
    reg = make_registry(idle_timeout=10.0, clock=fake_clock, tools=probe.tools())
    handle = reg.get_or_start(A)
    handle.execute("x = 'a'")
    cell = run_in_thread(handle, probe.CODE + "import time\ntime.sleep(1)\nx")
    probe.wait()

    fake_clock.advance(3600)
    assert reg.reap_once() == 0, "the kernel was reaped in the middle of its cell"
    r = cell.result(timeout=SETTLE_S)

    assert r.status == "ok" and r.value == "'a'" and not r.kernel.state_lost, r.summary()


def test_the_idle_clock_restarts_when_a_cell_sent_through_get_or_start_ends(make_registry, fake_clock):
    reg = make_registry(idle_timeout=60.0, clock=fake_clock)
    handle = reg.get_or_start(A)
    fake_clock.advance(50)
    handle.execute("x = 'a'")  # used 50 s after the get_or_start

    fake_clock.advance(50)  # 100 s after the get_or_start, 50 s after the cell
    assert reg.reap_once() == 0, "a kernel used 50 s ago was reaped as idle"
    fake_clock.advance(20)
    assert reg.reap_once() == 1
    assert reg.execute(A, "1").kernel.reason == "idle_reaped"


def test_the_cap_spares_a_cell_sent_through_get_or_start(make_registry, fake_clock):
    probe = CellStarted()
    reg = make_registry(max_kernels=1, idle_timeout=None, clock=fake_clock, tools=probe.tools())
    handle = reg.get_or_start(A)
    handle.execute("x = 'a'")
    cell = run_in_thread(handle, probe.CODE + "import time\ntime.sleep(1)\nx")
    probe.wait()

    assert reg.execute(B, "'b'").value == "'b'"  # over the cap of 1 while A's cell runs
    r = cell.result(timeout=SETTLE_S)

    assert r.status == "ok" and r.value == "'a'" and not r.kernel.state_lost, r.summary()
    assert reg.execute(B, "'b'").value == "'b'"  # A idle now: the cap evicts it
    assert handle.stopping
    assert reg.execute(A, "1").kernel.reason == "evicted"
