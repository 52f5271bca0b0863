"""A loopback TCP fault proxy: put it between an ssh client and sshd to break the link.

Listens on ``127.0.0.1`` only and forwards to one upstream address (which must itself be a
loopback address or one of the run's own containers). Faults, on demand or scheduled:

* ``reset()``: every open connection is closed with an RST (``SO_LINGER`` 0);
* ``blackhole(duration)``: bytes stop flowing both ways and new connections hang: no FIN, no
  RST, the peer just goes silent (what a paused host or a dead network looks like);
* ``latency(seconds, duration)``: every chunk is held back that long.

One thread relays every connection with non-blocking sockets: a peer that reads nothing holds
back only its own connection (at most :data:`MAX_HELD_BYTES` read from its other end, then that
end is not read until it drains), and a ``latency`` fault holds each chunk ``seconds`` from when it
was read, on every connection at once (a relay that slept per chunk in one thread added the
holds up, and a send blocked on one connection stalled them all). An end's FIN is passed on after what
it sent; the pair is closed once both ways ended (a half-closed client still reads its answer).
A new connection's connect upstream does not block either (its client is reset after
:data:`CONNECT_TIMEOUT_S`).
"""

from __future__ import annotations

import collections
import errno
import selectors
import socket
import threading
import time
from typing import Any



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


#: Bytes read from one end of a connection and not yet taken by the other before the proxy stops
#: reading that end (a peer that reads nothing then fills its sender's buffers, as without a proxy).
MAX_HELD_BYTES = 1 << 20
#: Seconds a new connection's connect to the upstream may take before its client is reset.
CONNECT_TIMEOUT_S = 5.0
#: Seconds :meth:`TcpFaultProxy.reset` waits for the proxy's thread to make the cut before making it itself.
RESET_WAIT_S = 5.0

