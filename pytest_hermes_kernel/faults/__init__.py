"""Fault injection: specs, the injector, the host harness, memory cgroups, the TCP fault proxy."""

from .harness import HarnessKernel, HostGoneError
from .spec import FaultSpec

__all__ = ["FaultSpec", "HarnessKernel", "HostGoneError"]
