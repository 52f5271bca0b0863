"""Regression scenarios: a bug reproduced as data (TOML), run on any transport.

A scenario file (``fixtures/*.toml``)::

    [scenario]
    name = "sys-exit-ends-kernel"
    source = "handed case B07; nteract/papermill#536"
    transports = ["local", "docker", "ssh", "filecell"]   # optional: default every selected one

    [kernel]                       # KernelOptions fields (timeout, max_output_bytes, ...)
    timeout = 10

    [registry]                     # optional: max_kernels, idle_timeout
    max_kernels = 2

    [[fault]]                      # optional: kind = kernel_sigkill | oom | transport_drop, with the
    kind = "kernel_sigkill"        #   keyword arguments of the marker of that kind (after_cell,
    after_cell = 1                 #   during_cell, delay, limit_bytes, mode, duration, latency)

    [[cell]]
    code = "x = 1"                 # the fault above fires once this cell has returned

    [[cell]]
    code = "import sys; sys.exit(3)"
    owner = "a"                    # optional: run under this owner's kernel (default "scenario")
    child = "c1"                   # optional: the owner's delegated child (pinned)
    timeout = 2                    # optional: this cell's budget
    threads = 16                   # optional: run as N concurrent first cells
    interrupt_after = 1.0          # optional: interrupt the cell after this many seconds
    action = "cell"                # or restart | shutdown_child | shutdown_owner | reap
    expect = { status = "exited", exit_code = 3 }

    [expect_end]                   # optional: after the last step
    kernels = 1                    # registry entries alive
    processes = 1                  # kernel runner processes alive (local)

Expectation keys for cells: ``status``, ``value``, ``ename``, ``stdout``, ``stdout_contains``,
``stderr_contains``, ``text_contains`` (stdout+stderr+evalue), ``state_lost``, ``reason``,
``watchdog``, ``exit_code``, ``signal``, ``oom_killed``, ``stdout_truncated``,
``max_duration_s`` (wall seconds for the step), ``same_pid = true`` (all threads got one kernel),
``generation``, ``reconnected``. Each is checked when the file is read: a value of the wrong
type, or a status, reason or watchdog outcome the kit does not have, is a collection error.

The runner decides *when* a fault fires (after or during which step: a ``during`` fault
``delay`` seconds after the step's cell started in the worker, the kernel's ``running`` event,
and not at all when the step ends first); what firing does is the caller's ``on_fault`` (the plugin passes the fault layer's one injector, and applies the
faults' transport and kernel options before the run, as for markers).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, get_args

from .errors import ConfigError, ScenarioFailure
from .kernel.cell_timer import CellStartTimer
from .kernel.handle import KernelHandle
from .kernel.options import KernelOptions, built
from .kernel.results import CellResult, Reason, Status, WatchdogOutcome
from .kernel.registry import KernelKey, KernelRegistry
from .transports import transport_names

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CELL_KEYS = {"code", "owner", "child", "timeout", "threads", "interrupt_after", "action", "expect"}
EXPECT_KEYS = {"status", "value", "ename", "stdout", "stdout_contains", "stderr_contains", "text_contains",
               "state_lost", "reason", "watchdog", "exit_code", "signal", "oom_killed", "stdout_truncated",
               "max_duration_s", "same_pid", "generation", "reconnected"}
ACTIONS = {"cell", "restart", "shutdown_child", "shutdown_owner", "reap"}
#: The keys of each table a scenario file may have (``fault`` and ``kernel`` are checked by what
#: they parse into). A key outside them was ignored: ``[[faults]]`` ran the scenario without its fault.
TABLE_KEYS: dict[str, set[str] | None] = {
    "scenario": {"name", "source", "description", "transports"}, "kernel": None, "fault": None, "cell": None,
    "registry": {"max_kernels", "idle_timeout"}, "expect_end": {"kernels", "processes"}}


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario file."""

    name: str
    path: Path
    source: str
    description: str
    transports: tuple[str, ...] | None
    kernel: dict[str, Any]
    registry: dict[str, Any]
    faults: tuple[dict[str, Any], ...]
    steps: tuple[dict[str, Any], ...]
    expect_end: dict[str, Any] = field(default_factory=dict)


