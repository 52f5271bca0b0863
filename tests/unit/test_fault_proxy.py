"""The loopback TCP fault proxy (``faults/proxy.py``), which ssh's ``transport_drop`` cuts.

``reset()`` (found by the flaky-by-construction hunt, 2026-12-06): ``TcpFaultProxy.reset()`` asked the proxy's
thread to cut its connections and waited 2 s for it, without looking whether it had: a thread held
up longer (a chunk held back by a ``latency`` fault, a loaded machine) made ``reset()`` return the
previous reset's count (0 here, for one open connection, which stayed open until the thread came
round). ``transport_drop("reset")`` on ssh and ``route.proxy.reset() >= 1`` rely on the cut having
happened when it returns: it now waits for its own cut, or makes it itself once the thread ended.
"""

from __future__ import annotations

import contextlib
import select
import socket
import statistics
import threading
import time
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.contract._probes import wait_until
from pytest_hermes_kernel.faults.proxy import TcpFaultProxy

#: A ``latency`` fault's hold per chunk, which the proxy's thread sleeps: longer than the 2-s wait.
HELD_S = 2.5


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    server = socket.create_server(("127.0.0.1", 0))

    def answer(conn: socket.socket) -> None:
        try:
            while data := conn.recv(4096):
                conn.sendall(data)
        except OSError:  # the reset reached this end too
            pass

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conns.append(conn)
            threads.append(threading.Thread(target=answer, args=(conn,), daemon=True))
            threads[-1].start()

    conns: list[socket.socket] = []
    threads = [threading.Thread(target=serve, daemon=True)]
    threads[0].start()
    yield server.getsockname()[:2]
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    for conn in conns:
        conn.close()
    for thread in threads:
        thread.join(10)


def _fill_until_it_blocks(sock: socket.socket) -> None:
    """Send on ``sock`` until every buffer on its way to a peer that reads nothing is full (2 s
    with no send taken), at most 64 MiB or 30 s; ``sock`` is left non-blocking."""
    sock.setblocking(False)
    sent, deadline = 0, time.monotonic() + 30
    while time.monotonic() < deadline and sent < 64 * 2**20:
        try:
            sent += sock.send(b"x" * 65536)
            deadline = min(deadline, time.monotonic() + 2)
        except BlockingIOError:
            time.sleep(0.05)


def _connect(proxy: TcpFaultProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=30)


def test_a_reset_while_the_proxy_holds_a_chunk_returns_once_its_connection_is_cut(echo) -> None:
    with TcpFaultProxy(echo) as proxy:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        try:
            client.sendall(b"ping")
            assert client.recv(16) == b"ping"
            proxy.latency(HELD_S)
            client.sendall(b"held")  # the proxy's thread sleeps on this chunk
            time.sleep(0.2)  # (it has taken the chunk by now; were it not, the reset only comes sooner)

            cut = proxy.reset()

            assert cut == 1, f"reset() said it cut {cut} connections; one was open"
            client.settimeout(0.5)
            with pytest.raises((ConnectionResetError, TimeoutError)) as seen:
                while client.recv(16):  # the chunk may still come through before the RST
                    pass
            assert seen.type is ConnectionResetError, "the connection was still open when reset() returned"
        finally:
            client.close()


def test_a_reset_while_the_proxys_thread_is_held_in_a_send_cuts_and_returns() -> None:
    """Its thread blocked sending to a peer that reads nothing (a frozen runner's end) never came
    round to the reset: ``reset()`` waited for it for ever, and ``close()``, which resets, too (the
    2-s wait before returned 0 and cut nothing). It cuts from the caller then: the send wakes."""
    upstream = socket.create_server(("127.0.0.1", 0))
    unread: list[socket.socket] = []
    taker = threading.Thread(target=lambda: unread.append(upstream.accept()[0]), daemon=True)
    taker.start()
    proxy = TcpFaultProxy(upstream.getsockname()[:2])
    client = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    returned: list[int] = []
    try:
        _fill_until_it_blocks(client)
        resetting = threading.Thread(target=lambda: returned.append(proxy.reset()), daemon=True)
        resetting.start()
        resetting.join(30)

        assert returned == [1], "reset() had not returned after 30 s" if not returned else returned
        client.setblocking(True)
        client.settimeout(10)
        with pytest.raises(ConnectionResetError):
            while client.recv(65536):
                pass
        closing = threading.Thread(target=proxy.close, daemon=True)
        closing.start()
        closing.join(30)
        assert not closing.is_alive(), "close() had not returned after 30 s"
    finally:
        client.close()
        for conn in unread:
            conn.close()
        upstream.close()
        taker.join(10)


