"""Firing faults at a kernel: the one injector for markers, scenarios and ``hermes_faults``.

:func:`fire` injects one :class:`FaultSpec` into a :class:`~pytest_hermes_kernel.kernel.interface.Kernel`
now; :func:`kernel_sigkill`, :func:`transport_drop` and :func:`host_sigkill` are its three
actions (``oom`` is a condition the kernel starts under, see :mod:`.apply`, and never fires).
They reach the kernel only through the protocol: its transport and launch record, never a
private channel. :class:`FaultingKernel` wraps a kernel and fires its specs at their trigger
points (by cell count); the scenario runner fires at the same points through :func:`fire`.

A ``during_cell`` fault is timed from the cell's start in the worker, not from the call of
``execute()``: the kernel runs with ``report_running`` (:func:`~.apply.apply_faults` sets it)
and its ``running`` event starts the fault's ``delay``. A cell that has not started within its
timeout, or that ends before the delay is over, ends its fault unfired: it is not in
:attr:`FaultingKernel.fired`, and a later cell does not meet it.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..kernel.cell_timer import CellStartTimer
from ..procs import pid_alive
from .apply import host_death_bound
from .faulty_transport import FaultyTransport
from .harness import HarnessKernel
from .spec import DropMode, FaultSpec

if TYPE_CHECKING:
    from ..kernel.contract import Launched, Transport
    from ..kernel.interface import Kernel, KernelListener
    from ..kernel.options import KernelOptions
    from ..kernel.results import CellResult, ExitInfo, KernelInfo

__all__ = ["FaultingKernel", "FiredFault", "fire", "heal", "host_sigkill", "kernel_sigkill", "transport_drop"]

SIGKILL_SEEN_S = 5.0
"""Seconds :func:`kernel_sigkill` waits to see a worker on this host dead (a zombie)."""


def fire(spec: FaultSpec, kernel: Kernel) -> None:
    """Inject ``spec`` into ``kernel`` now.

    :raises ConfigError: if the fault cannot be injected into this kernel (the message says why).
    """
    if spec.kind == "kernel_sigkill":
        kernel_sigkill(kernel)
    elif spec.kind == "host_sigkill":
        host_sigkill(kernel)
    elif spec.kind == "transport_drop":
        transport_drop(kernel, spec.mode, spec.duration, spec.latency)


def kernel_sigkill(kernel: Kernel) -> None:
    """SIGKILL the kernel's worker from outside, where it runs (this host or its container).

    Returns once the worker is seen dead (bounded by :data:`SIGKILL_SEEN_S`), so the next cell
    meets the death, not a race with it: on this host a zombie counts as dead; elsewhere the pid
    must be gone (its runner reaped it), probed with signal 0 through the transport. A cell sent
    to a worker that is dying but not dead yet is a death mid-cell (``died``, not re-run); a
    container's ``kill`` returning does not mean the process has ended (B20's CI failure).

    :raises ConfigError: if the kernel has no worker (not started, or shut down), or its worker
        had already ended (a cell exited or killed it): there is nothing to kill, and a test that
        passed then would not have seen the fault.
    """
    pid = kernel.pid
    if pid is None:
        raise ConfigError(f"kernel_sigkill: kernel {kernel.kernel_id} has no worker to kill")
    transport, launched = kernel.transport, kernel.launched
    try:
        transport.signal_pid(launched, pid, signal.SIGKILL)
    except ProcessLookupError:
        raise ConfigError(f"kernel_sigkill: the worker of kernel {kernel.kernel_id} (pid {pid}) had already ended "
                          "when the fault was due (a cell exited or killed it), so there was nothing to kill\n"
                          "Hint: fire it after a cell that leaves the worker running (after_cell=N), or test the "
                          "exit itself without the fault") from None
    deadline = time.monotonic() + SIGKILL_SEEN_S
    if transport.runs_on_this_host:
        while (pid_alive(pid) or _threads_exiting(pid)) and time.monotonic() < deadline:
            time.sleep(0.005)
        return
    while time.monotonic() < deadline:
        try:
            transport.signal_pid(launched, pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def _threads_exiting(pid: int) -> bool:
    """Whether threads of ``pid`` other than its first still exit: its first thread shows the
    process a zombie as soon as it is dead itself, while the others (the worker's SIGINT kicker, a
    cell's threads) may still run their exit, and until the last has, the parent is not told and
    the worker's socket stays open (a cell sent then met a dying worker: ``died``, not re-run)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def transport_drop(kernel: Kernel, mode: DropMode = "reset", duration: float | None = None,
                   latency: float = 0.2) -> None:
    """Break the kernel's channel (see :class:`~.faulty_transport.FaultyTransport`).

    :param duration: seconds a ``blackhole``/``latency`` lasts (``None``: until healed, at the
        latest when the test ends).
    :param latency: seconds added to every read in ``latency`` mode.
    :raises ConfigError: if the kernel does not run on a :class:`FaultyTransport` (the plugin
        gives one to kernels of tests with ``hermes_transport_drop`` or ``hermes_faults``), or its
        transport cannot re-attach (for local, a drop is a host death: use host_sigkill), or an
        argument is one the marker refuses (``duration=-1``, a ``duration`` of a ``reset``).
    """
    FaultSpec("transport_drop", mode=mode, duration=duration, latency=latency)  # the marker's checks
    transport = kernel.transport
    if not transport.reattachable:
        raise ConfigError(f"transport_drop does not apply to the {transport.name} transport: it has no "
                          "re-attachable stream (for local, a drop is a host death: use host_sigkill)")
    if not isinstance(transport, FaultyTransport):
        raise ConfigError(f"transport_drop: kernel {kernel.kernel_id} does not run on a FaultyTransport. Hint: "
                          "mark the test with hermes_transport_drop(...) or use the hermes_faults fixture, or "
                          "start the kernel on FaultyTransport(transport)")
    transport.drop(mode, duration, latency, launched=kernel.launched)


