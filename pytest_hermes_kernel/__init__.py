"""pytest-hermes-kernel: session-persistent Python kernels and the pytest kit that tests them.

Public API::

    from pytest_hermes_kernel import start_kernel, KernelRegistry, KernelKey

    with start_kernel("local") as k:
        k.execute("x = 41")
        assert k.execute("x + 1").value == "42"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (CellInterrupted, CellTimeoutError, ChannelHeldHereError, ConfigError, FileTransferError, FrameTooLargeError,
                     HermesKernelError, TransferTooLargeError, UnsafePathError,
                     HermesLeakCheckIncompleteWarning, HermesLeakWarning, HostGoneError, KernelAbandoned, KernelDiedError, KernelForkedError,
                     KernelResetAfterTimeout,
                     KernelResetFailed, KernelShutdownError, KernelStartError, ToolCallRefused, TransportLostError,
                     TransportUnavailableError)

if TYPE_CHECKING:
    from .api import KernelRegistry, start_kernel
    from .kernel.aio import aexecute
    from .kernel.files import RejectedEntry, TransferReport
    from .kernel.handle import KernelHandle
    from .kernel.lifecycle import KernelState
    from .kernel.options import KernelOptions
    from .kernel.registry import KernelKey
    from .kernel.results import CellResult, ExitInfo, KernelInfo
    from .kernel.rpc import ToolTable
    from .kernel.watchdog import WatchdogPolicy

#: Where each public name that is not an exception lives: imported on first use, so that a
#: pytest run that loads the plugin and starts no kernel does not import the kernel core.
_LAZY = {
    "KernelRegistry": ".api", "start_kernel": ".api", "aexecute": ".kernel.aio", "RejectedEntry": ".kernel.files",
    "TransferReport": ".kernel.files", "KernelHandle": ".kernel.handle", "KernelState": ".kernel.lifecycle",
    "KernelOptions": ".kernel.options", "KernelKey": ".kernel.registry", "CellResult": ".kernel.results",
    "ExitInfo": ".kernel.results", "KernelInfo": ".kernel.results", "ToolTable": ".kernel.rpc",
    "WatchdogPolicy": ".kernel.watchdog",
}


def __getattr__(name: str) -> Any:
    """The public names of :data:`_LAZY`, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    """The module's names with the lazy ones of :data:`_LAZY` (a REPL's completion listed none of them)."""
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
    "start_kernel", "aexecute", "KernelHandle", "KernelState", "KernelOptions", "KernelRegistry", "KernelKey", "CellResult",
    "KernelInfo", "ExitInfo", "ToolTable", "WatchdogPolicy", "HermesKernelError", "ConfigError", "KernelDiedError",
    "HostGoneError", "KernelShutdownError", "KernelForkedError", "ChannelHeldHereError", "FrameTooLargeError", "KernelStartError", "TransportLostError",
    "TransportUnavailableError", "CellTimeoutError", "CellInterrupted", "KernelResetAfterTimeout", "KernelResetFailed",
    "KernelAbandoned", "ToolCallRefused", "HermesLeakWarning", "HermesLeakCheckIncompleteWarning", "TransferReport", "RejectedEntry", "FileTransferError",
    "UnsafePathError", "TransferTooLargeError",
]