def test_a_connection_whose_peer_reads_nothing_does_not_stall_the_others() -> None:
    """One connection's peer stopped reading (a frozen host behind it, a full pipe): the proxy's
    one thread blocked in its ``sendall`` to that peer, and every other connection through the
    proxy stopped with it, for good (here: no echo in 30 s). The upstream leaves its first
    connection unread and echoes the second."""
    answered = socket.create_server(("127.0.0.1", 0))
    conns: list[socket.socket] = []

    def serve() -> None:
        first, _ = answered.accept()  # read by nobody
        conns.append(first)
        second, _ = answered.accept()
        conns.append(second)
        try:
            while data := second.recv(4096):
                second.sendall(data)
        except OSError:
            pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        with TcpFaultProxy(answered.getsockname()[:2]) as proxy:
            flooding = _connect(proxy)
            _fill_until_it_blocks(flooding)
            other = _connect(proxy)
            try:
                other.sendall(b"ping")
                got = b""
                while len(got) < 4:
                    try:
                        chunk = other.recv(16)
                    except TimeoutError:
                        break
                    if not chunk:
                        break
                    got += chunk
                assert got == b"ping", "a second connection through the proxy had no echo in 30 s while a first one's peer read nothing"
            finally:
                other.close()
                flooding.close()
    finally:
        for conn in conns:
            conn.close()
        answered.close()
        server.join(10)


def test_a_latency_fault_holds_each_chunk_its_time_on_every_connection_at_once(echo) -> None:
    """``latency(s)``: every chunk is held back ``s``. The proxy slept ``s`` per chunk in its one
    thread, so chunks of other connections waited behind it: with four connections each sending
    one ping at once, the last echo came after ~4 s (8 holds in a row) instead of ~1 s (two holds:
    there and back). Each round trip now takes about two holds, however many connections there are."""
    hold = 0.5
    with TcpFaultProxy(echo) as proxy:
        clients = [_connect(proxy) for _ in range(4)]
        try:
            for client in clients:  # each connection works before the fault
                client.sendall(b"warm")
                assert client.recv(16) == b"warm"
            proxy.latency(hold)
            took: list[float] = []
            start = time.monotonic()
            for client in clients:
                client.sendall(b"ping")
            for client in clients:
                assert client.recv(16) == b"ping"
                took.append(time.monotonic() - start)
        finally:
            for client in clients:
                client.close()
    assert min(took) >= 2 * hold * 0.9, f"an echo came back in {min(took):.2f} s: the {hold}-s hold was not applied both ways"
    assert max(took) < 2 * hold + 1.5, (f"echoes took {[round(t, 2) for t in took]} s (median {statistics.median(took):.2f}): "
                                        f"the {hold}-s holds were added up across connections instead of each chunk held {hold} s")


