"""A kernel's lifecycle as a value: :class:`KernelState`, its allowed transitions, and the typed
loss record (:class:`Loss`) that the next cell reports.

One handle has one :class:`Lifecycle`. Two kinds of threads move it: the thread running a cell
(start, cell in flight, the cell's end, the watchdog's replacement) and a control thread
(``restart()`` while a cell runs, ``shutdown()``). Shutdown wins: once a kernel is ``CLOSING``
the cell thread's moves are refused quietly (:meth:`Lifecycle.advance` returns ``False``), so a
cell that ends because of the shutdown never starts a replacement. Any other move that the
table does not allow is a bug in the package and raises :class:`KernelStateError`.

A loss of state has one owner: whoever observed it (the cell that saw the worker die, the
watchdog that reset the kernel, ``restart()``, the registry that evicted or reaped the key's
previous kernel) records a :class:`Loss` on the handle; the next cell reports it and clears it.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import KernelStateError
from .results import Reason

__all__ = ["KernelState", "TRANSITIONS", "Lifecycle", "Loss", "Losses"]


class KernelState(enum.Enum):
    """Where a kernel is in its life (see :data:`TRANSITIONS` for the moves between them)."""

    NEW = "new"
    """No runner: never started, or its first start failed."""
    STARTING = "starting"
    """A runner is being launched; its hello is awaited."""
    IDLE = "idle"
    """Runner and worker are up; no cell runs."""
    BUSY = "busy"
    """A cell is in flight."""
    RESETTING = "resetting"
    """A cell is in flight and ``restart()`` was called: the cell's end is a reset, not a death."""
    WORKER_DEAD = "worker_dead"
    """The runner is up, the worker (the interpreter that runs cells) is gone."""
    RUNNER_LOST = "runner_lost"
    """The runner is gone or unreachable; the next cell needs a new runner (a new generation)."""
    CLOSING = "closing"
    """``shutdown()`` is ending the kernel."""
    CLOSED = "closed"
    """Shut down; no further cells."""

    __hash__ = object.__hash__  # members are singletons compared by identity; the state moves every cell


S = KernelState
_ENDS_OF_A_CELL = frozenset({S.IDLE, S.WORKER_DEAD, S.RUNNER_LOST})

TRANSITIONS: Mapping[KernelState, frozenset[KernelState]] = {
    S.NEW: frozenset({S.STARTING, S.CLOSING}),
    S.STARTING: frozenset({S.IDLE, S.WORKER_DEAD, S.NEW, S.RUNNER_LOST, S.CLOSING}),
    S.IDLE: frozenset({S.BUSY, S.WORKER_DEAD, S.RUNNER_LOST, S.CLOSING}),
    S.BUSY: _ENDS_OF_A_CELL | {S.RESETTING, S.CLOSING},
    S.RESETTING: _ENDS_OF_A_CELL | {S.CLOSING},
    S.WORKER_DEAD: frozenset({S.IDLE, S.RUNNER_LOST, S.CLOSING}),
    S.RUNNER_LOST: frozenset({S.STARTING, S.CLOSING}),
    S.CLOSING: frozenset({S.CLOSED}),
    S.CLOSED: frozenset(),
}
"""Allowed moves. ``STARTING -> NEW | RUNNER_LOST``: a failed start returns to where it came
from (a first start to ``NEW``, a relaunch after a loss to ``RUNNER_LOST``, so the next try is
still a new generation). ``IDLE -> WORKER_DEAD``: ``restart()`` killed the worker, or the runner
said the worker died between cells. ``-> RUNNER_LOST`` from a cell's end: the channel broke for
good, or the watchdog killed the kernel from outside."""


class Lifecycle:
    """The state of one kernel, moved only along :data:`TRANSITIONS`; thread-safe.

    :param state: the initial state (``NEW`` for a handle).
    """

    def __init__(self, state: KernelState = KernelState.NEW) -> None:
        self._state = state
        # reentrant: a shutdown() from a signal handler may land in this thread's own move, lock
        # held (between the acquire and the read; no handler runs between the read and the write)
        self._lock = threading.RLock()

    @property
    def state(self) -> KernelState:
        return self._state

    def is_(self, *states: KernelState) -> bool:
        """Whether the kernel is in one of ``states`` now."""
        return self._state in states

    @property
    def stopping(self) -> bool:
        """``CLOSING`` or ``CLOSED``: shutdown owns the kernel."""
        state = self._state
        return state is S.CLOSING or state is S.CLOSED

    def to(self, new: KernelState) -> KernelState:
        """Move to ``new``.

        :returns: the state it left.
        :raises KernelStateError: if :data:`TRANSITIONS` does not allow the move.
        """
        with self._lock:
            return self._move(new)

    def advance(self, new: KernelState) -> bool:
        """Move to ``new`` unless the kernel is stopping (the cell thread's moves; shutdown wins).

        :returns: ``False`` (and no move) if the kernel is ``CLOSING`` or ``CLOSED``.
        :raises KernelStateError: if :data:`TRANSITIONS` does not allow the move otherwise.
        """
        with self._lock:  # (the move is inlined: this runs twice per cell)
            old = self._state
            if old is S.CLOSING or old is S.CLOSED:
                return False
            if new not in TRANSITIONS[old]:
                raise _illegal(old, new)
            self._state = new
            return True

    def begin_closing(self) -> bool:
        """Move to ``CLOSING`` unless the kernel is stopping already.

        :returns: whether it moved (``False``: another ``shutdown()`` owns the kernel).
        """
        with self._lock:
            if self._state is S.CLOSING or self._state is S.CLOSED:
                return False
            self._move(S.CLOSING)
            return True

    def end_closing(self) -> None:
        """Move ``CLOSING -> CLOSED``; a no-op once ``CLOSED`` (a shutdown nested in another
        one, from a signal handler, may have ended it first)."""
        with self._lock:
            if self._state is not S.CLOSED:
                self._move(S.CLOSED)

    def swap(self, old: KernelState, new: KernelState) -> bool:
        """Move to ``new`` only if the state is ``old`` now (e.g. ``BUSY -> RESETTING``).

        :returns: whether it moved.
        :raises KernelStateError: if the move ``old -> new`` is not allowed.
        """
        with self._lock:
            if self._state is not old:
                return False
            self._move(new)
            return True

    def _move(self, new: KernelState) -> KernelState:
        old = self._state
        if new not in TRANSITIONS[old]:
            raise _illegal(old, new)
        self._state = new
        return old

    def __repr__(self) -> str:
        return f"<Lifecycle {self._state.name}>"


