"""DockerExecStream: demultiplexing docker's stdout/stderr frames, EOF, timeouts, stopped containers."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from pytest_hermes_kernel.transports.docker.stream import DockerExecStream


def frame(kind: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", kind, len(payload)) + payload


@pytest.fixture
def pair():
    ours, engine = socket.socketpair()
    yield ours, engine
    engine.close()
    ours.close()


def test_only_stdout_payload_is_returned_and_stderr_is_kept(pair):
    ours, engine = pair
    stream = DockerExecStream(ours)
    engine.sendall(frame(1, b"out1") + frame(2, b"err!") + frame(1, b"out2"))

    got = b""
    while len(got) < 8:
        got += stream.recv(2.0)

    assert got == b"out1out2" and stream.stderr_text() == "err!"


def test_headers_and_payloads_split_across_reads_are_reassembled(pair):
    ours, engine = pair
    stream = DockerExecStream(ours)
    data = frame(1, b"hello world") + frame(1, b"!")

    def trickle() -> None:
        for i in range(len(data)):
            engine.sendall(data[i : i + 1])
            time.sleep(0.001)

    threading.Thread(target=trickle).start()
    got = b""
    while len(got) < 12:
        got += stream.recv(2.0)

    assert got == b"hello world!"


def test_eof_returns_empty_bytes(pair):
    ours, engine = pair
    stream = DockerExecStream(ours)
    engine.sendall(frame(1, b"last"))
    engine.shutdown(socket.SHUT_WR)

    assert stream.recv(2.0) == b"last"
    assert stream.recv(2.0) == b""


def test_silence_raises_timeout(pair):
    stream = DockerExecStream(pair[0])
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        stream.recv(0.2)
    # recv's timeout is its contract: ended by it, not by silence going on (the bound leaves a loaded
    # machine 5 s of slack; it was 0.8 s)
    assert time.monotonic() - started < 0.2 + 5.0


def test_a_stopped_container_ends_a_silent_stream(pair):
    stream = DockerExecStream(pair[0], container_running=lambda: False, state_poll_s=0.05)

    assert stream.recv(None) == b""  # never hangs (docker/docker-py#1269)
    assert stream.ended_because == "container stopped"


def test_close_makes_a_blocked_recv_return(pair):
    stream = DockerExecStream(pair[0])
    threading.Timer(0.2, stream.close).start()

    assert stream.recv(None) == b""


def test_send_and_half_close_reach_the_exec(pair):
    ours, engine = pair
    stream = DockerExecStream(ours)
    stream.send(b"config")
    stream.shutdown_write()

    assert engine.recv(100) == b"config" and engine.recv(100) == b""