@pytest.mark.parametrize("hold", [0.0, 0.3], ids=["no-latency", "latency"])
def test_a_client_that_shuts_down_its_sending_side_still_gets_the_answer(hold: float) -> None:
    """A client sends its request, shuts down its sending side (a FIN: "that is all") and reads the
    answer, which its server sends once it has read to the end. The proxy closed the whole pair at
    the first FIN: the client read an empty close instead of ``got 1000 bytes`` (also under
    ``latency``). The FIN is passed on now and the other way stays open until it ends too."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer_at_the_end() -> None:
        with contextlib.suppress(OSError):
            conn, _ = server.accept()
            with conn:
                got = b""
                while data := conn.recv(4096):
                    got += data
                conn.sendall(b"got %d bytes" % len(got))

    answering = threading.Thread(target=answer_at_the_end, daemon=True)
    answering.start()
    try:
        with TcpFaultProxy(server.getsockname()[:2]) as proxy:
            if hold:
                proxy.latency(hold)
            with _connect(proxy) as client:
                client.sendall(b"x" * 1000)
                client.shutdown(socket.SHUT_WR)
                answer = b""
                while data := client.recv(4096):  # (30-s timeout: a hang fails as TimeoutError)
                    answer += data
    finally:
        server.close()
        answering.join(10)
    assert answer == b"got 1000 bytes", f"the half-closed client read {answer!r}"


def test_a_connection_whose_upstream_connect_hangs_does_not_stall_the_others() -> None:
    """A new connection whose connect to the upstream gets no answer (its accept queue full here; a
    gone container's address does the same): the proxy's one thread connected with a blocking
    5-s connect, and an open connection's echo through it came back after 4.9 s instead of at once.
    The connect now goes on beside the relay; the new client is reset once it runs out of time."""
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(0)
    answering: list[socket.socket] = []

    def echo_the_first() -> None:
        conn, _ = upstream.accept()  # (no more accepts: later connects fill its queue)
        answering.append(conn)
        with contextlib.suppress(OSError):
            while data := conn.recv(4096):
                conn.sendall(data)

    server = threading.Thread(target=echo_the_first, daemon=True)
    server.start()
    queued: list[socket.socket] = []
    try:
        with TcpFaultProxy(upstream.getsockname()[:2]) as proxy, _connect(proxy) as first:
            first.sendall(b"warm")
            assert first.recv(16) == b"warm"
            while True:  # fill the upstream's accept queue until a connect gets no answer
                direct = socket.socket()
                direct.settimeout(0.5)
                try:
                    direct.connect(upstream.getsockname()[:2])
                except TimeoutError:
                    direct.close()
                    break
                queued.append(direct)
            with _connect(proxy) as late:
                wait_until(lambda: not select.select([proxy._listener], [], [], 0)[0], 10.0,
                           what="the proxy to take the new connection (and start its connect)")
                first.sendall(b"ping")
                assert first.recv(16) == b"ping"
                # told by order: the echo came while the new connection's connect still hung (its
                # reset, at CONNECT_TIMEOUT_S, not come yet); with one blocking connect, after it
                pending = not select.select([late], [], [], 0)[0]
                with pytest.raises(ConnectionResetError):
                    late.recv(16)  # reset once its connect runs out of time (30-s timeout: a hang fails)
    finally:
        for sock in [*queued, *answering]:
            sock.close()
        upstream.close()
        server.join(10)
    assert pending, "an open connection's echo waited for a new connection's hung upstream connect to end"


def test_heal_lets_the_chunks_a_latency_fault_holds_go_at_once(echo) -> None:
    """``heal()`` ends a ``latency`` fault "now" (``hermes_faults.heal()``; the docker transport's
    stream ends a read's wait at once): the proxy held a chunk it had read before the heal for the
    fault's whole time, so a ping read under ``latency(10)`` came back 10 s late after ``heal()`` (30 s here)."""
    import fcntl
    import struct
    import termios

    with TcpFaultProxy(echo) as proxy, _connect(proxy) as client:
        client.sendall(b"warm")
        assert client.recv(16) == b"warm"
        proxy.latency(30.0)
        client.sendall(b"ping")
        (near,) = [pair[0] for pair in proxy._pairs]  # the proxy's end of this client's connection

        def unread() -> int:
            return struct.unpack("i", fcntl.ioctl(near, termios.FIONREAD, b"\0" * 4))[0]

        wait_until(lambda: unread() == 0, 5.0, what="the proxy to read (and hold) the ping")
        healed = time.monotonic()
        proxy.heal()
        assert client.recv(16) == b"ping"
        took = time.monotonic() - healed
    # held on, it comes back at the fault's 30 s: a third of that leaves a loaded machine honest slack (it was 2 s of 10)
    assert took < 10.0, f"the ping came back {took:.2f} s after heal(): the proxy held it on for the latency fault's time"


def test_an_upstream_name_whose_first_address_refuses_is_reached_at_the_next(echo, monkeypatch) -> None:
    """A name with two addresses (``localhost``: ``::1``, then ``127.0.0.1``) whose first one refuses:
    the proxy tries the next, as ``socket.create_connection`` did before its connect was made
    non-blocking (that first version reset the client at the first refusal)."""
    host, port = echo
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # (bound, not listening: a connect to it is refused)
    real_getaddrinfo = socket.getaddrinfo

    def two_addresses(name, *args, **kwargs):
        if name != "upstream.invalid":
            return real_getaddrinfo(name, *args, **kwargs)
        refusing = real_getaddrinfo(*closed.getsockname(), type=socket.SOCK_STREAM)
        return refusing + real_getaddrinfo(host, port, type=socket.SOCK_STREAM)

    monkeypatch.setattr(socket, "getaddrinfo", two_addresses)
    try:
        with TcpFaultProxy(("upstream.invalid", port)) as proxy, _connect(proxy) as client:
            client.sendall(b"ping")
            assert client.recv(16) == b"ping"
    finally:
        closed.close()