def _illegal(old: KernelState, new: KernelState) -> KernelStateError:
    return KernelStateError(f"illegal kernel state transition {old.name} -> {new.name}",
                            from_state=old.name, to_state=new.name)


@dataclass(frozen=True)
class Loss:
    """A loss of state, as the next cell reports it in its :class:`~.results.KernelInfo`.

    :param reason: why the namespace is gone (DESIGN.md section 6).
    :param exit_code: the worker's exit code, where known.
    :param signal: the signal that ended the worker, where known.
    :param oom_killed: the memory cgroup's OOM counter rose with the death.
    :param note: one human line: what happened.
    """

    reason: Reason
    exit_code: int | None = None
    signal: int | None = None
    oom_killed: bool = False
    note: str = ""

    @classmethod
    def between_cells(cls, exit_code: int | None, signal: int | None, oom_killed: bool, said: str = "") -> Loss:
        """The worker died while no cell ran (the runner said so when the next cell came); ``said``:
        the runner's own line on why a worker could not start (its ``cwd`` removed)."""
        detail = f" (signal {signal})" if signal else f" (exit code {exit_code})"
        return cls(reason="oom_killed" if oom_killed else "died", exit_code=exit_code, signal=signal,
                   oom_killed=oom_killed, note="; ".join(filter(None, ("the kernel died between cells" + detail, said))))

    def with_unconfirmed_end(self) -> Loss:
        """This loss, its note adding that the ended kernel's shutdown was not confirmed."""
        return replace(self, note=f"{self.note}; its runner was not seen gone (is its host paused or "
                                   "unreachable?): it may still run until its orphan timer ends it")

    def info_fields(self) -> dict[str, Any]:
        """The :class:`~.results.KernelInfo` fields this loss sets (``state_lost`` included)."""
        return {"state_lost": True, "reason": self.reason, "exit_code": self.exit_code, "signal": self.signal,
                "oom_killed": self.oom_killed, "note": self.note}


class Losses:
    """The losses a registry owes the next kernel of each key (evicted, reaped), at most ``kept`` of
    them, the newest: a host whose keys never come back (one per conversation) kept one per key for
    ever (80 per 100 cycles of ``benchmarks/soak.py``). Not thread-safe: the registry's lock guards it."""

    def __init__(self, kept: int, counts: dict[str, Any]) -> None:
        """:param counts: its ``"losses_forgotten"`` counts the losses dropped past ``kept`` (their keys'
        next kernels are not told): a registry's ``stats``."""
        self.kept, self._by_key, self._counts = kept, dict[Hashable, Loss](), counts

    def remember(self, key: Hashable, loss: Loss) -> None:
        """``key``'s next kernel reports ``loss``; the oldest past ``kept`` are forgotten."""
        self._by_key.pop(key, None)
        self._by_key[key] = loss
        while len(self._by_key) > self.kept:
            del self._by_key[next(iter(self._by_key))]
            self._counts["losses_forgotten"] = self._counts.get("losses_forgotten", 0) + 1

    def give_back(self, key: Hashable, loss: Loss) -> None:
        """``loss`` again, unless a newer one came meanwhile (the kernel it went to failed to start)."""
        if key not in self._by_key:
            self.remember(key, loss)

    def take(self, key: Hashable) -> Loss | None:
        """``key``'s loss, for its next kernel to report, and forgotten here."""
        return self._by_key.pop(key, None)

    def unconfirmed(self, key: Hashable) -> None:
        """``key``'s loss (if any) says its kernel's end was not confirmed."""
        if key in self._by_key:
            self._by_key[key] = self._by_key[key].with_unconfirmed_end()

    def forget(self, match: Callable[[Any], bool]) -> None:
        """Forget the losses of the keys ``match`` takes (their owner ended them on purpose)."""
        for key in [k for k in self._by_key if match(k)]:
            del self._by_key[key]

    def __len__(self) -> int:
        return len(self._by_key)
