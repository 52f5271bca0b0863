"""pytest-hermes-kernel: session-persistent Python kernels and the pytest kit that tests them.

Public API::

    from pytest_hermes_kernel import start_kernel, KernelRegistry, KernelKey

    with start_kernel("local") as k:
        k.execute("x = 41")
        assert k.execute("x + 1").value == "42"
"""

from __future__ import annotations

from typing import Any

from .errors import (CellInterrupted, CellTimeoutError, HermesKernelError, HermesLeakWarning, KernelAbandoned,
                     KernelDiedError, KernelResetAfterTimeout, KernelResetFailed, KernelRestartedError,
                     FrameTooLargeError, KernelShutdownError, KernelStartError, ToolCallRefused,
                     TransportLostError)
from .api import KernelRegistry, start_kernel
from .kernel.handle import KernelHandle
from .kernel.lifecycle import KernelState
from .kernel.options import KernelOptions
from .kernel.registry import KernelKey
from .kernel.results import CellResult, ExitInfo, KernelInfo
from .kernel.rpc import ToolTable
from .kernel.watchdog import WatchdogPolicy

__version__ = "0.1.0"

__all__ = [
    "start_kernel", "KernelHandle", "KernelState", "KernelOptions", "KernelRegistry", "KernelKey", "CellResult",
    "KernelInfo", "ExitInfo", "ToolTable", "WatchdogPolicy", "HermesKernelError", "KernelDiedError", "KernelRestartedError",
    "KernelShutdownError", "FrameTooLargeError", "KernelStartError", "TransportLostError", "CellTimeoutError",
    "CellInterrupted", "KernelResetAfterTimeout", "KernelResetFailed", "KernelAbandoned", "ToolCallRefused",
    "HermesLeakWarning",
    "HostGoneError",
]


def __getattr__(name: str) -> Any:
    if name == "HostGoneError":  # lives with the host harness; imported on first use
        from .faults.harness import HostGoneError

        return HostGoneError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
