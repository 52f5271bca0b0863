"""Probes the contract suite uses: waiting with deadlines, and pids seen *where the kernel runs*.

A docker or ssh kernel's pids mean nothing in this host's process table, so every pid check
goes through the transport (:meth:`Transport.kernel_processes`, :meth:`Transport.signal_pid`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_until(pred: Callable[[], T], timeout: float, *, interval: float = 0.02, what: str = "") -> T:
    """Poll ``pred`` until it returns something truthy; return that value.

    :param timeout: seconds before giving up.
    :raises AssertionError: if ``pred`` stayed falsy for ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or getattr(pred, '__name__', pred)}")
        time.sleep(interval)


def kernel_pids(kernel: Any, kernel_id: str | None = None) -> set[int]:
    """Live (non-zombie) pids of ``kernel``'s processes where it runs (host, container, ssh host)."""
    transport, launched = kernel.transport, kernel.launched
    locator = transport.locator(launched) if launched is not None else None
    lines = transport.kernel_processes(kernel_id or kernel.kernel_id, locator)
    return {int(line.split(":", 1)[0]) for line in lines}


def gone_in_kernel(kernel: Any, pid: int | None) -> bool:
    """True when ``pid`` (a pid where ``kernel`` runs) is no longer one of its live processes."""
    return pid is None or pid not in kernel_pids(kernel)


def signal_in_kernel(kernel: Any, pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid`` where ``kernel`` runs (never to a host pid of the same number)."""
    try:
        kernel.transport.signal_pid(kernel.launched, pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
