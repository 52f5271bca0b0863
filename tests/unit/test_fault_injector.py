"""faults.injector: one injector for markers and scenarios, reaching a kernel only through the
``Kernel`` protocol (its transport and launch record), and FaultingKernel's trigger points."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any, ClassVar

import pytest

from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.faults import injector
from pytest_hermes_kernel.faults.injector import FaultingKernel
from pytest_hermes_kernel.faults.spec import hermes_kernel_sigkill, hermes_oom, hermes_transport_drop
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec, Transport
from pytest_hermes_kernel.kernel.interface import Kernel
from pytest_hermes_kernel.kernel.options import KernelOptions
from pytest_hermes_kernel.kernel.results import CellResult, ExitInfo, KernelInfo


class Remote(Transport):
    name: ClassVar[str] = "remote"
    reattachable: ClassVar[bool] = True

    def __init__(self, dies_after_probes: int = 0) -> None:
        self.signals: list[tuple[Launched | None, int, int]] = []
        self.dies_after_probes = dies_after_probes  # a SIGKILLed pid still answers this many signal-0 probes
        self.probes = 0
        self.killed: set[int] = set()

    def launch(self, spec: LaunchSpec) -> Launched:
        raise AssertionError("not used")

    def kill(self, launched: Launched) -> bool:
        return True

    def alive(self, launched: Launched) -> bool:
        return True

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        if sig != 0:
            self.signals.append((launched, pid, sig))
            self.killed.add(pid)
            return
        self.probes += 1
        if pid in self.killed and self.probes > self.dies_after_probes:
            raise ProcessLookupError(f"no process {pid}")


class Lease(Remote):
    reattachable: ClassVar[bool] = False


class FakeKernel:
    """A :class:`Kernel` that records cells and events instead of running them."""

    def __init__(self, transport: Transport, pid: int | None = 321, options: KernelOptions | None = None) -> None:
        self.kernel_id = "f" * 32
        self.generation = 0
        self.pid = pid
        self.runner_pid = 320
        self.alive = True
        self.transport = transport
        self.launched: Launched | None = Launched(stream=None, pid=320)  # type: ignore[arg-type]
        self.options = options or KernelOptions()
        self.cells: list[str] = []
        self.listeners: list[Any] = []

    def info(self, **changes: Any) -> KernelInfo:
        return KernelInfo(kernel_id=self.kernel_id, transport=self.transport.name).replace(**changes)

    def execute(self, code: str, *, timeout: float | None = None, raise_on_timeout: bool = False,
                cancel: object = None) -> CellResult:
        self.cells.append(code)
        self.run(code)
        result = CellResult(status="ok", kernel=self.info())
        self.emit("result", result)
        return result

    def run(self, code: str) -> None:
        """What the cell does in the kernel (nothing: it ends at once, never said to be running)."""

    def emit(self, event: str, payload: Any) -> None:
        for listener in self.listeners:
            listener(event, self, payload)

    def interrupt(self) -> None: ...

    def restart(self) -> KernelInfo:
        return self.info(state_lost=True, reason="reset")

    def shutdown(self, now: bool = False) -> ExitInfo:
        return ExitInfo(step="request")

    def close(self) -> ExitInfo:
        return self.shutdown()

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)


def test_kernel_sigkill_signals_the_worker_where_it_runs() -> None:
    remote = Remote()
    kernel: Kernel = FakeKernel(remote)
    injector.fire(hermes_kernel_sigkill(), kernel)
    assert remote.signals == [(kernel.launched, 321, signal.SIGKILL)]
    with pytest.raises(ConfigError, match="has no worker"):
        injector.kernel_sigkill(FakeKernel(remote, pid=None))


def test_kernel_sigkill_returns_once_the_remote_worker_is_gone() -> None:
    """A container's kill returns before the process has ended: the fault waits until a
    signal-0 probe finds the pid gone, so the next cell is not sent to a dying worker (B20(b)
    failed in CI on docker: the cell was handed to it and reported ``died``, not re-run)."""
    remote = Remote(dies_after_probes=3)
    injector.kernel_sigkill(FakeKernel(remote))
    assert remote.probes == 4 and remote.signals == [(FakeKernel(remote).launched, 321, signal.SIGKILL)]


def test_a_drop_needs_a_faulty_transport_and_a_reattachable_channel() -> None:
    with pytest.raises(ConfigError, match="Hint: mark the test with hermes_transport_drop"):
        injector.fire(hermes_transport_drop("reset"), FakeKernel(Remote()))
    with pytest.raises(ConfigError, match="does not apply to the remote transport"):
        injector.transport_drop(FakeKernel(Lease()), "blackhole")
    injector.heal(FakeKernel(Remote()))  # nothing to heal: a no-op


@pytest.mark.parametrize(("mode", "duration", "latency", "why"), [
    ("blackhole", -1.0, 0.2, "duration must be a finite number of seconds >= 0"),  # healed at once: it passed
    ("latency", None, "x", "latency must be a finite number of seconds >= 0"),  # a TypeError in the next cell
    ("reset", 5.0, 0.2, "a 'reset' is over at once: it would be ignored"),
    ("blackhole", None, 2.0, "in mode 'latency' only, not 'blackhole': it would be ignored"),
    ("gone", None, 0.2, "mode must be 'reset', 'blackhole' or 'latency'"),
])
def test_a_drop_the_test_fires_takes_only_what_the_marker_takes(mode: Any, duration: Any, latency: Any,
                                                                why: str) -> None:
    """``hermes_faults.transport_drop(k, ...)`` is the marker's drop fired by the test: its arguments
    are checked as the marker's are, before anything is dropped."""
    with pytest.raises(ConfigError, match=why):
        injector.transport_drop(FakeKernel(Remote()), mode, duration, latency)


