"""A loopback TCP fault proxy: put it between an ssh client and sshd to break the link.

Listens on ``127.0.0.1`` only and forwards to one upstream address (which must itself be a
loopback address or one of the run's own containers). Faults, on demand or scheduled:

* ``reset()``: every open connection is closed with an RST (``SO_LINGER`` 0);
* ``blackhole(duration)``: bytes stop flowing both ways and new connections hang: no FIN, no
  RST, the peer just goes silent (what a paused host or a dead network looks like);
* ``latency(seconds, duration)``: every chunk is held back that long.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time



class ProxyRoute:
    """The ssh transport's ``connect_via`` seam with a :class:`TcpFaultProxy` on it.

    The first call starts a proxy in front of ``(host, port)``; later calls reuse it while the
    upstream stays the same (a new sshd address gets a new proxy). :attr:`proxy` is what the
    injector cuts.
    """

    def __init__(self) -> None:
        self.proxy: TcpFaultProxy | None = None
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int) -> tuple[str, int]:
        with self._lock:
            if self.proxy is None or self.proxy.upstream != (host, port):
                if self.proxy is not None:
                    self.proxy.close()
                self.proxy = TcpFaultProxy((host, port))
            return "127.0.0.1", self.proxy.port

    def close(self) -> None:
        with self._lock:
            proxy, self.proxy = self.proxy, None
        if proxy is not None:
            proxy.close()


#: Seconds :meth:`TcpFaultProxy.reset` waits for the proxy's thread to make the cut before making it itself.
RESET_WAIT_S = 5.0


class TcpFaultProxy:
    """See module docstring. Use as a context manager; :attr:`port` is where clients connect.

    :param upstream: ``(host, port)`` to forward to.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._blackhole_until: float | None = None
        self._latency = 0.0
        self._latency_until: float | None = None
        self.connections = 0
        self._reset_requests: list[tuple[threading.Event, list[int]]] = []
        self._sending: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, name="hermes-tcp-fault-proxy", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------ faults
    def reset(self) -> int:
        """RST every open connection; return how many were cut.

        The proxy thread does the cutting (it owns the selector), so a new connection can never
        collide with a socket closed under it; this waits for that cut (a 2-s wait whose end was
        not looked at returned the last reset's count while a held-up thread had cut nothing yet),
        or cuts itself once that thread has ended (``close()``: it ends without serving a request), or
        has not come round within :data:`RESET_WAIT_S` (and a ``latency`` fault's hold): a thread
        blocked sending to a peer that reads nothing comes round never, and ``reset()`` and
        ``close()`` waited for it for ever; the cut wakes it.
        """
        done, cut = threading.Event(), []
        self._reset_requests.append((done, cut))
        deadline = time.monotonic() + RESET_WAIT_S + (self._latency if self._latency_until is not None else 0.0)
        while self._thread.is_alive() and not done.wait(0.05) and time.monotonic() < deadline:
            pass
        if done.is_set():
            return cut[0]
        try:
            self._reset_requests.remove((done, cut))
        except ValueError:  # the thread has just taken it: its cut comes at once
            while not done.wait(0.05) and self._thread.is_alive():
                pass
            return cut[0] if cut else self._cut_all(None)
        return self._cut_all(None, wake=self._thread.is_alive())

    def _cut_all(self, sel: selectors.BaseSelector | None, wake: bool = False) -> int:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            for sock in (a, b):
                if sel is not None:
                    try:
                        sel.unregister(sock)
                    except (KeyError, ValueError):
                        pass
                if wake and sock is self._sending:  # (a close alone leaves the thread's send on it blocked)
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                reset_socket(sock)
        return len(pairs)

    def blackhole(self, duration: float | None = None) -> None:
        """Stop all traffic (``None``: until :meth:`heal`)."""
        self._blackhole_until = float("inf") if duration is None else time.monotonic() + duration

    def latency(self, seconds: float, duration: float | None = None) -> None:
        self._latency = seconds
        self._latency_until = float("inf") if duration is None else time.monotonic() + duration

    def heal(self) -> None:
        """End a blackhole or latency fault."""
        self._blackhole_until = None
        self._latency_until = None

    def _blackholed(self) -> bool:
        until = self._blackhole_until
        return until is not None and time.monotonic() < until

    # ------------------------------------------------------------------------------ forwarding
    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        self._listener.setblocking(False)
        sel.register(self._listener, selectors.EVENT_READ, None)
        peers: dict[socket.socket, socket.socket] = {}
        while not self._stop.is_set():
            while self._reset_requests:
                done, cut = self._reset_requests.pop(0)
                cut.append(self._cut_all(sel))
                for s in [s for s in peers]:
                    peers.pop(s, None)
                done.set()
            if self._blackholed():
                time.sleep(0.02)  # nothing moves; connections stay open and silent
                continue
            for key, _ in sel.select(0.05):
                if key.data is None:
                    self._accept(sel, peers)
                else:
                    self._pump(sel, peers, key.fileobj)  # type: ignore[arg-type]
            with self._lock:
                live = {s for pair in self._pairs for s in pair}
            for s in [s for s in peers if s not in live]:
                try:
                    sel.unregister(s)
                except (KeyError, ValueError):
                    pass
                peers.pop(s, None)
        sel.close()

    def _accept(self, sel: selectors.BaseSelector, peers: dict[socket.socket, socket.socket]) -> None:
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            reset_socket(client)
            return
        for s in (client, upstream):
            s.setblocking(True)
            sel.register(s, selectors.EVENT_READ, "peer")
        peers[client], peers[upstream] = upstream, client
        with self._lock:
            self._pairs.append((client, upstream))
        self.connections += 1

    def _pump(self, sel: selectors.BaseSelector, peers: dict[socket.socket, socket.socket], s: socket.socket) -> None:
        other = peers.get(s)
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if self._latency_until is not None and time.monotonic() < self._latency_until:
            time.sleep(self._latency)
        if not data or other is None:
            self._close_pair(sel, peers, s)
            return
        self._sending = other  # (a reset that cannot wait for this send wakes it: :meth:`reset`)
        try:
            other.sendall(data)
        except OSError:
            self._close_pair(sel, peers, s)
        finally:
            self._sending = None

    def _close_pair(self, sel: selectors.BaseSelector, peers: dict[socket.socket, socket.socket], s: socket.socket) -> None:
        other = peers.pop(s, None)
        for sock in (s, other):
            if sock is None:
                continue
            peers.pop(sock, None)
            try:
                sel.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()
        with self._lock:
            self._pairs = [p for p in self._pairs if s not in p]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.reset()
        self._listener.close()

    def __enter__(self) -> TcpFaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reset_socket(sock: socket.socket) -> None:
    """Close ``sock`` with an RST instead of a FIN (``SO_LINGER`` 0)."""
    import struct

    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()
