"""A seeded random driver of a :class:`KernelRegistry` from several threads, as an agent service
uses one: many owners, cells that set and read variables, print, sleep, raise, run long and are
interrupted or timed out, restarts, resets, shutdowns of one owner, eviction by ``max_kernels``
and by a tiny idle timeout with the reaper on, handles used after their kernel was ended, and the
registry closed while calls are in flight.

Every call is checked as it returns (:meth:`Fuzz.check`): a result is its own cell's (each cell
prints and returns a unique token, and no other), an error is one of the package's
(:class:`HermesKernelError`), and a variable a thread set is still there unless a loss of state
was reported on that key meanwhile (a ``state_lost`` result, a ``restart()``, a reset, a death,
a shutdown of the owner). A call that runs past its deadline is a hang (the stacks are dumped).
:func:`run_fuzz` returns the problems found, ``[]`` when none; the caller checks leaks after.

Seeds reproduce the choices of each thread, not the interleaving (threads race on purpose): a
failure names its seed and the thread's operations, to minimise by hand.
"""

from __future__ import annotations

import faulthandler
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_hermes_kernel import KernelKey, KernelRegistry
from pytest_hermes_kernel.errors import HermesKernelError

TOKEN = re.compile(r"T\d+x\d+x\d+Z")
#: Seconds one operation may take before the run is called hung (a long cell's budget is 1.5 s at most).
OP_DEADLINE_S = 60.0
#: What each operation is, with its weight in the random choice.
OPS = {"set": 6, "read": 6, "raise": 2, "sleep": 2, "long": 1, "interrupt": 1, "restart": 1, "reset": 1,
       "shutdown": 1, "stale": 2, "idle": 1, "exit": 1, "kill": 1}


@dataclass
class Event:
    """One finished operation of one thread on one key."""

    op: str
    key: str
    start: float
    end: float
    lost: bool = False
    """It reported (or caused) a loss of state on the key."""
    kernel: tuple[str, int] | None = None