def host_sigkill(kernel: Kernel) -> None:
    """SIGKILL the kernel's host process (no cleanup of any kind runs in it).

    :raises ConfigError: if the kernel's host is this process (only a kernel of the host
        harness, :class:`HarnessKernel`, has a host that can be killed).
    """
    host = kernel.kernel if isinstance(kernel, FaultingKernel) else kernel  # a marker's kernel, fired by the test
    if not isinstance(host, HarnessKernel):
        raise ConfigError(f"host_sigkill: the host of kernel {kernel.kernel_id} is this process. Hint: use the "
                          "hermes_host_sigkill marker or hermes_faults.harness(), whose kernels have a host of "
                          "their own")
    host.kill_host()


def _watch(wait: Callable[[float], list[str]], bound: float) -> Future[list[str]]:
    """``wait(bound)`` on a thread of its own, from now; its future holds what it returns (or raises)."""
    done: Future[list[str]] = Future()

    def run() -> None:
        try:
            done.set_result(wait(bound))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the result
            done.set_exception(exc)

    threading.Thread(target=run, name="hermes-host-death-watch", daemon=True).start()
    return done


def heal(kernel: Kernel) -> None:
    """End a ``blackhole`` or ``latency`` fault on ``kernel``'s link; idempotent, and a no-op for
    a kernel that does not run on a :class:`FaultyTransport`."""
    transport = kernel.transport
    if isinstance(transport, FaultyTransport):
        transport.heal()


@dataclass(frozen=True)
class FiredFault:
    """A fault that fired: when (``at``, monotonic seconds) and ``cell``, the cell (1-based)
    that was about to start (``after_cell`` faults) or running (``during_cell``) then."""

    spec: FaultSpec
    at: float
    cell: int


