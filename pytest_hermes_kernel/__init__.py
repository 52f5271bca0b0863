"""pytest-hermes-kernel: session-persistent Python kernels and the pytest kit that tests them.

Public API::

    from pytest_hermes_kernel import start_kernel, KernelRegistry, KernelKey

    with start_kernel("local") as k:
        k.execute("x = 41")
        assert k.execute("x + 1").value == "42"
"""

from __future__ import annotations

from .errors import (CellInterrupted, CellTimeoutError, ConfigError, FrameTooLargeError, HermesKernelError,
                     HermesLeakWarning, HostGoneError, KernelAbandoned, KernelDiedError, KernelForkedError,
                     KernelResetAfterTimeout,
                     KernelResetFailed, KernelShutdownError, KernelStartError, ToolCallRefused, TransportLostError,
                     TransportUnavailableError)
from .api import KernelRegistry, start_kernel
from .kernel.aio import aexecute
from .kernel.handle import KernelHandle
from .kernel.lifecycle import KernelState
from .kernel.options import KernelOptions
from .kernel.registry import KernelKey
from .kernel.results import CellResult, ExitInfo, KernelInfo
from .kernel.rpc import ToolTable
from .kernel.watchdog import WatchdogPolicy

__version__ = "0.1.0"

__all__ = [
    "start_kernel", "aexecute", "KernelHandle", "KernelState", "KernelOptions", "KernelRegistry", "KernelKey", "CellResult",
    "KernelInfo", "ExitInfo", "ToolTable", "WatchdogPolicy", "HermesKernelError", "ConfigError", "KernelDiedError",
    "HostGoneError", "KernelShutdownError", "KernelForkedError", "FrameTooLargeError", "KernelStartError", "TransportLostError",
    "TransportUnavailableError", "CellTimeoutError", "CellInterrupted", "KernelResetAfterTimeout", "KernelResetFailed",
    "KernelAbandoned", "ToolCallRefused", "HermesLeakWarning",
]