@dataclass
class Fuzz:
    """The shared state of one run (see module docstring)."""

    registry: KernelRegistry
    seed: int
    owners: list[str]
    ttl_s: float | None
    problems: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    handles: list[Any] = field(default_factory=list)
    running: dict[int, tuple[str, float]] = field(default_factory=dict)
    count: int = 0
    suspects: list[tuple[str, float, float, Callable[[], None]]] = field(default_factory=list)
    """Reads that found a variable gone with no loss reported to them: ``(key, set's start, read's end, report)``,
    judged once every thread is done (:meth:`judge_suspects`)."""
    closing: bool = False
    windows: list[list[Any]] = field(default_factory=list)
    """``[op, key, start, end]`` of each interrupt and shutdown operation (end ``inf`` while it runs):
    an interrupt may cut another thread's cell, a shutdown end another thread's call on its key."""

    def during(self, op: str, key: str, since: float) -> bool:
        """Whether an ``op`` operation on ``key`` ran at some time since ``since``."""
        with self.lock:
            return any(o == op and k in (key, "*") and end >= since for o, k, _start, end in self.windows)

    def window(self, op: str, key: str) -> list[Any]:
        with self.lock:
            self.windows.append(window := [op, key, time.monotonic(), float("inf")])
        return window

    def token(self, thread: int) -> str:
        with self.lock:
            self.count += 1
            return f"T{self.seed}x{thread}x{self.count}Z"

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(f"seed {self.seed}: {text}")

    def note(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def judge_suspects(self) -> None:
        """Report each suspect read that no loss on its key, reported by an operation overlapping the time
        from its variable's set to its own end, explains."""
        for key, since, until, report in self.suspects:
            if not self.lost_between(key, since, until):
                report()
                with self.lock:
                    self.problems[-1] += "\nevents on the key meanwhile: " + "; ".join(
                        f"{e.op}@{e.start - since:+.3f}..{e.end - since:+.3f} lost={e.lost} on {e.kernel}"
                        for e in self.events if e.key == key and e.end >= since - 1.0 and e.start <= until)

    def lost_between(self, key: str, since: float, until: float) -> bool:
        """Whether a loss of state on ``key`` was reported (or caused) by an operation overlapping ``[since, until]``."""
        with self.lock:
            return any(e.key in (key, "*") and e.lost and e.end >= since and e.start <= until for e in self.events)


def _kernel(result: Any) -> tuple[str, int]:
    return (result.kernel.kernel_id, result.kernel.generation)


class Worker:
    """One thread's operations: its own random choices, its own variables (``v<thread>``) per key."""

    def __init__(self, fuzz: Fuzz, index: int, steps: int) -> None:
        self.fuzz, self.index, self.steps = fuzz, index, steps
        self.rng = random.Random(fuzz.seed * 1000 + index)
        self.var = f"v{index}"
        self.last_set: dict[str, tuple[str, float, tuple[str, int]]] = {}  # key -> (token, set's start, its kernel)
        self.done: list[str] = []

    def run(self) -> None:
        ops, weights = list(OPS), list(OPS.values())
        for _ in range(self.steps):
            if self.fuzz.closing:
                return
            op, owner = self.rng.choices(ops, weights)[0], self.rng.choice(self.fuzz.owners)
            self.done.append(f"{op}:{owner}")
            with self.fuzz.lock:
                self.fuzz.running[self.index] = (f"{op}:{owner}", since := time.monotonic())
            try:
                getattr(self, f"op_{op}")(owner)
            except HermesKernelError as exc:
                self.allowed_error(op, owner, exc, since)
            except Exception as exc:  # noqa: BLE001 - what the run reports
                import traceback
                self.fuzz.problem(f"thread {self.index} {op}:{owner} raised a non-package error: "
                                  f"{''.join(traceback.format_exception(exc))}\nops: {self.done}")
            finally:
                with self.fuzz.lock:
                    self.fuzz.running.pop(self.index, None)

    def allowed_error(self, op: str, owner: str, exc: HermesKernelError, since: float) -> None:
        """A :class:`KernelShutdownError` the run caused: the registry closing, the owner shut down meanwhile,
        or a handle taken earlier (``get_or_start`` holds no lease: it may be evicted or reaped)."""
        from pytest_hermes_kernel.errors import KernelShutdownError
        if isinstance(exc, KernelShutdownError) and (self.fuzz.closing or op in ("stale", "interrupt", "restart")
                                                     or self.fuzz.during("shutdown", owner, since)):
            return
        self.fuzz.problem(f"thread {self.index} {op}:{owner} raised {type(exc).__name__}: {exc}\nops: {self.done}")

    # ------------------------------------------------------------------ checks
    def execute(self, owner: str, code: str, token: str, *, timeout: float | None = None,
                reset: bool = False, value: str | None = None) -> Any:
        start = time.monotonic()
        result = self.fuzz.registry.execute(KernelKey(owner=owner), code, timeout=timeout, reset=reset)
        end = time.monotonic()
        lost = result.kernel.state_lost or result.status in ("died", "exited") or result.watchdog == "reset"
        self.fuzz.note(Event("cell", owner, start, end, lost=lost, kernel=_kernel(result)))
        others = set(TOKEN.findall(result.stdout + result.stderr + (result.value or ""))) - {token, value}
        if others:
            self.bad(owner, f"cell {token} saw other cells' tokens {sorted(others)}", result)
        if result.status in ("ok", "error") and token not in result.stdout:
            self.bad(owner, f"cell {token} ({result.status}) did not print its token", result)
        return result, start

    def bad(self, owner: str, what: str, result: Any) -> None:
        self.fuzz.problem(f"thread {self.index} on {owner}: {what}: {result.summary()} stdout={result.stdout!r} "
                          f"value={result.value!r} stderr={result.stderr[-500:]!r}\nops: {self.done}")

    def not_run(self, result: Any, owner: str | None = None, start: float = 0.0) -> bool:
        """A cell overtaken by a restart, or whose kernel died or was reset under it, or one another thread's
        interrupt operation cut: not an error of the cell."""
        if result.status == "interrupted" and owner is not None and self.fuzz.during("interrupt", owner, start):
            return True
        return result.status == "died" and result.kernel.state_lost

    # ------------------------------------------------------------------ operations
    def op_set(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        result, start = self.execute(owner, f"{self.var} = {token!r}\nprint({token!r})\n{token!r}", token)
        if result.status == "ok" and result.value == repr(token) and result.stdout == token + "\n":
            self.last_set[owner] = (token, start, _kernel(result))  # (its start: a loss reported as it returned is after it)
        elif not self.not_run(result, owner, start):
            self.bad(owner, f"set {token}", result)
        else:
            self.last_set.pop(owner, None)

    def op_read(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        known = self.last_set.get(owner)
        result, start = self.execute(owner, f"print({token!r})\n{self.var}", token, value=known and known[0])
        if self.not_run(result, owner, start):
            return
        if result.status == "ok":
            if known is not None and result.value != repr(known[0]):
                self.bad(owner, f"read {self.var} expected {known[0]}", result)
            if known is None and not result.kernel.state_lost and result.value is not None:
                pass  # set by a cell whose result was lost to a restart (it ran before it): fine
            return
        if result.status != "error" or result.ename != "NameError":
            self.bad(owner, "read", result)
            return
        if known is None:
            return
        token_set, set_start, kernel = known
        if _kernel(result) == kernel:
            self.bad(owner, f"{self.var} (set by {token_set} on this very kernel and generation) is gone", result)
        elif not result.kernel.state_lost:  # judged at the end: a loss another thread was told of is noted by it later
            what = f"{self.var} (set by {token_set} on {kernel}) is gone and no loss was reported (read on {_kernel(result)})"
            with self.fuzz.lock:
                self.fuzz.suspects.append((owner, set_start, time.monotonic(), lambda: self.bad(owner, what, result)))
        self.last_set.pop(owner, None)

    def op_raise(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        result, start = self.execute(owner, f"print({token!r})\nraise ValueError({token!r})", token)
        if not self.not_run(result, owner, start) and (result.status != "error" or result.ename != "ValueError"
                                         or result.evalue != token):
            self.bad(owner, f"raise {token}", result)

    def op_sleep(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        delay = self.rng.uniform(0.01, 0.2)
        result, start = self.execute(owner, f"import time\ntime.sleep({delay})\nprint({token!r})\n{token!r}", token)
        if not self.not_run(result, owner, start) and (result.status != "ok" or result.value != repr(token)):
            self.bad(owner, f"sleep {token}", result)

    def op_long(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        budget = self.rng.uniform(0.3, 1.5)
        result, start = self.execute(owner, f"import time\nprint({token!r}, flush=True)\ntime.sleep(30)", token,
                                 timeout=budget)
        if not self.not_run(result, owner, start) and result.status != "timeout":
            self.bad(owner, f"long {token}", result)
        elif result.status == "timeout" and result.watchdog == "interrupted" and result.kernel.state_lost \
                and result.kernel.reason == "timeout":
            self.bad(owner, "an interrupted cell says state_lost", result)

    def op_interrupt(self, owner: str) -> None:
        """A long cell on the handle, interrupted from this thread once it runs."""
        token = self.fuzz.token(self.index)
        handle = self.fuzz.registry.get_or_start(KernelKey(owner=owner))
        got: list[Any] = []
        cell = threading.Thread(target=lambda: got.append(_call(handle.execute, f"import time\nprint({token!r}, "
                                                                f"flush=True)\ntime.sleep(30)", timeout=20.0)))
        start = time.monotonic()
        window = self.fuzz.window("interrupt", owner)
        cell.start()
        deadline = time.monotonic() + 15.0
        while cell.is_alive() and time.monotonic() < deadline:
            if handle._running_rid is not None:  # sent: interrupt it (the worker may not have started it yet)
                time.sleep(self.rng.uniform(0.0, 0.2))
                handle.interrupt()
                if not cell.is_alive():
                    break
            time.sleep(0.02)
        cell.join(OP_DEADLINE_S)
        window[3] = time.monotonic()
        if cell.is_alive() or not got:
            self.fuzz.problem(f"thread {self.index} interrupt:{owner}: the interrupted cell did not return")
            return
        result = got[0]
        if isinstance(result, BaseException):
            if not isinstance(result, HermesKernelError):
                self.fuzz.problem(f"thread {self.index} interrupt:{owner}: {type(result).__name__}: {result}")
            return
        lost = result.kernel.state_lost or result.status in ("died", "exited")
        self.fuzz.note(Event("interrupt", owner, start, time.monotonic(), lost=lost, kernel=_kernel(result)))
        if result.status not in ("interrupted", "timeout") and not self.not_run(result, owner, start):
            self.bad(owner, f"interrupted {token}", result)

    def op_restart(self, owner: str) -> None:
        start = time.monotonic()
        handle = self.fuzz.registry.get_or_start(KernelKey(owner=owner))
        self.fuzz.handles.append(handle)
        try:
            handle.restart()
        finally:
            self.fuzz.note(Event("restart", owner, start, time.monotonic(), lost=True))

    def op_reset(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        start = time.monotonic()
        try:
            result, start = self.execute(owner, f"print({token!r})\n{token!r}", token, reset=True)
        finally:
            self.fuzz.note(Event("reset", owner, start, time.monotonic(), lost=True))
        if not self.not_run(result, owner, start) and (result.status != "ok" or result.value != repr(token)):
            self.bad(owner, f"reset {token}", result)

    def op_shutdown(self, owner: str) -> None:
        every = self.rng.random() < 0.1  # every key's kernel (shutdown_all): the registry stays usable
        key = "*" if every else owner
        start, window = time.monotonic(), self.fuzz.window("shutdown", key)
        try:
            self.fuzz.registry.shutdown_all() if every else self.fuzz.registry.shutdown_owner(owner)
        finally:
            window[3] = time.monotonic()
            self.fuzz.note(Event("shutdown", key, start, time.monotonic(), lost=True))

    def op_stale(self, owner: str) -> None:
        """A cell through a handle taken earlier (maybe evicted, reaped or shut down since)."""
        if not self.fuzz.handles or self.rng.random() < 0.3:
            self.fuzz.handles.append(self.fuzz.registry.get_or_start(KernelKey(owner=owner)))
            return
        handle = self.rng.choice(self.fuzz.handles)
        token, start = self.fuzz.token(self.index), time.monotonic()
        result = handle.execute(f"print({token!r})\n{token!r}")
        lost = result.kernel.state_lost or result.status in ("died", "exited")  # (to this caller: the key's current kernel?)
        self.fuzz.note(Event("stale", handle.owner, start, time.monotonic(), lost=lost, kernel=_kernel(result)))
        if result.status == "ok" and result.value == repr(token) or self.not_run(result, handle.owner, start):
            return
        self.bad(handle.owner, f"stale {token}", result)

    def op_idle(self, owner: str) -> None:
        time.sleep(self.rng.uniform(0.0, 2 * (self.fuzz.ttl_s or 0.1)))

    def op_exit(self, owner: str) -> None:
        token = self.fuzz.token(self.index)
        start = time.monotonic()
        try:
            result, start = self.execute(owner, f"import os\nprint({token!r}, flush=True)\nos._exit(3)", token)
        finally:
            self.fuzz.note(Event("exit", owner, start, time.monotonic(), lost=True))
        if result.status not in ("died", "exited") and not self.not_run(result, owner, start):
            self.bad(owner, f"exit {token}", result)

    def op_kill(self, owner: str) -> None:
        """The key's runner killed from outside, through its transport (a host's blip)."""
        start, handle = time.monotonic(), self.fuzz.registry.get_or_start(KernelKey(owner=owner))
        try:
            if (launched := handle.launched) is not None:
                handle.transport.kill(launched)
        finally:
            self.fuzz.note(Event("kill", owner, start, time.monotonic(), lost=True))


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - handed to the checking thread
        return exc


def run_fuzz(registry: KernelRegistry, seed: int, *, threads: int = 3, steps: int = 20, owners: int = 4,
             ttl_s: float | None = None, close_in_flight: bool = True,
             at_rest: Callable[[KernelRegistry], list[str]] | None = None) -> list[str]:
    """Drive ``registry`` from ``threads`` threads, ``steps`` operations each, over ``owners`` keys.

    :param close_in_flight: close the registry as soon as the first thread is done, while the
        others' calls are in flight (they then end with ``KernelShutdownError``).
    :param at_rest: called once every thread is done, before the close (not with ``close_in_flight``):
        the problems it finds in the registry at rest (its listing against the live kernels).
    :returns: the problems found (``[]``: none); a hang is one (with every thread's stack).
    """
    fuzz = Fuzz(registry, seed, [f"o{seed}-{i}" for i in range(owners)], ttl_s)
    workers = [Worker(fuzz, i, steps) for i in range(threads)]
    runs = [threading.Thread(target=w.run, name=f"fuzz-{seed}-{i}", daemon=True) for i, w in enumerate(workers)]
    for thread in runs:
        thread.start()
    first = True
    while any(t.is_alive() for t in runs):
        for thread in runs:
            thread.join(0.1)
        if close_in_flight and first and any(not t.is_alive() for t in runs):
            first, fuzz.closing = False, True
            registry.close()
        with fuzz.lock:
            late = [f"{what} for {time.monotonic() - since:.0f} s" for what, since in fuzz.running.values()
                    if time.monotonic() - since > OP_DEADLINE_S]
        if late:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            fuzz.problem(f"hung: {late}; ops: {[w.done for w in workers]}")
            break
    for thread in runs:
        thread.join(OP_DEADLINE_S)
    fuzz.judge_suspects()
    if at_rest is not None and not fuzz.closing:
        fuzz.problems += [f"seed {seed}: at rest: {p}" for p in at_rest(registry)]
    fuzz.closing = True
    registry.close()
    return fuzz.problems


_KERNEL_IN = re.compile(r"\(kernel ([0-9a-f]+)\)")


def running_kernels() -> set[str]:
    """The ids of the kernels whose processes run now, here or where a live transport runs them (the leak probes)."""
    from pytest_hermes_kernel.leaks.probes import PROBES

    found: set[str] = set()
    for probe in PROBES:
        if probe.kind in ("kernel process", "transport resource"):
            if probe.fresh is not None:
                probe.fresh()
            found.update(k for d in probe.snapshot().values() for k in _KERNEL_IN.findall(d))
    return found


def listing_matches(running_before: set[str]) -> Callable[[KernelRegistry], list[str]]:
    """An ``at_rest`` check: every kernel that runs (and did not before) is listed, ready, with a runner,
    and no more are listed than ``max_kernels`` (none was pinned)."""
    def check(registry: KernelRegistry) -> list[str]:
        def settled() -> bool:
            snaps = registry.snapshot()
            return {s.kernel_id for s in snaps} >= running_kernels() - running_before and all(
                s.state == "ready" and s.runner_pid is not None for s in snaps)
        deadline = time.monotonic() + 15.0
        while not settled():
            if time.monotonic() > deadline:
                return [f"listed {registry.snapshot()}, running {sorted(running_kernels() - running_before)}"]
            time.sleep(0.05)
        over = len(registry) - registry.max_kernels
        return [f"{len(registry)} listed, over max_kernels={registry.max_kernels}"] if over > 0 else []
    return check

