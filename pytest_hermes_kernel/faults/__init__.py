"""Fault injection: one path from a fault spec to a faulted kernel, for markers and scenarios.

Owns: :mod:`.spec` (what to inject and when), :mod:`.apply` (spec -> transport options, kernel
options, memory cgroup, skip reason), :mod:`.faulty_transport` (the decorator transport whose
streams can be dropped), :mod:`.injector` (firing faults at a kernel), :mod:`.harness` (a kernel
whose host is a separate process), :mod:`.cgroup` (memory cgroups for local OOM) and
:mod:`.proxy` (the loopback TCP fault proxy on ssh's ``connect_via`` seam).

May import: the kernel core (its port and the ``Kernel`` protocol), ``transports``,
``errors`` and ``procs``; never pytest (the plugin drives this package) and never ``leaks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .faulty_transport import FaultyTransport
    from .harness import HarnessKernel, HostGoneError
    from .spec import FaultSpec

__all__ = ["FaultSpec", "FaultyTransport", "HarnessKernel", "HostGoneError"]

_LAZY = {"FaultSpec": ".spec", "FaultyTransport": ".faulty_transport", "HarnessKernel": ".harness",
         "HostGoneError": ".harness"}


def __getattr__(name: str) -> Any:
    """The names of ``__all__``, imported on first use: the plugin's markers need :mod:`.spec`
    alone, not the harness (pickle, threads) or the faulty transport."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
