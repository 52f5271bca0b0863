"""Fault injection: one path from a fault spec to a faulted kernel, for markers and scenarios.

Owns: :mod:`.spec` (what to inject and when), :mod:`.apply` (spec -> transport options, kernel
options, memory cgroup, skip reason), :mod:`.faulty_transport` (the decorator transport whose
streams can be dropped), :mod:`.injector` (firing faults at a kernel), :mod:`.harness` (a kernel
whose host is a separate process), :mod:`.cgroup` (memory cgroups for local OOM) and
:mod:`.proxy` (the loopback TCP fault proxy on ssh's ``connect_via`` seam).

May import: the kernel core (its port and the ``Kernel`` protocol), ``transports``,
``errors`` and ``procs``; never pytest (the plugin drives this package) and never ``leaks``.
"""

from .faulty_transport import FaultyTransport
from .harness import HarnessKernel, HostGoneError
from .spec import FaultSpec

__all__ = ["FaultSpec", "FaultyTransport", "HarnessKernel", "HostGoneError"]
