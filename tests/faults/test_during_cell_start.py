"""``during_cell`` faults are timed from the cell's start in the worker, not from ``execute()``.

On a loaded machine a cell may reach its kernel's worker long after ``execute()`` was called
(the filecell transport's poll under load 6-14). A fault timed by wall time from ``execute()``
then hit an idle worker: the test saw a timeout instead of a death mid-cell. Here the kernel's
transport delivers the cell late on purpose, by more than the fault's delay, on every transport
of the matrix, and the fault must still land mid-cell.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.faults.apply import apply_faults, plan_faults
from pytest_hermes_kernel.faults.faulty_transport import FaultyStream, FaultyTransport
from pytest_hermes_kernel.faults.injector import FaultingKernel
from pytest_hermes_kernel.faults.spec import FaultSpec, hermes_kernel_sigkill
from pytest_hermes_kernel.kernel.contract import ByteStream, Launched, LaunchSpec, Transport
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.options import KernelOptions
from pytest_hermes_kernel.kernel.results import CellResult, FrameDecoder
from tests.support import wait_until

LATE_S = 2.0
"""Seconds the transport holds back a cell's ``execute`` frame once the test says so."""
DELAY_S = 0.5
"""The fault's delay: well under :data:`LATE_S`, so a timer from ``execute()`` fires first."""


class LateCellStream:
    """A :class:`ByteStream` that holds an ``execute`` frame back for ``late_s`` seconds while
    ``late`` is set (the delivery is late; the frame is still sent, unchanged) and notes when it
    was handed on (:attr:`delivered_at`, monotonic seconds)."""

    def __init__(self, inner: ByteStream, late: threading.Event, late_s: float) -> None:
        self.inner, self.late, self.late_s = inner, late, late_s
        self.delivered_at: float | None = None

    def send(self, data: bytes) -> None:
        if self.late.is_set() and _has_execute(data):
            threading.Event().wait(self.late_s)  # the simulated slow delivery itself
            self.inner.send(data)
            self.delivered_at = time.monotonic()
            return
        self.inner.send(data)

    def recv(self, timeout: float | None) -> bytes:
        return self.inner.recv(timeout)

    def close(self) -> None:
        self.inner.close()


class LateCellTransport(FaultyTransport):
    """The matrix transport whose kernels' cells arrive late while :attr:`late` is set (the port
    is delegated by :class:`FaultyTransport`, whose stream wraps ours; no drop is injected)."""

    def __init__(self, inner: Transport) -> None:
        super().__init__(inner)
        self.late = threading.Event()
        self.streams: list[LateCellStream] = []

    def launch(self, spec: LaunchSpec) -> Launched:
        launched = super().launch(spec)
        outer = launched.stream
        assert isinstance(outer, FaultyStream)
        outer.inner = LateCellStream(outer.inner, self.late, LATE_S)
        self.streams.append(outer.inner)
        return launched


def _has_execute(data: bytes) -> bool:
    decoder = FrameDecoder()
    decoder.feed(data)
    while (frame := decoder.next_frame()) is not None:
        if frame[0].get("type") == "execute":
            return True
    return False


@pytest.fixture
def late_kernel(hermes_transport: Transport) -> Iterator[tuple[FaultingKernel, LateCellTransport]]:
    """A kernel on the test's transport with ``kernel_sigkill(during_cell=2, delay=0.5)``, set up
    through the same plan and apply steps as the marker's, whose cells the test can make late."""
    spec: FaultSpec = hermes_kernel_sigkill(during_cell=2, delay=DELAY_S)
    transport = LateCellTransport(hermes_transport)
    plan = plan_faults([spec], transport, KernelOptions(timeout=15))
    setup = apply_faults(plan, transport, KernelOptions(timeout=15))
    handle = KernelHandle(setup.transport, setup.options).start()
    try:
        yield FaultingKernel(handle, [spec]), transport
    finally:
        handle.shutdown()
        setup.close()


def test_kernel_sigkill_during_a_late_cell_still_lands_mid_cell(late_kernel) -> None:
    kernel, transport = late_kernel
    assert kernel.execute("x = 1").status == "ok"
    transport.late.set()
    called = time.monotonic()
    r = kernel.execute("import time; time.sleep(60)")
    ended = time.monotonic()
    assert r.status == "died" and r.kernel.reason == "died" and r.kernel.signal == 9, r.summary()
    delivered = transport.streams[-1].delivered_at
    assert delivered is not None and delivered - called >= LATE_S * 0.9, "the cell was delivered late"
    assert [f.cell for f in kernel.fired] == [2]
    assert kernel.fired[0].at >= delivered + DELAY_S, "timed from the cell's start, not from execute()"
    assert ended - delivered < 5, "a death must be seen at once, not at the cell timeout"
    transport.late.clear()
    after = kernel.execute("1 + 1")
    assert after.value == "2" and after.kernel.state_lost and after.kernel.reason == "died", after.summary()


@pytest.mark.hermes_kernel(report_running=True)
def test_a_cell_that_ends_before_the_delay_takes_its_fault_with_it(hermes_kernel) -> None:
    """The fault of cell 2 never fires when cell 2 ends first, and never hits cell 3; the test's
    end says it never fired (a marker's test errors then: ``tests/plugin/test_marker_checks.py``)."""
    kernel = FaultingKernel(hermes_kernel, [hermes_kernel_sigkill(during_cell=2, delay=1.0)])
    kernel.execute("x = 1")
    assert kernel.execute("x = 2").status == "ok"
    r = kernel.execute("import time; time.sleep(2); x", timeout=30)
    assert r.status == "ok" and r.value == "2" and not r.kernel.state_lost, r.summary()
    assert kernel.fired == []
    assert kernel.finish() == ["@pytest.mark.hermes_kernel_sigkill(during_cell=2) never fired: cell 2 ended before "
                               "the 1 s delay was over, or did not start within its timeout; the test did not meet "
                               "its fault. Hint: make cell 2 run longer than the delay (e.g. time.sleep), or lower "
                               "delay="]


@pytest.mark.hermes_kernel(report_running=True)
def test_a_during_cell_fault_waits_for_its_own_cell_when_cells_of_other_threads_queue(hermes_kernel) -> None:
    """Three threads share the kernel: cell 1 runs, cells 2 and 3 wait their turn. The timers armed
    for a cell were the kernel's, not the cell's: cell 3, sent after cell 2, replaced cell 2's,
    and the fault of cell 2 never fired (the test's end said so, and cell 2 ran unhurt)."""
    kernel = FaultingKernel(hermes_kernel, [hermes_kernel_sigkill(during_cell=2, delay=0.5)])
    results: dict[int, CellResult] = {}

    def send(n: int, code: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.update({n: kernel.execute(code, timeout=30)}))
        thread.start()
        return thread

    started = threading.Event()
    hermes_kernel.add_listener(lambda event, _kernel, _payload: event == "running" and started.set())
    threads = [send(1, "import time\ntime.sleep(1.5)\n1")]
    wait_until(started.is_set, 30, what="cell 1 to run")
    threads.append(send(2, "import time\ntime.sleep(3)\n2"))
    wait_until(lambda: hermes_kernel.queued == 1, 30, what="cell 2 to wait its turn")
    threads.append(send(3, "3"))
    wait_until(lambda: hermes_kernel.queued == 2, 30, what="cell 3 to wait its turn")
    for thread in threads:
        thread.join(60)

    assert results[1].status == "ok", results[1].summary()
    assert results[2].status == "died", results[2].summary()
    assert [f.cell for f in kernel.fired] == [2] and kernel.finish() == []