#: New connections whose connect upstream is under way: by that socket, its client, deadline and the
#: addresses left to try.
_Connecting = dict[socket.socket, tuple[socket.socket, float, list[Any]]]


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
        self._heals = 0  # how many heal() calls: the thread lets held chunks go at each
        self._thread = threading.Thread(target=self._serve, name="hermes-tcp-fault-proxy", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------ faults
    def reset(self) -> int:
        """RST every open connection; return how many were cut.

        The proxy thread does the cutting (it owns the selector), so a new connection can never
        collide with a socket closed under it; this waits for that cut (a 2-s wait whose end was
        not looked at returned the last reset's count while a held-up thread had cut nothing yet),
        or cuts itself once that thread has ended (``close()``: it ends without serving a request), or
        has not come round within :data:`RESET_WAIT_S` (the thread never blocks, so only a stalled
        process misses that).
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
        return self._cut_all(None)

    def _cut_all(self, sel: selectors.BaseSelector | None) -> int:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:
            for sock in (a, b):
                if sel is not None:
                    _unregister(sel, sock)
                reset_socket(sock)
        return len(pairs)

    def blackhole(self, duration: float | None = None) -> None:
        """Stop all traffic (``None``: until :meth:`heal`)."""
        self._blackhole_until = float("inf") if duration is None else time.monotonic() + duration

    def latency(self, seconds: float, duration: float | None = None) -> None:
        self._latency = seconds
        self._latency_until = float("inf") if duration is None else time.monotonic() + duration

    def heal(self) -> None:
        """End a blackhole or latency fault now: chunks a ``latency`` fault holds go on at once (they were
        held their whole time: a ping read under ``latency(10)`` came back 10 s late after ``heal()``,
        where the docker transport's stream ends its wait at the heal)."""
        self._blackhole_until = None
        self._latency_until = None
        self._heals += 1

    def _blackholed(self) -> bool:
        until = self._blackhole_until
        return until is not None and time.monotonic() < until

    # ------------------------------------------------------------------------------ forwarding
    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        self._listener.setblocking(False)
        sel.register(self._listener, selectors.EVENT_READ, None)
        flows: dict[socket.socket, _Flow] = {}  # by the socket a flow reads from
        connecting: _Connecting = {}  # upstream: (its client, deadline, the addresses left to try)
        heals = self._heals
        while not self._stop.is_set():
            if heals != self._heals:
                heals = self._heals
                for flow in flows.values():  # healed: nothing is held back any more (the order stays)
                    flow.chunks = collections.deque((0.0, data) for _, data in flow.chunks)
            while self._reset_requests:
                done, cut = self._reset_requests.pop(0)
                cut.append(self._cut_all(sel))
                flows.clear()
                connecting.clear()
                done.set()
            if self._blackholed():
                time.sleep(0.02)  # nothing moves; connections stay open and silent
                continue
            with self._lock:
                live = {s for pair in self._pairs for s in pair}
            for s in [s for s in [*flows, *connecting] if s not in live]:  # cut by reset() from the caller's thread
                _unregister(sel, s)
                flows.pop(s, None)
                connecting.pop(s, None)
            now = time.monotonic()
            timeout = 0.05
            for upstream, (_, deadline, _) in list(connecting.items()):
                if deadline <= now:
                    self._connected(sel, flows, connecting, upstream, timed_out=True)
                else:
                    timeout = min(timeout, deadline - now)
            for flow in flows.values():
                timeout = min(timeout, self._interest(sel, flows, flow, now))
            for key, events in sel.select(max(0.0, timeout)):
                if key.data is None:
                    self._accept(sel, connecting)
                    continue
                if key.data == "connect":
                    self._connected(sel, flows, connecting, key.fileobj)  # type: ignore[arg-type]
                    continue
                sock = key.fileobj
                if events & selectors.EVENT_READ and sock in flows:
                    self._read(sel, flows, flows[sock])
                mine = flows.get(sock)  # type: ignore[call-overload]
                into = flows.get(mine.dst) if mine is not None else None  # the flow that writes to it
                if events & selectors.EVENT_WRITE and into is not None:
                    self._write(sel, flows, into)
        sel.close()

    def _interest(self, sel: selectors.BaseSelector, flows: dict[socket.socket, _Flow], flow: _Flow, now: float) -> float:
        """Register what ``flow``'s two ends wait for; return the seconds until its first held chunk is due."""
        reading = not flow.eof and flow.held < MAX_HELD_BYTES  # a peer that reads slowly holds back only its own source
        due = flow.chunks[0][0] - now if flow.chunks else float("inf")
        back = flows.get(flow.dst)  # the other way, which writes to this flow's source
        writing = back is not None and bool(back.chunks) and back.chunks[0][0] <= now
        _register(sel, flow.src, (selectors.EVENT_READ if reading else 0) | (selectors.EVENT_WRITE if writing else 0))
        return due if due > 0 else 0.05

    def _accept(self, sel: selectors.BaseSelector, connecting: _Connecting) -> None:
        """Take a client and start its connection upstream, without waiting for it (a blocking connect to an
        upstream that does not answer, a full backlog or a gone host, stalled every connection up to 5 s)."""
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        client.setblocking(False)
        try:
            addresses = socket.getaddrinfo(*self.upstream[:2], type=socket.SOCK_STREAM)
        except OSError:
            addresses = []
        self._dial(sel, connecting, client, addresses, time.monotonic() + CONNECT_TIMEOUT_S)

    def _dial(self, sel: selectors.BaseSelector, connecting: _Connecting, client: socket.socket,
              addresses: list[Any], deadline: float) -> None:
        """Start ``client``'s connect upstream to the first of ``addresses`` (the next ones are tried as
        each fails, as ``socket.create_connection`` does: a name whose first address refuses); none left:
        reset ``client``."""
        while addresses:
            family, kind, proto, _, address = addresses.pop(0)
            try:
                upstream = socket.socket(family, kind, proto)
            except OSError:
                continue
            upstream.setblocking(False)
            if upstream.connect_ex(address) in (0, errno.EINPROGRESS):
                sel.register(upstream, selectors.EVENT_WRITE, "connect")
                connecting[upstream] = (client, deadline, addresses)
                with self._lock:
                    self._pairs.append((client, upstream))  # (a reset cuts it already)
                return
            upstream.close()
        reset_socket(client)

    def _connected(self, sel: selectors.BaseSelector, flows: dict[socket.socket, _Flow], connecting: _Connecting,
                   upstream: socket.socket, timed_out: bool = False) -> None:
        """``upstream``'s connect ended (or ran out of time): relay its pair, or try the next address."""
        client, deadline, rest = connecting.pop(upstream)
        _unregister(sel, upstream)
        if timed_out:  # (its time may have run out in a blackhole, the connect made meanwhile)
            try:
                timed_out = not upstream.getpeername()
            except OSError:
                pass
        if timed_out or upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            with self._lock:
                self._pairs = [p for p in self._pairs if upstream not in p]
            upstream.close()
            self._dial(sel, connecting, client, [] if timed_out else rest, deadline)
            return
        flows[client], flows[upstream] = _Flow(client, upstream), _Flow(upstream, client)
        self.connections += 1

    def _read(self, sel: selectors.BaseSelector, flows: dict[socket.socket, _Flow], flow: _Flow) -> None:
        try:
            data = flow.src.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            self._close_pair(sel, flows, flow.src)
            return
        if not data:
            flow.eof = True  # what it sent before goes first, then its FIN (the other way goes on: a half-close)
            if not flow.chunks:
                self._pass_fin(sel, flows, flow)
            return
        now = time.monotonic()
        held = self._latency if self._latency_until is not None and now < self._latency_until else 0.0
        due = max(now + held, flow.chunks[-1][0]) if flow.chunks else now + held  # never ahead of an earlier chunk
        flow.chunks.append((due, data))
        flow.held += len(data)
        if held == 0.0:
            self._write(sel, flows, flow)

    def _write(self, sel: selectors.BaseSelector, flows: dict[socket.socket, _Flow], flow: _Flow) -> None:
        now = time.monotonic()
        while flow.chunks and flow.chunks[0][0] <= now:
            due, data = flow.chunks[0]
            try:
                sent = flow.dst.send(data)
            except BlockingIOError:
                return
            except OSError:
                self._close_pair(sel, flows, flow.src)
                return
            flow.held -= sent
            if sent < len(data):
                flow.chunks[0] = (due, data[sent:])
                return
            flow.chunks.popleft()
        if flow.eof and not flow.chunks:
            self._pass_fin(sel, flows, flow)

    def _pass_fin(self, sel: selectors.BaseSelector, flows: dict[socket.socket, _Flow], flow: _Flow) -> None:
        """``flow``'s source ended and all it sent is through: end ``dst``'s way too, and close the pair once
        both ways ended. (The pair was closed at the first end: a client that shut down its sending side
        and waited for the answer, ``got 1000 bytes``, read nothing but the close.)"""
        if not flow.shut:
            flow.shut = True
            try:
                flow.dst.shutdown(socket.SHUT_WR)
            except OSError:
                self._close_pair(sel, flows, flow.src)
                return
        back = flows.get(flow.dst)
        if back is None or back.shut:
            self._close_pair(sel, flows, flow.src)

    def _close_pair(self, sel: selectors.BaseSelector, flows: dict[socket.socket, _Flow], s: socket.socket) -> None:
        flow = flows.pop(s, None)
        for sock in (s, flow.dst if flow else None):
            if sock is None:
                continue
            flows.pop(sock, None)
            _unregister(sel, sock)
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


class _Flow:
    """One direction of a proxied connection: what was read from ``src`` and is not yet sent to ``dst``.

    ``chunks`` are ``(due, bytes)``, ``due`` the monotonic time a ``latency`` fault holds a chunk
    until (never before an earlier chunk's); ``held`` their bytes; ``eof``: ``src`` has ended;
    ``shut``: that end was passed on to ``dst`` (its sending side shut down).
    """

    __slots__ = ("src", "dst", "chunks", "held", "eof", "shut")

    def __init__(self, src: socket.socket, dst: socket.socket) -> None:
        self.src, self.dst = src, dst
        self.chunks: collections.deque[tuple[float, bytes]] = collections.deque()
        self.held = 0
        self.eof = False
        self.shut = False


def _register(sel: selectors.BaseSelector, sock: socket.socket, events: int) -> None:
    """Make ``sock``'s registration in ``sel`` wait for ``events`` (none: unregistered)."""
    try:
        key: selectors.SelectorKey | None = sel.get_key(sock)
    except (KeyError, ValueError):
        key = None
    if not events:
        if key is not None:
            _unregister(sel, sock)
    elif key is None:
        sel.register(sock, events, "peer")
    elif key.events != events:
        sel.modify(sock, events, "peer")


def _unregister(sel: selectors.BaseSelector, sock: socket.socket) -> None:
    try:
        sel.unregister(sock)
    except (KeyError, ValueError):
        pass


def reset_socket(sock: socket.socket) -> None:
    """Close ``sock`` with an RST instead of a FIN (``SO_LINGER`` 0)."""
    import struct

    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()
