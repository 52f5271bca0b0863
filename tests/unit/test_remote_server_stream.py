"""The host's side of a remote kernel server releases the server's stream as soon as it ends
(a stopped container, a dead connection): a server the pool replaced must not leave its exec
socket or channel to the garbage collector."""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel.kernel.results import encode_frame
from pytest_hermes_kernel.errors import KernelServerUnavailable
from pytest_hermes_kernel.transports.forked import with_fallback
from pytest_hermes_kernel.transports.remote_server import RemoteServer
from tests.support import wait_until


class ScriptedStream:
    """A server's stream that answers ``hello`` to the config, then ends (or waits to be closed)."""

    def __init__(self, *, end_after_hello: bool) -> None:
        self.sent: list[bytes] = []
        self.closes = 0
        self._out = [encode_frame({"type": "hello", "pid": 4242, "refusal": None}, ())]
        self._end_after_hello = end_after_hello
        self._closed = threading.Event()

    def send(self, data: bytes) -> None:
        self.sent.append(data)

    def recv(self, timeout: float | None) -> bytes:
        if self._out:
            return self._out.pop()
        if not self._end_after_hello:
            self._closed.wait(timeout)
        return b""

    def close(self) -> None:
        self.closes += 1
        self._closed.set()


def test_a_server_whose_stream_ended_closes_it_and_is_gone():
    stream = ScriptedStream(end_after_hello=True)
    server = RemoteServer(stream, name="test", config={})

    wait_until(lambda: stream.closes >= 1, timeout=10, what="the ended stream closed")
    assert not server.usable
    assert "ended" in server.gone


def test_closing_a_live_server_closes_its_stream_and_says_closed():
    stream = ScriptedStream(end_after_hello=False)
    server = RemoteServer(stream, name="test", config={})
    assert server.usable and server.pid == 4242

    server.close()

    assert stream.closes >= 1
    assert server.gone == "closed"


class EndedStream(ScriptedStream):
    """A server exec that ended before its config could be sent (a missing interpreter)."""

    def send(self, data: bytes) -> None:
        raise OSError("ssh channel is closed")


def test_a_server_that_ended_before_its_config_is_unavailable_and_the_launch_spawns():
    """Seen on ssh under load with ``python=`` a missing interpreter: the exec's channel had
    closed before the config went out, and the ``OSError`` escaped instead of the fallback's
    spawn (whose ``KernelStartError`` names the exit code and stderr)."""
    stream = EndedStream(end_after_hello=True)
    with pytest.raises(KernelServerUnavailable, match="ended before it had its config: ssh channel is closed"):
        RemoteServer(stream, name="test", config={})
    assert stream.closes == 1

    def fork():
        RemoteServer(EndedStream(end_after_hello=True), name="test", config={})

    spawned = with_fallback(fork, lambda: type("Launched", (), {"note": ""})())
    assert spawned.note.startswith("kernel server unavailable (the kernel server on test ended before")
