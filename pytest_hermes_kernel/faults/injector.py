"""Firing faults at a kernel, by cell count or on demand.

:class:`FaultingKernel` wraps a kernel (a :class:`KernelHandle`, or a :class:`HarnessKernel`
for ``host_sigkill``) and fires its :class:`FaultSpec` list at their trigger points.
:class:`FaultyStream` wraps a channel's byte stream to reset it, black-hole it or slow it down:
the way to cut a docker or ssh kernel's stream without touching the kernel (its runner keeps
its state, so the next cell re-attaches).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..kernel.results import CellResult
from .proxy import ProxyRoute
from .spec import FaultSpec


class FaultyStream:
    """A :class:`ByteStream` wrapper that can be reset, black-holed or slowed.

    ``reset``: the next ``send``/``recv`` raises ``ConnectionResetError`` and the inner stream is
    closed. ``blackhole``: reads see nothing and writes vanish (the peer is silent, no FIN or
    RST) until ``until`` (monotonic seconds; ``None``: forever). ``latency``: each read waits
    ``latency`` seconds first.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.mode: str | None = None
        self.until: float | None = None
        self.latency = 0.0

    def _active(self) -> str | None:
        if self.mode in ("blackhole", "latency") and self.until is not None and time.monotonic() >= self.until:
            self.mode = None
        return self.mode

    def send(self, data: bytes) -> None:
        mode = self._active()
        if mode == "reset":
            raise ConnectionResetError("connection reset (injected transport_drop)")
        if mode == "blackhole":
            return
        self.inner.send(data)

    def recv(self, timeout: float | None) -> bytes:
        mode = self._active()
        if mode == "reset":
            raise ConnectionResetError("connection reset (injected transport_drop)")
        if mode == "blackhole":
            time.sleep(min(timeout if timeout is not None else 0.1, 0.1))
            raise TimeoutError
        if mode == "latency":
            time.sleep(self.latency)
        return self.inner.recv(timeout)

    def close(self) -> None:
        self.inner.close()

    def drop(self, mode: str, duration: float | None = None, latency: float = 0.2) -> None:
        self.until = None if duration is None else time.monotonic() + duration
        self.latency = latency
        self.mode = mode
        if mode == "reset":
            self.inner.close()


@dataclass
class FiredFault:
    """A fault that fired: when (monotonic seconds) and at which cell."""

    spec: FaultSpec
    at: float
    cell: int


def kernel_sigkill(kernel: Any) -> None:
    """SIGKILL the kernel's worker from outside, where it runs (local pid or inside the container)."""
    handle = getattr(kernel, "handle", kernel)
    if hasattr(handle, "kill_host"):  # a harness kernel: the pid is local to its host's transport
        from ..transports import get_transport

        get_transport(handle.transport_name).signal_pid(None, handle.pid, signal.SIGKILL)  # type: ignore[arg-type]
        return
    handle.transport.signal_pid(handle.launched, handle.pid, signal.SIGKILL)
    if handle.transport.name == "local":  # wait until it is really dead (a zombie), bounded
        from ..procs import pid_alive

        deadline = time.monotonic() + 5.0
        while pid_alive(handle.pid) and time.monotonic() < deadline:
            time.sleep(0.005)


def transport_drop(kernel: Any, mode: str = "reset", duration: float | None = None, latency: float = 0.2) -> None:
    """Break the channel of a docker/ssh/user stream kernel (see :class:`FaultyStream`).

    :raises ConfigError: on a transport without a re-attachable stream (local: its channel is
        the parent-death lease, so a drop there is a host death: use ``host_sigkill``).
    """
    handle = getattr(kernel, "handle", kernel)
    if not getattr(handle.transport, "reattachable", False):
        raise ConfigError(f"transport_drop does not apply to the {handle.transport.name} transport: "
                          "it has no re-attachable stream (for local, a drop is a host death: use host_sigkill)")
    proxy = _proxy_of(handle.transport)
    if proxy is not None:  # ssh through the loopback TCP fault proxy: cut the connection itself
        if mode == "reset":
            proxy.reset()
        elif mode == "blackhole":
            proxy.blackhole(duration)
        else:
            proxy.latency(latency, duration)
        return
    channel = handle._channel
    if channel is None:
        raise ConfigError("transport_drop: the kernel has no channel yet (run a cell first)")
    if not isinstance(channel.stream, FaultyStream):
        channel.stream = FaultyStream(channel.stream)
    channel.stream.drop(mode, duration, latency)


class FaultingKernel:
    """A kernel with faults that fire at their trigger points (see module docstring).

    It has the kernel's API (attribute access falls through to the wrapped kernel).
    """

    def __init__(self, kernel: Any, specs: Sequence[FaultSpec]) -> None:
        self.handle = kernel
        self.specs = [s for s in specs if s.kind != "oom"]
        self.cells = 0
        self.fired: list[FiredFault] = []
        self._timers: list[threading.Timer] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def execute(self, code: str, **kwargs: Any) -> CellResult:
        self.cells += 1
        n = self.cells
        for spec in self.specs:
            if spec.after_cell is not None and spec.after_cell == n - 1 and not self._has_fired(spec):
                self.fire(spec)
            if spec.during_cell == n:
                timer = threading.Timer(spec.delay, self.fire, args=(spec,))
                timer.daemon = True
                self._timers.append(timer)
                timer.start()
        return self.handle.execute(code, **kwargs)

    def _has_fired(self, spec: FaultSpec) -> bool:
        return any(f.spec is spec for f in self.fired)

    def fire(self, spec: FaultSpec) -> None:
        """Inject ``spec`` now."""
        self.fired.append(FiredFault(spec, time.monotonic(), self.cells))
        if spec.kind == "kernel_sigkill":
            kernel_sigkill(self.handle)
        elif spec.kind == "host_sigkill":
            self.handle.kill_host()
        elif spec.kind == "transport_drop":
            transport_drop(self.handle, spec.mode, spec.duration, spec.latency)

    def finish(self) -> None:
        """End the test's faults: stop timers and heal drops (a fault lasts at most until its test
        ends), so the kernel can be shut down cleanly and nothing is left for the leak check."""
        for timer in self._timers:
            timer.cancel()
        heal(self.handle)


def heal(kernel: Any) -> None:
    """End a blackhole or latency fault on ``kernel``'s link (proxy or stream); idempotent."""
    handle = getattr(kernel, "handle", kernel)
    transport = getattr(handle, "transport", None)
    proxy = _proxy_of(transport)
    if proxy is not None:
        proxy.heal()
    channel = getattr(handle, "_channel", None)
    if channel is not None and isinstance(channel.stream, FaultyStream) and channel.stream.mode != "reset":
        channel.stream.mode = None


def _proxy_of(transport: Any) -> Any:
    """The :class:`TcpFaultProxy` on an ssh transport's ``connect_via`` seam, if any."""
    route = getattr(transport, "connect_via", None)
    return route.proxy if isinstance(route, ProxyRoute) else None
