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
                     KernelShutdownError, KernelStartError, ToolCallRefused, TransportLostError)
from .kernel.handle import KernelHandle, KernelOptions
from .kernel.protocol import CellResult, ExitInfo, KernelInfo
from .kernel.registry import KernelKey, KernelRegistry
from .kernel.rpc import ToolTable
from .kernel.watchdog import WatchdogPolicy

__version__ = "0.1.0"

__all__ = [
    "start_kernel", "KernelHandle", "KernelOptions", "KernelRegistry", "KernelKey", "CellResult", "KernelInfo",
    "ExitInfo", "ToolTable", "WatchdogPolicy", "HermesKernelError", "KernelDiedError", "KernelRestartedError",
    "KernelShutdownError", "KernelStartError", "TransportLostError", "CellTimeoutError", "CellInterrupted",
    "KernelResetAfterTimeout", "KernelResetFailed", "KernelAbandoned", "ToolCallRefused", "HermesLeakWarning",
    "HostGoneError",
]


def __getattr__(name: str) -> Any:
    if name == "HostGoneError":  # lives with the host harness; imported on first use
        from .faults.harness import HostGoneError

        return HostGoneError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def start_kernel(transport: Any = "local", *, tools: Any = None, **options: Any) -> KernelHandle:
    """Start a kernel and return its handle (use it as a context manager to shut it down).

    :param transport: a transport name (``local``, ``docker``, ``ssh``, ``filecell``) or a
        :class:`~pytest_hermes_kernel.transports.Transport` instance.
    :param tools: ``{name: callable}`` offered to cells as ``hermes_tools.<name>``.
    :param options: fields of :class:`KernelOptions` (``timeout=``, ``max_output_bytes=``, ...).
    :raises ConfigError: for an unknown transport or option.
    :raises KernelStartError: if the kernel does not start.
    """
    from .errors import ConfigError
    from .transports import get_transport

    try:
        opts = KernelOptions(**options)
    except TypeError as exc:
        raise ConfigError(f"bad kernel option: {exc}") from None
    t = get_transport(transport) if isinstance(transport, str) else transport
    return KernelHandle(t, opts, tools=tools).start()
