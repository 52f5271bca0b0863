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
from pytest_hermes_kernel.transports.server_pool import ServerPool
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


class EndsAtOnce(ScriptedStream):
    """A server that forks a kernel which ends at once (a cwd it cannot enter): its ``spawned``
    answer and its channel's ``closed`` come in one read, before ``spawn()`` reads the answer."""

    def __init__(self) -> None:
        super().__init__(end_after_hello=False)
        self._answers: list[bytes] = []

    def send(self, data: bytes) -> None:
        from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder

        super().send(data)
        decoder = FrameDecoder()
        decoder.feed(data)
        frame = decoder.next_frame()
        if frame is not None and frame[0].get("type") == "spawn":
            self._answers.append(encode_frame({"type": "spawned", "id": frame[0]["id"], "chan": 36, "pid": 77}, ())
                                 + encode_frame({"type": "closed", "chan": 36}, ()))

    def recv(self, timeout: float | None) -> bytes:
        while True:
            if self._out:
                return self._out.pop()
            if self._answers:
                return self._answers.pop()
            if self._closed.wait(0.02):
                return b""


def test_a_kernel_that_ends_as_it_is_forked_is_an_ended_stream_not_a_key_error():
    """Its channel was out of the server's table before ``spawn()`` looked it up: ``KeyError: 36``
    instead of the start error that names why the kernel ended (seen in a clean-clone run; the
    reader thread reads both frames of one chunk before the asker wakes, most of the time)."""
    for _ in range(20):
        server = RemoteServer(EndsAtOnce(), name="test", config={})
        try:
            pid, kernel_stream, _ = server.spawn({"kernel_id": "k"}, 10)
        finally:
            server.close()
        assert pid == 77
        assert kernel_stream.recv(1.0) == b""  # ended: the start reads the kernel's log for why


class AnswersSpawns(EndsAtOnce):
    """A live server: it answers every ``spawn`` with kernel pid 77 on channel 36, which stays open."""

    def send(self, data: bytes) -> None:
        from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder

        ScriptedStream.send(self, data)
        decoder = FrameDecoder()
        decoder.feed(data)
        frame = decoder.next_frame()
        if frame is not None and frame[0].get("type") == "spawn":
            self._answers.append(encode_frame({"type": "spawned", "id": frame[0]["id"], "chan": 36, "pid": 77}, ()))


class EndedAfterHello(AnswersSpawns):
    """A server that ended idle after its hello; its stream's end not read yet when the next
    spawn goes out (ssh: ``OSError: ssh channel is closed`` at the send)."""

    def send(self, data: bytes) -> None:
        if self.sent:
            raise OSError("ssh channel is closed")
        ScriptedStream.send(self, data)


def test_a_spawn_that_never_reached_an_ended_server_asks_a_new_one():
    """Seen in ``benchmarks/soak.py --transport ssh --mode reap``: a kernel server that had ended
    for being idle, its stream's end not yet read, made the next start raise
    ``TypeError: KernelStartError.__init__() got an unexpected keyword argument 'sent'`` out of
    ``registry.execute()``; the spawn never went out, so a new server is asked (once)."""
    streams = [EndedAfterHello(), AnswersSpawns()]
    pool = ServerPool(lambda where, python: RemoteServer(streams.pop(0), name=where, config={}))
    try:
        pid, stream, _, server = pool.spawn("test", "python3", lambda _server: {"kernel_id": "k"}, 10)
        assert pid == 77 and streams == [] and server.usable, "a second server forked it"
        assert pool.running("test") is server
    finally:
        pool.close()


def test_a_kernel_server_unavailable_error_says_whether_its_request_went_out():
    exc = KernelServerUnavailable("gone", sent=False)
    assert exc.sent is False and KernelServerUnavailable("refused").sent is True


def _exits(pids: range) -> bytes:
    return b"".join(encode_frame({"type": "exited", "pid": pid, "exit_code": 0, "signal": None}, ()) for pid in pids)


def test_a_kernel_forked_on_the_pid_of_an_ended_one_is_not_taken_for_ended():
    """The host side kept every ended kernel's exit by pid for the server's whole life; a container's
    pids wrap (``pid_max`` 32768 here), and a new kernel on an old kernel's pid read as ended at once
    (``alive()`` False without asking: a healthy kernel taken for dead)."""
    stream = AnswersSpawns()
    stream._answers.append(_exits(range(77, 78)))
    server = RemoteServer(stream, name="test", config={})
    try:
        wait_until(lambda: server.exited(77), timeout=10, what="the old kernel's end read")
        pid, _, _ = server.spawn({"kernel_id": "k"}, 10)

        assert pid == 77 and not server.exited(77), "the new kernel on pid 77 has not ended"
    finally:
        server.close()


def test_a_long_lived_server_keeps_a_bounded_record_of_ended_kernels():
    """One record per kernel the server ever forked, never dropped: +100 per 100 kernels on a busy
    docker or ssh host (``benchmarks/soak.py``); the newest ``EXITS_KEPT`` are kept of those never
    cleaned up (a cleanup drops its kernel's record at once)."""
    stream = AnswersSpawns()
    stream._answers.append(_exits(range(1000, 3000)))
    server = RemoteServer(stream, name="test", config={})
    try:
        wait_until(lambda: server.exited(2999), timeout=10, what="2000 ends read")

        assert len(server._exited) <= 256, f"{len(server._exited)} ended kernels remembered"
        assert server.exited(2999) and server.wait_exit(2999, 0) == (0, None), "the newest are kept"
    finally:
        server.close()