class FaultingKernel:
    """A :class:`Kernel` whose faults fire at their trigger points (see module docstring).

    It has the wrapped kernel's API: the protocol's members are delegated; anything else (a
    harness kernel's ``facts``, a handle's ``cancel``) falls through to the wrapped kernel.

    :param kernel: the kernel the faults are injected into.
    :param specs: its faults; those that do not fire (``oom``) are ignored here.
    :param death_bound: seconds within which every process of the kernel must be gone after a
        ``host_sigkill`` fired (see :meth:`finish`).
    """

    def __init__(self, kernel: Kernel, specs: Sequence[FaultSpec], *, death_bound: float | None = None) -> None:
        self.kernel = kernel
        self.specs = tuple(s for s in specs if s.fires)
        self.death_bound = death_bound
        self.cells = 0
        self.fired: list[FiredFault] = []
        self._armed: dict[int, list[CellStartTimer]] = {}  # by the thread whose cell they wait for, in sending order
        self._begun: set[int] = set()  # the threads whose cell has started
        self._host_watch: Future[list[str]] | None = None  # survivors at the bound, counted from the kill
        if any(s.during_cell is not None for s in self.specs):
            if not kernel.options.report_running:
                raise ConfigError(f"during_cell faults on kernel {kernel.kernel_id} need it started with "
                                  "report_running=True (apply_faults sets it): they are timed from the "
                                  "cell's start in the worker")
            kernel.add_listener(self._on_event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)

    # ------------------------------------------------------------------------------ the protocol
    @property
    def kernel_id(self) -> str:
        return self.kernel.kernel_id

    @property
    def generation(self) -> int:
        return self.kernel.generation

    @property
    def pid(self) -> int | None:
        return self.kernel.pid

    @property
    def runner_pid(self) -> int | None:
        return self.kernel.runner_pid

    @property
    def alive(self) -> bool:
        return self.kernel.alive

    @property
    def transport(self) -> Transport:
        return self.kernel.transport

    @property
    def launched(self) -> Launched | None:
        return self.kernel.launched

    @property
    def options(self) -> KernelOptions:
        return self.kernel.options

    def info(self, **changes: Any) -> KernelInfo:
        return self.kernel.info(**changes)

    def execute(self, code: str, *, timeout: float | None = None, raise_on_timeout: bool = False,
                cancel: threading.Event | None = None) -> CellResult:
        """Fire what is due before cell N, arm what fires during it, run it, disarm what did not fire.

        A ``during_cell`` fault waits for the cell's ``running`` event for at most the cell's
        timeout (``timeout``, else ``options.timeout``; ``None``: until the cell ends), then
        ``delay`` seconds more while the cell runs.
        """
        self.cells += 1
        n = self.cells
        for spec in self.specs:
            if spec.fires_after(n - 1) and not self._has_fired(spec):
                self.fire(spec)
        budget = self.kernel.options.timeout if timeout is None else timeout
        armed = [CellStartTimer(spec.delay, functools.partial(self.fire, spec, n), budget,
                                name=f"hermes-fault-{spec.kind}") for spec in self.specs if spec.fires_during(n)]
        self._armed[threading.get_ident()] = armed  # its cell's running event comes in this thread
        try:
            return self.kernel.execute(code, timeout=timeout, raise_on_timeout=raise_on_timeout, cancel=cancel)
        finally:
            self._armed.pop(threading.get_ident(), None)
            self._begun.discard(threading.get_ident())
            for trigger in armed:
                trigger.end()

    def interrupt(self) -> None:
        self.kernel.interrupt()

    def restart(self) -> KernelInfo:
        return self.kernel.restart()

    def shutdown(self, now: bool = False) -> ExitInfo:
        return self.kernel.shutdown(now)

    def close(self) -> ExitInfo:
        return self.kernel.close()

    def add_listener(self, listener: KernelListener) -> None:
        """Listen to the wrapped kernel's events, reported as this kernel's (the one the test holds)."""
        self.kernel.add_listener(lambda event, _kernel, payload: listener(event, self, payload))

    # ------------------------------------------------------------------------------ the faults
    def _on_event(self, event: str, _kernel: Any, _payload: Any) -> None:
        if event != "running":
            return
        sender: int | None = threading.get_ident()  # a handle emits it in the thread that sent the cell
        if sender not in self._armed:  # forwarded by another (a host harness's reader): the first cell not begun
            sender = next((t for t in list(self._armed) if t not in self._begun), None)
        if sender is not None:
            self._begun.add(sender)
            for trigger in self._armed.get(sender, ()):
                trigger.started()

    def _has_fired(self, spec: FaultSpec) -> bool:
        return any(f.spec is spec for f in self.fired)

    def fire(self, spec: FaultSpec, cell: int | None = None) -> None:
        """Inject ``spec`` now, in ``cell`` (default: the last cell sent; of another thread's later ones, not)."""
        self.fired.append(FiredFault(spec, time.monotonic(), self.cells if cell is None else cell))
        fire(spec, self.kernel)
        if spec.kind == "host_sigkill" and isinstance(self.kernel, HarnessKernel):
            self._host_watch = _watch(self.kernel.wait_kernel_gone, self._death_bound(self.kernel))

    def finish(self, unmet: bool = True) -> list[str]:
        """End the test's faults: disarm what did not fire and heal drops (a fault lasts at most
        until its test ends), so the kernel can be shut down cleanly and nothing is left for the
        leak check.

        :param unmet: say which faults the test never met (``False`` for a test that failed or was
            cut first, by pytest-timeout say: its own error says why, and "cell 2 ended before the
            delay" was false of a cell the timeout cut).
        :returns: what is wrong after the faults: a fault whose trigger the test never met
            (:meth:`_unfired`), processes of a kernel that outlived its SIGKILLed host by more
            than the bound (they are killed then).
        """
        for trigger in [t for armed in list(self._armed.values()) for t in armed]:
            trigger.end()
        heal(self.kernel)
        unfired = [self._unfired(spec) for spec in self.specs if unmet and not self._has_fired(spec)
                   and (spec.after_cell is not None or spec.during_cell is not None)]
        problems = [why for why in unfired if why]
        host = self.kernel
        if not isinstance(host, HarnessKernel) or not any(f.spec.kind == "host_sigkill" for f in self.fired):
            return problems
        return problems + self._outlived(host)

    def _unfired(self, spec: FaultSpec) -> str | None:
        """Why a fault with a trigger did not fire during the test (a test that passed without
        its fault said nothing before), or ``None`` after firing it now: a ``host_sigkill`` whose
        ``after_cell`` was the test's last cell fires at the test's end, where its bound is checked.
        """
        marker = f"@pytest.mark.hermes_{spec.kind}"
        if spec.kind == "host_sigkill" and spec.after_cell == self.cells:
            if not self.kernel.alive:  # the test shut it down: there was no host left to kill (it passed)
                return (f"{marker}(after_cell={spec.after_cell}) never fired: the kernel's host was gone before the "
                        "test's end, where it was due (the test shut the kernel down); the test did not meet its "
                        "fault. Hint: leave the shutdown to the fixture, or run a cell after the trigger")
            self.fire(spec)
            return None
        if spec.after_cell is not None:
            trigger, cell = f"after_cell={spec.after_cell}", spec.after_cell
            at_end = spec.kind == "host_sigkill"  # (it also fires at the test's end after cell N)
            why = (f"it fires once cell {cell} has returned, before the next{' or at the test end' * at_end}, and "
                   f"the test ran {self.cells} cell{'s' if self.cells != 1 else ''}")
            hint = (f"run a cell after cell {cell} (it shows the fault), or use during_cell={cell}"
                    if self.cells == cell else f"run at least {cell if at_end else cell + 1} cells")
        else:
            trigger, cell = f"during_cell={spec.during_cell}", spec.during_cell
            if self.cells < cell:
                why, hint = f"the test ran only {self.cells} cells", f"run at least {cell} cells"
            else:
                why = (f"cell {cell} ended before the {spec.delay:g} s delay was over, or did not start "
                       "within its timeout")
                hint = f"make cell {cell} run longer than the delay (e.g. time.sleep), or lower delay="
        return f"{marker}({trigger}) never fired: {why}; the test did not meet its fault. Hint: {hint}"

    def _death_bound(self, host: HarnessKernel) -> float:
        if self.death_bound is not None:
            return self.death_bound
        return host_death_bound(host.transport, host.options.orphan_timeout)

    def _outlived(self, host: HarnessKernel) -> list[str]:
        """Processes of a kernel that outlived its SIGKILLed host by more than the bound (killed then).

        The bound counts from the kill, watched from then on: waited for from the test's end, a
        kernel that outlived its host by more than the bound passed when the test went on that
        long after the kill (waiting for the helper it had started to end, say)."""
        bound = self._death_bound(host)
        watch = self._host_watch
        survivors = watch.result() if watch is not None else host.wait_kernel_gone(bound)
        if not survivors:
            return []
        host.kill_survivors()
        return [f"kernel {host.kernel_id} outlived its SIGKILLed host by more than {bound:g} s; "
                "still alive:\n  " + "\n  ".join(named_survivor(line, host) for line in survivors)]


def named_survivor(line: str, host: HarnessKernel) -> str:
    """A survivor's line (``pid: command``) with what it is: a process a cell forked (a daemon
    that never exec'd) shows the kernel server's command line, and read as the kit's runner."""
    try:
        pid = int(line.split(":", 1)[0])
    except ValueError:
        return line
    what = ("its runner" if pid == host.runner_pid else "its worker" if pid == host.pid
            else "a process a cell started, not its runner or worker")
    return f"{line} ({what})"

