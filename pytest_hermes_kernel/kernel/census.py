"""Every kernel this process starts and ends, for an embedder that counts them.

A kernel is counted wherever it was made: a :class:`~.handle.KernelHandle` of the pytest
plugin's fixtures, of a :class:`~.registry.KernelRegistry` or ``start_kernel()`` in a test's own
code, of a conftest. Per-kernel listeners (:meth:`~.handle.KernelHandle.add_listener`) see only
the kernels they were added to: the plugin's summary, fed by them alone, said ``kernels started:
0`` beside leaks of kernels a test had started itself.

:class:`~.runtime.KernelRuntime` notes ``started`` once per kernel (its first runner said hello)
and ``ended`` once per kernel (shut down or kept for post-mortem); a restart is neither. An
observer is called with ``(event, kernel_id)`` on the thread that noted it, and must be quick
and never raise (a raising one is ignored: it must not break a kernel).

Stdlib only, imported by the plugin while no kernel module is loaded yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Literal

__all__ = ["CensusEvent", "CensusObserver", "ended", "note", "observe", "unobserve"]

CensusEvent = Literal["started", "ended"]
CensusObserver = Callable[[CensusEvent, str], None]

_lock = threading.RLock()  # reentrant: a kernel may end from a signal handler landing in note()
_observers: list[CensusObserver] = []
#: The ids of the kernels that ended here, newest last (at most :data:`ENDED_KEPT`).
_ended: dict[str, None] = {}
ENDED_KEPT = 10_000


def observe(observer: CensusObserver) -> None:
    """Call ``observer(event, kernel_id)`` for every kernel started or ended from now on."""
    with _lock:
        _observers.append(observer)


def unobserve(observer: CensusObserver) -> None:
    """Stop calling ``observer`` (no-op if it is not observing)."""
    with _lock:
        with suppress(ValueError):
            _observers.remove(observer)


def note(event: CensusEvent, kernel_id: str) -> None:
    """Tell every observer that kernel ``kernel_id`` was ``started`` or ``ended`` (called by the runtime)."""
    with _lock:
        observers = list(_observers)
        if event == "ended":
            _ended[kernel_id] = None
            if len(_ended) > ENDED_KEPT:
                del _ended[next(iter(_ended))]
    for observer in observers:
        with suppress(Exception):  # an observer must never break the kernel
            observer(event, kernel_id)


def ended(kernel_id: str) -> bool:
    """Whether kernel ``kernel_id`` ended here (shut down or kept; one of the last
    :data:`ENDED_KEPT`): a process of it that still runs is something its cells left, not the kernel."""
    with _lock:
        return kernel_id in _ended

