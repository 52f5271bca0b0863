"""The registry's idle reaper: one thread that sleeps until the earliest idle expiry.

It wakes when a kernel's idle time runs out (plus :data:`SLACK_S`), when anything changes that
can move that moment (a lease released, a kernel started: :meth:`IdleReaper.poke`), and every
``sweep_every`` seconds to sweep stale kernel dirs. So a kernel is reaped within
``idle_timeout + SLACK_S`` for any idle timeout, and a long timeout costs no polling. (The
registry it replaces woke on a fixed interval with a 30 s floor: a kernel with
``idle_timeout=1.0`` lived up to 30 s.) The last reaping is at interpreter exit: :func:`closed_at_exit`.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
import time
import traceback
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .lifecycle import KernelState

if TYPE_CHECKING:
    from .registry import KernelKey, KernelRegistry, _Entry
    from .results import Reason

SLACK_S = 0.05
"""Seconds past an expiry before reaping it (the expiry test is a strict ``>``)."""
STOP_WAIT_S = 5.0
"""Seconds :meth:`IdleReaper.stop` waits for an idle reaper's thread to end (it needs no lock but its own)."""


class Reapable(Protocol):
    """What the reaper needs of a registry."""

    def seconds_to_next_expiry(self) -> float | None: ...

    def reap_expired(self) -> int: ...

    def sweep_stale(self) -> None: ...


