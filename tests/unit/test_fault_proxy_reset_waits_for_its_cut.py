"""Found by the flaky-by-construction hunt (2026-12-06): ``TcpFaultProxy.reset()`` asked the proxy's
thread to cut its connections and waited 2 s for it, without looking whether it had: a thread held
up longer (a chunk held back by a ``latency`` fault, a loaded machine) made ``reset()`` return the
previous reset's count (0 here, for one open connection, which stayed open until the thread came
round). ``transport_drop("reset")`` on ssh and ``route.proxy.reset() >= 1`` rely on the cut having
happened when it returns: it now waits for its own cut, or makes it itself once the thread ended.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

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
