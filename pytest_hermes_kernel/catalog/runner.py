"""A scenario run on one transport through a registry: steps, faults at their trigger points, checks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ..errors import ConfigError, HermesKernelError, ScenarioFailure
from ..kernel.cell_timer import CellStartTimer
from ..kernel.handle import KernelHandle
from ..kernel.options import KernelOptions
from ..kernel.registry import KernelKey, KernelRegistry
from ..kernel.results import CellResult
from .format import Scenario


class ScenarioFault(Protocol):
    """What the runner needs of a fault: when it fires (``faults.spec.FaultSpec`` is one)."""

    @property
    def kind(self) -> str: ...

    @property
    def delay(self) -> float:
        """Seconds after the step's cell started in the worker that a ``during`` fault fires."""
        ...

    def fires_after(self, cell: int) -> bool:
        """Whether it fires once step ``cell`` (1-based) has returned."""
        ...

    def fires_during(self, cell: int) -> bool:
        """Whether it fires ``delay`` seconds into step ``cell`` (1-based) once it runs."""
        ...


#: Seconds ``[expect_end] processes`` waits for the count it expects (a process on its way out).
END_WAIT_S = 5.0

FaultInjector = Callable[[Any, KernelHandle], None]
"""``on_fault(fault, handle)``: inject one of the runner's faults into a leased kernel now."""


def check(step_no: int, expect: dict[str, Any], result: CellResult, wall_s: float) -> list[str]:
    """Compare one result with its expectations; return the mismatches as sentences."""
    got: dict[str, Any] = {
        "status": result.status, "value": result.value, "ename": result.ename, "stdout": result.stdout,
        "state_lost": result.kernel.state_lost, "reason": result.kernel.reason, "watchdog": result.watchdog,
        "exit_code": result.kernel.exit_code, "signal": result.kernel.signal,
        "oom_killed": result.kernel.oom_killed, "stdout_truncated": result.stdout_truncated,
        "generation": result.kernel.generation, "reconnected": result.kernel.reconnected,
    }
    texts = {"stdout_contains": result.stdout, "stderr_contains": result.stderr,
             "text_contains": f"{result.stdout}\n{result.stderr}\n{result.evalue or ''}",
             "note_contains": result.kernel.note or ""}
    problems = []
    for key, want in expect.items():
        if key in texts:  # the text looked in is what it "got" (it said '(see result)')
            ok = want in texts[key]
            got[key] = _tail(texts[key])
        elif key == "max_duration_s":
            ok = wall_s <= want
            got[key] = round(wall_s, 3)
        elif key == "same_pid":
            continue
        else:
            ok = got.get(key) == want
        if not ok:
            problems.append(f"cell {step_no}: expected {key}={want!r}, got {got.get(key, '(see result)')!r} "
                            f"[{result.summary()}]")
    return problems


def _tail(text: str, chars: int = 200) -> str:
    """The end of a text a ``*_contains`` key looked in, for its mismatch line."""
    return text if len(text) <= chars else "..." + text[-chars:]