class IdleReaper:
    """See module docstring.

    :param registry: what to reap.
    :param sweep_every: seconds between stale-dir sweeps.
    """

    def __init__(self, registry: Reapable, sweep_every: float) -> None:
        self._registry = registry
        self._sweep_every = sweep_every
        self._changed = threading.Condition()
        self._version = 0  # bumped by poke(): a change seen before waiting is never missed
        self._stopped = self._waiting = False
        self._thread = threading.Thread(target=self._run, name="hermes-kernel-idle-reaper", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Something changed that may move the next expiry: recompute it now."""
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    def stop(self) -> None:
        """End the thread (it exits at its next wake-up, which this causes). One idle in its wait has
        ended when this returns (a registry's ``close()`` left it running: 2000 of 2000 tries); one
        reaping is not waited for (it may need a lock the caller holds: a signal handler's close)."""
        nested = self._changed._is_owned()  # type: ignore[attr-defined]  # (a handler inside poke())
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
            idle = self._waiting
        if idle and not nested and threading.current_thread() is not self._thread:
            self._thread.join(STOP_WAIT_S)

    def _run(self) -> None:
        next_sweep = time.monotonic() + self._sweep_every
        while True:
            with self._changed:
                version = self._version
            wait = self._wait_s(next_sweep)
            with self._changed:
                if not self._stopped and version == self._version:
                    self._waiting = True
                    try:
                        self._changed.wait(wait)
                    finally:
                        self._waiting = False
                if self._stopped:
                    return
            try:
                self._registry.reap_expired()
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + self._sweep_every
                    self._registry.sweep_stale()
            except Exception:  # noqa: BLE001 - the reaper must survive; it retries at the next wake-up
                pass

    def _wait_s(self, next_sweep: float) -> float:
        until_sweep = max(0.0, next_sweep - time.monotonic())
        try:
            expiry = self._registry.seconds_to_next_expiry()
        except Exception:  # noqa: BLE001 - as above
            expiry = None
        return until_sweep if expiry is None else min(until_sweep, max(0.0, expiry) + SLACK_S)


class IdleReaping:
    """The idle-reaping half of :class:`~.registry.KernelRegistry`: what :class:`IdleReaper` calls.

    Mixed into the registry, whose lock, entries and teardown it uses.
    """

    idle_timeout: float | None
    stale_dir_age: float
    clock: Callable[[], float]
    _lock: threading.RLock
    _entries: OrderedDict[KernelKey, _Entry]
    _transports: SweptTransports
    _reaper: IdleReaper | None
    host_pid: int

    if TYPE_CHECKING:
        def _pop_unlocked(self, entry: _Entry, reason: Reason) -> _Entry: ...

        def _teardown(self, entries: list[_Entry]) -> None: ...

    def _poke(self) -> None:
        """Tell the background reaper (if any) that the next expiry may have moved."""
        if self._reaper is not None:
            self._reaper.poke()

    def _watch_cells(self, entry: _Entry) -> None:
        """Restart ``entry``'s idle clock as each cell on its kernel ends, however it was sent (the
        handle ``get_or_start`` gave runs cells without a lease), and recompute the next expiry."""
        def heard(event: str, _handle: object, _payload: object) -> None:
            if event in ("result", "raised"):
                with self._lock:
                    entry.last_used = self.clock()
                self._poke()
        entry.handle.add_listener(heard)

    def _a_forked_copy(self) -> bool:
        """Whether this is a forked child's copy of the registry: the parent's kernels, and its lock maybe
        held by a thread the child does not have (``discard()``, ``reap_once()`` there waited for ever)."""
        return os.getpid() != self.host_pid

    def reap_once(self) -> int:
        """Reap idle kernels and stale kernel dirs now; return how many kernels were reaped."""
        reaped = self.reap_expired()
        self.sweep_stale()
        return reaped

    def reap_expired(self) -> int:
        """Reap the kernels idle for longer than ``idle_timeout`` now; how many (a forked child's copy: 0)."""
        if self._a_forked_copy():
            return 0
        with self._lock:
            doomed = self._expired_unlocked()
        self._teardown(doomed)
        return len(doomed)

    def sweep_stale(self) -> None:
        """Let every transport this registry used that is still held somewhere remove stale kernel
        dirs, each in turn; the first one's error is raised once all had theirs (one raising ended
        the round, and the transports after it were never swept again). A forked child's copy: nothing."""
        if self._a_forked_copy():
            return
        failed: list[Exception] = []
        with self._lock:  # (a start adds one meanwhile: 'dictionary changed size during iteration')
            transports = self._transports.alive()
        for transport in transports:
            try:
                transport.sweep_stale(self.stale_dir_age)
            except Exception as exc:  # noqa: BLE001 - raised below, after the others
                failed.append(exc)
        if failed:
            raise failed[0]

    def seconds_to_next_expiry(self) -> float | None:
        """Seconds until the next idle kernel expires (negative: overdue); ``None``: none is idle."""
        if self.idle_timeout is None or self._a_forked_copy():
            return None
        with self._lock:
            idle = [e.last_used for e in list(self._entries.values()) if not in_use(e) and e.ready.is_set()]
        return None if not idle else min(idle) + self.idle_timeout - self.clock()

    def _expired_unlocked(self) -> list[_Entry]:
        if self.idle_timeout is None:
            return []
        now = self.clock()
        expired = [e for e in list(self._entries.values())
                   if not in_use(e) and e.ready.is_set() and now - e.last_used > self.idle_timeout]
        return [self._pop_unlocked(e, "idle_reaped") for e in expired]


class SweptTransports:
    """The transports a registry sweeps for stale kernel dirs: those its kernels use, and any other
    it was given that something still holds (the shared ones), by weak reference. A factory that
    made a transport per key (a container per session) had every one kept for the registry's life,
    and swept on every interval. A transport that takes no weak reference is held."""

    def __init__(self) -> None:
        self._weak: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._held: dict[int, Any] = {}

    def add(self, transport: Any) -> None:
        try:
            self._weak[id(transport)] = transport
        except TypeError:
            self._held[id(transport)] = transport

    def alive(self) -> list[Any]:
        """The transports, in no promised order."""
        return [*self._weak.values(), *self._held.values()]


def in_use(entry: _Entry) -> bool:
    """Whether ``entry``'s kernel is leased, or runs or queues a cell (also one sent through the
    handle ``get_or_start`` gave, which holds no lease): reaping and eviction skip it."""
    return entry.leases > 0 or entry.handle.queued > 0 or entry.handle.state in _RUNNING


_RUNNING = (KernelState.BUSY, KernelState.RESETTING)


_hooked_pid: int | None = None  # the process whose exit hook is registered
_hook_lock = threading.Lock()
_made = itertools.count()
_open: weakref.WeakSet[KernelRegistry] = weakref.WeakSet()  # every registry not garbage yet


def closed_at_exit(registry: KernelRegistry) -> int:
    """Have ``registry`` closed at interpreter exit, in its own process; returns its place in the
    order of closing (the newest registry first). One hook per process closes them all: one hook
    per registry, kept after its close, grew the interpreter's exit list for every registry ever made."""
    global _hooked_pid
    with _hook_lock:  # two threads making a process's first registries register one hook
        if _hooked_pid != registry.host_pid:  # once per process (a forked child's registries are its own)
            _hooked_pid = registry.host_pid
            atexit.register(_close_at_exit, registry.host_pid)
        _open.add(registry)
        return next(_made)


def _close_at_exit(pid: int) -> None:
    if os.getpid() != pid:  # a forked child leaves the parent's kernels alone
        return
    for registry in sorted((r for r in list(_open) if r.host_pid == pid), key=lambda r: -r._made):
        try:
            registry.close()
        except Exception:  # noqa: BLE001 - shown as atexit shows it; the next registry still closes
            traceback.print_exc()


def bury(dying: dict[KernelKey, list[_Entry]], entry: _Entry) -> None:
    """``entry``'s kernel is dead (or given up on): its key's next kernel may start (under the lock)."""
    entry.buried.set()
    left = [e for e in dying.get(entry.key, ()) if e is not entry]
    if left:
        dying[entry.key] = left
    else:
        dying.pop(entry.key, None)


def await_burials(lock: threading.RLock, dying: dict[KernelKey, list[_Entry]], timeout: float) -> None:
    """Wait until the kernels other threads are ending (an idle reap, an eviction) are dead, each for
    ``timeout`` seconds at most (a shutdown's three steps, and some slack)."""
    with lock:
        entries = [entry for entries in dying.values() for entry in entries]
    for entry in entries:
        if entry.ender != threading.get_ident():  # (a signal handler's close() in the end's own thread: it cannot)
            entry.buried.wait(timeout)


def await_start(entry: _Entry) -> None:
    """Wait until ``entry``'s kernel has started or failed to, unless this very thread starts it
    further up its stack (a signal handler's shutdown landed there): waiting would be forever,
    so that start is ended at once instead (it then fails with ``KernelShutdownError``)."""
    if entry.starter != threading.get_ident():
        entry.ready.wait()


def why_ended(entry: _Entry, max_kernels: int, idle_timeout: float | None) -> str:
    """What a handle the registry ended says when used again (its key's owner may still hold it)."""
    if entry.doomed == "evicted":
        return f"evicted by its registry (over max_kernels={max_kernels}, the least recently used)"
    return f"reaped by its registry (unused for idle_timeout={idle_timeout} s)" if entry.doomed == "idle_reaped" else ""