def load_scenario(path: Path) -> Scenario:
    """Parse and validate a scenario file.

    :raises ConfigError: naming the file and the offending key when the file is malformed.
    """
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable TOML scenario: {exc}") from None
    head = data.get("scenario")
    if not isinstance(head, dict) or "name" not in head:
        raise ConfigError(f"{path}: needs a [scenario] table with a name")
    _check_tables(path, data)
    steps = data.get("cell", [])
    if not steps:
        raise ConfigError(f"{path}: needs at least one [[cell]]")
    for i, step in enumerate(steps, 1):
        if not isinstance(step.get("code", ""), str) or not isinstance(step.get("expect", {}), dict):
            raise ConfigError(f"{path}: cell {i}: code must be a string and expect a table "
                              f"(expect = {{ status = \"ok\" }}), not {step.get('code')!r} / {step.get('expect')!r}")
        bad = set(step) - CELL_KEYS
        if bad:
            raise ConfigError(f"{path}: cell {i}: unknown keys {sorted(bad)}; known: {sorted(CELL_KEYS)}")
        if step.get("action", "cell") not in ACTIONS:
            raise ConfigError(f"{path}: cell {i}: action must be one of {sorted(ACTIONS)}")
        if step.get("action", "cell") == "cell" and "code" not in step:
            raise ConfigError(f"{path}: cell {i}: needs code")
        bad = set(step.get("expect", {})) - EXPECT_KEYS
        if bad:
            raise ConfigError(f"{path}: cell {i}: unknown expectations {sorted(bad)}; known: {sorted(EXPECT_KEYS)}")
        for key, want in step.get("expect", {}).items():
            problem = _bad_expectation(key, want)
            if problem:
                raise ConfigError(f"{path}: cell {i}: expect {key} = {want!r}: {problem}")
    try:
        built(KernelOptions, data.get("kernel", {}))
    except ConfigError as exc:
        raise ConfigError(f"{path}: [kernel]: {exc}") from None
    transports = head.get("transports")
    return Scenario(name=head["name"], path=path, source=head.get("source", ""),
                    description=head.get("description", ""),
                    transports=tuple(transports) if transports else None, kernel=data.get("kernel", {}),
                    registry=data.get("registry", {}), faults=tuple(data.get("fault", [])), steps=tuple(steps),
                    expect_end=data.get("expect_end", {}))


def _bad_expectation(key: str, want: object) -> str | None:
    """Why ``want`` can never be what a result has under ``key`` (a string where a number is
    compared: ``value = 2`` against the repr ``'2'``; ``same_pid = "no"``, read as true), or ``None``."""
    if key in _ONE_OF:
        return None if want in _ONE_OF[key] else f"must be one of {sorted(_ONE_OF[key])}"
    if key == "same_pid":
        return None if want is True else "only true is checked (all the step's threads got one kernel)"
    if key in ("state_lost", "oom_killed", "stdout_truncated", "reconnected"):
        return None if isinstance(want, bool) else "must be true or false"
    if key in ("exit_code", "signal", "generation"):
        return None if isinstance(want, int) and not isinstance(want, bool) else "must be an integer"
    if key == "max_duration_s":
        return None if isinstance(want, (int, float)) and not isinstance(want, bool) and want > 0 else \
            "must be a number of seconds > 0"
    return None if isinstance(want, str) else "must be a string (value is the repr: value = \"2\")"


#: Expectations with a fixed set of values (:mod:`~.kernel.results`: ``Status``, ``Reason``, ``WatchdogOutcome``).
_ONE_OF: dict[str, set[object]] = {"status": set(get_args(Status)), "reason": set(get_args(Reason)),
                                   "watchdog": set(get_args(WatchdogOutcome))}


def _check_tables(path: Path, data: dict[str, Any]) -> None:
    """Refuse a table or key a scenario file does not have (see :data:`TABLE_KEYS`), and a
    ``[scenario]`` whose name or transports are not what they say.

    :raises ConfigError: naming the file, the table and the key.
    """
    for table, value in data.items():
        if table not in TABLE_KEYS:
            raise ConfigError(f"{path}: unknown table [{table}]; a scenario has "
                              f"{', '.join(f'[{t}]' for t in TABLE_KEYS)} (fault and cell as [[fault]], [[cell]])")
        if table in ("fault", "cell") and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            raise ConfigError(f"{path}: {table} must be [[{table}]] tables, not {value!r}")
        known = TABLE_KEYS[table]
        bad = sorted(set(value) - known) if known is not None and isinstance(value, dict) else []
        if bad:
            raise ConfigError(f"{path}: [{table}]: unknown keys {bad}; known: {sorted(known or ())}")
    head = data["scenario"]
    if not isinstance(head["name"], str) or not head["name"]:
        raise ConfigError(f"{path}: [scenario]: name must be a non-empty string, not {head['name']!r}")
    transports = head.get("transports")
    if transports is not None and (not isinstance(transports, list) or not transports
                                   or not all(isinstance(t, str) for t in transports)):
        raise ConfigError(f"{path}: [scenario]: transports must be a non-empty list of transport names "
                          f"(transports = [\"local\", \"docker\"]), not {transports!r}")
    unknown = [t for t in transports or () if t not in transport_names()]
    if unknown:  # a typo ran the scenario nowhere, and nothing said so
        raise ConfigError(f"{path}: [scenario]: transports: unknown transport {', '.join(map(repr, unknown))}; "
                          f"known: {', '.join(transport_names())}")


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
    problems = []
    for key, want in expect.items():
        if key == "stdout_contains":
            ok = want in result.stdout
        elif key == "stderr_contains":
            ok = want in result.stderr
        elif key == "text_contains":
            ok = want in f"{result.stdout}\n{result.stderr}\n{result.evalue or ''}"
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

    def _on_event(self, event: str, handle: KernelHandle, payload: Any) -> None:
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
            pids = [s.runner_pid for s in self.registry.snapshot() if s.runner_pid]
            from .procs import pid_alive

            alive = [p for p in pids if pid_alive(p)]
            if len(alive) != want["processes"]:
                problems.append(f"end: expected {want['processes']} kernel runner processes, got {len(alive)}")
        return problems