class ScenarioRunner:
    """Runs a :class:`Scenario` on one transport through a :class:`KernelRegistry`.

    :param transport_factory: ``key -> Transport`` for the registry.
    :param faults: the scenario's faults that fire, parsed from its ``[[fault]]`` tables (the
        plugin parses them with ``faults.spec.spec_from_table``).
    :param on_fault: fires one of ``faults`` at a leased kernel (the plugin's injector);
        ``None`` makes a scenario whose fault fires fail with a clear message.
    :param options: the kernels' options (default: the scenario's ``[kernel]`` table); with a
        fault during a step they must have ``report_running`` (``faults.apply`` sets it).
    :raises ConfigError: if a fault fires during a step and the kernels do not report their
        cells' start.
    """

    def __init__(self, scenario: Scenario, transport_factory: Callable[[KernelKey], Any], transport_name: str,
                 on_fault: FaultInjector | None = None, options: KernelOptions | None = None,
                 listener: Callable[..., None] | None = None, faults: Sequence[ScenarioFault] = ()) -> None:
        self.s = scenario
        self.transport_name = transport_name
        self.on_fault = on_fault
        self.faults = tuple(faults)
        self._fired: set[int] = set()  # indexes into faults
        self._firing: str | None = None  # the fault being injected (named if it raises)
        options = options or KernelOptions(**scenario.kernel)
        if not options.report_running and any(f.fires_during(n) for f in self.faults
                                               for n in range(1, len(scenario.steps) + 1)):
            raise ConfigError(f"scenario {scenario.name!r}: a fault during a step needs kernels started with "
                              "report_running=True (faults.apply sets it): it is timed from the cell's start")
        reg = dict(scenario.registry)
        self.registry = KernelRegistry(options=options,
                                       transport_factory=transport_factory, background_reaper=False,
                                       max_kernels=reg.get("max_kernels", 4),
                                       idle_timeout=reg.get("idle_timeout", 1800.0))
        self.listener = listener
        self.registry.listener = self._on_event
        self._armed: list[CellStartTimer] = []
        self._started: dict[str, tuple[Any, dict[str, Any]]] = {}  # kernel id -> (transport, locator)

    def _on_event(self, event: str, handle: KernelHandle, payload: Any) -> None:
        if event == "started":  # each kernel the scenario starts: [expect_end] processes looks for it at the end
            self._started[handle.kernel_id] = (handle.transport, handle.transport.locator(payload))
        if event == "running":  # the kernels run with report_running when a fault fires during a step
            for timer in self._armed:
                timer.started()
        if self.listener is not None:
            self.listener(event, handle, payload)

    def key(self, step: dict[str, Any]) -> KernelKey:
        owner = step.get("owner", "scenario")
        if step.get("child"):
            return KernelKey.child(owner, step["child"], transport=self.transport_name)
        return KernelKey(owner=owner, transport=self.transport_name)

    def run(self) -> None:
        """Run every step, fire the faults after their cells, check the end; one failure lists every problem.

        :raises ScenarioFailure: if any expectation failed, or a step or fault raised after one
            had (the error then ends the list: what went wrong first is the lead).
        """
        problems: list[str] = []
        try:
            for n, step in enumerate(self.s.steps, 1):
                problems += self._step(n, step)
                problems += self._faults_after(n)
            problems += self._unfired() + self._end_checks()
        except Exception as exc:
            if not problems:
                raise
            problems.append(f"then {self._firing or 'a step'} raised {type(exc).__name__}: {exc}")
        finally:
            self.registry.close()
        if problems:
            raise ScenarioFailure(f"scenario {self.s.name!r} ({self.s.source}):\n  " + "\n  ".join(problems))

    def _faults_after(self, n: int) -> list[str]:
        for i, fault in enumerate(self.faults):
            if fault.fires_after(n):
                self._firing = f"fault {fault.kind} after step {n}"
                self._fire(fault)
                self._fired.add(i)
                self._firing = None
        return []

    def _unfired(self) -> list[str]:
        """A fault that never fired makes the scenario fail, as a fault marker's test errors: it
        passed without its fault (a fresh-install helper's ``after_cell = 5`` with one step)."""
        steps = len(self.s.steps)
        problems = []
        for i, fault in enumerate(self.faults):
            if i in self._fired:
                continue
            if any(fault.fires_during(n) for n in range(1, steps + 1)):
                why = "its step ended before the delay was over, or its cell did not start within its timeout"
                hint = "make that step's cell run longer than the delay (e.g. time.sleep), or lower delay"
            else:
                why, hint = f"its trigger is past the scenario's last step ({steps})", "add the steps it needs"
            problems.append(f"fault {fault.kind} never fired: {why}; the scenario did not meet its fault. Hint: {hint}")
        return problems

    def _fire(self, fault: ScenarioFault) -> None:
        """Fire ``fault`` at the default owner's kernel (else the newest one)."""
        if self.on_fault is None:
            raise ScenarioFailure(f"scenario {self.s.name!r} has a fault but no injector is available")
        snaps = self.registry.snapshot()
        target = next((s for s in snaps if s.key.owner == "scenario"), snaps[-1] if snaps else None)
        if target is None:
            raise ScenarioFailure(f"scenario {self.s.name!r}: no kernel to inject {fault.kind} into")
        with self.registry.lease(target.key) as handle:
            self.on_fault(fault, handle)

    def _step(self, n: int, step: dict[str, Any]) -> list[str]:
        action = step.get("action", "cell")
        key = self.key(step)
        started = time.monotonic()
        if action == "restart":
            with self.registry.lease(key) as handle:
                handle.restart()
            return []
        if action == "shutdown_child":
            self.registry.shutdown_child(step["child"])
            return []
        if action == "shutdown_owner":
            self.registry.shutdown_owner(step.get("owner", "scenario"))
            return []
        if action == "reap":
            self.registry.reap_once()
            return []
        threads = int(step.get("threads", 1))
        expect = step.get("expect", {})
        budget = step.get("timeout", self.registry.options.timeout)
        self._armed = [self._during(i, fault, key, budget) for i, fault in enumerate(self.faults)
                       if fault.fires_during(n)]
        timers: list[threading.Timer] = []
        if step.get("interrupt_after") is not None:
            timers.append(self._interrupt_later(key, float(step["interrupt_after"])))
        with ThreadPoolExecutor(max_workers=threads) as pool:
            futures = [pool.submit(self.registry.execute, key, step["code"], timeout=step.get("timeout"))
                       for _ in range(threads)]
            results = [f.result() for f in futures]
        for timer in timers:
            timer.cancel()
        for armed in self._armed:
            armed.end()
        wall = time.monotonic() - started
        problems = []
        for result in results:
            problems += check(n, expect, result, wall)
            if problems:
                break
        if expect.get("same_pid") and len({r.kernel.pid for r in results}) != 1:
            problems.append(f"cell {n}: {threads} concurrent first cells ran on "
                            f"{len({r.kernel.pid for r in results})} kernels, expected 1")
        return problems

    def _during(self, i: int, fault: ScenarioFault, key: KernelKey, budget: float | None) -> CellStartTimer:
        """Arm ``fault`` for the step's cell: ``delay`` s after it started (waited for up to its budget)."""
        def fire() -> None:
            with self.registry.lease(key) as handle:
                self.on_fault(fault, handle) if self.on_fault else None
            self._fired.add(i)

        return CellStartTimer(float(fault.delay), fire, budget, name=f"hermes-scenario-{fault.kind}")

    def _interrupt_later(self, key: KernelKey, delay: float) -> threading.Timer:
        def fire() -> None:
            for snap in self.registry.snapshot():
                if snap.key == key:
                    with self.registry.lease(key) as handle:
                        handle.interrupt()

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        timer.start()
        return timer

    def _end_checks(self) -> list[str]:
        want = self.s.expect_end
        problems = []
        if "kernels" in want and len(self.registry) != want["kernels"]:
            problems.append(f"end: expected {want['kernels']} registry entries, got {len(self.registry)}: "
                            f"{[s.key.owner for s in self.registry.snapshot()]}")
        if "processes" in want:
            try:
                live = self._live_kernels(want["processes"])
            except HermesKernelError as exc:  # where a kernel runs cannot be asked: no count is no zero
                problems.append(f"end: could not count the kernels with a live process: {exc}")
            else:
                if len(live) != want["processes"]:
                    problems.append(f"end: expected {want['processes']} kernels with a live process, got "
                                    f"{len(live)}: {live}")
        return problems

    def _live_kernels(self, want: int, timeout: float = END_WAIT_S) -> dict[str, list[str]]:
        """``{kernel id: its live processes}`` of every kernel the scenario started, wherever it runs
        (the registry's entries only: a kernel that outlived its shutdown was never counted), once
        there are ``want`` of them or after ``timeout`` s (a process on its way out may linger).

        :raises HermesKernelError: if where a kernel runs cannot be asked.
        """
        deadline = time.monotonic() + timeout
        while True:
            live = {kid: found for kid, (transport, locator) in self._started.items()
                    if (found := transport.kernel_processes(kid, locator))}
            if len(live) == want or time.monotonic() >= deadline:
                return live
            time.sleep(0.1)
