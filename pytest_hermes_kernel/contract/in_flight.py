"""Contract: a restart or shutdown while a cell runs gives every request a final status (B27).

A cell in flight (keeping what it printed) and the cells queued behind it (on the same handle, and through a second
lease holder of the same registry key) each end, within the restart's own time, with an
explicit status that names the generation they were sent to: ``died`` with ``reason="reset"``
(a queued cell is not run, and says so), or :class:`KernelShutdownError` for a cell queued
behind a shutdown. Nothing of the old generation reaches a request of the new one, and no
waiter outlives its request (host threads return to their baseline).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from ..errors import KernelShutdownError
from ..kernel.contract import Transport
from ..kernel.handle import KernelHandle
from ..kernel.registry import KernelKey, KernelRegistry
from ..kernel.results import CellResult
from ._probes import CellStarted, call_in_thread, run_in_thread, wait_until

__all__ = ["in_flight_started", "in_flight_registry", "test_restart_while_a_cell_runs_settles_every_request",
           "test_shutdown_while_a_cell_runs_settles_every_request"]

#: Seconds every request in flight or queued has to settle once restart()/shutdown() returned.
SETTLE_S = 10.0
#: The cell that runs while the kernel is restarted (it would run for 30 s); it has printed
#: ``start`` by the time it reports that it runs.
LONG_CELL = "print('start', flush=True)\n" + CellStarted.CODE + "import time\ntime.sleep(30)\n"


@pytest.fixture
def in_flight_started() -> CellStarted:
    """The running cell reports through this tool that it runs."""
    return CellStarted()


@pytest.fixture
def in_flight_registry(hermes_transport: Transport, in_flight_started: CellStarted) -> Iterator[KernelRegistry]:
    """A registry on this test's transport whose kernels offer the ``cell_started`` tool."""
    reg = KernelRegistry(transport_factory=lambda key: hermes_transport, transport=hermes_transport.name,
                         tools=in_flight_started.tools(), background_reaper=False)
    yield reg
    reg.close()


def _queue_behind(kernel: KernelHandle, registry: KernelRegistry, key: KernelKey,
                  started: CellStarted) -> tuple[Future[CellResult], ...]:
    """Start the long cell, then queue ``x = 1`` on the handle and ``y = 1`` through the registry."""
    a = run_in_thread(kernel, LONG_CELL, timeout=60)
    started.wait()
    b = run_in_thread(kernel, "x = 1")
    wait_until(lambda: kernel.queued >= 1, 5.0, what="cell B queued behind A")
    c = call_in_thread(registry.execute, key, "y = 1")  # a second lease holder of the same key
    wait_until(lambda: kernel.queued >= 2, 5.0, what="cell C queued behind A and B")
    return a, b, c


def test_restart_while_a_cell_runs_settles_every_request(in_flight_registry, in_flight_started):
    registry, started = in_flight_registry, in_flight_started
    key = KernelKey(owner="b27-restart")
    kernel = registry.get_or_start(key)
    old = kernel.generation
    baseline = threading.active_count()
    a, b, c = _queue_behind(kernel, registry, key, started)

    kernel.restart()

    results = {name: fut.result(timeout=SETTLE_S) for name, fut in (("A", a), ("B", b), ("C", c))}
    for name, r in results.items():
        assert r.status == "died" and r.kernel.reason == "reset", f"{name}: {r.summary()}"
        assert r.kernel.generation == old, f"{name} must name the generation it was sent to: {r.summary()}"
    assert results["A"].stdout == "start\n", "the cut cell keeps what it printed"
    assert "not run" in results["B"].kernel.note and "not run" in results["C"].kernel.note
    assert results["B"].stdout == results["C"].stdout == "" and results["B"].execution_count == 0
    after = kernel.execute("print('after'); print('x' in globals(), 'y' in globals())")
    assert after.status == "ok" and after.stdout == "after\nFalse False\n", after.summary()
    assert after.kernel.generation == old + 1 and after.kernel.state_lost and after.kernel.reason == "reset"
    wait_until(lambda: threading.active_count() <= baseline, 5.0, what="host threads back to baseline")


def test_shutdown_while_a_cell_runs_settles_every_request(in_flight_registry, in_flight_started):
    registry, started = in_flight_registry, in_flight_started
    key = KernelKey(owner="b27-shutdown")
    kernel = registry.get_or_start(key)
    old = kernel.generation
    baseline = threading.active_count()
    a, b, c = _queue_behind(kernel, registry, key, started)

    kernel.shutdown()

    running = a.result(timeout=SETTLE_S)
    assert running.status == "died" and running.kernel.reason == "reset", running.summary()
    assert running.stdout == "start\n", "the cell cut by the shutdown keeps what it printed"
    assert running.kernel.generation == old
    for name, fut in (("B", b), ("C", c)):
        with pytest.raises(KernelShutdownError) as info:
            fut.result(timeout=SETTLE_S)
        assert info.value.generation == old, f"{name}: {info.value}"
    wait_until(lambda: threading.active_count() <= baseline, 5.0, what="host threads back to baseline")
