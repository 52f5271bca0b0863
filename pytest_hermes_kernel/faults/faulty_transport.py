"""A decorator transport that can break its kernels' channels: how ``transport_drop`` is injected.

:class:`FaultyTransport` wraps any :class:`~pytest_hermes_kernel.kernel.contract.Transport` and
delegates every method of the port to it; the one difference is that each :class:`ByteStream`
it hands out (from :meth:`~FaultyTransport.launch` and :meth:`~FaultyTransport.reattach`) is a
:class:`FaultyStream` that :meth:`~FaultyTransport.drop` can reset, black-hole or slow down.
Nobody reaches into a kernel's private channel: the kernel sees a broken stream exactly as it
would see a broken docker attach stream, and re-attaches through the same transport.

Semantics (DESIGN.md section 8): a drop faults the streams open *now*. The stream a re-attach
opens is a fresh, unfaulted one (the runner kept its state: the next cell finds it). A
``blackhole`` or ``latency`` with a ``duration`` ends by itself; :meth:`~FaultyTransport.heal`
ends them at once. With a :class:`~.proxy.ProxyRoute` (ssh), drops cut the TCP connection in
front of sshd instead: that is a real drop of the link, and re-attaching meets it too.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from ..errors import ConfigError
from ..kernel.contract import ByteStream, Launched, LaunchSpec, Transport
from ..kernel.files import KernelFiles
from .proxy import ProxyRoute, TcpFaultProxy
from .spec import DropMode

__all__ = ["FaultyStream", "FaultyTransport"]

_POLL_S = 0.1
"""How often a black-holed read re-checks whether its fault ended (seconds)."""


class FaultyStream:
    """A :class:`ByteStream` wrapper that can be reset, black-holed or slowed.

    ``reset``: the inner stream is closed; every later ``send``/``recv`` raises
    ``ConnectionResetError``. ``blackhole``: reads see nothing and writes vanish (the peer is
    silent, no FIN or RST) until the fault ends. ``latency``: each read waits ``latency``
    seconds first.

    :param inner: the transport's stream.
    """

    def __init__(self, inner: ByteStream) -> None:
        self.inner = inner
        self.mode: DropMode | None = None
        self.until: float | None = None
        self.latency = 0.0
        self._wake = threading.Event()

    def drop(self, mode: DropMode, duration: float | None = None, latency: float = 0.2) -> None:
        """Start a fault now.

        :param duration: seconds a ``blackhole``/``latency`` lasts (``None``: until :meth:`heal`).
        :param latency: seconds added to every read in ``latency`` mode.
        """
        self.until = None if duration is None else time.monotonic() + duration
        self.latency = latency
        self._wake.clear()
        self.mode = mode
        if mode == "reset":
            self.inner.close()

    def heal(self) -> None:
        """End a ``blackhole`` or ``latency`` fault (a reset stream stays broken); idempotent."""
        if self.mode in ("blackhole", "latency"):
            self.mode = None
        self._wake.set()

    def active(self) -> DropMode | None:
        """The fault in force now (a timed one that ran out is over)."""
        if self.mode in ("blackhole", "latency") and self.until is not None and time.monotonic() >= self.until:
            self.mode = None
        return self.mode

    def send(self, data: bytes) -> None:
        mode = self.active()
        if mode == "reset":
            raise ConnectionResetError("connection reset (injected transport_drop)")
        if mode != "blackhole":
            self.inner.send(data)

    def recv(self, timeout: float | None) -> bytes:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.active() == "blackhole" and not self._wake.is_set():
            left = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if left <= 0:
                raise TimeoutError("nothing arrived (injected blackhole)")
            self._wake.wait(left)
        mode = self.active()
        if mode == "reset":
            raise ConnectionResetError("connection reset (injected transport_drop)")
        if mode == "latency":
            self._wake.wait(self.latency)  # added on top of the read's own timeout
        return self.inner.recv(timeout)

    def close(self) -> None:
        self._wake.set()
        self.inner.close()


@dataclasses.dataclass
class _Kernel:
    """One launch through the wrapper: what the caller holds, what the inner transport made, and
    the stream of it that is open now."""

    outer: Launched
    inner: Launched
    stream: FaultyStream


class FaultyTransport(Transport):
    """``inner`` with channels that can be broken on demand (see module docstring).

    ``name``, ``reattachable``, ``orphan_timeout``, ``attached_after_host_s`` and ``runs_on_this_host`` are the inner
    transport's, so kernels report the inner transport's name. :meth:`close` closes the inner
    transport: wrap a transport you own, or do not close the wrapper.

    :param inner: the transport that really runs the kernels.
    :param link: the TCP fault proxy route the inner transport connects through (ssh's
        ``connect_via``); drops then cut that link instead of the streams.
    """

    def __init__(self, inner: Transport, *, link: ProxyRoute | None = None) -> None:
        self.inner = inner
        self.link = link
        self._lock = threading.Lock()
        self._kernels: dict[int, _Kernel] = {}

    # the port's class-level facts, read from the inner transport (properties shadow them)
    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def reattachable(self) -> bool:  # type: ignore[override]
        return self.inner.reattachable

    @property
    def keepable(self) -> bool:  # type: ignore[override]
        return self.inner.keepable

    @property
    def orphan_timeout(self) -> float | None:  # type: ignore[override]
        return self.inner.orphan_timeout

    @property
    def attached_after_host_s(self) -> float:  # type: ignore[override]
        return self.inner.attached_after_host_s

    @property
    def runs_on_this_host(self) -> bool:
        return self.inner.runs_on_this_host

    # ------------------------------------------------------------------------------ faults
    def drop(self, mode: DropMode, duration: float | None = None, latency: float = 0.2, *,
             launched: Launched | None = None) -> None:
        """Break the channel of ``launched``'s kernel, or of every kernel when ``None``.

        :param mode: ``reset``, ``blackhole`` or ``latency`` (see :class:`FaultyStream`).
        :param duration: seconds a ``blackhole``/``latency`` lasts (``None``: until :meth:`heal`).
        :param latency: seconds added to every read in ``latency`` mode.
        :raises ConfigError: if the inner transport cannot re-attach (a drop there is a death),
            or no kernel of this transport has a channel yet.
        """
        if not self.inner.reattachable:
            raise ConfigError(f"transport_drop does not apply to the {self.name} transport: it has no "
                              "re-attachable stream (for local, a drop is a host death: use host_sigkill)")
        streams = self._streams(launched)
        if not streams:
            raise ConfigError(f"transport_drop: no kernel on this {self.name} transport has a channel yet "
                              "(start the kernel first)")
        proxy = self.link.proxy if self.link is not None else None
        if proxy is not None:  # ssh: cut the TCP connection in front of sshd
            _drop_link(proxy, mode, duration, latency)
            return
        for stream in streams:
            stream.drop(mode, duration, latency)

    def heal(self) -> None:
        """End every ``blackhole`` or ``latency`` fault of this transport now; idempotent."""
        if self.link is not None and self.link.proxy is not None:
            self.link.proxy.heal()
        for stream in self._streams(None):
            stream.heal()

    def _streams(self, launched: Launched | None) -> list[FaultyStream]:
        with self._lock:
            if launched is None:
                return [k.stream for k in self._kernels.values()]
            kernel = self._kernels.get(id(launched))
            return [] if kernel is None else [kernel.stream]

    def _inner_of(self, launched: Launched) -> Launched:
        with self._lock:
            kernel = self._kernels.get(id(launched))
        return launched if kernel is None else kernel.inner

    # ------------------------------------------------------------------------------ the port
    def launch(self, spec: LaunchSpec) -> Launched:
        inner = self.inner.launch(spec)
        stream = FaultyStream(inner.stream)
        outer = dataclasses.replace(inner, stream=stream)
        with self._lock:
            self._kernels[id(outer)] = _Kernel(outer, inner, stream)
        return outer

    def reattach(self, launched: Launched) -> ByteStream:
        stream = FaultyStream(self.inner.reattach(self._inner_of(launched)))
        with self._lock:
            kernel = self._kernels.get(id(launched))
            if kernel is not None:
                kernel.stream = stream  # the fresh stream is unfaulted; later drops hit it
        return stream

    def kill(self, launched: Launched) -> bool:
        return self.inner.kill(self._inner_of(launched))

    def alive(self, launched: Launched) -> bool:
        return self.inner.alive(self._inner_of(launched))

    def seen_gone(self, launched: Launched) -> bool:
        return self.inner.seen_gone(self._inner_of(launched))

    def reap(self, launched: Launched, timeout: float) -> bool:
        return self.inner.reap(self._inner_of(launched), timeout)

    def frozen(self, launched: Launched) -> bool:
        return self.inner.frozen(self._inner_of(launched))

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        self.inner.note_leftovers(self._inner_of(launched), kernel_id, processes)

    def cleanup(self, launched: Launched) -> None:
        self.inner.cleanup(self._inner_of(launched))
        with self._lock:
            self._kernels.pop(id(launched), None)

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        return self.inner.runner_log(self._inner_of(launched), lines)

    def host_log(self, launched: Launched, lines: int = 20) -> str:
        return self.inner.host_log(self._inner_of(launched), lines)

    def exit_status(self, launched: Launched, timeout: float) -> int | None:
        return self.inner.exit_status(self._inner_of(launched), timeout)

    def sweep_stale(self, max_age_s: float) -> int:
        return self.inner.sweep_stale(max_age_s)

    def release(self, launched: Launched) -> None:
        self.inner.release(self._inner_of(launched))

    def attach_kept(self, locator: dict[str, Any]) -> Launched:
        return self.inner.attach_kept(locator)  # a kept kernel's later stream is never faulted

    def cleanup_kept(self, locator: dict[str, Any]) -> None:
        self.inner.cleanup_kept(locator)

    def keep_address(self, launched: Launched) -> str | None:
        return self.inner.keep_address(self._inner_of(launched))

    def locator(self, launched: Launched) -> dict[str, Any]:
        return self.inner.locator(self._inner_of(launched))

    def kept_locator(self, launched: Launched) -> dict[str, Any]:
        return self.inner.kept_locator(self._inner_of(launched))

    def files(self, launched: Launched, workdir: str) -> KernelFiles:
        return self.inner.files(self._inner_of(launched), workdir)

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        return self.inner.kernel_processes(kernel_id, locator)

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        return self.inner.leak_snapshot(host_pid)

    def leak_cleanup(self, kind: str, identity: str) -> None:
        self.inner.leak_cleanup(kind, identity)

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        self.inner.signal_pid(None if launched is None else self._inner_of(launched), pid, sig)

    def describe(self) -> str:
        return f"{self.inner.describe()} (fault injection: transport_drop)"

    def close(self) -> None:
        self.inner.close()

    def was_closed(self) -> bool:
        return self.inner.was_closed()


def _drop_link(proxy: TcpFaultProxy, mode: DropMode, duration: float | None, latency: float) -> None:
    """Fault the TCP link itself through the loopback proxy."""
    if mode == "reset":
        proxy.reset()
    elif mode == "blackhole":
        proxy.blackhole(duration)
    else:
        proxy.latency(latency, duration)