def test_host_sigkill_needs_a_kernel_with_a_host_of_its_own() -> None:
    with pytest.raises(ConfigError, match="host of kernel f+ is this process"):
        injector.host_sigkill(FakeKernel(Remote()))


def test_after_cell_fires_once_between_cells_and_oom_never_fires() -> None:
    remote = Remote()
    inner = FakeKernel(remote)
    kernel = FaultingKernel(inner, [hermes_kernel_sigkill(after_cell=1), hermes_oom(64 * 2**20)])
    assert [s.kind for s in kernel.specs] == ["kernel_sigkill"]
    kernel.execute("a")
    assert remote.signals == []
    kernel.execute("b")
    kernel.execute("c")
    assert len(remote.signals) == 1 and [f.cell for f in kernel.fired] == [2]  # before cell 2 ran
    assert kernel.finish() == [] and inner.cells == ["a", "b", "c"]


class SlowStarts(FakeKernel):
    """A kernel whose cells start in the worker ``late_s`` seconds after ``execute()`` (a loaded
    machine: the cell has not reached the worker yet) and then run until SIGKILLed, or for
    ``run_s`` seconds; it records when each cell started and ended (monotonic seconds)."""

    def __init__(self, late_s: float, run_s: float = 10.0) -> None:
        super().__init__(Remote(), options=KernelOptions(report_running=True))
        self.late_s, self.run_s = late_s, run_s
        self.killed = threading.Event()
        self.started_at: list[float] = []
        self.ended_at: list[float] = []
        self.transport.signal_pid = self.kill  # type: ignore[method-assign]

    def kill(self, launched: Launched | None, pid: int, sig: int) -> None:
        if sig == 0 and self.killed.is_set():
            raise ProcessLookupError(f"no process {pid}")
        self.killed.set()

    def run(self, code: str) -> None:
        if self.killed.wait(self.late_s):
            self.ended_at.append(time.monotonic())
            return  # killed before the cell got to the worker: the idle worker died
        self.started_at.append(time.monotonic())
        self.emit("running", None)
        self.killed.wait(self.run_s)
        self.ended_at.append(time.monotonic())


