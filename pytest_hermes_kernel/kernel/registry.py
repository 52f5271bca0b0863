"""KernelRegistry: one kernel per key, leases, LRU cap with pinned children, idle reaping.

Lifecycle rules (DESIGN.md section 6, from the seed system's bug history):

* One kernel per key: the first acquire puts a *pending* entry in the map under the lock and
  starts the kernel outside it; concurrent acquires for the key wait on that entry ("pending"
  is not "dead"). This is the fix for the 110-kernel spawn race.
* Leases: a cell holds a lease; reaping and eviction skip leased kernels, and kernels that run
  or queue a cell sent through a handle ``get_or_start`` gave (no lease), whose end restarts the
  idle clock. A kernel dropped while leased is torn down by its last lease. Teardown never runs
  under the registry lock.
* LRU cap: over ``max_kernels`` unpinned kernels, the least recently used unleased unpinned
  one is evicted. Pinned kernels (live delegated children) are exempt until
  :meth:`shutdown_child`.
* Idle reaping by a background thread (not only on the next acquire); :meth:`reap_once` and
  the ``clock`` seam let tests reap without sleeping.
* Every loss of state is reported: when the registry evicts or reaps a key's kernel it keeps
  the :class:`~.lifecycle.Loss` and hands it to the key's next kernel
  (:meth:`KernelHandle.mark_lost`), whose first cell reports ``state_lost=True`` with that
  reason. The registry never edits a result.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import ConfigError, KernelShutdownError
from .control import check_process, fresh_turn
from .holders import current_holder, hold
from .keys import CHILD_SEPARATOR, KernelKey, checked_key, checked_pinned
from .leasing import leased_entry
from .lifecycle import Loss, Losses
from .options import KernelOptions, check_registry_settings, checked_options
from .reaper import (IdleReaper, IdleReaping, SweptTransports, await_burials, await_start, bury, closed_at_exit, in_use,
                     why_ended)
from .results import CellResult, KernelSnapshot, Reason, count_death
from .rpc import ToolTable

if TYPE_CHECKING:  # imported when the first kernel starts: the leak check lists registries of runs that start none
    from .handle import KernelHandle

DEFAULT_MAX_KERNELS = 4
"""LRU cap on unpinned kernels (the seed system's)."""

DEFAULT_IDLE_TIMEOUT = 1800.0
"""Seconds without a cell before a kernel is reaped (the seed system's 30 minutes)."""

STALE_DIR_AGE_S = 7 * 24 * 3600.0
"""Seconds after which a kernel dir of a dead host is swept (one week)."""

LOST_KEPT = 10_000
"""Keys whose evicted or reaped kernel the registry reports to their next cell, the newest (:class:`.Losses`)."""


@dataclass
class _Entry:
    key: KernelKey
    handle: KernelHandle
    pinned: bool
    last_used: float
    leases: int = 0
    ready: threading.Event = field(default_factory=threading.Event)
    start_error: BaseException | None = None
    doomed: Reason | None = None
    """Why the registry ends this kernel (``evicted``, ``idle_reaped``, ``reset``); ``None``: it stays."""
    buried: threading.Event = field(default_factory=threading.Event)
    inherited: Loss | None = None
    """The loss of the key's previous kernel, handed to this one (given back if it fails to start)."""
    starter: int = field(default_factory=threading.get_ident)
    """The thread that starts this kernel (the one that made the entry)."""
    ender: int | None = None
    """The thread that took it out to shut it down (a ``close()`` in a signal handler there does not wait for it)."""


TransportFactory = Callable[[KernelKey], Any]


def _refuse_copy(registry: KernelRegistry, protocol: object) -> NoReturn:
    """``KernelRegistry.__reduce_ex__``: a copy would own and end the same kernels. :raises TypeError: always."""
    raise TypeError("a KernelRegistry cannot be pickled or copied: it owns its kernels, in process "
                    f"{registry.host_pid}. Hint: share it between threads, or give another process a registry of its own")


class KernelRegistry(IdleReaping):
    """Kernels by :class:`KernelKey` (see module docstring).

    :param max_kernels: LRU cap on unpinned kernels (default :data:`DEFAULT_MAX_KERNELS`, 4).
    :param idle_timeout: seconds without a cell before a kernel is reaped (default
        :data:`DEFAULT_IDLE_TIMEOUT`, 1800); ``None``: never.
    :param reap_interval: seconds between the background reaper's stale-dir sweeps; default
        ``clamp(idle/6, 30, 300)``. Idle kernels are reaped at their expiry, not on this interval
        (:mod:`.reaper`). With ``background_reaper=False`` only :meth:`reap_once` reaps.
    :param clock: monotonic seconds, injectable for tests.
    :param transport: the transport name of keys that name none (``KernelKey.transport=None``).
    :param transport_factory: ``key -> Transport`` (keys arrive resolved); the core knows no transport by name, so
        whoever builds a registry passes one (:class:`pytest_hermes_kernel.KernelRegistry` and the
        plugin pass the shared transport for ``key.transport``).
    """

    def __init__(self, *, max_kernels: int = DEFAULT_MAX_KERNELS, idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
                 options: KernelOptions | None = None, tools: ToolTable | Mapping[str, Any] | None = None,
                 transport_factory: TransportFactory, clock: Callable[[], float] = time.monotonic,
                 background_reaper: bool = True, reap_interval: float | None = None,
                 stale_dir_age: float = STALE_DIR_AGE_S, transport: str = "local") -> None:
        check_registry_settings(max_kernels, idle_timeout, reap_interval, stale_dir_age, transport_factory, clock, transport)
        self.max_kernels, self.transport, self.idle_timeout = max_kernels, transport, idle_timeout
        self.options = checked_options(options)
        self.tools = tools if isinstance(tools, ToolTable) else ToolTable(tools)
        self.clock, self.stale_dir_age = clock, stale_dir_age
        self._factory = transport_factory
        self._lock = threading.RLock()  # a signal handler's call may land in this thread's own: walks copy entries
        self._entries: OrderedDict[KernelKey, _Entry] = OrderedDict()
        self._dying: dict[KernelKey, list[_Entry]] = {}  # popped, process not yet confirmed dead
        self._making: dict[KernelKey, tuple[int, threading.Event]] = {}  # keys whose new entry's transport is
        # being made: by which thread, and the event set once it is made (or failed to be)
        self._closed = False
        self.stats: dict[str, Any] = {"started": 0, "peak_alive": 0, "evicted": 0, "idle_reaped": 0, "deaths": {},
                                      "unconfirmed_ends": 0, "losses_forgotten": 0}
        """Counts: kernels ``started``, ``peak_alive``, ``evicted``, ``idle_reaped``, ``deaths`` by reason, ``unconfirmed_ends``
        (ended, runner not seen gone: may run beside the key's next), ``losses_forgotten`` (:class:`.Losses`)."""
        self._lost = Losses(LOST_KEPT, self.stats)  # ended by the registry; the key's next kernel reports it
        self.listener: Callable[..., None] | None = None
        """Added to every kernel this registry starts (see :meth:`KernelHandle.add_listener`)."""
        self._reaper: IdleReaper | None = None
        if background_reaper and idle_timeout is not None:
            self._reaper = IdleReaper(self, reap_interval or min(300.0, max(30.0, idle_timeout / 6)))
        self.host_pid = os.getpid()
        """The process this registry belongs to (a forked child's copy is its parent's)."""
        self._made = closed_at_exit(self)  # its place in the order of closing at exit (the newest first)
        self._transports = SweptTransports()  # the factory's transports still held (for sweep_stale)
        self.holder = current_holder.get()
        """What holds this registry's kernels beyond the caller's unit of work (:mod:`.holders`)."""
        _live.add(self)

    # ------------------------------------------------------------------------------ acquire
    @contextmanager
    def lease(self, key: KernelKey, *, pinned: bool | None = None) -> Iterator[KernelHandle]:
        """Hold the kernel for ``key`` (starting it if needed) for the duration of the block.

        :param pinned: exempt from LRU eviction (a bool, else a ``TypeError``); default: true for delegated-child keys.
        :raises KernelShutdownError: if the registry (or the key's kernel, mid-start) was shut down.
        :raises KernelStartError: if the kernel could not be started.
        :raises KernelForkedError: in a forked child of the registry's process.
        """
        check_process(self.host_pid)
        key = self.resolve(key)
        entry = self._acquire(key, checked_pinned(key, pinned))
        try:
            yield entry.handle
        finally:
            self._release(entry)

    def resolve(self, key: KernelKey) -> KernelKey:
        """``key`` with its transport filled in: a key that names none gets the registry's own.

        :raises TypeError: if ``key`` is not a :class:`KernelKey` (:func:`~.keys.checked_key`).
        """
        return key if checked_key(key).transport is not None else dataclasses.replace(key, transport=self.transport)

    def get_or_start(self, key: KernelKey, *, pinned: bool | None = None) -> KernelHandle:
        """The kernel for ``key``, started if needed (no lease); raises as :meth:`lease` (KernelShutdownError...)."""
        with self.lease(key, pinned=pinned) as handle:
            return handle

    def execute(self, key: KernelKey, code: str, *, timeout: float | None = None, reset: bool = False) -> CellResult:
        """Run ``code`` on the kernel for ``key`` under a lease.

        :param reset: restart the kernel first (state is lost and reported with reason ``reset``): the restart
            and the cell are one turn, after the cells sent before it (none is cut), before any sent meanwhile.
        :raises TypeError: if ``reset`` is not a bool (nothing is run).
        :raises KernelShutdownError: (and the others of :meth:`lease` and :meth:`KernelHandle.execute`) as they say.
        :returns: the cell's result; a kernel recreated after eviction or reaping reports
            ``state_lost`` with that reason (its handle was told, see :meth:`KernelHandle.mark_lost`).
        """
        if not isinstance(reset, bool):  # "no" would be true: the state lost to a word
            raise TypeError(f"reset must be a bool, not {type(reset).__name__} {reset!r}; nothing was run")
        key = self.resolve(key)
        with self.lease(key) as handle, fresh_turn(handle) if reset else nullcontext():
            known, result = handle._pending_loss, handle.execute(code, timeout=timeout)  # (known: reported again; the end restarts the idle clock)
            with self._lock:
                count_death(self.stats["deaths"], result, between=known is None)
        return result

    def _acquire(self, key: KernelKey, pinned: bool) -> _Entry:
        doomed: list[_Entry] = []
        while True:
            with self._lock:
                dying = list(self._dying.get(key, ()))
            if not dying:
                break
            for old in dying:  # a key's next kernel starts only once its last one is dead
                old.buried.wait(self.options.shutdown_grace * 3 + 10.0)
            with self._lock:
                for old in dying:
                    bury(self._dying, old)
        try:
            entry, creator = leased_entry(self, key, pinned, doomed)
        except BaseException:  # (closed meanwhile, a Ctrl-C): what it took out to end is ended all the same
            self._teardown(doomed)
            raise
        if creator:
            self._start(entry, doomed)
        else:
            try:
                self._teardown(doomed)
                entry.ready.wait()
            except BaseException:  # Ctrl-C while it waits: the lease goes with it
                self._release(entry)
                raise
        if entry.start_error is not None or entry.doomed:
            self._release(entry)
            if entry.start_error is not None:
                raise entry.start_error
            raise KernelShutdownError(f"the kernel for {key.owner!r} was shut down ({entry.doomed}) while starting")
        return entry

    def _new_entry_unlocked(self, key: KernelKey, pinned: bool, transport: Any) -> _Entry:
        """A pending entry with a new, not yet started handle for ``key`` on ``transport``."""
        from .handle import KernelHandle

        self._transports.add(transport)
        options = replace(self.options, python=key.python or self.options.python, cwd=key.cwd or self.options.cwd)
        handle = KernelHandle(transport, options, tools=self.tools, owner=key.owner)
        handle.holder = hold(handle, self.holder)  # whenever it starts
        if self.listener is not None:
            handle.add_listener(self.listener)
        entry = _Entry(key=key, handle=handle, pinned=pinned, last_used=self.clock(),
                       inherited=self._lost.take(key))
        if entry.inherited is not None:  # the registry ended this key's last kernel: say so
            handle.mark_lost(entry.inherited)
        self._watch_cells(entry)
        self._entries[key] = entry
        return entry

    def _start(self, entry: _Entry, doomed: list[_Entry]) -> None:
        try:  # a Ctrl-C in the eviction's shutdown fails the start too: no entry is left pending
            self._teardown(doomed)
            entry.handle.start()
            with self._lock:
                self.stats["started"] += 1
                self.stats["peak_alive"] = max(self.stats["peak_alive"], len(self._entries))
        except BaseException as exc:
            entry.start_error = exc
            with self._lock:
                if self._entries.get(entry.key) is entry:
                    del self._entries[entry.key]
                if entry.inherited is not None:  # not reported yet: the key's next kernel reports it
                    self._lost.give_back(entry.key, entry.inherited)
        finally:
            entry.ready.set()
            self._poke()

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.leases -= 1
            last_out = entry.leases == 0 and entry.doomed is not None
            # leased kernels were spared at acquire time: the cap is enforced again as they settle
            over = [] if last_out else self._over_cap_unlocked(keep=entry.key)
        self._teardown([entry] if last_out else over)
        self._poke()

    # ------------------------------------------------------------------------------ eviction
    def _over_cap_unlocked(self, keep: KernelKey) -> list[_Entry]:
        unpinned = [e for e in list(self._entries.values()) if not e.pinned]
        excess = len(unpinned) - self.max_kernels
        if excess <= 0:
            return []
        victims = [e for e in unpinned if e.key != keep and not in_use(e)][:excess]  # oldest first
        return [self._pop_unlocked(e, "evicted") for e in victims]

    def _pop_unlocked(self, entry: _Entry, reason: Reason) -> _Entry:
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]
        entry.doomed, entry.ender = reason, threading.get_ident()  # (the popping thread ends it)
        self._dying.setdefault(entry.key, []).append(entry)
        if reason in ("evicted", "idle_reaped"):
            self._lost.remember(entry.key, Loss(reason=reason, note=f"the previous kernel for this key was "
                                                                   f"{reason.replace('_', ' ')}"))
            self.stats[reason] += 1
        return entry

    def _teardown(self, entries: list[_Entry]) -> None:
        """Shut kernels down, outside the lock; leased ones are left to their last lease."""
        for entry in entries:
            with self._lock:
                if entry.leases > 0 and entry.doomed in ("evicted", "idle_reaped"):
                    continue
            self._shut(entry, now=entry.doomed in ("reset", "host_gone"))

    def _shut(self, entry: _Entry, now: bool = False) -> None:
        """Shut ``entry``'s kernel down, then let its key start a new one (an end not confirmed is counted)."""
        info = None
        try:
            info = entry.handle.shutdown(now=now, why=why_ended(entry, self.max_kernels, self.idle_timeout))
        finally:
            with self._lock:
                if info is not None and info.may_still_run:
                    self.stats["unconfirmed_ends"] += 1  # and the key's pending loss says it may still run
                    self._lost.unconfirmed(entry.key)
                bury(self._dying, entry)

    # ------------------------------------------------------------------------------ shutdown
    def discard(self, key: KernelKey, handle: KernelHandle) -> bool:
        """Remove ``key``'s entry only if it still holds ``handle``; shut ``handle`` down (a forked child's copy: ``False``)."""
        if os.getpid() != self.host_pid:  # the parent's entries, its lock maybe held by a thread not here: it hung
            return False
        key = self.resolve(key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.handle is handle:
                self._pop_unlocked(entry, "reset")
            else:
                entry = None
        if entry is None:
            handle.shutdown()
            return False
        self._shut(entry)
        return True

    def shutdown_owner(self, owner: str) -> int:
        """Shut down every kernel of ``owner`` (and of its delegated children), leased or not."""
        return self._shutdown_where(lambda k: k.owner == owner or k.owner.startswith(owner + CHILD_SEPARATOR))

    def shutdown_child(self, child_id: str) -> int:
        """Dispose the kernels of a finished delegated child (they were pinned)."""
        return self._shutdown_where(lambda k: k.child_id == child_id)

    def shutdown_all(self) -> int:
        """Shut down every kernel, including ones still starting; the registry stays usable."""
        return self._shutdown_where(lambda _k: True)

    def _shutdown_where(self, match: Callable[[KernelKey], bool]) -> int:
        if os.getpid() != self.host_pid:  # a forked child: the parent's kernels (and starts) are not its own
            return 0
        with self._lock:
            doomed = [self._pop_unlocked(e, "reset") for e in list(self._entries.values()) if match(e.key)]
            self._lost.forget(match)  # ended on purpose: their next kernels are fresh ones, no loss to report
        pending = [e for e in doomed if not e.ready.is_set()]
        for entry in doomed:
            if entry.ready.is_set():
                self._shut(entry)
        for entry in pending:  # half-started kernels: wait for the start, then end them
            await_start(entry)
            self._shut(entry)
        return len(doomed)

    def close(self) -> None:
        """Stop the reaper and shut everything down, also what other threads are ending; later acquires
        raise (a forked child's copy: nothing)."""
        if os.getpid() != self.host_pid:  # the parent's kernels, and maybe its lock held by a thread not here
            return
        with self._lock:
            self._closed = True
        if self._reaper is not None:
            self._reaper.stop()
        self.shutdown_all()
        await_burials(self._lock, self._dying, self.options.shutdown_grace * 3 + 10.0)  # other threads' ends

    # ------------------------------------------------------------------------------ looking
    def snapshot(self) -> list[KernelSnapshot]:
        """The entries now, least recently used first (none in a forked child: its parent's, whose lock a
        thread not there may hold: ``len(reg)`` and ``snapshot()`` there waited for ever)."""
        if os.getpid() != self.host_pid:
            return []
        with self._lock:
            return [KernelSnapshot(key=e.key, kernel_id=e.handle.kernel_id, pid=e.handle.pid,
                                   runner_pid=e.handle.runner_pid, generation=e.handle.generation,
                                   leases=e.leases, pinned=e.pinned, last_used=e.last_used,
                                   state="ready" if e.ready.is_set() else "pending")
                    for e in list(self._entries.values())]

    def __len__(self) -> int:
        return len(self.snapshot())

    def __enter__(self) -> KernelRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    __reduce_ex__ = _refuse_copy


_live: weakref.WeakSet[KernelRegistry] = weakref.WeakSet()


def live_registries() -> list[KernelRegistry]:
    """Every registry of this process that is not garbage yet (the leak checker reads this)."""
    return list(_live)
