"""Who holds a kernel: what an embedder that checks for leaks needs to tell a kernel kept alive
on purpose (a session-persistent kernel shared by several units of work) from a leaked one.

An embedder sets :data:`current_holder` around the code whose kernels are meant to outlive the
unit of work running it (the pytest plugin: the setup of a module-, class-, package- or
session-scoped fixture). A :class:`~.handle.KernelHandle` and a
:class:`~.registry.KernelRegistry` keep the value current at their creation as ``holder``; a
registry's kernels get the registry's, whenever they start (a session-scoped registry's kernel
started lazily by a later test is still the fixture's, as is a held kernel's next worker after a
restart). The core itself never reads it.

Stdlib only, imported by the plugin while no kernel module is loaded yet.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar
from typing import Any

#: The holder of kernels made now in this context (``None``: the caller's unit of work).
current_holder: ContextVar[object | None] = ContextVar("hermes_kernel_holder", default=None)

_held: weakref.WeakSet[Any] = weakref.WeakSet()  # handles made while a holder was current


def hold(handle: Any, holder: object | None) -> object | None:
    """List ``handle`` in :func:`held_handles` (weakly) if ``holder`` is set; returns ``holder``
    (``handle.holder = hold(handle, holder)``)."""
    if holder is not None:
        _held.add(handle)
    return holder


def held_handles() -> list[Any]:
    """Every handle of this process made with a holder that is not garbage yet, started or not."""
    return list(_held)