def test_during_cell_fires_its_delay_after_the_cell_started_in_the_worker_not_after_execute() -> None:
    """The cell reaches the worker 0.6 s after execute(); the fault (delay 0.2 s) still lands
    mid-cell, 0.2 s after that start (a wall-time timer from execute() killed the idle worker)."""
    inner = SlowStarts(late_s=0.6, run_s=0.3)
    kernel = FaultingKernel(inner, [hermes_kernel_sigkill(during_cell=2, delay=0.2)])
    kernel.execute("a", timeout=5)
    assert not inner.killed.is_set() and kernel.fired == [], "nothing fires during cell 1"
    inner.run_s = 10.0  # cell 2 runs until the fault kills it
    kernel.execute("b", timeout=5)
    assert inner.killed.is_set() and [f.cell for f in kernel.fired] == [2]
    assert len(inner.started_at) == 2, "cell 2 was killed before it reached the worker"
    started, at = inner.started_at[1], kernel.fired[0].at
    assert started + 0.2 <= at <= inner.ended_at[1], "fired while cell 2 ran, its delay after it started"
    assert kernel.finish() == []


def test_during_cell_fault_of_a_cell_that_ended_first_never_fires() -> None:
    """A cell that ends before the delay (or never starts within its timeout) ends its fault:
    it is not in ``fired`` and never hits a later cell."""
    inner = SlowStarts(late_s=0.0, run_s=0.05)
    kernel = FaultingKernel(inner, [hermes_kernel_sigkill(during_cell=1, delay=0.3)])
    kernel.execute("quick")
    inner.run_s = 1.0
    kernel.execute("the next cell runs past the first one's delay")
    assert not inner.killed.is_set() and kernel.fired == []
    late = SlowStarts(late_s=1.0, run_s=0.5)  # starts after its 0.2 s timeout: the wait gave up
    kernel = FaultingKernel(late, [hermes_kernel_sigkill(during_cell=1, delay=0.0)])
    kernel.execute("starts too late", timeout=0.2)
    assert not late.killed.is_set() and kernel.fired == []
    assert [p.split(":")[0] for p in kernel.finish()] == ["@pytest.mark.hermes_kernel_sigkill(during_cell=1) never fired"]


def test_during_cell_faults_need_a_kernel_that_reports_its_cells_start() -> None:
    with pytest.raises(ConfigError, match="report_running=True"):
        FaultingKernel(FakeKernel(Remote()), [hermes_kernel_sigkill(during_cell=2)])
    FaultingKernel(FakeKernel(Remote()), [hermes_kernel_sigkill(after_cell=1)])  # between cells: no need


def test_faulting_kernel_is_the_kernel_it_wraps_to_whoever_holds_it() -> None:
    inner = FakeKernel(Remote())
    kernel: Kernel = FaultingKernel(inner, [])
    assert (kernel.kernel_id, kernel.pid, kernel.runner_pid, kernel.transport, kernel.launched, kernel.options) == (
        inner.kernel_id, inner.pid, inner.runner_pid, inner.transport, inner.launched, inner.options)
    seen: list[tuple[str, Any]] = []
    kernel.add_listener(lambda event, who, payload: seen.append((event, who)))
    kernel.execute("x")
    assert seen == [("result", kernel)], "events name the kernel the test holds, not the wrapped one"
    assert kernel.restart().reason == "reset" and kernel.shutdown().step == "request"


def test_every_kernel_the_fixtures_hand_out_has_the_whole_protocol() -> None:
    """KernelHandle, HarnessKernel and FaultingKernel satisfy Kernel (checked structurally: a
    handle and a faulting kernel as built, unstarted; the harness, which starts a process when
    built, by its class members and what its constructor sets)."""
    from pytest_hermes_kernel.faults.harness import HarnessKernel
    from pytest_hermes_kernel.kernel.handle import KernelHandle

    members = [name for name in vars(Kernel) if not name.startswith("_")]
    assert {"execute", "transport", "launched", "generation", "info"} <= set(members)
    for kernel in (KernelHandle(Remote(), KernelOptions()), FaultingKernel(FakeKernel(Remote()), [])):
        assert [name for name in members if not hasattr(kernel, name)] == [], type(kernel).__name__
    set_in_init = set(HarnessKernel.__init__.__code__.co_names)
    assert [name for name in members if not hasattr(HarnessKernel, name) and name not in set_in_init] == []
